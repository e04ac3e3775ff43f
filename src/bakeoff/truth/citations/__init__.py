"""Citation-mined ground truth over dated, versioned target corpora (``bakeoff mine citations``): sources
(:mod:`.sources`), citation patterns (:mod:`.patterns`), mining one source (:mod:`.mining`) and the mined
dataset on disk (:mod:`.mined`). Independent of the LLM side of :mod:`bakeoff.truth`."""
