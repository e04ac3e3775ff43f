"""Reopening a stored bake-off: its ``results.json``, its TREC runs, and the dataset it ran on.

The dataset is reopened (:func:`bakeoff.data.datasets.open_dataset`) from ``dataset.source``
in ``results.json`` (the specification ``bakeoff run`` used; for ``bakeoff demo``, which
records no specification, the BEIR folder ``dataset.truth`` it wrote), with the search mode
the run recorded (``search_mode``, ``only_single``, ``queries_variant``), unless ``data=``
overrides the BEIR folder; its fingerprints must match the ones recorded, so a report or an
assessment never pairs results with a dataset that changed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from ..data.datasets import DatasetSpec, open_dataset
from ..data.judgments import is_sqlite
from ..data.loaders import read_trec_run
from ..data.model import Dataset, Run
from ..errors import InputError
from .results import StoredResults

__all__ = ["load_dataset", "load_runs", "results_path"]

log = logging.getLogger("bakeoff")


def results_path(path: str | Path) -> Path:
    p = Path(path)
    return p / "results.json" if p.is_dir() else p


def load_dataset(results: StoredResults, *, path: Path, data: str | Path | None = None) -> Dataset:
    """Reopen the dataset of ``results`` (read from ``path``) and check its fingerprints."""
    info = results.dataset
    split = info.split if info.split is not None else "test"
    src = dict(info.source) if isinstance(info.source, Mapping) else {}
    if not src and info.truth:  # bakeoff demo: the BEIR folder of its generated truth
        truth = Path(info.truth)
        if not truth.exists() and (path.parent / "truth").is_dir():  # recorded relative to where the demo ran
            truth = path.parent / "truth"
        src = {"beir": str(truth), "split": split}
    if data is not None:
        src = {"beir": str(data), "split": src.get("split", split)}
    if not src:
        raise InputError("results.json records no dataset source; pass --data BEIR_FOLDER", path=path,
                         field="dataset.source")
    for key in ("beir", "corpus", "queries", "qrels"):
        if src.get(key) and not Path(str(src[key])).exists():
            raise InputError(f"the dataset {key} {src[key]!r} recorded in results.json is gone (moved?); "
                             "pass --data BEIR_FOLDER", path=path, field=f"dataset.source.{key}")
    spec = DatasetSpec(**{k: v for k, v in src.items()
                          if k in ("beir", "irds", "corpus", "queries", "qrels", "split", "name")})
    mode = info.search_mode
    ds, _ = open_dataset(spec, as_of={"as_of": True, "latest": False}.get(mode) if mode else None,
                         only_single=info.only_single, unmasked=info.queries_variant == "unmasked")
    have = {"corpus": ds.corpus.fingerprint(), "queries": ds.queries.fingerprint(), "qrels": ds.qrels.fingerprint()}
    for key, fp in results.fingerprints.items():
        if key == "qrels" and fp != have[key] and src.get("qrels") and is_sqlite(Path(str(src["qrels"]))):
            db = src["qrels"]
            raise InputError(f"the judgments in {db} changed since the run (more judging since); a report needs the "
                             "judgments the run was scored on. Export a snapshot before judging on "
                             f"(bakeoff label export --db {db} --out SNAPSHOT) and run with --qrels "
                             "SNAPSHOT/qrels/test.tsv; or re-run bakeoff run on the database as it is now",
                             path=path, field="dataset.fingerprints.qrels")
        if key in have and fp != have[key]:
            raise InputError(f"the dataset's {key} changed since the run (fingerprint differs; or the run used "
                             "other field/cleaning options); report on the data the results were computed on",
                             path=path,
                             field=f"dataset.fingerprints.{key}")
    return ds


def load_runs(results: StoredResults, *, folder: Path) -> dict[str, Run]:
    """Each arm's run from ``run_file`` (relative to the results folder); arms without one are skipped."""
    runs = {}
    for a in results.arms:
        if not a.run_file:
            continue
        p = Path(a.run_file)
        p = p if p.is_absolute() else folder / p
        if not p.exists():
            raise InputError(f"run file of arm {a.name!r} is missing", path=p)
        runs[a.name] = read_trec_run(p, name=a.name)
    return runs
