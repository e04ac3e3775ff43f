"""Ground truth builders, one subpackage per concern:

* :mod:`.llm` — the OpenAI-compatible client, structured output, ``--llm`` specs and the local
  ``llama-server`` launcher;
* :mod:`.filters` — the quality filters and scores of a generated query (leak, self-reference, drift,
  answerability, specificity);
* :mod:`.generation` — LLM-written queries (describe / cluster modes) and ``bakeoff generate``;
* :mod:`.judging` — the LLM assessor of unjudged documents (``bakeoff assess``);
* :mod:`.citations` — citation-mined sets over dated, versioned target corpora (``bakeoff.data.versions``).

Heavy dependencies (httpx, pydantic, llama-cpp-python) are imported only when used.
Names are re-exported lazily (PEP 562, :mod:`bakeoff._lazy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .filters.leak import leak, leak_histogram, leak_stats, rare_terms
    from .generation.clusters import ClusterOptions, cluster_truth
    from .generation.describe import DescribeOptions, describe_truth
    from .generation.repair import GradeMap, repair_question
    from .generation.synthetic import SyntheticTruth
    from .llm.client import ChatRequest, LLMClient, LLMConfig, Price, ingest_batch, write_batch
    from .llm.local_server import LocalLLMServer
    from .llm.spec import LLMSpec

_EXPORTS = {
    **dict.fromkeys(("leak", "leak_histogram", "leak_stats", "rare_terms"), ".filters.leak"),
    **dict.fromkeys(("ChatRequest", "LLMClient", "LLMConfig", "Price", "ingest_batch", "write_batch"), ".llm.client"),
    "LLMSpec": ".llm.spec",
    "LocalLLMServer": ".llm.local_server",
    "GradeMap": ".generation.repair", "repair_question": ".generation.repair",
    "ClusterOptions": ".generation.clusters", "cluster_truth": ".generation.clusters",
    "DescribeOptions": ".generation.describe", "describe_truth": ".generation.describe",
    "SyntheticTruth": ".generation.synthetic",
}

#: The same names as _EXPORTS, written out for type checkers (tests/test_api.py checks they agree).
__all__ = [
    "ChatRequest", "ClusterOptions", "DescribeOptions", "GradeMap", "LLMClient", "LLMConfig", "LLMSpec", "LocalLLMServer",
    "Price", "SyntheticTruth", "cluster_truth", "describe_truth", "ingest_batch", "leak", "leak_histogram", "leak_stats",
    "rare_terms", "repair_question", "write_batch",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
