"""The terminal summary of a sweep (the ``tune.json`` content): plain lines, no styling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..metrics import conventions_line

__all__ = ["summary_lines"]


def _f(v: Any, d: int = 4) -> str:
    return "n/a" if v is None else f"{v:.{d}f}"


def _params(p: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items())


def summary_lines(tune: Mapping[str, Any], *, max_trials: int = 40) -> list[str]:
    """Dev scores of the trials (best first), the choice, and the test table: defaults vs tuned
    with CIs and the paired test."""
    m = tune["measure"]
    dev = tune["dev"]
    out = [(f"tune {tune['arm']} ({tune['type']}) on {dev['describe']}: {dev['n_queries']} dev queries, "
           f"{len(tune['trials'])} trials ({tune['space']['search']}), chosen by {m}; {tune['tie_rule']}.")]
    if dev.get("dropped_leaks"):
        pairs = ", ".join(f"{a}~{b}" for a, b, _ in dev["dropped_leaks"])
        out.append(f"  dropped {len(dev['dropped_leaks'])} dev queries equal to test queries: {pairs}")
    trials = sorted(tune["trials"], key=lambda t: (-(t["dev"] if t["dev"] is not None else -1e9), t["index"]))
    out.append(f"  {'#':>3}  dev {m:<10}  cached  params")
    for t in trials[:max_trials]:
        cached = "yes" if t["cached"] else "no"
        out.append(f"  {t['index']:>3}  {_f(t['dev']):<14}  {cached:<6}  {_params(t['params'])}")
    if len(trials) > max_trials:
        out.append(f"  ... {len(trials) - max_trials} more in tune.json")
    ch = tune["chosen"]
    if "per_fold" in ch:
        for p in ch["per_fold"]:
            out.append(f"  fold {p['fold']}: chose #{p['index']} ({_params(p['params'])}), dev {_f(p['dev'])}")
    else:
        out.append(f"  chosen: #{ch['index']} {_params(ch['params'])}  (dev {_f(ch['dev'])}; defaults "
                   f"{_params(tune['defaults'])}: dev {_f(dev['default_score'])})")
    r = tune["result"]
    conf = round(100 * r["confidence"])
    te = tune["test"]
    out.append(f"test split {te['split']}: {te['n_queries']} queries, {m} with {conf}% bootstrap CIs")
    if "averaging" in tune:  # tune.json files written before the rule was recorded have none
        out.append(f"  {conventions_line(tune)}")
    out.append(f"  {'arm':<24} {m:>10}  CI")
    for label, key in ((tune["arm"] + " (defaults)", "defaults"), (tune["tuned_arm"], "tuned")):
        x = r[key]
        out.append(f"  {label:<24} {_f(x['mean']):>10}  [{_f(x['ci_low'])}, {_f(x['ci_high'])}]")
    verdict = "significant" if r["significant"] else "not significant"
    out.append(f"  tuned - defaults: {r['diff']:+.4f} [{_f(r['diff_ci_low'])}, {_f(r['diff_ci_high'])}], "
               f"paired randomization p = {_f(r['p_perm'])} ({verdict} at alpha {r['alpha']}), t-test p = "
               f"{_f(r['p_ttest'])}")
    tm = tune["timing"]
    out.append(f"sweep {tm['sweep_s']:.2f}s ({tm['trials_from_cache']}/{tm['trials']} trials from the cache), "
               f"test {tm['test_s']:.2f}s, total {tm['total_s']:.2f}s")
    return out
