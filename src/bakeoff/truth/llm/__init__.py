"""The LLM side of ground truth: the OpenAI-compatible client (:mod:`.client`), its structured-output forms
(:mod:`.structured`), what ``--llm`` names (:mod:`.spec`), the local ``llama-server`` launcher
(:mod:`.local_server`) and :func:`~bakeoff.truth.llm.open.open_llm`, which opens the one ``--llm`` names.

The client is composed of private parts, one concern each: the servers and requests in flight
(``_transport``), the structured-output form settled with the server (``_negotiation``), a request's wire body
and cache key (``_request``), reading and validating an answer (``_answers``), its cache entries
(``_answer_cache``) and what it costs (``_accounting``).

Imports nothing else of :mod:`bakeoff.truth` (an import-linter contract)."""
