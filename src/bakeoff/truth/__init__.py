"""Ground truth builders: citation-mined sets over dated, versioned target corpora.

Modules are imported on demand (``bakeoff.truth.versions``, ``bakeoff.truth.citations``,
``bakeoff.truth.mined``); importing this package does nothing else.
"""
