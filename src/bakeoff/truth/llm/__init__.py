"""The LLM side of ground truth: the OpenAI-compatible client (:mod:`.client`), its structured-output forms
(:mod:`.structured`), what ``--llm`` names (:mod:`.spec`), the local ``llama-server`` launcher
(:mod:`.local_server`) and :func:`~bakeoff.truth.llm.open.open_llm`, which opens the one ``--llm`` names.

Imports nothing else of :mod:`bakeoff.truth` (an import-linter contract)."""
