"""Numbers out of range in every file reader: grades and scores (TREC/BEIR qrels, TREC runs,
``bakeoff label`` databases), ``results.json`` fields and TOML configuration values. Each
extreme value either reads as itself or is one :class:`BakeoffError` line naming the file and
field, never another exception."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bakeoff.data.judgments import GRADE_LIMIT
from bakeoff.data.trec import read_qrels, read_run_table
from bakeoff.errors import BakeoffError
from bakeoff.metrics import parse_measures, score_run
from bakeoff.runner.config import load_config
from bakeoff.runner.results import SCHEMA_VERSION, read_results

#: Tokens as they appear in files: overflowing decimals, signed zero, NaN/inf spellings, 2**70, text.
EXTREMES = ["1e400", "-1e400", "-0.0", "nan", "inf", "-inf", str(2**70), "-" + str(2**70), "x",
            "99999999999999999999", "1e308", "0", "1", "-1", "1000", "1001", "1.5", "0x10", "1_000"]

numbers = st.one_of(
    st.sampled_from(EXTREMES),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet="0123456789.eE+-xnaif_", min_size=1, max_size=12),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _one_line(exc: BakeoffError, path: Path, field: str) -> None:
    text = str(exc)
    assert "\n" not in text and text.startswith(str(path)) and field in text


def _expected_grade(tok: str) -> int | None:
    """The grade ``tok`` stands for, computed here from the documented rule, or None when bad."""
    try:
        value = float(tok) if "_" not in tok and not tok.lower().startswith(("0x", "+0x", "-0x")) else math.nan
    except ValueError:
        return None
    if not math.isfinite(value) or not value.is_integer() or abs(value) > GRADE_LIMIT:
        return None
    return int(value)


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
@SETTINGS
@given(tok=numbers)
@example(tok="99999999999999999999")
def test_qrels_grade(tmp_path: Path, tok: str) -> None:
    for text, path in ((f"q1 0 d1 {tok}\nq1 0 d2 1\n", tmp_path / "q.trec"),
                       (f"query-id\tcorpus-id\tscore\nq1\td1\t{tok}\nq1\td2\t1\n", tmp_path / "q.tsv")):
        path.write_text(text)
        want = _expected_grade(tok)
        if want is None:
            with pytest.raises(BakeoffError) as err:
                read_qrels(path)
            _one_line(err.value, path, "grade")
            assert f":{1 + path.suffix.endswith('tsv')}:" in str(err.value)
        else:
            qrels = read_qrels(path)
            assert qrels["q1"]["d1"] == want
            # every grade that reads can be evaluated: the exponential gain stays finite
            run = tmp_path / "r.trec"
            run.write_text("q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n")
            ev = score_run(read_run_table(run), qrels, parse_measures(["ndcg@10"]))
            assert all(math.isfinite(v) or math.isnan(v) for v in ev.means.values())


def _expected_score(tok: str) -> float | None:
    low = tok.lower().lstrip("+-")
    if "_" in tok or low.startswith("0x") or "nan" in low:
        return None
    try:
        value = float(tok)
    except ValueError:
        return None
    if math.isinf(value) and low not in ("inf", "infinity"):
        return None  # a decimal beyond float64's range
    return value


@SETTINGS
@given(tok=numbers)
@example(tok="1e400")
def test_run_score(tmp_path: Path, tok: str) -> None:
    path = tmp_path / "r.trec"
    path.write_text(f"q1 Q0 d1 1 {tok} t\nq1 Q0 d2 2 1 t\n")
    want = _expected_score(tok)
    if want is None:
        with pytest.raises(BakeoffError) as err:
            read_run_table(path)
        _one_line(err.value, path, "score")
        assert ":1:" in str(err.value)
    else:
        table = read_run_table(path)
        assert table.scores[0] == want and math.copysign(1, table.scores[0]) == math.copysign(1, want)


def test_run_score_overflow_in_a_large_file_is_caught_by_the_fast_reader_too(tmp_path: Path) -> None:
    lines = [f"q{i // 100} Q0 d{i} {i % 100 + 1} {1000 - i % 100} t" for i in range(40_000)]
    lines[30_000] = "q300 Q0 d30000 1 1e400 t"
    path = tmp_path / "big.trec"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BakeoffError, match=r"big\.trec:30001: field 'score': score 1e400 is beyond"):
        read_run_table(path)


@pytest.mark.parametrize("grade, bad", [(2**62, True), (-(2**62), True), (1e300, True), (float("inf"), True),
                                        (1.5, True), ("x", True), (1001, True), (2.0, False), (3, False)])
def test_label_database_grade(tmp_path: Path, grade: object, bad: bool) -> None:
    from bakeoff.data.judgments import read_judgments
    from bakeoff.label.pool import PooledDoc
    from bakeoff.label.sources import SourceQuery
    from bakeoff.label.store import Store

    db = tmp_path / "labels.sqlite"
    Store.create(db, meta={"dataset": {"name": "t"}}, queries=[SourceQuery("q1", "query", "dataset")],
                 required={}, pools={"q1": [PooledDoc("d1", {"bm25": 1})]})
    Store(db).judge("alice", "q1", "d1", 1)
    conn = sqlite3.connect(db)  # a hand-edited database: the CHECK constraint bypassed
    conn.execute("PRAGMA ignore_check_constraints = 1")
    conn.execute("UPDATE judgments SET grade = ?", (grade,))
    conn.commit()
    conn.close()
    if bad:
        with pytest.raises(BakeoffError) as err:
            read_judgments(db)
        assert str(err.value).startswith(f"{db}: field 'judgments.grade': grade ") and "\n" not in str(err.value)
    else:
        assert read_judgments(db).qrels["q1"]["d1"] == int(grade)


RESULTS = {"schema": "bakeoff.results", "schema_version": 1, "k": 10, "depth": 100, "measures": ["ndcg@10"],
           "queries": {"evaluated": 1, "excluded": {}}, "dataset": {"name": "t"},
           "arms": [{"name": "a", "type": "bm25", "metrics": {"ndcg@10": 0.5},
                     "per_query": {"ndcg@10": {"q1": 0.5}}, "timing": {"index_s": 1.0}}]}


@SETTINGS
@given(tok=numbers, where=st.sampled_from(["schema_version", "k", "depth", "evaluated", "metric", "timing"]))
@example(tok='"x"', where="schema_version")
@example(tok=str(2**70), where="timing")
def test_results_json_numbers(tmp_path: Path, tok: str, where: str) -> None:
    text = json.dumps(RESULTS)
    target = {"schema_version": '"schema_version": 1', "k": '"k": 10', "depth": '"depth": 100',
              "evaluated": '"evaluated": 1', "metric": '"ndcg@10": 0.5}', "timing": '"index_s": 1.0'}[where]
    key, _, rest = target.partition(": ")
    replaced = f"{key}: {tok}" + rest[len(rest.rstrip('}')):]
    path = tmp_path / "results.json"
    path.write_text(text.replace(target, replaced, 1))
    try:
        obj = json.loads(path.read_text())
    except ValueError:
        obj = None  # not JSON at all: read_results must say so in one line
    try:
        stored = read_results(path)
    except BakeoffError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))
        return
    # it read: every figure is then one the rest of bakeoff can use
    assert obj is not None
    assert isinstance(stored.schema_version, int) and 0 <= stored.schema_version <= SCHEMA_VERSION
    assert stored.k >= 1 and stored.depth >= 1 and stored.n_evaluated >= 0
    for arm in stored.arms:
        for value in [*arm.metrics.values(), *arm.timing.values()]:
            assert not isinstance(value, float) or not math.isinf(value)
            assert not isinstance(value, int) or abs(value) < 2**63


@pytest.mark.parametrize("value, bad", [("1e400", True), ("inf", True), ("nan", True), (str(2**70), True),
                                        ("-0.0", False), ('"x"', True), ("10", False)])
def test_results_json_k(tmp_path: Path, value: str, bad: bool) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(RESULTS).replace('"k": 10', f'"k": {value}'))
    if value == "-0.0":
        with pytest.raises(BakeoffError, match=r"results\.json: field 'k': expected an integer from 1"):
            read_results(path)
        return
    if bad:
        with pytest.raises(BakeoffError) as err:
            read_results(path)
        assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)
    else:
        assert read_results(path).k == 10


@SETTINGS
@given(tok=numbers, key=st.sampled_from(["k", "depth", "hourly_rate", "latency_sample", "max_empty_share"]))
@example(tok="1e400", key="hourly_rate")
@example(tok=str(2**70), key="k")
@example(tok="10", key="k")
def test_config_numbers(tmp_path: Path, tok: str, key: str) -> None:
    path = tmp_path / "bakeoff.toml"
    path.write_text(f'[dataset]\nbeir = "{tmp_path}"\n\n[run]\n{key} = {tok}\n\n[[arm]]\ntype = "bm25"\n')
    try:
        cfg = load_config(path)
    except BakeoffError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(f"{path}:5: ")
        return
    value = getattr(cfg, key)
    assert value is None or isinstance(value, bool) or math.isfinite(value)
    if key in ("k", "depth", "latency_sample"):
        assert 0 <= value < 2**31
