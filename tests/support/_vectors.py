"""A test helper: an arm over fixed embedding matrices with an independent exact search
(numpy matmul + the package tie rule), standing in for a dense arm where a model is not needed."""

from __future__ import annotations

from typing import Any

import numpy as np

from bakeoff.arms.base import Arm, DocMask
from bakeoff.data.model import Corpus, Queries, Run
from bakeoff.data.ranking import top_k_indices
from bakeoff.runner.context import Context


class FixedVectors(Arm):
    type = "fixed-vectors"

    def __init__(self, *, name: str = "vec", docs: np.ndarray, queries: dict[str, np.ndarray]) -> None:
        super().__init__(name=name)
        self.docs = np.ascontiguousarray(docs, dtype=np.float32)
        self.qvecs = queries
        self.calls = {"corpus": 0, "queries": 0}

    def config(self) -> dict[str, Any]:
        import hashlib

        h = hashlib.sha256(self.docs.tobytes())
        for q in sorted(self.qvecs):
            h.update(q.encode() + np.asarray(self.qvecs[q], dtype=np.float32).tobytes())
        return {"vectors": h.hexdigest()}

    def embed_corpus(self, corpus: Corpus, *, ctx: Context) -> np.ndarray:
        self.calls["corpus"] += 1
        return self.docs

    def embed_queries(self, queries: Queries, *, ctx: Context) -> np.ndarray:
        self.calls["queries"] += 1
        return np.stack([self.qvecs[q] for q in queries.ids]).astype(np.float32)

    def index(self, corpus: Corpus, *, ctx: Context) -> None:
        self._ids = list(corpus.ids)

    def search(self, queries: Queries, *, k: int, ctx: Context, mask: DocMask | None = None) -> Run:
        q = self.embed_queries(queries, ctx=ctx)
        out = {}
        for j, qid in enumerate(queries.ids):
            s = (self.docs @ q[j]).astype(np.float64)
            if mask is not None and qid in mask:
                s = np.where(mask[qid], s, -np.inf)
            idx = top_k_indices(s, self._ids, k)
            out[qid] = tuple((self._ids[i], float(s[i])) for i in idx)
        return Run.from_ranked(self.name, out)


def random_unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)
