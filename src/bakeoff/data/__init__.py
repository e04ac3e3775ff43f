"""Data model, loaders and writers.

Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`): ``from bakeoff.data
import Corpus`` imports :mod:`.model` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .clean import CleanOptions
    from .loaders import (
        FieldMap,
        LoadReport,
        load_beir,
        load_files,
        load_ir_datasets,
        open_corpus,
        read_beir_corpus,
        read_beir_queries,
        read_folder,
        read_qrels,
        read_records,
        read_trec_run,
    )
    from .model import Corpus, Dataset, Document, Qrels, Queries, Query, Run
    from .ranking import rank, top_k, top_k_indices
    from .writers import write_beir, write_beir_qrels, write_trec_qrels, write_trec_run

_EXPORTS = {
    "CleanOptions": ".clean",
    **dict.fromkeys(("FieldMap", "LoadReport", "load_beir", "load_files", "load_ir_datasets", "open_corpus",
                     "read_beir_corpus", "read_beir_queries", "read_folder", "read_qrels", "read_records",
                     "read_trec_run"), ".loaders"),
    **dict.fromkeys(("Corpus", "Dataset", "Document", "Qrels", "Queries", "Query", "Run"), ".model"),
    **dict.fromkeys(("rank", "top_k", "top_k_indices"), ".ranking"),
    **dict.fromkeys(("write_beir", "write_beir_qrels", "write_trec_qrels", "write_trec_run"), ".writers"),
}

#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = [
    "CleanOptions", "Corpus", "Dataset", "Document", "FieldMap", "LoadReport", "Qrels", "Queries", "Query", "Run",
    "load_beir", "load_files", "load_ir_datasets", "open_corpus", "rank", "read_beir_corpus", "read_beir_queries",
    "read_folder", "read_qrels", "read_records", "read_trec_run", "top_k", "top_k_indices", "write_beir",
    "write_beir_qrels", "write_trec_qrels", "write_trec_run",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
