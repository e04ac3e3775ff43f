"""``bakeoff calibrate``: how far a generator's synthetic verdict matches the human one, on a judged corpus.

1. **dataset** — a corpus with human judgments: a BEIR folder, an ``ir_datasets`` name or a TOML
   file's ``[dataset]`` (:func:`bakeoff.data.datasets.open_dataset`); a dataset without judged
   queries is refused.
2. **truth** — synthetic queries over the same corpus's documents, written by the generator the
   user would use (:func:`bakeoff.truth.generate.generate_truth` with the caller's options; every
   kept query is evaluated: the test fraction is 1).
3. **arms** — one arm set (default :data:`DEFAULT_ARMS`) run against both truths through one
   :class:`~bakeoff.runner.context.Context`, so indexes and document embeddings are built once
   and shared (every run is cached as usual). Costs (latency, $/1k queries, footprint) are
   measured on the human side and copied to the synthetic side, so the two verdicts can differ
   only through the truth.
4. **figures** — :func:`bakeoff.report.calibration.calibration_figures` (τ, τ_AP, CIs, top-1 and
   verdict agreement, per-arm bias by leak bucket, human-significant pairs kept or reversed).
5. **record** — ``calibration.json`` (:data:`CALIBRATION_FILE`): the generator identity
   (:func:`~bakeoff.report.calibration.generator_identity`, plus the weights' sha256 of the bundled
   model), the corpus fingerprint, the arm set and the figures; beside it ``truth/`` (the
   generated BEIR folder), ``human/results.json`` and ``synthetic/results.json``. A copy goes to the
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
from dataclasses import replace
from pathlib import Path
from typing import Any

from .cache import Cache
from .errors import ConfigError, InputError

__all__ = [
    "CALIBRATION_FILE",
    "DEFAULT_ARMS",
    "DEFAULT_MEASURES",
    "MIN_ARMS",
    "dataset_spec",
    "run_calibration",
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
#: Not in: a reranker (the bundled cross-encoder has an untrained head, not a quality anchor) and a
#: fine-tuned embedder (it would need a training run per calibration).
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


def _weights_sha256(llm: str) -> str | None:
    """sha256 of the GGUF file of a local model (``--llm local``, ``local:NAME|PATH``); remote models have no
    weights here."""
    if llm != "local" and not llm.startswith("local:"):
        return None
    import hashlib

    from .models.gguf import resolve_local_model

    h = hashlib.sha256()
    with open(resolve_local_model(llm.partition(":")[2]).path, "rb") as f:
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


def _same_costs(human: Mapping[str, Any], synthetic: dict[str, Any]) -> None:
    """Give each synthetic arm the human side's measured costs (latency, $/1k, footprint)."""
    by = {a["name"]: a for a in human["arms"]}
    for arm in synthetic["arms"]:
        h = by[arm["name"]]
        timing = dict(arm.get("timing") or {})
        for key in ("latency", "index_total_s"):
            if key in (h.get("timing") or {}):
                timing[key] = h["timing"][key]
        arm["timing"] = timing
        for key in ("cost", "footprint"):
            if key in h:
                arm[key] = h[key]


def run_calibration(
    *,
    dataset: str,
    out: Path,
    options: Any,
    llm: str = "local",
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
    echo: Callable[[str], Any] = print,
) -> dict[str, Any]:
    """Calibrate the generator of ``options`` (describe or cluster options of
    :mod:`bakeoff.truth.synthetic`) and ``llm`` on ``dataset`` (module docstring); ``generate`` holds
    more keyword arguments of :func:`~bakeoff.truth.generate.generate_truth` (``answerability``,
    ``specificity``, ``concurrency``, ``price``, ``reasoning_effort`` ...). Returns the record written to
    ``out/calibration.json``.
    """
    from .data.datasets import open_dataset
    from .data.model import Dataset
    from .report.calibration import calibration_figures, generator_identity
    from .runner.config import build_arms, parse_arm_spec
    from .runner.context import Context
    from .runner.run import run_bakeoff
    from .truth.generate import generate_truth

    # --- everything that can be refused is checked before any work ---
    specs = [parse_arm_spec(a) for a in arms]
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ConfigError(f"arm names repeat: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    if len(specs) < MIN_ARMS:
        raise ConfigError(f"calibration needs at least {MIN_ARMS} arms (an ordering of {len(specs)} has "
                          f"{len(specs) * (len(specs) - 1) // 2} pair(s)); got {', '.join(names) or 'none'}")
    built = build_arms(specs)
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
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.calibrating-", dir=out.parent))
    try:
        echo(f"[1/4] dataset: {ds.name}, {len(ds.corpus)} documents, {len(judged)} judged queries ({spec.split})")
        opts = replace(options, test_fraction=1.0)
        from ._io import staged_as

        with staged_as(stage, out):  # a failed write names the file as it will be called under OUT
            done = generate_truth(ds.corpus, options=opts, out=stage / "truth", llm=llm, cache=cache,
                                  progress=progress, source=str(dataset), **dict(generate or {}))
        truth = done.truth
        if truth is None:
            raise ConfigError("calibration cannot use batch files: generate the truth interactively")
        prov = truth.provenance
        ident = generator_identity(prov)
        if existing is not None and (existing.get("generator") or {}).get("key") != ident["key"]:
            raise InputError("holds a calibration of another generator (identity "
                             f"{(existing.get('generator') or {}).get('key')}, this one {ident['key']}); choose "
                             "another --out", path=out / CALIBRATION_FILE, field="generator.key")
        n_syn = len(truth.queries.ids)
        echo(f"[2/4] truth: {n_syn} synthetic queries kept of {prov['counts'].get('sampled')} sampled documents "
             f"(generator {ident['key']}: {ident['model']})")
        if n_syn < 2:
            raise ConfigError(f"only {n_syn} synthetic queries were kept: nothing to calibrate; see "
                              "the rejections of the generation (more documents with -n, another --llm)")
        syn_ds = Dataset(ds.corpus, truth.queries, truth.qrels, name=f"{ds.name} (synthetic)", split="test")
        ctx = Context(corpus=ds.corpus, cache=cache, progress=progress)
        res_h = run_bakeoff(ds, built, k=k, depth=depth, measures=measures, cache=cache, progress=progress, ctx=ctx)
        res_s = run_bakeoff(syn_ds, built, k=k, depth=depth, measures=measures, cache=cache, progress=progress,
                            ctx=ctx, latency_sample=0)
        res_h.dataset = {**res_h.dataset, "source": spec.as_dict()}
        res_s.dataset = {**res_s.dataset, "source": {"beir": str(out / "truth")}}
        echo(f"[3/4] arms: {', '.join(names)} on {len(judged)} human and {n_syn} synthetic queries")
        human, synthetic = res_h.to_dict(), res_s.to_dict()
        _same_costs(human, synthetic)
        used = [m for m in measures if m in human["measures"]] or list(human["measures"])
        leak = {q: float(meta["leak"]) for q, meta in zip(truth.queries.ids, truth.queries.metadata)
                if isinstance(meta, Mapping) and isinstance(meta.get("leak"), (int, float))}
        figures = calibration_figures(human, synthetic, measures=used, leak=leak, n_resamples=n_resamples, seed=seed,
                                      alpha=alpha)
        from .versions import bakeoff_version

        record = {
            "schema": "bakeoff.calibration",
            "version": 1,
            "bakeoff": bakeoff_version(),
            "generator": {**ident, "llm": llm, "weights_sha256": _weights_sha256(llm)},
            "corpus": {"name": ds.name, "fingerprint": corpus_fp, "n_docs": len(ds.corpus),
                       "source": spec.as_dict()},
            "human": {"split": ds.split, "n_queries": len(judged), "fingerprints": human["dataset"]["fingerprints"]},
            "synthetic": {"n_queries": n_syn, "sampled": prov["counts"].get("sampled"),
                          "fingerprints": synthetic["dataset"]["fingerprints"]},
            "arms": [{"name": s.name, "type": s.type, "options": dict(s.options)} for s in specs],
            "k": k,
            "depth": depth,
            "n_resamples": n_resamples,
            **figures,
        }
        from ._io import atomic_open

        with staged_as(stage, out):  # a failed write names the file as it will be called under OUT
            res_h.write(stage / "human")
            res_s.write(stage / "synthetic")
            with atomic_open(stage / CALIBRATION_FILE) as f:
                json.dump(_json_safe(record), f, indent=2, ensure_ascii=False)
        out.mkdir(parents=True, exist_ok=True)
        for name in ("truth", "human", "synthetic"):  # the record goes last: a folder with it is complete
            if (out / name).exists():
                shutil.rmtree(out / name)
            os.replace(stage / name, out / name)
        os.replace(stage / CALIBRATION_FILE, out / CALIBRATION_FILE)
        if cache is not None:  # where bakeoff report finds it for any run of this generator
            from ._io import atomic_write_bytes
            from .report.calibration import RECORDS_DIR

            copy = Path(cache.root) / RECORDS_DIR / ident["key"] / f"{corpus_fp[:16]}.json"
            copy.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(copy, (out / CALIBRATION_FILE).read_bytes())
        echo(f"[4/4] wrote {out / CALIBRATION_FILE}")
        return record
    finally:
        shutil.rmtree(stage, ignore_errors=True)


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
