"""The FAISS ann arm: flat == exact, HNSW/IVF-PQ recall of exact, the index cached, the report figure."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bakeoff.arms.ann import AnnArm, recall_of_exact
from bakeoff.data.model import Corpus, Dataset, Document, Qrels, Queries, Run
from bakeoff.errors import ConfigError
from bakeoff.runner.context import Context
from bakeoff.runner.run import run_bakeoff
from tests.support._vectors import FixedVectors, random_unit

pytest.importorskip("faiss", reason="the [ann] extra is not installed")


def _data(n: int = 2000, d: int = 32, nq: int = 40, seed: int = 11) -> tuple[Corpus, Queries, FixedVectors]:
    rng = np.random.default_rng(seed)
    corpus = Corpus.from_documents([Document(f"d{i:05d}", "x") for i in range(n)])
    queries = Queries.from_dict({f"q{j}": "y" for j in range(nq)})
    qv = random_unit(rng, nq, d)
    return corpus, queries, FixedVectors(docs=random_unit(rng, n, d), queries={f"q{j}": qv[j] for j in range(nq)})


def test_recall_of_exact_by_hand() -> None:
    exact = Run.from_ranked("e", {"a": (("1", 3.0), ("2", 2.0)), "b": (("3", 1.0),), "c": ()})
    approx = Run.from_ranked("a", {"a": (("1", 3.0), ("9", 2.5)), "b": (("3", 1.0),), "c": (("4", 1.0),)})
    assert recall_of_exact(approx, exact, k=2, query_ids=["a", "b", "c"]) == pytest.approx((0.5 + 1.0) / 2)


def test_flat_equals_exact_and_hnsw_ivfpq_recall(cache: Any) -> None:
    corpus, queries, base = _data()
    ctx = Context(corpus=corpus, cache=cache, progress=False)
    exact = ctx.search(base, queries, k=10)
    flat = ctx.search(AnnArm(name="flat", base=base, index="flat"), queries, k=10)
    assert all(flat.doc_ids(q) == exact.doc_ids(q) for q in queries.ids)
    hnsw = AnnArm(name="hnsw", base=base, index="hnsw", M=16, ef_search=64)
    r_hnsw = recall_of_exact(ctx.search(hnsw, queries, k=10), exact, k=10, query_ids=queries.ids)
    ivf = AnnArm(name="ivf", base=base, index="ivfpq", nlist=16, nprobe=4, m=8, train_size=1000)
    r_ivf = recall_of_exact(ctx.search(ivf, queries, k=10), exact, k=10, query_ids=queries.ids)
    assert r_hnsw >= 0.95
    assert 0.2 <= r_ivf < r_hnsw  # 8-byte codes of 32-d vectors lose much
    wide = AnnArm(name="ivf-all", base=base, index="ivfpq", nlist=16, nprobe=16, m=8, train_size=1000)
    assert recall_of_exact(ctx.search(wide, queries, k=10), exact, k=10, query_ids=queries.ids) >= r_ivf


def test_index_is_cached_and_deterministic(cache: Any) -> None:
    corpus, queries, base = _data(n=800)
    a1 = AnnArm(name="h", base=base, index="hnsw", M=8, ef_search=16)
    ctx1 = Context(corpus=corpus, cache=cache, progress=False)
    r1 = ctx1.search(a1, queries, k=10)
    assert not a1.built_from_cache and base.calls["corpus"] == 1
    assert list(cache.root.glob("ann-index/*/*.npy"))
    assert "index_cached_s" not in ctx1.timings[a1.fingerprint()]
    a2 = AnnArm(name="h", base=base, index="hnsw", M=8, ef_search=32)  # search-time option: same index
    ctx2 = Context(corpus=corpus, cache=cache, progress=False)
    ctx2.search(a2, queries, k=10)
    assert a2.built_from_cache and base.calls["corpus"] == 1
    # the restored index counts what building it took, which is part of the first index time
    restored = ctx2.timings[a2.fingerprint()]["index_cached_s"]
    assert 0 < restored <= ctx1.timings[a1.fingerprint()]["index_s"]
    a3 = AnnArm(name="h", base=base, index="hnsw", M=8, ef_search=16)  # rebuilt without a cache: same run
    r3 = Context(corpus=corpus, progress=False).search(a3, queries, k=10)
    assert r3.ranked == r1.ranked


def test_mask_is_respected() -> None:
    corpus, queries, base = _data(n=500)
    mask = {q: (np.arange(500) % 2 == 0) for q in queries.ids}
    ctx = Context(corpus=corpus, progress=False)
    exact = ctx.search(base, queries, k=10, mask=mask)
    for kind in ("flat", "hnsw", "ivfpq"):
        arm = AnnArm(name=kind, base=base, index=kind, nlist=8, nprobe=8, m=4, M=16, ef_search=64)
        run = ctx.search(arm, queries, k=10, mask=mask)
        for q in queries.ids:
            assert all(int(d[1:]) % 2 == 0 for d in run.doc_ids(q))
        if kind == "flat":
            assert all(run.doc_ids(q) == exact.doc_ids(q) for q in queries.ids)


def test_report_carries_ann_recall(cache: Any) -> None:
    corpus, queries, base = _data(n=600, nq=10)
    qrels = Qrels({q: {"d00001": 1} for q in queries.ids})
    ds = Dataset(corpus, queries, qrels, name="toy")
    arms = [base, AnnArm(name="hnsw", base=base, index="hnsw", M=8, ef_search=10)]
    res = run_bakeoff(ds, arms, k=10, cache=cache, progress=False)
    d = res.to_dict()
    rec = d["arms"][1]["extra_metrics"]["ann_recall@10"]
    exact = {q: set(res.arms[0].run.doc_ids(q, 10)) for q in queries.ids}
    by_hand = np.mean([len(set(res.arms[1].run.doc_ids(q, 10)) & exact[q]) / 10 for q in queries.ids])
    assert rec == pytest.approx(by_hand) and 0 < rec <= 1
    assert "extra_metrics" not in d["arms"][0]
    from bakeoff.report.terminal import table_rows

    header, rows = table_rows(res.stored())
    assert "ann_recall@10" in header and rows[1][header.index("ann_recall@10")] == f"{rec:.4f}"


def test_bad_options() -> None:
    _, _, base = _data(n=10)
    with pytest.raises(ConfigError, match="index must be one of"):
        AnnArm(base=base, index="lsh")
    from bakeoff.arms.lexical import BM25Arm

    with pytest.raises(ConfigError, match="base= must name a dense arm"):
        AnnArm(base=BM25Arm())


def test_build_shows_phase_and_progress(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAISS gives no callback: the bar names the phase and counts added rows (stderr, a terminal:
    bars are drawn only there)."""
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    corpus, _, base = _data(n=600, d=16)
    arm = AnnArm(name="h", base=base, index="hnsw", M=8, ef_construction=16, add_batch=200)
    arm.index(corpus, ctx=Context(corpus=corpus, progress=True))
    err = capsys.readouterr().err
    assert "index h" in err and "0/600" in err and "HNSW insert (M=8, efC=16)" in err
    ivf = AnnArm(name="p", base=base, index="ivfpq", nlist=4, m=4, nbits=4)
    ivf.index(corpus, ctx=Context(corpus=corpus, progress=True))
    assert "training IVF4,PQ4 on 600 rows" in capsys.readouterr().err
    quiet = AnnArm(name="q", base=base, index="hnsw", M=8, ef_construction=16)
    quiet.index(corpus, ctx=Context(corpus=corpus, progress=False))
    assert capsys.readouterr().err == ""
