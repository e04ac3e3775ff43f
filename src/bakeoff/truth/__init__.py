"""Ground truth builders: LLM-written queries (describe / cluster modes), the leak metric,
the OpenAI-compatible client and the embedded local LLM; and citation-mined sets over dated,
versioned target corpora (``bakeoff.data.versions``, ``bakeoff.truth.citations``,
``bakeoff.truth.mined``). Heavy dependencies (httpx, pydantic, llama-cpp-python) are
imported only when used.

Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .leak import leak, leak_histogram, leak_stats, rare_terms
    from .llm import ChatRequest, LLMClient, LLMConfig, Price, ingest_batch, write_batch
    from .llm_spec import LLMSpec
    from .local_llm import LocalLLMServer
    from .repair import GradeMap, repair_question
    from .synthetic import ClusterOptions, DescribeOptions, SyntheticTruth, cluster_truth, describe_truth

_EXPORTS = {
    **dict.fromkeys(("leak", "leak_histogram", "leak_stats", "rare_terms"), ".leak"),
    **dict.fromkeys(("ChatRequest", "LLMClient", "LLMConfig", "Price", "ingest_batch", "write_batch"), ".llm"),
    "LLMSpec": ".llm_spec",
    "LocalLLMServer": ".local_llm",
    "GradeMap": ".repair", "repair_question": ".repair",
    **dict.fromkeys(("ClusterOptions", "DescribeOptions", "SyntheticTruth", "cluster_truth", "describe_truth"),
                    ".synthetic"),
}

#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = [
    "ChatRequest", "ClusterOptions", "DescribeOptions", "GradeMap", "LLMClient", "LLMConfig", "LLMSpec", "LocalLLMServer",
    "Price", "SyntheticTruth", "cluster_truth", "describe_truth", "ingest_batch", "leak", "leak_histogram", "leak_stats",
    "rare_terms", "repair_question", "write_batch",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
