"""``bakeoff calibrate``: how far a generator's synthetic verdict matches the human one, on a judged corpus.

1. **dataset** — a corpus with human judgments: a BEIR folder, an ``ir_datasets`` name or a TOML
   file's ``[dataset]`` (:func:`bakeoff.data.datasets.open_dataset`); a dataset without judged
   queries is refused.
2. **truth** — synthetic queries over the same corpus's documents, written by the generator the
   user would use (:func:`bakeoff.truth.generation.generate.generate_truth` with the caller's options), then
   split by source document (:func:`split_by_document`): a seeded ``train_fraction`` of the
   documents' queries is the synthetic **train** split, the rest the **test** split, and no
   document's queries sit on both sides. ``train_fraction=0`` evaluates every kept query and
   trains nothing.
3. **fine-tuning** — on the synthetic train split (:func:`fine_tuned_arms`), through
   :func:`bakeoff.train.cached.finetune_cached` (so a re-run with the same training data, base,
   options and code trains nothing): ``ft-dense``, the bundled MiniLM fine-tuned with MNRL and one
   hard negative mined from the ``rerank_base`` arm; ``ft-rerank``, a cross-encoder on the bundled
   MiniLM body trained with BCE on each query's positive and four mined negatives, reranking the
   top :data:`RERANK_TOP` of ``rerank_base`` (default ``bm25-stem``). Both train in the staging
   folder; with a cache the finished model moves to the cache's ``finetuned/`` folder, without one
   to ``out/models/``.
4. **arms** — one arm set (default :data:`DEFAULT_ARMS`, plus the fine-tuned arms) run against the
   human test queries and the synthetic **test** split through one
   :class:`~bakeoff.runner.context.Context`, so indexes and document embeddings are built once
   and shared (every run is cached as usual). Costs (latency, $/1k queries, footprint) are
   measured on the human side and copied to the synthetic side, so the two verdicts can differ
   only through the truth. A fine-tuned arm's bias (synthetic minus human) is then how much the
   generator's truth flatters a model trained on the same generator's queries.
5. **figures** — :func:`bakeoff.report.calibration.calibration_figures` (τ, τ_AP, CIs, top-1 and
   verdict agreement, per-arm bias by leak bucket, human-significant pairs kept or reversed).
6. **record** — ``calibration.json`` (:data:`CALIBRATION_FILE`): the generator identity
   (:func:`~bakeoff.report.calibration.generator_identity`, plus the weights' sha256 of the bundled
   model), the corpus fingerprint, the split sizes, the fine-tunes, the arm set and the figures;
   beside it ``truth/`` (the generated BEIR folder, ``qrels/train.tsv`` and ``qrels/test.tsv`` the
   split above), ``human/results.json`` and ``synthetic/results.json``. A copy goes to the
   cache folder (``calibrations/<generator key>/<corpus fingerprint>.json``), where ``bakeoff report``
   finds it for any run of the same generator.

Everything is staged in a temporary folder next to ``out`` and moved into ``out`` only when
complete: a failed or interrupted calibration leaves ``out`` as it was. An ``out`` holding a
calibration of another corpus or generator is refused (one line, exit 2) rather than overwritten.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cache import Cache
from .errors import ConfigError, InputError
from .truth.llm.spec import LLMSpec

if TYPE_CHECKING:
    from .runner.results import StoredResults

__all__ = [
    "CALIBRATION_FILE",
    "DEFAULT_ARMS",
    "DEFAULT_MEASURES",
    "DEFAULT_TRAIN_FRACTION",
    "FINE_TUNED_ARMS",
    "MIN_ARMS",
    "RERANK_TOP",
    "dataset_spec",
    "fine_tuned_arms",
    "run_calibration",
    "split_by_document",
]

#: The record's file name, in ``--out`` and in a synthetic run's folder.
CALIBRATION_FILE = "calibration.json"

#: Fewer arms and an ordering has too few pairs for τ to mean anything.
MIN_ARMS = 3

#: Measures compared by default: the verdict's measure, and a deep recall where orderings often differ.
DEFAULT_MEASURES = ("ndcg@10", "recall@100")

#: The default arm set: nine arms that run offline and differ in the way synthetic queries can flatter or
#: hurt them.
#:
#: * ``tfidf`` — cosine over sublinear TF-IDF: lexical without saturation or length normalisation;
#: * ``bm25`` (Lucene), ``bm25-robertson``, ``bm25l`` — three BM25 variants that differ only in IDF and
#:   length handling: near-ties on human queries, so they test whether the synthetic truth invents
#:   differences between equivalent arms;
#: * ``bm25-stem`` — BM25 with the Snowball English stemmer: rewards queries that reuse their
#:   document's word stems (the leak);
#: * ``dense`` — the bundled all-MiniLM-L6-v2 bi-encoder: semantic matching, no word overlap needed;
#: * ``use`` — the multilingual Universal Sentence Encoder (numpy, bundled): a second, differently
#:   trained embedder; the default answerability filter scores with USE, so its bias here shows how
#:   much the filter flatters the model it uses;
#: * ``rrf`` — reciprocal rank fusion of ``bm25-stem`` and ``dense``: the usual hybrid, often best;
#: * ``convex`` — a z-score convex combination of the same two: a score-based fusion next to the
#:   rank-based one.
#:
#: With a train split (``train_fraction`` > 0, the default) fine-tuned arms join these
#: (:data:`FINE_TUNED_ARMS`, :func:`fine_tuned_arms`); they cost a training run per new split (then
#: cached) and one more corpus encoding or ``RERANK_TOP`` scored pairs per query:
#:
#: * ``ft-dense`` — the bundled MiniLM fine-tuned on the synthetic train split: the model whose
#:   synthetic score is most suspect, since it learnt the generator's queries; its bias minus
#:   ``dense``'s is the flattery of training on synthetic truth;
#: * ``ft-rerank`` (opt-in, ``rerank=True``) — a cross-encoder trained on the same split, reranking
#:   ``bm25-stem``'s top :data:`RERANK_TOP`: the only arm whose score reads query and document
#:   together. Opt-in because a fresh head trained on a few dozen queries ranks below its own first
#:   stage (figures in docs/commands/calibrate.md): a bottom arm both truths agree on would inflate τ.
#:
#: The bundled cross-encoder as shipped is not in: its head is untrained (scores are near ties), so
#: it would rank documents by chance on both truths.
DEFAULT_ARMS: tuple[str, ...] = (
    "tfidf",
    "bm25",
    "bm25-robertson=bm25:method=robertson",
    "bm25l=bm25:method=bm25l",
    "bm25-stem=bm25:stemmer=english",
    "dense",
    "use=dense:model=use",
    "rrf=rrf:arms=bm25-stem+dense",
    "convex=convex:arms=bm25-stem+dense,norm=zscore",
)


#: Names of the arms trained on the synthetic train split.
FINE_TUNED_ARMS = ("ft-dense", "ft-rerank")

#: Default share of the synthetic source documents whose queries form the train split.
DEFAULT_TRAIN_FRACTION = 0.5

#: Documents of the first stage that ``ft-rerank`` reorders (documents below are dropped).
RERANK_TOP = 20

#: Hard negatives per training query, mined from the first stage's top ``MINE_DEPTH`` minus the
#: query's judged documents: one for the embedder (a third column of MNRL), four for the reranker.
EMBEDDER_NEGATIVES, RERANKER_NEGATIVES, MINE_DEPTH = 1, 4, 30


def _embedder_params(seed: int) -> Any:
    """MNRL over a few dozen queries: three epochs of batches of 16 (a batch of 32 would leave one step).
    No validation slice: a few held-out queries would pick the checkpoint by noise (and a tie keeps the
    first, untrained one) and cost training queries; the last step's model is kept."""
    from .train.embedder import EmbedderParams

    return EmbedderParams(batch_size=16, epochs=3.0, learning_rate=2e-5, seed=seed, val_fraction=0.0)


def _reranker_params(seed: int) -> Any:
    """BCE on (query, positive) and (query, mined negative) rows: a fresh head needs more steps and a
    higher rate than the embedder's body. No validation slice (as :func:`_embedder_params`)."""
    from .train.reranker import RerankerParams

    return RerankerParams(batch_size=16, epochs=4.0, learning_rate=5e-5, seed=seed, val_fraction=0.0)


def split_by_document(
    qids: Sequence[str],
    documents: Mapping[str, Sequence[str]],
    *,
    train_fraction: float,
    seed: int,
) -> tuple[list[str], list[str]]:
    """``(train ids, test ids)``, each in the order of ``qids``: queries are grouped so that two
    queries sharing any document of ``documents[qid]`` (source and judged documents) are in one group
    (connected components); groups, sorted by their smallest document id, are permuted with
    ``numpy.random.default_rng(seed)`` and the first ``round(train_fraction * groups)`` of them are
    the train side, at most all but one group. So no document's queries sit on both sides."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for q in qids:
        docs = sorted(documents.get(q) or ()) or [f"\0query:{q}"]
        for d in docs[1:]:
            a, b = find(docs[0]), find(d)
            if a != b:
                parent[max(a, b)] = min(a, b)
    group = {q: find(min(documents.get(q) or [f"\0query:{q}"])) for q in qids}
    labels = sorted(set(group.values()))
    if train_fraction <= 0 or len(labels) < 2:
        return [], list(qids)
    n_train = min(len(labels) - 1, round(train_fraction * len(labels)))
    import numpy as np

    perm = np.random.default_rng(seed).permutation(len(labels))
    train_labels = {labels[i] for i in perm[:n_train]}
    return [q for q in qids if group[q] in train_labels], [q for q in qids if group[q] not in train_labels]


def fine_tuned_arms(
    *,
    corpus: Any,
    queries: Mapping[str, str],
    positives: Mapping[str, Sequence[str]],
    first_stage: Any,
    ctx: Any,
    stage: Path,
    cache: Cache | None,
    seed: int = 0,
    rerank: bool = False,
    progress: bool = True,
    echo: Callable[[str], Any] = print,
) -> tuple[list[Any], dict[str, Any]]:
    """``([ft-dense arm, ft-rerank arm if rerank], {arm name: how it was trained})``: trained on ``queries``
    with their ``positives`` (the synthetic train split) through
    :func:`bakeoff.train.cached.finetune_cached`, hard negatives mined from ``first_stage`` (an arm
    of the set, indexed through ``ctx``), which ``ft-rerank`` also reranks (module docstring)."""
    import time

    from .arms.registry import arm_type
    from .data.model import Queries
    from .train.cached import finetune_cached
    from .train.data import TrainingData, mine_negatives

    qs = Queries.from_dict(dict(sorted(queries.items())))
    pos = {q: tuple(sorted(positives[q])) for q in qs.ids}
    source = {"split": "synthetic train", "queries_fingerprint": qs.fingerprint(),
              "corpus_fingerprint": corpus.fingerprint()}
    negs = mine_negatives(corpus, dict(queries), pos, depth=MINE_DEPTH, n=RERANKER_NEGATIVES, arm=first_stage,
                          ctx=ctx)
    arms: list[Any] = []
    trained: dict[str, Any] = {}
    recipes = [("ft-dense", "embedder", EMBEDDER_NEGATIVES, _embedder_params(seed))]
    if rerank:
        recipes.append(("ft-rerank", "reranker", RERANKER_NEGATIVES, _reranker_params(seed)))
    for name, kind, n_neg, params in recipes:
        neg = {q: n[:n_neg] for q, n in negs.items()}
        if kind == "embedder" and len(neg) < len(pos):  # MNRL takes a negative column only when every row has one
            neg = {}
        data = TrainingData(label="synthetic:train", queries=dict(queries), positives=pos, corpus=corpus,
                            negatives=neg, negatives_source={f"mined:{first_stage.name}": len(neg)}, source=source)
        miner = {"arm": first_stage.name, "arm_fingerprint": first_stage.fingerprint(), "depth": MINE_DEPTH,
                 "n_negatives": n_neg, "source": "mined"}
        echo(f"      fine-tuning {name} ({kind}) on {len(pos)} synthetic train queries ...")
        t0 = time.perf_counter()
        path, rec, hit = finetune_cached(kind, data, stage=stage, cache=cache, params=params, extra=miner,  # type: ignore[arg-type]
                                         progress=progress)
        wall = time.perf_counter() - t0
        echo(f"      {name}: " + ("cached model, nothing trained" if hit else
                                   f"trained in {wall:.0f} s ({rec.get('steps')} steps, final loss "
                                   f"{(rec.get('loss_curve') or [{}])[-1].get('loss', float('nan')):.4f})"))
        trained[name] = {"kind": kind, "model": str(path), "cache_hit": hit, "wall_s": round(wall, 3),
                         "train_time_s": rec.get("train_time_s"), "n_queries": rec.get("n_queries"),
                         "n_pairs": rec.get("n_pairs"), "steps": rec.get("steps"), "loss": rec.get("loss"),
                         "final_loss": (rec.get("loss_curve") or [{}])[-1].get("loss"),
                         "data_fingerprint": rec.get("data_fingerprint"), "negatives": miner,
                         "params": rec.get("params")}
        factory = arm_type("dense" if kind == "embedder" else "rerank")
        assert factory is not None  # both are built-in arm types
        if kind == "embedder":
            arms.append(factory(name=name, model=str(path)))
        else:
            arms.append(factory(name=name, base=first_stage, model=str(path), top=RERANK_TOP))
    return arms, trained


def dataset_spec(dataset: str) -> Any:
    """A :class:`~bakeoff.data.datasets.DatasetSpec` for ``--dataset``: a folder is a BEIR folder, a
    ``.toml`` file a bake-off config (its ``[dataset]``), anything else an ``ir_datasets`` name."""
    from .data.datasets import DatasetSpec
    from .runner.config import load_config

    p = Path(dataset)
    if p.is_dir():
        return DatasetSpec(beir=str(p))
    if p.suffix.lower() == ".toml":
        if not p.is_file():
            raise InputError("no such file", path=p)
        return load_config(p).dataset
    if p.exists():
        raise InputError("--dataset must be a BEIR folder, a TOML file or an ir_datasets name", path=p)
    return DatasetSpec(irds=dataset)


def _weights_sha256(llm: LLMSpec) -> str | None:
    """sha256 of the GGUF file of a local model (``--llm local``, ``local:NAME|PATH``); remote models have no
    weights here."""
    if not llm.is_local:
        return None
    import hashlib

    h = hashlib.sha256()
    with open(llm.local_model().path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _existing(out: Path) -> dict[str, Any] | None:
    path = out / CALIBRATION_FILE
    if not path.exists():
        return None
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the calibration record already there ({exc})", path=path) from None
    if not isinstance(obj, dict) or obj.get("schema") != "bakeoff.calibration":
        raise InputError("not a bakeoff calibration record; choose another --out", path=path, field="schema")
    return obj


def _same_costs(human: StoredResults, synthetic: StoredResults) -> StoredResults:
    """``synthetic`` with each arm given the human side's measured costs (latency, $/1k, footprint)."""
    arms = []
    for arm in synthetic.arms:
        h = human.arm(arm.name)
        timing = {**arm.timing, **{key: h.timing[key] for key in ("latency", "index_total_s", "index_cached_total_s")
                                    if key in h.timing}}
        same: dict[str, Any] = {key: getattr(h, key) for key in ("cost", "footprint") if key in h.model_fields_set}
        arms.append(arm.model_copy(update={"timing": timing, **same}))
    return synthetic.with_arms(arms)


def run_calibration(
    *,
    dataset: str,
    out: Path,
    options: Any,
    llm: LLMSpec | str = "local",
    arms: Sequence[str] = DEFAULT_ARMS,
    measures: Sequence[str] = DEFAULT_MEASURES,
    k: int = 10,
    depth: int = 100,
    cache: Cache | None = None,
    progress: bool = True,
    n_resamples: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    generate: Mapping[str, Any] | None = None,
    train_fraction: float = DEFAULT_TRAIN_FRACTION,
    rerank_base: str = "bm25-stem",
    rerank: bool = False,
    pool: Any = None,
    pool_llm: LLMSpec | str | None = None,
    echo: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Calibrate the generator of ``options`` (describe or cluster options of
    :mod:`bakeoff.truth.generation.describe` or :mod:`bakeoff.truth.generation.clusters`) and ``llm`` on ``dataset`` (module docstring); ``generate`` holds
    more keyword arguments of :func:`~bakeoff.truth.generation.generate.generate_truth` (``answerability``,
    ``specificity``, ``concurrency``, ``price``, ``reasoning_effort`` ...). ``train_fraction`` (in [0, 1))
    is the share of synthetic source documents whose queries train ``ft-dense`` and, with ``rerank``,
    ``ft-rerank`` (:func:`fine_tuned_arms`; hard negatives from, and reranking, the arm named
    ``rerank_base``, which must be in ``arms``); 0 trains nothing and evaluates every kept query.
    ``pool`` (:class:`~bakeoff.truth.judging.assess.AssessOptions`, default none) also judges the arms' pooled top
    ``pool.depth`` of every synthetic test query with ``pool_llm`` (default ``llm``) and records the figures
    again on that widened truth (:func:`~bakeoff.truth.judging.assess.pooled_qrels`) under ``pooled``. Returns the
    record written to ``out/calibration.json``.
    """
    from .report.calibration import calibration_figures

    llm = LLMSpec.of(llm)
    judge_llm = LLMSpec.of(pool_llm, option="--pool-llm") if pool_llm is not None else llm
    specs = _checked_arms(arms, train_fraction=train_fraction, rerank_base=rerank_base)
    if pool is not None:
        pool.check()
    from .runner.config import build_arms

    built = build_arms(specs)
    spec, ds, judged, corpus_fp, existing = _opened(dataset, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.calibrating-", dir=out.parent))
    try:
        echo(f"[1/5] dataset: {ds.name}, {len(ds.corpus)} documents, {len(judged)} judged queries ({spec.split})")
        syn = _synthetic(ds, corpus_fp, dataset=dataset, options=options, llm=llm, cache=cache, progress=progress,
                         generate=generate, train_fraction=train_fraction, existing=existing, stage=stage, out=out,
                         echo=echo)
        from .data.model import Dataset, Qrels
        from .runner.context import Context
        from .runner.run import run_bakeoff

        truth, test_ids = syn.truth, syn.test_ids
        syn_ds = Dataset(ds.corpus, truth.queries.subset(test_ids), Qrels({q: dict(truth.qrels[q]) for q in test_ids}),
                         name=f"{ds.name} (synthetic)", split="test")
        ctx = Context(corpus=ds.corpus, cache=cache, progress=progress)
        built, specs, trained = _with_fine_tuned(built, specs, truth=truth, train_ids=syn.train_ids, ds=ds, ctx=ctx,
                                                 stage=stage, out=out, cache=cache, seed=getattr(options, "seed", 0),
                                                 rerank=rerank, rerank_base=rerank_base, progress=progress, echo=echo)
        res_h = run_bakeoff(ds, built, k=k, depth=depth, measures=measures, cache=cache, progress=progress, ctx=ctx)
        res_s = run_bakeoff(syn_ds, built, k=k, depth=depth, measures=measures, cache=cache, progress=progress,
                            ctx=ctx, latency_sample=0)
        res_h.dataset = {**res_h.dataset, "source": spec.as_dict()}
        res_s.dataset = {**res_s.dataset, "source": {"beir": str(out / "truth")}}
        echo(f"[4/5] arms: {', '.join(s.name for s in specs)} on {len(judged)} human and {len(test_ids)} synthetic "
             "queries")
        human = res_h.stored()
        synthetic = _same_costs(human, res_s.stored())
        used = [m for m in measures if m in human.measures] or list(human.measures)
        test_set = set(test_ids)
        leak = {q: float(meta["leak"]) for q, meta in zip(truth.queries.ids, truth.queries.metadata)
                if q in test_set and isinstance(meta, Mapping) and isinstance(meta.get("leak"), (int, float))}
        lk = truth.provenance.get("leak") or {}
        figures = calibration_figures(human, synthetic, measures=used, leak=leak, n_resamples=n_resamples, seed=seed,
                                      alpha=alpha, leak_target=lk.get("target"),
                                      target_source=str(lk.get("target_source") or "default"))
        pooled = None
        if pool is not None:
            pooled = _pooled(syn_ds, res_s, built, human=human, measures=used, leak=leak, pool=pool,
                             llm=judge_llm, cache=cache, progress=progress, ctx=ctx, k=k, depth=depth,
                             n_resamples=n_resamples, seed=seed, alpha=alpha, leak_target=lk.get("target"),
                             target_source=str(lk.get("target_source") or "default"), generate=generate or {},
                             truth_dir=out / "truth", echo=echo)
        record = _record(llm=llm, syn=syn, ds=ds, spec=spec, n_judged=len(judged), human=human,
                         synthetic=synthetic, trained=trained, specs=specs, k=k, depth=depth,
                         n_resamples=n_resamples, figures=figures, pooled=pooled)
        _publish(record, stage=stage, out=out, res_h=res_h, res_s=res_s, pooled=pooled, cache=cache,
                 key=syn.ident["key"], corpus_fp=syn.corpus_fp)
        echo(f"[5/5] wrote {out / CALIBRATION_FILE}")
        return record
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _record(*, llm: LLMSpec, syn: _Synthetic, ds: Any, spec: Any, n_judged: int, human: StoredResults,
            synthetic: StoredResults, trained: dict[str, Any], specs: Sequence[Any], k: int, depth: int,
            n_resamples: int, figures: Mapping[str, Any], pooled: Mapping[str, Any] | None) -> dict[str, Any]:
    """The record written to ``calibration.json`` (schema ``bakeoff.calibration``, version 1)."""
    from .library_versions import bakeoff_version

    return {
        "schema": "bakeoff.calibration",
        "version": 1,
        "bakeoff": bakeoff_version(),
        "generator": {**syn.ident, "llm": str(llm), "weights_sha256": _weights_sha256(llm)},
        "corpus": {"name": ds.name, "fingerprint": syn.corpus_fp, "n_docs": len(ds.corpus), "source": spec.as_dict()},
        "human": {"split": ds.split, "n_queries": n_judged, "fingerprints": dict(human.fingerprints)},
        "synthetic": {"n_queries": len(syn.test_ids), "sampled": syn.truth.provenance["counts"].get("sampled"),
                      "kept": syn.kept, "split": syn.split, "fingerprints": dict(synthetic.fingerprints)},
        "fine_tuned": trained,
        "arms": [{"name": s.name, "type": s.type, "options": dict(s.options)} for s in specs],
        "k": k,
        "depth": depth,
        "n_resamples": n_resamples,
        **figures,
        **({"pooled": pooled["record"]} if pooled else {}),
    }


def _checked_arms(arms: Sequence[str], *, train_fraction: float, rerank_base: str) -> list[Any]:
    """The parsed arm specs, after every refusal that needs no work: the train fraction, repeated names, too
    few arms, names taken by the fine-tuned arms, a rerank base outside the set."""
    from .runner.config import parse_arm_spec

    if not 0.0 <= train_fraction < 1.0:
        raise ConfigError(f"--train-fraction must be in [0, 1) (0: no fine-tuned arms), got {train_fraction:g}")
    specs = [parse_arm_spec(a) for a in arms]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ConfigError(f"arm names repeat: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    if len(specs) < MIN_ARMS:
        raise ConfigError(f"calibration needs at least {MIN_ARMS} arms (an ordering of {len(specs)} has "
                          f"{len(specs) * (len(specs) - 1) // 2} pair(s)); got {', '.join(names) or 'none'}")
    if train_fraction > 0:
        clash = sorted(set(names) & set(FINE_TUNED_ARMS))
        if clash:
            raise ConfigError(f"arm name(s) {', '.join(clash)} are taken by the fine-tuned arms; rename them or "
                              "pass --train-fraction 0")
        if rerank_base not in names:
            raise ConfigError(f"the fine-tuned arms mine negatives from and rerank the arm {rerank_base!r}, which "
                              f"is not in the arm set ({', '.join(names)}); add it, choose --rerank-base or pass "
                              "--train-fraction 0")
    return specs


def _opened(dataset: str, out: Path) -> tuple[Any, Any, list[str], str, dict[str, Any] | None]:
    """The dataset's spec, the dataset, its judged query ids, its corpus fingerprint and the calibration already
    in ``out`` (refused
    when the dataset is versioned, unjudged, or ``out`` holds another corpus's calibration)."""
    from .data.datasets import open_dataset

    spec = dataset_spec(dataset)
    ds, mask = open_dataset(spec)
    if mask is not None:
        raise ConfigError("calibration needs a plain judged corpus; versioned or citation-mined datasets "
                          "(as-of search) are not supported")
    judged = [q for q in ds.queries.ids if ds.qrels.relevant(q)]
    if not judged:
        raise InputError("this dataset has no human judgments (no query with a judged document); calibration "
                         "compares against them", path=spec.beir or spec.irds or dataset, field="qrels")
    corpus_fp = ds.corpus.fingerprint()
    existing = _existing(out)
    if existing is not None and (existing.get("corpus") or {}).get("fingerprint") != corpus_fp:
        raise InputError(f"holds a calibration of another corpus ({(existing.get('corpus') or {}).get('name')}); "
                         "choose another --out", path=out / CALIBRATION_FILE, field="corpus.fingerprint")
    return spec, ds, judged, corpus_fp, existing


@dataclass(frozen=True)
class _Synthetic:
    """The generated truth and its split: ids kept, train and test ids, the split record, the generator's
    identity and the corpus fingerprint."""

    truth: Any
    kept: int
    train_ids: list[str]
    test_ids: list[str]
    split: dict[str, Any]
    ident: dict[str, Any]
    corpus_fp: str


def _synthetic(ds: Any, corpus_fp: str, *, dataset: str, options: Any, llm: LLMSpec, cache: Cache | None, progress: bool,
               generate: Mapping[str, Any] | None, train_fraction: float, existing: dict[str, Any] | None,
               stage: Path, out: Path, echo: Callable[[str], Any]) -> _Synthetic:
    """Generate the truth into ``stage/truth`` (every query, ``test_fraction=1``) and split it by source
    document (:func:`split_by_document`); refuse an ``out`` that holds another generator's calibration, or a
    split with nothing to calibrate or train on."""
    from ._io import staged_as
    from .report.calibration import generator_identity
    from .truth.generation.generate import generate_truth

    opts = replace(options, test_fraction=1.0)
    with staged_as(stage, out):  # a failed write names the file as it will be called under OUT
        done = generate_truth(ds.corpus, options=opts, out=stage / "truth", llm=llm, cache=cache,
                              progress=progress, source=str(dataset),
                              **{"announce": lambda line: echo("      " + line), **dict(generate or {})})
    truth = done.truth
    if truth is None:
        raise ConfigError("calibration cannot use batch files: generate the truth interactively")
    prov = truth.provenance
    ident = generator_identity(prov)
    if existing is not None and (existing.get("generator") or {}).get("key") != ident["key"]:
        raise InputError("holds a calibration of another generator (identity "
                         f"{(existing.get('generator') or {}).get('key')}, this one {ident['key']}); choose "
                         "another --out", path=out / CALIBRATION_FILE, field="generator.key")
    kept = [q for q in truth.queries.ids if truth.qrels.relevant(q)]
    docs_of = {q: sorted(set(truth.qrels.relevant(q)) | ({str(m["source_doc"])} if isinstance(m, Mapping) and
                                                          m.get("source_doc") is not None else set()))
               for q, m in zip(truth.queries.ids, truth.queries.metadata) if q in set(kept)}
    seed = getattr(options, "seed", 0)
    train_ids, test_ids = split_by_document(kept, docs_of, train_fraction=train_fraction, seed=seed)
    n_syn = len(test_ids)
    split = {"train_fraction": train_fraction, "seed": seed, "by": "source document",
             "n_train_queries": len(train_ids), "n_test_queries": n_syn,
             "n_train_documents": len({d for q in train_ids for d in docs_of[q]}),
             "n_test_documents": len({d for q in test_ids for d in docs_of[q]})}
    echo(f"[2/5] truth: {len(kept)} synthetic queries kept of {prov['counts'].get('sampled')} sampled documents "
         f"(generator {ident['key']}: {ident['model']}); split by source document: {len(train_ids)} train, "
         f"{n_syn} test")
    if n_syn < 2:
        raise ConfigError(f"only {n_syn} synthetic test queries: nothing to calibrate; see the rejections of "
                          "the generation (more documents with -n, another --llm) or lower --train-fraction")
    if train_fraction > 0 and not train_ids:
        raise ConfigError(f"no synthetic train query of {len(kept)} kept: nothing to fine-tune on; raise -n or "
                          "pass --train-fraction 0")
    _write_split(stage / "truth", truth.qrels, train_ids, test_ids, split)
    return _Synthetic(truth, len(kept), list(train_ids), list(test_ids), split, ident, corpus_fp)


def _with_fine_tuned(built: list[Any], specs: list[Any], *, truth: Any, train_ids: list[str], ds: Any, ctx: Any,
                     stage: Path, out: Path, cache: Cache | None, seed: int, rerank: bool, rerank_base: str,
                     progress: bool, echo: Callable[[str], Any]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """The arm set with ``ft-dense`` (and with ``rerank`` ``ft-rerank``) trained on the train split added, their
    specs and the training records; the arm set unchanged when there is no train split."""
    if not train_ids:
        echo("[3/5] fine-tuning: none (--train-fraction 0)")
        return built, specs, {}
    from .runner.config import ArmSpec

    by_name = {a.name: a for a in built}
    echo(f"[3/5] fine-tuning on the synthetic train split ({len(train_ids)} queries)")
    ft_arms, trained = fine_tuned_arms(
        corpus=ds.corpus, queries={q: truth.queries[q].text for q in train_ids},
        positives={q: sorted(truth.qrels.relevant(q)) for q in train_ids}, first_stage=by_name[rerank_base],
        ctx=ctx, stage=stage / "models", cache=cache, seed=seed, rerank=rerank, progress=progress, echo=echo)
    for t in trained.values():  # models kept in the stage (no cache) move to OUT/models with the rest
        if Path(t["model"]).parent == stage / "models":
            t["model"] = str(out / "models" / Path(t["model"]).name)
    specs = [*specs, ArmSpec("ft-dense", "dense", {"model": trained["ft-dense"]["model"]})]
    if "ft-rerank" in trained:
        specs.append(ArmSpec("ft-rerank", "rerank", {"base": rerank_base, "model": trained["ft-rerank"]["model"],
                                                     "top": RERANK_TOP}))
    return [*built, *ft_arms], specs, trained


def _publish(record: dict[str, Any], *, stage: Path, out: Path, res_h: Any, res_s: Any, pooled: dict[str, Any] | None,
             cache: Cache | None, key: str, corpus_fp: str) -> None:
    """Write the results, the pooled truth and the record into ``stage``, then move them into ``out`` (the
    record last, so a complete record means a complete folder) and copy the record into the cache, where
    ``bakeoff report`` finds it for any run of this generator."""
    from ._io import atomic_open, atomic_write_bytes, atomic_write_json, staged_as
    from .data.writers import write_beir_qrels

    with staged_as(stage, out):  # a failed write names the file as it will be called under OUT
        res_h.write(stage / "human")
        res_s.write(stage / "synthetic")
        if pooled:
            pooled["results"].write(stage / "pooled")
            atomic_write_json(stage / "pooled" / "assessment.json", pooled["assessment"])
            write_beir_qrels(pooled["qrels"], stage / "truth" / "qrels" / "pooled.tsv")
        with atomic_open(stage / CALIBRATION_FILE) as f:
            json.dump(_json_safe(record), f, indent=2, ensure_ascii=False)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("truth", "human", "synthetic", "pooled", "models"):  # the record goes last: complete
        if name in ("pooled", "models") and not (stage / name).exists():
            continue
        if (out / name).exists():
            shutil.rmtree(out / name)
        os.replace(stage / name, out / name)
    os.replace(stage / CALIBRATION_FILE, out / CALIBRATION_FILE)
    if cache is not None:
        from .report.calibration import RECORDS_DIR

        copy = Path(cache.root) / RECORDS_DIR / key / f"{corpus_fp[:16]}.json"
        copy.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(copy, (out / CALIBRATION_FILE).read_bytes())


def _pooled(syn_ds: Any, res_s: Any, built: Sequence[Any], *, human: StoredResults, measures: Sequence[str],
            leak: Mapping[str, float], pool: Any, llm: LLMSpec, cache: Cache | None, progress: bool, ctx: Any, k: int,
            depth: int, n_resamples: int, seed: int, alpha: float, leak_target: Any, target_source: str,
            generate: Mapping[str, Any], truth_dir: Path, echo: Callable[[str], Any]) -> dict[str, Any]:
    """Judge the arms' pooled top ``pool.depth`` of the synthetic test queries, widen the synthetic truth
    with the judgments (:func:`~bakeoff.truth.judging.assess.pooled_qrels`), evaluate the same runs on it and
    compute the calibration figures again. Returns the record section, the results, the qrels and the
    assessment provenance (with every judged pair)."""
    from .data.model import Dataset
    from .report.calibration import calibration_figures
    from .runner.run import run_bakeoff
    from .truth.judging.assess import POOLED_GRADE, SOURCE_GRADE, judge_holes, pooled_qrels

    runs = {a.name: a.run for a in res_s.arms}
    echo(f"[4/5] pooled judgments: the top {pool.depth} of {len(runs)} arms for {len(syn_ds.queries)} synthetic "
         f"queries, judged by {llm} ({pool.method})")
    done = judge_holes(syn_ds, runs, query_ids=list(syn_ds.queries.ids), llm=llm, options=pool, cache=cache,
                       concurrency=generate.get("concurrency"), price=generate.get("price"), progress=progress)
    qrels = pooled_qrels(syn_ds.qrels, done.assessed(), relevant_from=pool.relevant_from)
    pooled_ds = Dataset(syn_ds.corpus, syn_ds.queries, qrels, name=f"{syn_ds.name}, pooled", split="pooled")
    res_p = run_bakeoff(pooled_ds, built, k=k, depth=depth, measures=measures, cache=cache, progress=progress,
                        ctx=ctx, latency_sample=0)
    res_p.dataset = {**res_p.dataset, "source": {"beir": str(truth_dir), "split": "pooled"}}
    pooled = _same_costs(human, res_p.stored())
    figures = calibration_figures(human, pooled, measures=measures, leak=leak, n_resamples=n_resamples, seed=seed,
                                  alpha=alpha, leak_target=leak_target, target_source=target_source)
    counts = done.counts()
    added = [sum(1 for g in qrels[q].values() if g == POOLED_GRADE) for q in qrels]
    rule = (f"the source document(s) at grade {SOURCE_GRADE}; a pooled document at {POOLED_GRADE} when the judge "
            f"grades it >= {pool.relevant_from}, else 0")
    echo(f"      {counts['assessed']} of {counts['holes']} pooled documents judged in {done.seconds:.0f} s; "
         f"{sum(added)} relevant ({sum(added) / max(1, len(added)):.1f} per query beside its source)")
    judge = done.provenance(arms=list(runs))
    record = {"depth": pool.depth, "judge": {k_: judge[k_] for k_ in ("llm", "prompt", "parameters", "counts",
                                                                        "grades", "usage", "seconds")},
              "grading": rule, "relevant_added_per_query": round(sum(added) / max(1, len(added)), 3),
              "queries_with_added": sum(1 for a in added if a), "fingerprints": dict(pooled.fingerprints),
              **figures}
    return {"record": record, "results": res_p, "qrels": qrels,
            "assessment": {"schema": "bakeoff.assessment", "schema_version": 1, **judge, "merge_rule": rule,
                           "judgments": done.records()}}


def _write_split(folder: Path, qrels: Any, train_ids: Sequence[str], test_ids: Sequence[str],
                 split: Mapping[str, Any]) -> None:
    """Rewrite the generated BEIR folder's ``qrels/train.tsv`` and ``qrels/test.tsv`` with the split by
    source document, and record the split in its ``provenance.json``."""
    from ._io import atomic_write_bytes, atomic_write_json

    for name, ids in (("train", train_ids), ("test", test_ids)):
        rows = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q in ids for d, g in sorted(qrels[q].items())]
        atomic_write_bytes(folder / "qrels" / f"{name}.tsv", ("\n".join(rows) + "\n").encode("utf-8"))
    prov_path = folder / "provenance.json"
    prov = json.loads(prov_path.read_text(encoding="utf-8"))
    prov["split"] = {**split, "rule": "source documents grouped (queries sharing a document), groups permuted "
                                      "with numpy default_rng(seed), the first round(train_fraction * groups) train"}
    atomic_write_json(prov_path, prov)


def _json_safe(node: Any) -> Any:
    """JSON has no NaN/inf: non-finite floats become ``None``."""
    import math

    if isinstance(node, float):
        return node if math.isfinite(node) else None
    if isinstance(node, Mapping):
        return {str(k): _json_safe(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_json_safe(v) for v in node]
    return node
