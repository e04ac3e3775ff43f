"""Ground truth builders: LLM-written queries (describe / cluster modes), the leak metric,
the OpenAI-compatible client and the embedded local LLM; and citation-mined sets over dated,
versioned target corpora (``bakeoff.data.versions``, ``bakeoff.truth.citations``,
``bakeoff.truth.mined``, imported on demand). Heavy dependencies (httpx, pydantic,
llama-cpp-python) are imported only when used."""

from .leak import leak, leak_histogram, leak_stats, rare_terms
from .llm import ChatRequest, LLMClient, LLMConfig, Price, ingest_batch, parse_llm_spec, write_batch
from .local_llm import LocalLLMServer
from .repair import GradeMap, repair_question
from .synthetic import ClusterOptions, DescribeOptions, SyntheticTruth, cluster_truth, describe_truth

__all__ = [
    "ChatRequest", "ClusterOptions", "DescribeOptions", "GradeMap", "LLMClient", "LLMConfig", "LocalLLMServer",
    "Price", "SyntheticTruth", "cluster_truth", "describe_truth", "ingest_batch", "leak", "leak_histogram",
    "leak_stats", "parse_llm_spec", "rare_terms", "repair_question", "write_batch",
]
