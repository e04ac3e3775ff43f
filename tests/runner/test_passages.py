"""Retrieval over passages: the passage-depth rule, ``run_bakeoff`` over chunks against MaxP over a
passage index by hand, and ``bakeoff run --chunk`` end to end (fingerprints, cache, results.json,
report/compare across chunked and whole-document results)."""

from __future__ import annotations

import json
from pathlib import Path

from bakeoff.arms import BM25Arm
from bakeoff.cli import main
from bakeoff.data.chunking import ChunkSpec, chunk_corpus
from bakeoff.data.model import Corpus, Dataset, Qrels, Queries
from bakeoff.metrics import score_run
from bakeoff.runner.context import Context
from bakeoff.runner.run import run_bakeoff


def _dataset() -> Dataset:
    """Documents whose relevant part is a later paragraph, so MaxP and FirstP differ."""
    topics = ["apples orchard harvest", "rocket engine fuel", "violin concerto orchestra", "glacier ice melting",
              "bread yeast dough", "chess opening gambit", "volcano lava eruption", "coral reef fish"]
    ids, texts = [], []
    for i in range(24):
        first = topics[i % 8]
        second = topics[(i * 3 + 1) % 8]
        ids.append(f"d{i:02d}")
        texts.append(f"This report covers {first} in detail number {i}.\n\n"
                     f"An appendix mentions {second} and also {second.split()[0]} once more.\n\n"
                     f"Closing words {i}.")
    corpus = Corpus(tuple(ids), tuple(texts), tuple(f"Report {i}" for i in range(24)), tuple({} for _ in ids))
    queries = Queries.from_dict({f"q{t}": topics[t] for t in range(8)})
    qrels = Qrels({f"q{t}": {d: 1 for d, x in zip(ids, texts, strict=True) if topics[t] in x} for t in range(8)})
    return Dataset(corpus, queries, qrels, name="reports")


def test_run_bakeoff_chunked_equals_maxp_over_a_passage_index(tmp_path: Path) -> None:
    from bakeoff.cache import Cache

    ds = _dataset()
    spec = ChunkSpec.parse("paragraphs=1")
    cache = Cache(tmp_path / "cache")
    res = run_bakeoff(ds, [BM25Arm(name="bm25")], k=5, depth=10, chunk=spec, cache=cache, progress=False,
                      latency_sample=0)
    # independent: BM25 over the passages, every passage retrieved, MaxP by hand, cut at depth
    cc = chunk_corpus(ds.corpus, spec)
    ctx = Context(corpus=cc.passages, progress=False)
    arm = BM25Arm()
    arm.index(cc.passages, ctx=ctx)
    full = arm.search(ds.queries, k=len(cc.passages), ctx=ctx)
    for q in ds.queries.ids:
        best: dict[str, float] = {}
        for pid, s in full[q]:
            d = pid.split("#")[0]
            best[d] = max(best.get(d, float("-inf")), s)
        want = sorted(best.items(), key=lambda x: (x[1], x[0]), reverse=True)[:10]
        assert list(res.arms[0].run[q]) == want
    ev = score_run(res.arms[0].run, ds.qrels, res.measures, query_ids=ds.queries.ids)
    assert dict(ev.means) == dict(res.arms[0].evaluation.means)
    info = res.dataset["chunk"]
    assert info["unit"] == "paragraphs" and info["n_passages"] == 72 and info["aggregate"] == "maxp"
    assert res.dataset["fingerprints"]["corpus"] == ds.corpus.fingerprint()
    assert res.dataset["fingerprints"]["passages"] == cc.passages.fingerprint() != ds.corpus.fingerprint()
    assert res.arms[0].extra["passage_depth"] == 30  # depth 10 x ceil(72 / 24) passages: enough here
    # cached on the passages' fingerprint: a second run is a cache hit, an unchunked run is not
    again = run_bakeoff(ds, [BM25Arm(name="bm25")], k=5, depth=10, chunk=spec, cache=cache, progress=False,
                        latency_sample=0)
    assert again.arms[0].cached and again.arms[0].run.ranked == res.arms[0].run.ranked
    whole = run_bakeoff(ds, [BM25Arm(name="bm25")], k=5, depth=10, cache=cache, progress=False, latency_sample=0)
    assert not whole.arms[0].cached and "chunk" not in whole.dataset
    # MaxP finds the appendix topic; whole documents dilute it: here MaxP must not be worse
    assert res.arms[0].evaluation.means["recall@5"] >= whole.arms[0].evaluation.means["recall@5"]


def test_passage_depth_doubles_until_depth_documents_remain() -> None:
    """One document with 30 passages matching best, 30 others matching once: 5 documents need more
    than the first 5 x ceil(90 / 31) = 15 passages, and more than 30: the depth doubles twice."""
    texts = ["\n\n".join(["zebra stripes"] * 30)] + [f"zebra number {i}\n\nother words" for i in range(30)]
    ids = [f"d{i:02d}" for i in range(31)]
    ds = Dataset(Corpus(tuple(ids), tuple(texts), tuple("" for _ in ids), tuple({} for _ in ids)),
                 Queries.from_dict({"q": "zebra stripes"}), Qrels({"q": {"d3": 1}}))
    res = run_bakeoff(ds, [BM25Arm(name="bm25")], k=5, depth=5, chunk=ChunkSpec.parse("paragraphs=1"),
                      progress=False, latency_sample=0)
    assert res.arms[0].extra["passage_depth"] == 60  # 15 -> 30 (all d00) -> 60
    assert len(res.arms[0].run["q"]) == 5 and res.arms[0].run["q"][0][0] == "d00"


def _write_beir(ds: Dataset, root: Path) -> None:
    from bakeoff.data.writers import write_beir

    write_beir(root, corpus=ds.corpus, queries=ds.queries, qrels={"test": ds.qrels})


def test_cli_run_chunk_report_and_compare(tmp_path: Path, capsys) -> None:
    ds = _dataset()
    data = tmp_path / "data"
    _write_beir(ds, data)
    env = ["--cache-dir", str(tmp_path / "cache"), "--no-progress", "--latency-sample", "0", "--k", "5"]
    assert main(["run", "--beir", str(data), "--arm", "bm25", *env, "--out", str(tmp_path / "whole")]) == 0
    assert main(["run", "--beir", str(data), "--arm", "bm25", *env, "--chunk", "paragraphs=1",
                 "--aggregate", "firstp", "--out", str(tmp_path / "firstp")]) == 0
    toml = tmp_path / "maxp.toml"
    toml.write_text(f'[dataset]\nbeir = "{data}"\n[dataset.chunk]\nparagraphs = 1\naggregate = "maxp"\n'
                    f'[run]\nk = 5\nout = "{tmp_path / "maxp"}"\n[[arms]]\ntype = "bm25"\n', encoding="utf-8")
    assert main(["run", str(toml), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                 "--latency-sample", "0"]) == 0
    capsys.readouterr()
    firstp = json.loads((tmp_path / "firstp" / "results.json").read_text())
    maxp = json.loads((tmp_path / "maxp" / "results.json").read_text())
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    assert firstp["dataset"]["chunk"]["aggregate"] == "firstp" and maxp["dataset"]["chunk"]["aggregate"] == "maxp"
    assert firstp["dataset"]["source"]["chunk"] == {"unit": "paragraphs", "size": 1, "overlap": 0,
                                                    "aggregate": "firstp"}
    assert firstp["dataset"]["fingerprints"]["corpus"] == whole["dataset"]["fingerprints"]["corpus"]
    assert "passages" in firstp["dataset"]["fingerprints"] and "passages" not in whole["dataset"]["fingerprints"]
    # FirstP only sees each report's first paragraph: the appendix topics are lost
    assert firstp["arms"][0]["metrics"]["recall@5"] < maxp["arms"][0]["metrics"]["recall@5"]
    # report reloads the document corpus and its fingerprint matches; compare pairs the two sets
    assert main(["report", str(tmp_path / "maxp"), "--no-html", "--resamples", "200", "--no-progress"]) == 0
    assert main(["compare", str(tmp_path / "whole"), str(tmp_path / "maxp"), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "bm25" in out
    assert main(["run", "--beir", str(data), "--arm", "bm25", *env, "--chunk", "tokens=4,overlap=4"]) == 2
    assert "overlap must be an integer in [0, 4)" in capsys.readouterr().err
    assert main(["run", "--beir", str(data), "--arm", "bm25", *env, "--aggregate", "maxp"]) == 2
    assert "--aggregate needs --chunk" in capsys.readouterr().err
