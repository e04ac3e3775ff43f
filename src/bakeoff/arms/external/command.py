"""The ``command`` arm: a retriever that is an executable.

bakeoff runs the command once per search, writes the queries to its standard
input as JSON lines ``{"id": QID, "text": TEXT, "k": K}`` and reads a TREC run
from its standard output, one hit per line::

    QID Q0 DOCID RANK SCORE TAG

(whitespace-separated; RANK is ignored, as trec_eval ignores it; blank lines
and lines starting with ``#`` are skipped). Hits are ordered by the package tie
rule and cut at ``k``; queries without a line get an empty ranking.

A non-zero exit status, a timeout, a line without six fields, a non-numeric
score or an unknown query id raises :class:`~bakeoff.arms.external.ExternalError`
naming the stdout line (and the last line of stderr for a failed exit); nothing
is cached. The command is split with :func:`shlex.split` (no shell) unless a list
is given. Masked documents (as-of search) are dropped after retrieval.
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
from collections.abc import Sequence
from typing import Any

from ...data.model import Corpus, Queries, Run
from ...errors import ConfigError
from ...validation import Positive
from ..base import Arm, ArmContext, DocMask, register_arm
from ._common import ExternalError, apply_mask, ranked_from_hits

__all__ = ["CommandArm", "parse_trec_stdout"]


def parse_trec_stdout(text: str, *, known: set[str], who: str) -> dict[str, list[tuple[str, float]]]:
    """Hits per query from TREC run text; raises ExternalError naming the bad line."""
    hits: dict[str, list[tuple[str, float]]] = {}
    for no, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = stripped.split()
        if len(parts) != 6:
            raise ExternalError(f"{who}: stdout line {no}: expected 6 fields 'QID Q0 DOCID RANK SCORE TAG', "
                                f"got {len(parts)}: {stripped[:80]!r}")
        qid, _q0, doc, _rank, score_text, _tag = parts
        try:
            score = float(score_text)
        except ValueError:
            raise ExternalError(f"{who}: stdout line {no}: score {score_text!r} is not a number") from None
        if math.isnan(score):
            raise ExternalError(f"{who}: stdout line {no}: score is NaN")
        if qid not in known:
            raise ExternalError(f"{who}: stdout line {no}: unknown query id {qid!r}")
        hits.setdefault(qid, []).append((doc, score))
    return hits


@register_arm("command", code_version="1")
class CommandArm(Arm):
    """Run ``command`` with queries as JSONL on stdin; read a TREC run from stdout."""

    def __init__(
        self,
        *,
        name: str | None = None,
        command: str | Sequence[str],
        timeout: Positive | None = None,
        cwd: str | None = None,
        version: str | None = None,
    ) -> None:
        super().__init__(name=name)
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if not argv:
            raise ConfigError(f"command arm {self.name!r}: empty command")
        self.argv = argv
        self.timeout = None if timeout is None else float(timeout)
        self.cwd = cwd
        self.version = None if version is None else str(version)
        self._corpus: Corpus | None = None

    def config(self) -> dict[str, Any]:
        return {"command": self.argv, "cwd": self.cwd, "version": self.version}

    def index(self, corpus: Corpus, *, ctx: ArmContext) -> None:
        self._corpus = corpus

    def search(self, queries: Queries, *, k: int, ctx: ArmContext, mask: DocMask | None = None) -> Run:
        if self._corpus is None:
            raise RuntimeError("index() must run before search()")
        who = f"command arm {self.name!r} ({shlex.join(self.argv)[:60]})"
        stdin = "".join(json.dumps({"id": q, "text": t, "k": k}, ensure_ascii=False) + "\n"
                        for q, t in zip(queries.ids, queries.texts))
        try:
            proc = subprocess.run(self.argv, input=stdin, capture_output=True, text=True, encoding="utf-8",
                                  errors="replace", timeout=self.timeout, cwd=self.cwd, check=False)
        except FileNotFoundError:
            raise ExternalError(f"{who}: executable {self.argv[0]!r} not found") from None
        except PermissionError:
            raise ExternalError(f"{who}: {self.argv[0]!r} is not executable") from None
        except subprocess.TimeoutExpired:
            raise ExternalError(f"{who}: timed out after {self.timeout:g} s") from None
        if proc.returncode != 0:
            err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            tail = f": {err[-1].strip()[:200]}" if err else ""
            raise ExternalError(f"{who}: exited with status {proc.returncode}{tail}")
        hits = parse_trec_stdout(proc.stdout, known=set(queries.ids), who=who)
        out: dict[str, tuple[tuple[str, float], ...]] = {}
        for qid in queries.ids:
            pairs = hits.get(qid, [])
            ranked = ranked_from_hits([d for d, _ in pairs], [s for _, s in pairs], len(pairs))
            m = None if mask is None else mask.get(qid)
            out[qid] = apply_mask(ranked, self._corpus, m)[:k]
        return Run.from_ranked(self.name, out)
