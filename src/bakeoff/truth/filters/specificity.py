"""Specificity of a generated query: how much its source document raises its likelihood.

The query-likelihood criterion of InPars / UPR-style filters, scored by any causal language
model that exposes token log-probabilities of a *given* text::

    prefix(d) = "Document: " + d[:max_doc_chars] + "\\n\\nA question this document answers:"
    lp(q | d) = (1 / |T|) * sum_{t in T} log p(t | prefix(d), earlier tokens of T)
    specificity(q, d) = lp(q | d) - lp(q | b)

``T`` are the tokens of ``" " + q`` (tokenized on their own, without BOS, so the query tokens are
identical under every prefix; the space keeps the word boundary after the colon). The baseline
``b`` is either the empty document (``baseline="none"``: ``prefix("")``, one evaluation per
query) or the mean of ``lp(q | d')`` over ``n_random`` documents drawn (seeded) from the other
documents of the corpus (``baseline="random"``, the default: ``n_random + 1`` documents drawn once,
each pair averaging over the ``n_random`` ones — or all — that are not its own document). The
random baseline controls for what *any* document of the corpus makes likely ("how do I ... in
python" after any docstring); the empty document does not. A positive score means the document makes the
query more likely than no (or an unrelated) document does; generic questions that fit any
document score near 0, questions about something else below 0.

Log-probabilities come from a :class:`QueryLikelihood` backend:

* :class:`LlamaLikelihood` — a GGUF model in-process through llama-cpp-python (default: the model of
  ``--llm local``). It keeps its own KV cache: consecutive calls that share a document only
  decode the new query (see :meth:`LlamaLikelihood.token_logprobs`), and logits are requested
  only for the positions that predict query tokens (the 262k-entry vocabulary makes
  all-position logits the dominant cost). Weight repacking is off while the model loads (see
  :mod:`bakeoff.truth.llm.local_server`; ``BAKEOFF_LLAMA_REPACK=1`` turns it on).
* :class:`CompletionsLikelihood` — any OpenAI-compatible ``POST /v1/completions`` that echoes the
  prompt with log-probabilities (``echo=true, logprobs=1, max_tokens=1``): vLLM, the
  llama-cpp-python server (its echo path builds log-softmax rows of the whole context window in
  Python, so it is slow for a 262k vocabulary), ... Query tokens are the echoed tokens whose
  ``text_offset`` is at or after the end of the prefix.

Every ``lp`` is cached (kind ``specificity``) under ``{model identity, prefix text, query,
code_version}``, so a re-run decodes nothing.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

import numpy as np

from ...cache import Cache, cache_key
from ...environment import LLAMA_REPACK
from ...errors import BakeoffError, ConfigError
from ..llm.spec import LLMSpec
from . import score_filter
from .score_filter import score_text
from .thresholds import SPECIFICITY_THRESHOLD

if TYPE_CHECKING:
    from ...data.model import Corpus

__all__ = [
    "PROMPT",
    "CompletionsLikelihood",
    "LlamaLikelihood",
    "QueryLikelihood",
    "SpecificityOptions",
    "SpecificityScore",
    "open_likelihood",
    "random_others",
    "score_stats",
    "specificity_prefix",
    "specificity_scores",
]

log = logging.getLogger("bakeoff")

#: The scoring prompt; the query follows after one space.
PROMPT = "Document: {document}\n\nA question this document answers:"
CODE_VERSION = "1"

def specificity_prefix(document: str, *, max_doc_chars: int = 1500) -> str:
    """``prefix(d)`` of the module docstring; whitespace runs collapse to one space first."""
    text = " ".join(document.split())[:max_doc_chars]
    return PROMPT.format(document=text)


class QueryLikelihood(Protocol):
    """Token log-probabilities of a continuation given a prefix."""

    def identity(self) -> str:
        """Everything that changes the numbers (model file, library version); part of cache keys."""
        ...

    def logprobs(self, prefix: str, continuation: str) -> list[float]:
        """``log p`` (natural log) of each token of ``continuation`` after ``prefix``."""
        ...


# -- in-process llama.cpp --------------------------------------------------------------

@contextlib.contextmanager
def _no_repack() -> Iterator[None]:
    """Model loads inside this block get ``use_extra_bufts=False`` (llama.cpp's ``--no-repack``);
    ``BAKEOFF_LLAMA_REPACK=1`` keeps repacking. The patched default is restored on exit."""
    if LLAMA_REPACK.get():
        yield
        return
    import llama_cpp.llama_cpp as low

    original = low.llama_model_default_params

    def no_extra_bufts():
        params = original()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = no_extra_bufts
    try:
        yield
    finally:
        low.llama_model_default_params = original


def _log_softmax_at(logits: np.ndarray, token: int) -> float:
    """``log softmax(logits)[token]`` in float64."""
    x = logits.astype(np.float64)
    m = float(x.max())
    return float(x[token] - m - math.log(float(np.exp(x - m).sum())))


class LlamaLikelihood:
    """A GGUF model in-process (llama-cpp-python), scoring with prefix reuse (see module docstring).

    ``model_path`` defaults to the model of ``--llm local``; ``n_threads`` to ``$BAKEOFF_LLM_THREADS`` or 1 (the local server's rule: spin-waiting
    threads collapse on a contended machine). Not thread-safe; :meth:`close` frees the model.
    """

    def __init__(self, *, model_path: Path | None = None, n_ctx: int = 2048, n_batch: int = 512,
                 n_threads: int | None = None) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            from ...errors import MissingDependencyError

            raise MissingDependencyError("llama-cpp-python", "llm", "the specificity filter") from exc
        from ...models.gguf import resolve_local_model
        from ..llm.local_server import default_threads

        self.model_path = Path(model_path) if model_path else resolve_local_model("").path
        threads = n_threads or default_threads()
        with _no_repack():
            self._llm = llama_cpp.Llama(model_path=str(self.model_path), n_ctx=n_ctx, n_batch=n_batch,
                                        n_ubatch=n_batch, n_threads=threads, n_threads_batch=threads,
                                        logits_all=False, verbose=False)
        self._low = llama_cpp
        self.n_ctx, self.n_batch = n_ctx, n_batch
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self._tokens: list[int] = []  # what the KV cache holds (sequence 0)
        self._version = getattr(llama_cpp, "__version__", "?")
        self.decoded_tokens = 0

    def identity(self) -> str:
        repack = "repack" if LLAMA_REPACK.get() else "norepack"
        return f"{self.model_path.name}@llama-cpp-python-{self._version}+{repack}"

    def close(self) -> None:
        if self._batch is not None:
            self._low.llama_batch_free(self._batch)
            self._batch = None
        self._llm.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def tokenize(self, text: str, *, bos: bool) -> list[int]:
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False))

    def logprobs(self, prefix: str, continuation: str) -> list[float]:
        head = self.tokenize(prefix, bos=True)
        tail = self.tokenize(continuation, bos=False)
        return self.token_logprobs(head, tail)

    def forget(self) -> None:
        """Let the next call decode its prefix from the start (the KV cache is cleared then)."""
        self._tokens = []

    def token_logprobs(self, head: Sequence[int], tail: Sequence[int]) -> list[float]:
        """``log p(tail[i] | head + tail[:i])`` for each i.

        When the previous call had the same ``head``, its KV cache is reused and only ``[head[-1]] + tail``
        is decoded; otherwise the cache is cleared and ``head + tail`` decoded from the start (never a
        partial reuse). So a score depends on its own (prefix, query) and on one thing more: whether it was
        the first of a run of calls with that prefix. Quantized matrix products round differently for
        different batch shapes (a few hundredths of a nat per token on the bundled models), and
        :func:`specificity_scores` keeps every run of one prefix together, in one process, in job order."""
        if not tail:
            return []
        tokens = list(head) + list(tail)
        if len(tokens) > self.n_ctx:
            raise BakeoffError(f"prompt of {len(tokens)} tokens exceeds the context window of {self.n_ctx}")
        need_from = len(head) - 1  # position whose logits predict tail[0]
        mem = self._low.llama_get_memory(self._llm.ctx)
        if self._tokens[:len(head)] == list(head) and self._low.llama_memory_seq_rm(mem, -1, need_from, -1):
            start = need_from
        else:
            self._low.llama_memory_clear(mem, True)
            start = 0
        self._tokens = tokens[:start]
        return self._decode(tokens, start=start, want_from=need_from)

    def _decode(self, tokens: Sequence[int], *, start: int, want_from: int) -> list[float]:
        """Decode ``tokens[start:]`` (the KV cache holds ``tokens[:start]``) in batches of ``n_batch``;
        return ``log p(tokens[pos + 1])`` for each position ``want_from <= pos < len(tokens) - 1``."""
        mem = self._low.llama_get_memory(self._llm.ctx)
        out: list[float] = []
        ctx = self._llm.ctx
        for b0 in range(start, len(tokens), self.n_batch):
            chunk = tokens[b0:b0 + self.n_batch]
            batch = self._batch
            batch.n_tokens = len(chunk)
            wanted: list[tuple[int, int]] = []  # (index in batch, token predicted)
            for i, tok in enumerate(chunk):
                pos = b0 + i
                batch.token[i] = tok
                batch.pos[i] = pos
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                flag = want_from <= pos < len(tokens) - 1
                batch.logits[i] = flag
                if flag:
                    wanted.append((i, tokens[pos + 1]))
            rc = self._low.llama_decode(ctx, batch)
            if rc != 0:
                self._tokens = []
                self._low.llama_memory_clear(mem, True)
                raise BakeoffError(f"llama_decode failed with code {rc}")
            self.decoded_tokens += len(chunk)
            self._tokens.extend(chunk)
            n_vocab = self._llm.n_vocab()
            for i, nxt in wanted:
                ptr = self._low.llama_get_logits_ith(ctx, i)
                row = np.ctypeslib.as_array(ptr, shape=(n_vocab,))
                out.append(_log_softmax_at(row, nxt))
        return out


# -- OpenAI-compatible completions -----------------------------------------------------------

class CompletionsLikelihood:
    """Prompt log-probabilities from ``POST {base_url}/completions`` with ``echo=true, logprobs=1,
    max_tokens=1`` (see module docstring). ``api_key_env`` names the variable holding the key."""

    def __init__(self, *, base_url: str, model: str, api_key_env: str | None = None, model_id: str | None = None,
                 timeout_s: float = 300.0, max_retries: int = 3) -> None:
        from ...net import HttpClient

        self.base_url, self.model, self.model_id = base_url.rstrip("/"), model, model_id
        self._http = HttpClient(base_url=self.base_url, auth_env=api_key_env, timeout=timeout_s, retries=max_retries)

    def identity(self) -> str:
        return self.model_id or f"{self.model}@{self.base_url}"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def logprobs(self, prefix: str, continuation: str) -> list[float]:
        body = {"model": self.model, "prompt": prefix + continuation, "echo": True, "logprobs": 1,
                "max_tokens": 1, "temperature": 0.0}
        resp = self._http.post_json("completions", body)
        try:
            lp = resp["choices"][0]["logprobs"]
            offsets, values = lp["text_offset"], lp["token_logprobs"]
        except (KeyError, IndexError, TypeError):
            raise BakeoffError(f"{self.base_url}/completions returned no prompt logprobs (echo=true, logprobs=1 "
                               "unsupported?)") from None
        n_prompt = _prompt_token_count(resp, len(values))
        cut = len(prefix)
        out = [float(v) for off, v in zip(offsets[:n_prompt], values[:n_prompt], strict=True)
               if off is not None and off >= cut and v is not None]
        if not out:
            raise BakeoffError(f"{self.base_url}/completions echoed no token of the query")
        return out


def _prompt_token_count(resp: dict[str, Any], n_values: int) -> int:
    """Echoed tokens that belong to the prompt: all but the generated ones (``completion_tokens``)."""
    usage = resp.get("usage") or {}
    gen = int(usage.get("completion_tokens") or 0)
    return max(0, n_values - gen)


# -- scoring ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SpecificityOptions:
    """How queries are scored and which are kept.

    ``threshold``: keep a query when ``specificity >= threshold`` (``None``: no threshold);
    ``keep_fraction``: additionally keep only the top fraction of the (threshold-passing) queries.
    Default: random-document baseline, threshold 1.0 nats/token. Chosen by reading the 112 scored
    candidates of a demo run (stdlib docstrings, Gemma 3 270M): with the empty-document baseline
    generic "how do I ... in python" questions scored 0.5-1.5 against any docstring; with the
    random-document baseline they fall under ~0.8, while candidates at >= 1.0 were answerable by
    their document about twice as often as those below.
    """

    threshold: float | None = SPECIFICITY_THRESHOLD
    keep_fraction: float | None = None
    max_doc_chars: int = 1500
    baseline: Literal["none", "random"] = "random"
    n_random: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.keep_fraction is not None and not 0.0 < self.keep_fraction <= 1.0:
            raise ConfigError("specificity keep fraction must be in (0, 1]")
        if self.baseline not in ("none", "random"):
            raise ConfigError(f"specificity baseline must be none or random, got {self.baseline!r}")


@dataclass(frozen=True)
class SpecificityScore:
    """``score = lp_doc - lp_base`` (mean nats per query token) over ``n_tokens`` query tokens."""

    score: float
    lp_doc: float
    lp_base: float
    n_tokens: int


def _lp_key(lm: QueryLikelihood, prefix: str, query: str) -> str:
    return cache_key({"kind": "specificity-lp", "model": lm.identity(), "prefix": prefix, "query": query,
                      "code_version": CODE_VERSION})


def _mean(values: Sequence[float]) -> tuple[float, int]:
    return (float(np.mean(values)) if values else 0.0), len(values)


#: Fewer uncached evaluations than this run in the calling process: starting a worker and loading its
#: model copy costs about a second, a query a few tens of milliseconds.
PARALLEL_MIN = 64
_worker_lm: LlamaLikelihood | None = None  # the model of a worker process (set by _worker_start)


def _worker_start(model_path: str, n_ctx: int, n_batch: int) -> None:
    global _worker_lm
    _worker_lm = LlamaLikelihood(model_path=Path(model_path), n_ctx=n_ctx, n_batch=n_batch, n_threads=1)


def _worker_eval(jobs: Sequence[tuple[str, str]]) -> tuple[list[tuple[float, int]], int]:
    lm = _worker_lm
    assert lm is not None
    lm.forget()  # a run starts from an empty cache, as it does in the calling process (runs there differ in prefix)
    before = lm.decoded_tokens
    out = [_mean(lm.logprobs(prefix, " " + query)) for prefix, query in jobs]
    return out, lm.decoded_tokens - before


def default_workers() -> int:
    """Processes scoring query likelihood in-process: one per usable core (the local servers' rule,
    :func:`bakeoff.truth.llm.local_server.default_servers`, ``$BAKEOFF_LLM_SERVERS``), each one thread."""
    from ..llm.local_server import default_servers

    return default_servers()


def _mean_lps(lm: QueryLikelihood, jobs: Sequence[tuple[str, str]], *, cache: Cache | None, stats: dict[str, int],
              progress: bool, workers: int) -> list[tuple[float, int]]:
    """``(mean lp, tokens)`` of every ``(prefix, query)`` job, in order: from the cache, else evaluated in
    job order (consecutive jobs sharing a prefix reuse its KV cache). With an in-process model, ``workers``
    > 1 and at least :data:`PARALLEL_MIN` jobs to evaluate, each run of one prefix goes whole to one of
    ``workers`` processes with a model copy each (one thread each), so the values are the serial ones.
    Every value is cached as soon as it is known."""
    from ...progress import progress_bar

    done: dict[tuple[str, str], tuple[float, int]] = {}
    todo: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for job in jobs:
        if job in seen:
            continue
        seen.add(job)
        hit = cache.get_json("specificity", _lp_key(lm, *job)) if cache is not None else None
        if hit is not None:
            stats["cached"] += 1
            done[job] = (float(hit["mean"]), int(hit["n"]))
        else:
            todo.append(job)

    def keep(job: tuple[str, str], value: tuple[float, int]) -> None:
        done[job] = value
        stats["evaluated"] += 1
        if cache is not None:
            cache.put_json("specificity", _lp_key(lm, *job), {"mean": value[0], "n": value[1], "model": lm.identity()})

    bar = progress_bar(total=len(todo), desc="query likelihood", enabled=progress, unit="q")
    try:
        if workers > 1 and len(todo) >= PARALLEL_MIN and isinstance(lm, LlamaLikelihood):
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            chunks: list[list[tuple[str, str]]] = []  # runs of one prefix, whole (see LlamaLikelihood.token_logprobs)
            for job in todo:
                if chunks and chunks[-1][0][0] == job[0]:
                    chunks[-1].append(job)
                else:
                    chunks.append([job])
            with ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=multiprocessing.get_context("spawn"),
                                     initializer=_worker_start,
                                     initargs=(str(lm.model_path), lm.n_ctx, lm.n_batch)) as pool:
                futures = {pool.submit(_worker_eval, chunk): chunk for chunk in chunks}
                for fut in as_completed(futures):
                    values, decoded = fut.result()
                    lm.decoded_tokens += decoded
                    for job, value in zip(futures[fut], values, strict=True):
                        keep(job, value)
                    bar.update(len(values))
        else:
            for job in todo:
                keep(job, _mean(lm.logprobs(job[0], " " + job[1])))
                bar.update(1)
    finally:
        bar.close()
    return [done[job] for job in jobs]


def specificity_scores(pairs: Sequence[tuple[str, str]], lm: QueryLikelihood, *, options: SpecificityOptions = SpecificityOptions(),
                       cache: Cache | None = None, others: Sequence[str] = (), progress: bool = False,
                       stats: dict[str, int] | None = None, workers: int | None = None) -> list[SpecificityScore]:
    """Score ``(query, document text)`` pairs (results in input order).

    Pairs are evaluated grouped by document, so a backend with prefix reuse reads each
    document once; then, for the ``random`` baseline, every query after each reference document in turn.
    ``others`` are the candidate documents of the ``random`` baseline (a document equal to the pair's own is
    never drawn); ``stats`` (if given) receives counts ``evaluated`` and ``cached``; ``workers``: processes
    for an in-process model (default :func:`default_workers`; see :func:`_mean_lps`).
    """
    o = options
    st: dict[str, int] = stats if stats is not None else {}
    st.setdefault("evaluated", 0)
    st.setdefault("cached", 0)
    prefixes = [specificity_prefix(d, max_doc_chars=o.max_doc_chars) for _, d in pairs]
    order = sorted(range(len(pairs)), key=lambda i: (prefixes[i], i))
    jobs = [(prefixes[i], pairs[i][0]) for i in order]
    refs: list[str] = []
    if o.baseline == "none":
        empty = specificity_prefix("", max_doc_chars=o.max_doc_chars)
        jobs += [(empty, q) for q, _ in pairs]
    else:
        refs = baseline_documents(others, n=o.n_random, seed=o.seed)
        # one pass per reference document over every query: its prefix is decoded once
        for ref in refs:
            prefix = specificity_prefix(ref, max_doc_chars=o.max_doc_chars)
            jobs += [(prefix, q) for q, d in pairs if ref != d]
    values = dict(zip(jobs, _mean_lps(lm, jobs, cache=cache, stats=st, progress=progress,
                                      workers=default_workers() if workers is None else workers), strict=True))
    out = []
    for i, (q, d) in enumerate(pairs):
        lp_doc = values[(prefixes[i], q)]
        if o.baseline == "none":
            base = values[(specificity_prefix("", max_doc_chars=o.max_doc_chars), q)][0]
        else:
            base = float(np.mean([values[(specificity_prefix(ref, max_doc_chars=o.max_doc_chars), q)][0]
                                  for ref in refs if ref != d]))
        out.append(SpecificityScore(score=lp_doc[0] - base, lp_doc=lp_doc[0], lp_base=base, n_tokens=lp_doc[1]))
    return out


def baseline_documents(others: Sequence[str], *, n: int, seed: int) -> list[str]:
    """The ``n + 1`` reference documents of the ``random`` baseline: drawn once (seeded) from
    ``others``, so each is read once for all queries (a pair never uses its own document, hence
    one spare)."""
    pool = list(dict.fromkeys(others))
    if len(pool) < 2:
        raise ConfigError("the random specificity baseline needs at least two other documents")
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(pool), size=min(len(pool), n + 1), replace=False)
    return [pool[int(j)] for j in picks]


def keep_mask(scores: Sequence[float], options: SpecificityOptions) -> list[bool]:
    """Which scores pass: ``>= threshold`` (when set), then the top ``keep_fraction`` of those
    (:func:`bakeoff.truth.filters.score_filter.keep_mask`)."""
    return score_filter.keep_mask(scores, threshold=options.threshold, keep_fraction=options.keep_fraction)


#: Histogram bins of the specificity score: 0.5 nats/token wide over [-2, 4].
HISTOGRAM_EDGES = np.arange(-2.0, 4.01, 0.5)


def score_stats(values: Sequence[float], *, threshold: float | None = None) -> dict[str, Any]:
    """``n``, ``mean``, quantiles, ``share_below`` and a histogram over :data:`HISTOGRAM_EDGES`
    (:func:`bakeoff.truth.filters.score_filter.score_stats`)."""
    return score_filter.score_stats(values, edges=HISTOGRAM_EDGES, threshold=threshold)


def open_likelihood(spec: LLMSpec | str | None) -> QueryLikelihood | None:
    """The scorer for ``--specificity``: ``off`` / ``None`` -> ``None``; a local spec (``local``: the model of
    ``--llm local``, the default bundled one; ``local:NAME`` / ``local:PATH.gguf``) -> that model in-process; a
    remote one (``openai:<model>`` / ``ollama:<model>`` / ``<base_url>|<model>``, :class:`~bakeoff.truth.llm.spec.LLMSpec`)
    -> a completions server that echoes prompt logprobs."""
    if spec is None or spec == "off":
        return None
    spec = LLMSpec.of(spec, option="--specificity")
    if spec.is_local:
        return LlamaLikelihood(model_path=spec.local_model().path, n_ctx=4096)
    cfg = spec.config()
    return CompletionsLikelihood(base_url=cfg.base_url, model=cfg.model, api_key_env=cfg.api_key_env)


def random_others(corpus: Corpus, spec: SpecificityOptions) -> list[str]:
    """Candidate documents of the ``random`` baseline (empty for ``none``): up to 200 rows drawn with
    ``spec.seed`` — the same in every round, so the reference documents are read once per round."""
    if spec.baseline != "random" or len(corpus) < 2:
        return []
    rows = np.random.default_rng(spec.seed).choice(len(corpus), size=min(200, len(corpus)), replace=False)
    return [score_text(corpus, int(r)) for r in rows]
