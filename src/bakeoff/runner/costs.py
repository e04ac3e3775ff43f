"""Latency and cost of an arm, from the timings and usage its Context recorded.

Money has two sources:

* **machine time** at an hourly rate ``hourly_rate`` (USD per hour of the
  machine running the arm; CLI ``--hourly-rate``, TOML ``[run] hourly_rate``).
  The default :data:`DEFAULT_HOURLY_RATE` is a documented assumption, not a
  measurement: the on-demand list price of a 2-vCPU x86 cloud VM like the one
  these figures are measured on (AWS ``c7i.large``, us-east-1, USD 0.08925/h).
  Set it to your own hardware's price (0 disables machine cost).
* **API usage** that an arm reports through :meth:`bakeoff.arms.base.Arm.usage`
  (``tokens``, ``requests``, ``cost_usd`` where a price per token is configured).

Formulas (an arm's *subtree* is the arm and every input below it, each once;
a composite arm's cost therefore includes its inputs'):

* ``machine_usd_per_1k_queries = hourly_rate / 3600 * mean_ms`` — i.e.
  ``hourly_rate / 3600 s * (mean_ms / 1000) s/query * 1000 queries`` with
  ``mean_ms`` the end-to-end mean single-query latency (the batch mean
  ``sum(own_search_s) / n_queries`` over the subtree when no latency was measured);
* ``api_usd_per_1k_queries = 1000 * sum(search cost_usd) / n_queries`` over the subtree;
* ``usd_per_1k_queries`` = the sum of the two;
* ``one_time_s = sum(index_s + index_cached_s)`` over the subtree; ``one_time_usd =
  hourly_rate / 3600 * one_time_s + sum(index cost_usd)``.

``index_s`` is the wall time of indexing in this run. Index work an arm restores from the cache instead of
doing it (a dense arm's document embeddings) takes only its lookup time there, so the arm records what that
work took when it was done as ``index_cached_s``; ``index_cached_total_s`` is its subtree sum (present when
not 0). The one-time cost is what building the index takes, not what this run spent restoring it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..arms.base import Arm, subtree, subtree_sum
from .context import Context

__all__ = ["DEFAULT_HOURLY_RATE", "arm_cost", "arm_timing"]

#: USD per machine hour assumed when none is given (see module docstring).
DEFAULT_HOURLY_RATE = 0.08925


def _sum_usage(arm: Arm, usage: Mapping[str, Mapping[str, Mapping[str, float]]], stage: str) -> dict[str, float]:
    total: dict[str, float] = {}
    for node in subtree(arm):
        for key, value in usage.get(node.fingerprint(), {}).get(stage, {}).items():
            total[key] = total.get(key, 0.0) + float(value)
    return total


def _restored_s(timing: Mapping[str, Any]) -> float:
    """Index work an arm restored from the cache instead of doing it: ``index_cached_s``, or, in a timing stored
    with a cached run before that key existed, a dense arm's restored document encoding (``doc_encode_s`` when
    ``doc_cached``)."""
    if "index_cached_s" in timing:
        return float(timing["index_cached_s"] or 0.0)
    return float(timing.get("doc_encode_s", 0.0) or 0.0) if timing.get("doc_cached") == 1.0 else 0.0


def arm_timing(arm: Arm, ctx: Context) -> dict[str, Any]:
    """The arm's own timing plus subtree totals (``index_total_s``, ``search_total_s``, and
    ``index_cached_total_s`` when index work was restored from the cache)."""
    own = dict(ctx.timings.get(arm.fingerprint(), {}))
    own["index_total_s"] = subtree_sum(arm, ctx.timings, "index_s")
    restored = sum(_restored_s(ctx.timings.get(node.fingerprint(), {})) for node in subtree(arm))
    if restored:
        own["index_cached_total_s"] = restored
    own["search_total_s"] = subtree_sum(arm, ctx.timings, "own_search_s")
    n = float(own.get("n_queries", 0.0) or 0.0)
    if n:
        own["ms_per_query_total"] = 1000.0 * own["search_total_s"] / n
    return own


def arm_cost(arm: Arm, ctx: Context, *, hourly_rate: float, n_queries: int) -> dict[str, Any]:
    """Cost figures of ``arm`` (formulas in the module docstring)."""
    timing = arm_timing(arm, ctx)
    latency = timing.get("latency") or {}
    if latency.get("mean_ms") is not None:
        mean_ms, basis = float(latency["mean_ms"]), f"latency ({latency.get('method')})"
    else:
        mean_ms, basis = float(timing.get("ms_per_query_total", 0.0)), "batch mean"
    per_second = float(hourly_rate) / 3600.0
    build_s = timing["index_total_s"] + timing.get("index_cached_total_s", 0.0)
    machine = per_second * mean_ms
    search_usage = _sum_usage(arm, ctx.usage, "search")
    index_usage = _sum_usage(arm, ctx.usage, "index")
    api = 1000.0 * search_usage.get("cost_usd", 0.0) / n_queries if n_queries else 0.0
    out: dict[str, Any] = {
        "hourly_rate_usd": float(hourly_rate),
        "basis": basis,
        "machine_usd_per_1k_queries": machine,
        "api_usd_per_1k_queries": api,
        "usd_per_1k_queries": machine + api,
        "one_time_s": build_s,
        "one_time_usd": per_second * build_s + index_usage.get("cost_usd", 0.0),
    }
    if search_usage or index_usage:
        out["usage"] = {"index": index_usage, "search": search_usage}
        if "tokens" in search_usage and n_queries:
            out["tokens_per_query"] = search_usage["tokens"] / n_queries
    return out
