"""Data model, loaders and writers."""

from .clean import CleanOptions
from .loaders import (
    FieldMap,
    LoadReport,
    load_beir,
    load_ir_datasets,
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

__all__ = [
    "CleanOptions", "Corpus", "Dataset", "Document", "FieldMap", "LoadReport", "Qrels", "Queries",
    "Query", "Run", "load_beir", "load_ir_datasets", "rank", "read_beir_corpus", "read_beir_queries",
    "read_folder", "read_qrels", "read_records", "read_trec_run", "top_k", "top_k_indices",
    "write_beir", "write_beir_qrels", "write_trec_qrels", "write_trec_run",
]
