"""Calibration figures: does a synthetic truth rank the arms the way human judgments do?

The same arms are scored on two query sets of one corpus: the **human** set (queries and
judgments a person made) and the **synthetic** set (queries an LLM wrote, each judged by the
document it was written from). Both give a per-query matrix ``(queries, arms)`` on a measure;
the arm means of each are compared. Every function here is pure (no I/O, no global state;
resampling draws from a caller-supplied :class:`numpy.random.Generator`).

* **Orderings**: arms sorted by mean, descending; an exact tie keeps the arms' listed order
  (the verdict's tie rule, :func:`bakeoff.report.verdict.build_verdict`).
* **Kendall's τ-a** (:func:`kendall_tau`, ``variant="a"``): ``(C - D) / (n (n - 1) / 2)`` over
  the ``n (n - 1) / 2`` pairs of arms, ``C`` concordant (same strict order in both), ``D``
  discordant (opposite strict order); a pair tied on either side counts in neither.
  **τ-b** (``variant="b"``): ``(C - D) / sqrt((n0 - n1)(n0 - n2))`` with ``n0`` all pairs and
  ``n1``, ``n2`` the pairs tied in the first and second vector (``scipy.stats.kendalltau``);
  NaN when one side is all ties.
* **τ_AP** (:func:`tau_ap`; Yilmaz, Aslam and Robertson, "A new rank correlation coefficient
  for information retrieval", SIGIR 2008): with the *estimated* ordering (synthetic) read top
  down, ``τ_AP = 2 / (n - 1) · Σ_{i=2..n} C(i) / (i - 1) - 1``, where ``C(i)`` is the number of
  arms above position ``i`` in the estimated ordering that are also above that arm in the
  *reference* ordering (human). Errors near the top cost more than errors near the bottom;
  identical orderings give 1, reversed ones -1; not symmetric.
* **Bootstrap over queries on both sides** (:func:`bootstrap_agreement`): ``R`` times, resample
  the human queries with replacement and, independently, the synthetic queries (the two sets
  share no queries), recompute both sets' arm means and every figure; the CI is the
  percentile interval of the ``R`` values (NaN values, e.g. τ-b of an all-tied resample,
  left out and counted).
* **Top-1 agreement**: whether both orderings put the same arm first; its bootstrap value is
  the share of resamples where they do.
* **Per-arm bias** (:func:`bootstrap_agreement`, ``bias``): synthetic mean minus human mean of
  each arm, with the percentile CI of the same resamples; positive = the synthetic queries
  flatter the arm. :func:`bias_by_bucket` does the same on each leak bucket's synthetic
  queries (against all human queries): lexical arms flattered mostly in the leak-heavy
  buckets point at the leak, not the arm.
* **Significant pairs** (:func:`significant_pairs`): of the pairs of arms that differ
  significantly under the human truth (paired randomization test, Holm across the pairs of
  the measure: :func:`bakeoff.stats.comparison`), the share whose order the synthetic truth keeps
  (same sign of the mean difference), keeps significantly, and reverses significantly. With
  near-tied arms a τ over all pairs is mostly noise; these shares are what a decision rests on.
* **Verdict agreement** (:func:`verdict_agreement`): the arm each side's verdict would deploy
  (:func:`bakeoff.report.verdict.build_verdict`, with its tie and cost rules) and its best arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..stats import PairStat

if TYPE_CHECKING:
    from ..runner.results import StoredResults

__all__ = [
    "bias_by_bucket",
    "bootstrap_agreement",
    "kendall_tau",
    "ordering",
    "significant_pairs",
    "tau_ap",
    "top1_agrees",
    "verdict_agreement",
]


def ordering(means: Sequence[float] | np.ndarray, arms: Sequence[str]) -> list[str]:
    """``arms`` sorted by mean descending; an exact tie keeps the listed order (NaN is an error)."""
    m = [float(v) for v in means]
    if len(m) != len(arms):
        raise ValueError(f"{len(m)} means for {len(arms)} arms")
    if any(math.isnan(v) for v in m):
        raise ValueError("a mean is NaN: it has no place in an ordering")
    return [arms[i] for i in sorted(range(len(m)), key=lambda i: -m[i])]


def kendall_tau(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, *,
                variant: Literal["a", "b"] = "b") -> float:
    """Kendall's τ-a or τ-b between two score vectors of the same items (module docstring)."""
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"score vectors differ in shape: {a.shape} vs {b.shape}")
    n = a.size
    if n < 2:
        return math.nan
    if variant == "b":
        from scipy.stats import kendalltau

        with np.errstate(invalid="ignore", divide="ignore"):
            return float(kendalltau(a, b, variant="b").statistic)
    if variant != "a":
        raise ValueError(f"variant must be 'a' or 'b', got {variant!r}")
    iu = np.triu_indices(n, k=1)
    s = np.sign(a[:, None] - a[None, :])[iu] * np.sign(b[:, None] - b[None, :])[iu]
    return float(s.sum() / (n * (n - 1) / 2))


def tau_ap(reference: Sequence[float] | np.ndarray, estimate: Sequence[float] | np.ndarray,
           arms: Sequence[str]) -> float:
    """τ_AP of the ``estimate`` ordering against the ``reference`` one (module docstring).

    Both orderings come from :func:`ordering` (ties keep the listed order), so every pair is
    strictly ordered on both sides.
    """
    ref = ordering(reference, arms)
    est = ordering(estimate, arms)
    n = len(arms)
    if n < 2:
        return math.nan
    pos = {a: i for i, a in enumerate(ref)}
    total = 0.0
    for i in range(1, n):
        here = est[i]
        correct = sum(1 for above in est[:i] if pos[above] < pos[here])
        total += correct / i
    return 2.0 * total / (n - 1) - 1.0


def top1_agrees(reference: Sequence[float] | np.ndarray, estimate: Sequence[float] | np.ndarray,
                arms: Sequence[str]) -> bool:
    """True when both orderings put the same arm first."""
    return ordering(reference, arms)[0] == ordering(estimate, arms)[0]


def _ci(values: np.ndarray, confidence: float) -> tuple[float, float, int]:
    """Percentile interval of the finite values, and how many were left out."""
    finite = values[np.isfinite(values)]
    alpha = 1.0 - confidence
    if finite.size == 0:
        return math.nan, math.nan, int(values.size)
    return (float(np.quantile(finite, alpha / 2)), float(np.quantile(finite, 1 - alpha / 2)),
            int(values.size - finite.size))


def _check(human: np.ndarray, synthetic: np.ndarray, arms: Sequence[str]) -> None:
    for name, mat in (("human", human), ("synthetic", synthetic)):
        if mat.ndim != 2 or mat.shape[1] != len(arms):
            raise ValueError(f"{name} matrix must be (queries, {len(arms)} arms), got {mat.shape}")
        if mat.shape[0] == 0:
            raise ValueError(f"the {name} side has no queries")
        if np.isnan(mat).any():
            raise ValueError(f"the {name} matrix holds NaN")


def _figures(h_means: np.ndarray, s_means: np.ndarray, arms: Sequence[str]) -> dict[str, float]:
    return {
        "tau_a": kendall_tau(h_means, s_means, variant="a"),
        "tau_b": kendall_tau(h_means, s_means, variant="b"),
        "tau_ap": tau_ap(h_means, s_means, arms),
        "top1": 1.0 if top1_agrees(h_means, s_means, arms) else 0.0,
    }


def bootstrap_agreement(
    human: np.ndarray,
    synthetic: np.ndarray,
    *,
    arms: Sequence[str],
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    weights: np.ndarray | None = None,
) -> dict[str, Any]:
    """Point values and bootstrap CIs of τ-a, τ-b, τ_AP, top-1 agreement and per-arm bias.

    ``weights`` (one per synthetic query, e.g. the leak-matching weights of
    :func:`bakeoff.report.leak_match.leak_weights`) make every synthetic mean a weighted mean
    ``Σ w_i x_i / Σ w_i``, in the point values and in each resample (queries drawn with their weights).

    ``human`` is ``(n_h, k)`` and ``synthetic`` ``(n_s, k)``, column ``j`` = ``arms[j]``, one
    row per query. Returns ``{"arms", "n_human", "n_synthetic", "human_means",
    "synthetic_means", "human_ci", "synthetic_ci" ({arm: [low, high]}, percentile), "human_order",
    "synthetic_order", "figures": {name: {"value", "ci_low",
    "ci_high", "undefined"}}, "bias": {arm: {"value", "ci_low", "ci_high"}}, "n_resamples",
    "confidence"}``; ``figures["top1"]["ci_*"]`` is replaced by ``"share"``, the share of
    resamples whose orderings share their first arm.
    """
    h = np.asarray(human, dtype=float)
    s = np.asarray(synthetic, dtype=float)
    arms = list(arms)
    _check(h, s, arms)
    if len(set(arms)) != len(arms):
        raise ValueError("arm names repeat")
    w = np.ones(s.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (s.shape[0],) or not np.all(w >= 0) or w.sum() <= 0:
        raise ValueError(f"need {s.shape[0]} non-negative weights with a positive sum")
    hm, sm = h.mean(axis=0), (w[:, None] * s).sum(axis=0) / w.sum()
    point = _figures(hm, sm, arms)
    boots: dict[str, list[float]] = {name: [] for name in point}
    h_boot = np.empty((n_resamples, len(arms)))
    s_boot = np.empty((n_resamples, len(arms)))
    for r in range(n_resamples):
        hr = h[rng.integers(0, h.shape[0], h.shape[0])].mean(axis=0)
        idx = rng.integers(0, s.shape[0], s.shape[0])
        sr = (w[idx, None] * s[idx]).sum(axis=0) / max(w[idx].sum(), 1e-300)
        for name, v in _figures(hr, sr, arms).items():
            boots[name].append(v)
        h_boot[r], s_boot[r] = hr, sr
    bias_boot = s_boot - h_boot
    figures: dict[str, dict[str, Any]] = {}
    for name, v in point.items():
        vals = np.asarray(boots[name])
        if name == "top1":
            figures[name] = {"value": v, "share": float(vals.mean())}
            continue
        lo, hi, undefined = _ci(vals, confidence)
        figures[name] = {"value": v, "ci_low": lo, "ci_high": hi, "undefined": undefined}
    bias = {}
    for j, arm in enumerate(arms):
        lo, hi, _ = _ci(bias_boot[:, j], confidence)
        bias[arm] = {"value": float(sm[j] - hm[j]), "ci_low": lo, "ci_high": hi}
    return {
        "arms": arms,
        "n_human": int(h.shape[0]),
        "n_synthetic": int(s.shape[0]),
        "human_means": {a: float(v) for a, v in zip(arms, hm)},
        "synthetic_means": {a: float(v) for a, v in zip(arms, sm)},
        "human_ci": {a: list(_ci(h_boot[:, j], confidence)[:2]) for j, a in enumerate(arms)},
        "synthetic_ci": {a: list(_ci(s_boot[:, j], confidence)[:2]) for j, a in enumerate(arms)},
        "human_order": ordering(hm, arms),
        "synthetic_order": ordering(sm, arms),
        "figures": figures,
        "bias": bias,
        "n_resamples": int(n_resamples),
        "confidence": float(confidence),
    }


def bias_by_bucket(
    human: np.ndarray,
    synthetic: np.ndarray,
    buckets: Sequence[str | None],
    *,
    arms: Sequence[str],
    rng: np.random.Generator,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    order: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per-arm bias of each bucket's synthetic queries against all human queries.

    ``buckets[i]`` labels synthetic row ``i`` (e.g. its leak bin; ``None``: no bucket, left
    out). Buckets come back in ``order`` (default: sorted by label; empty buckets left out), each
    ``{"n", "bias": {arm: {"value", "ci_low", "ci_high"}}}`` (same resampling as
    :func:`bootstrap_agreement`, within the bucket).
    """
    s = np.asarray(synthetic, dtype=float)
    if len(buckets) != s.shape[0]:
        raise ValueError(f"{len(buckets)} bucket labels for {s.shape[0]} synthetic queries")
    out: dict[str, dict[str, Any]] = {}
    present = {b for b in buckets if b is not None}
    labels = [b for b in order if b in present] if order is not None else sorted(present)
    for label in labels:
        rows = np.array([i for i, b in enumerate(buckets) if b == label])
        res = bootstrap_agreement(human, s[rows], arms=arms, rng=rng, n_resamples=n_resamples,
                                  confidence=confidence)
        out[label] = {"n": int(rows.size), "bias": res["bias"]}
    return out


def _g(pair: PairStat | Mapping[str, Any], key: str) -> Any:
    return pair[key] if isinstance(pair, Mapping) else getattr(pair, key)


def significant_pairs(human: Sequence[PairStat | Mapping[str, Any]], synthetic: Sequence[PairStat | Mapping[str, Any]],
                      *, measure: str) -> dict[str, Any]:
    """How the synthetic truth treats the pairs the human truth separates (module docstring).

    ``human`` and ``synthetic`` are the pairs of :func:`bakeoff.stats.comparison` on each side (or
    their dicts, as in a report's ``stats.pairs``; same arms; a pair is matched by its two names
    in either order). Returns ``{"measure", "pairs", "human_significant", "kept",
    "kept_significant", "reversed", "reversed_significant", "share_kept", "share_kept_significant",
    "share_reversed", "share_reversed_significant", "rows": [{"better", "worse", "human_diff",
    "synthetic_diff", "synthetic_significant", "outcome"}]}``; a share is NaN when no pair is
    significant under the human truth. ``outcome`` is ``kept significantly``, ``kept``, ``tied``
    (synthetic difference exactly 0), ``reversed`` or ``reversed significantly``.
    """
    syn = {frozenset((_g(p, "a"), _g(p, "b"))): p for p in synthetic if _g(p, "measure") == measure}
    rows = []
    n_pairs = 0
    for p in human:
        if _g(p, "measure") != measure:
            continue
        n_pairs += 1
        diff = float(_g(p, "diff"))
        if not _g(p, "significant") or diff == 0:
            continue
        a, b = _g(p, "a"), _g(p, "b")
        q = syn.get(frozenset((a, b)))
        if q is None:
            raise KeyError(f"the synthetic side has no pair {a} / {b} on {measure}")
        better, worse = (a, b) if diff > 0 else (b, a)
        s_diff = float(_g(q, "diff")) if _g(q, "a") == better else -float(_g(q, "diff"))
        q_sig = bool(_g(q, "significant"))
        if s_diff > 0:
            outcome = "kept significantly" if q_sig else "kept"
        elif s_diff < 0:
            outcome = "reversed significantly" if q_sig else "reversed"
        else:
            outcome = "tied"
        rows.append({"better": better, "worse": worse, "human_diff": abs(diff), "synthetic_diff": s_diff,
                     "synthetic_significant": q_sig, "outcome": outcome})
    n = len(rows)
    kept_sig = sum(r["outcome"] == "kept significantly" for r in rows)
    kept = kept_sig + sum(r["outcome"] == "kept" for r in rows)
    rev_sig = sum(r["outcome"] == "reversed significantly" for r in rows)
    rev = rev_sig + sum(r["outcome"] == "reversed" for r in rows)

    def share(c: int) -> float:
        return c / n if n else math.nan

    return {"measure": measure, "pairs": n_pairs, "human_significant": n, "kept": kept,
            "kept_significant": kept_sig, "reversed": rev, "reversed_significant": rev_sig,
            "share_kept": share(kept), "share_kept_significant": share(kept_sig), "share_reversed": share(rev),
            "share_reversed_significant": share(rev_sig), "rows": rows}


def verdict_agreement(human: Mapping[str, Any], synthetic: Mapping[str, Any]) -> dict[str, Any]:
    """Whether two verdicts (:func:`bakeoff.report.verdict.build_verdict`) deploy the same arm.

    Returns ``{"human_pick", "synthetic_pick", "same_pick", "human_best", "synthetic_best",
    "same_best", "synthetic_pick_human_candidate"}``; the last is True when the arm the
    synthetic verdict deploys is among the human verdict's candidates (the best arm and those
    statistically tied with it), i.e. the synthetic decision is one the human data cannot fault.
    """
    hp, sp = human.get("pick"), synthetic.get("pick")
    return {
        "human_pick": hp, "synthetic_pick": sp, "same_pick": hp is not None and hp == sp,
        "human_best": human.get("best"), "synthetic_best": synthetic.get("best"),
        "same_best": human.get("best") is not None and human.get("best") == synthetic.get("best"),
        "synthetic_pick_human_candidate": sp is not None and sp in (human.get("candidates") or []),
    }


# --- a calibration record: the generator's identity and the figures of one judged corpus ---------------

#: Generation parameters that do not change how a query is written or filtered (how many, which sample,
#: how the kept ones are split): left out of the generator identity.
_NOT_IDENTITY = frozenset({"n", "seed", "test_fraction", "schema", "stratify_by", "bootstrapped"})


def _strip(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: _strip(v) for k, v in node.items() if k not in _NOT_IDENTITY}
    if isinstance(node, (list, tuple)):
        return [_strip(v) for v in node]
    return node


def generator_identity(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """What makes a generator's queries what they are, from a ``provenance.json`` of ``bakeoff generate``.

    ``{"mode", "model", "prompt_style", "prompts", "filters", "key"}``: the model's cache identity
    (for packaged local models it carries the weights' sha256 prefix, with the llama.cpp version),
    the prompt (instruction, controls, examples policy: ``none``, ``user`` or ``bootstrapped``, and
    the rendered template unless its examples are bootstrapped from the sampled documents), and the filters (every generation parameter but the sample size, seeds and
    split; the answerability and specificity scorers' identities). ``key`` is the first 16 hex
    digits of the sha256 of the canonical JSON of the rest: two generations share it exactly
    when they ask the same model the same way and keep queries by the same rules.
    """
    import hashlib
    import json

    mode = provenance.get("mode")
    if mode not in ("describe", "clusters"):
        raise ValueError(f"not the provenance of bakeoff generate (mode {mode!r})")
    llm = provenance.get("llm") or {}
    prompts = provenance.get("prompts") or {}
    ident: dict[str, Any] = {
        "mode": mode,
        "model": llm.get("model_id") or llm.get("model"),
        "prompt_style": llm.get("prompt_style"),
        # the rendered prompt shows the bootstrapped examples, which come from the sampled documents: left out then
        "prompts": _strip({k: prompts.get(k) for k in ("instruction", "example", "control", "style", "examples")
                           if not (k == "example" and prompts.get("examples") == "bootstrapped")}),
        "filters": {"parameters": _strip(provenance.get("parameters") or {}),
                    "answerability": _strip((provenance.get("answerability") or {}).get("scorer")),
                    "specificity": _strip((provenance.get("specificity") or {}).get("scorer"))},
    }
    blob = json.dumps(ident, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    ident["key"] = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
    return ident


def _matrix(results: StoredResults, arms: Sequence[str], measure: str) -> tuple[list[str], np.ndarray]:
    by = {a.name: a.per_query for a in results.arms}
    qids = list(by[arms[0]][measure])
    return qids, np.array([[by[a][measure][q] for a in arms] for q in qids], dtype=float)


def calibration_figures(
    human: StoredResults,
    synthetic: StoredResults,
    *,
    measures: Sequence[str],
    leak: Mapping[str, float] | None = None,
    leak_target: Sequence[float] | None = None,
    target_source: str = "default",
    n_resamples: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Every figure of a calibration from two results sets of the same arms (module docstring).

    With ``leak``, the synthetic side is also read **leak-matched** (:mod:`bakeoff.report.leak_match`,
    target ``leak_target``, default :data:`~bakeoff.data.leak_bins.DEFAULT_LEAK_TARGET`): each measure gets
    ``"agreement_leak_matched"`` (the same figures on weighted synthetic means) and the verdict
    ``"synthetic"`` is the leak-matched one, ``"synthetic_unweighted"`` the plain one (with its agreement).

    ``human`` was run on the judged queries, ``synthetic`` on the generated ones; ``leak`` maps
    synthetic query ids to their leak. The verdicts are ``bakeoff report``'s (built from each side's
    report, primary measure first in ``measures``); for them to differ only through the truth the
    caller gives both sides the same costs. Returns ``{"primary", "measures": {m: {"agreement"
    (:func:`bootstrap_agreement`), "pairs" (:func:`significant_pairs`), "bias_by_leak"
    (:func:`bias_by_bucket`, or ``None``)}}, "verdict": {"human", "synthetic", "agreement"}, "alpha",
    "seed"}``. Raises :class:`ValueError` when the two sides do not hold the same arms.
    """
    from ..diagnose import leak_bucket_labels, leak_buckets
    from ..stats import derive_rng
    from .model import build_report

    arms = human.arm_names
    if sorted(arms) != sorted(synthetic.arm_names):
        raise ValueError("the human and synthetic results hold different arms")
    from ..data.leak_bins import DEFAULT_LEAK_TARGET
    from .leak_match import leak_weights
    from .verdict import build_verdict, leak_matched_view

    target = list(leak_target) if leak_target is not None else list(DEFAULT_LEAK_TARGET)
    summary = {"per_query": dict(leak), "target": target, "target_source": target_source} if leak else None
    rep_h = build_report(human, measures=measures, n_resamples=n_resamples, seed=seed, alpha=alpha)
    rep_s = build_report(synthetic, measures=measures, n_resamples=n_resamples, seed=seed, alpha=alpha, leak=summary)
    out: dict[str, Any] = {"primary": measures[0], "alpha": alpha, "seed": seed, "measures": {}}
    for m in measures:
        _, h = _matrix(human, arms, m)
        s_ids, s = _matrix(synthetic, arms, m)
        agr = bootstrap_agreement(h, s, arms=arms, rng=derive_rng(seed, "calibration", m), n_resamples=n_resamples)
        agr_lm = None
        if leak:
            lw = leak_weights(leak, s_ids, target=target)
            w = np.asarray([lw["weights"].get(q, 0.0) for q in s_ids])
            if w.sum() > 0:
                agr_lm = bootstrap_agreement(h, s, arms=arms, rng=derive_rng(seed, "calibration-leak-matched", m),
                                             n_resamples=n_resamples, weights=w)
                agr_lm["ess"], agr_lm["target"], agr_lm["target_source"] = lw["ess"], lw["target"], target_source
        pairs = significant_pairs(rep_h["stats"]["pairs"], rep_s["stats"]["pairs"], measure=m)
        by_leak = None
        if leak:
            buckets = leak_buckets(leak, s_ids)
            labels = [buckets[q] if buckets[q] != "(no leak value)" else None for q in s_ids]
            by_leak = bias_by_bucket(h, s, labels, arms=arms, rng=derive_rng(seed, "calibration-leak", m),
                                     n_resamples=n_resamples, order=leak_bucket_labels())
        lm = (rep_s.get("truth_quality") or {}).get("leak_matched")
        pairs_lm = (significant_pairs(rep_h["stats"]["pairs"], leak_matched_view(rep_s, lm)["stats"]["pairs"],
                                      measure=m) if lm is not None and lm.get("measure") == m else None)
        out["measures"][m] = {"agreement": agr, "agreement_leak_matched": agr_lm, "pairs": pairs,
                              "pairs_leak_matched": pairs_lm, "bias_by_leak": by_leak}
    vh, vs = rep_h["verdict"], rep_s["verdict"]
    plain = build_verdict({**rep_s, "truth_quality": {**(rep_s.get("truth_quality") or {}), "leak_matched": None}})
    keep = ("measure", "best", "pick", "candidates", "headline")
    out["verdict"] = {"human": {k: vh.get(k) for k in keep}, "synthetic": {k: vs.get(k) for k in keep},
                      "agreement": verdict_agreement(vh, vs),
                      "synthetic_unweighted": {k: plain.get(k) for k in keep},
                      "agreement_unweighted": verdict_agreement(vh, plain)}
    return out


# --- text ----------------------------------------------------------------------------------------------

def _f(v: Any, d: int = 2) -> str:
    return "-" if not isinstance(v, (int, float)) or not math.isfinite(v) else f"{v:.{d}f}"


def _ci_txt(fig: Mapping[str, Any], d: int = 2) -> str:
    return f"{_f(fig.get('value'), d)} [{_f(fig.get('ci_low'), d)}, {_f(fig.get('ci_high'), d)}]"


def summary_line(record: Mapping[str, Any]) -> str:
    """One sentence: ``this generator's verdicts matched human ones on <corpus>: τ 0.xx [lo, hi], same verdict``."""
    m = record.get("primary")
    agr = ((record.get("measures") or {}).get(m) or {}).get("agreement") or {}
    tau = (agr.get("figures") or {}).get("tau_b") or {}
    v = (record.get("verdict") or {}).get("agreement") or {}
    corpus = (record.get("corpus") or {}).get("name") or "a judged corpus"
    lo, val = tau.get("ci_low"), tau.get("value")
    defined = isinstance(val, (int, float)) and math.isfinite(val)
    if not defined or not isinstance(val, (int, float)):
        matched = "matched" if v.get("same_pick") else "did not match"
    else:
        matched = ("matched" if isinstance(lo, (int, float)) and lo > 0 and v.get("same_pick")
                   else "partly matched" if val > 0 or v.get("same_pick") else "did not match")
    if v.get("same_pick"):
        verdict = f"same verdict ({v.get('human_pick')})"
    elif v.get("synthetic_pick_human_candidate"):
        verdict = (f"different pick ({v.get('synthetic_pick')} vs human {v.get('human_pick')}), but one the human "
                   "judgments cannot tell from the best")
    else:
        verdict = f"different verdict ({v.get('synthetic_pick')} vs human {v.get('human_pick')})"
    n = len(agr.get("arms") or [])
    tau_txt = _ci_txt(tau) if defined else "undefined (every arm tied on one side)"
    return (f"this generator's verdicts {matched} human ones on {corpus}: Kendall's τ {tau_txt} over {n} arms "
            f"on {m} ({agr.get('n_synthetic')} synthetic vs {agr.get('n_human')} human queries), {verdict}")


def _pooled_lines(pooled: Mapping[str, Any] | None) -> list[str]:
    """The pooled-judgment section of :func:`calibration_text`: what the judge added, then τ and the
    verdict on the widened truth, per measure."""
    if not pooled:
        return []
    judge = pooled.get("judge") or {}
    c = judge.get("counts") or {}
    model = (judge.get("llm") or {}).get("model")
    lines = ["", (f"pooled judgments (top {pooled.get('depth')} of every arm, judged by {model}, "
                 f"{(judge.get('parameters') or {}).get('method')}): {c.get('assessed')} of {c.get('holes')} pooled "
                 f"documents judged, {pooled.get('relevant_added_per_query', 0):.1f} relevant per query beside its "
                 f"source ({pooled.get('grading')})")]
    for m, block in (pooled.get("measures") or {}).items():
        agr = block["agreement"]
        f = agr["figures"]
        lines.append(f"  {m}: synthetic order {' > '.join(agr['synthetic_order'])}; Kendall's τ-b {_ci_txt(f['tau_b'])}, "
                     f"τ_AP {_ci_txt(f['tau_ap'])}")
        lm = block.get("agreement_leak_matched")
        if lm:
            lines.append(f"  {m}, leak-matched (effective sample size {lm.get('ess', float('nan')):.1f}): "
                         f"Kendall's τ-b {_ci_txt(lm['figures']['tau_b'])}")
    v = pooled.get("verdict") or {}
    if v.get("synthetic"):
        lines.append(f"  verdict on the pooled truth: {v['synthetic'].get('headline')}")
    return lines


def calibration_text(record: Mapping[str, Any]) -> str:
    """The record as text: per measure a table of arm means and biases, then τ, τ_AP, the pair shares."""
    lines: list[str] = []
    gen = record.get("generator") or {}
    lines.append(f"generator {gen.get('key')}: {gen.get('model')} ({gen.get('mode')}, examples "
                 f"{(gen.get('prompts') or {}).get('examples')}); corpus {(record.get('corpus') or {}).get('name')}")
    for m, block in (record.get("measures") or {}).items():
        agr = block["agreement"]
        arms = agr["arms"]
        rank_h = {a: i for i, a in enumerate(agr["human_order"], 1)}
        rank_s = {a: i for i, a in enumerate(agr["synthetic_order"], 1)}
        w = max(len("arm"), *(len(a) for a in arms))
        lines.append("")
        lines.append(f"{m}: human ({agr['n_human']} queries) vs synthetic ({agr['n_synthetic']} queries)")
        lines.append(f"{'arm':<{w}}  {'human':>7} {'rank':>4}  {'synth':>7} {'rank':>4}  {'bias (synth - human) [95% CI]':>30}")
        for a in agr["human_order"]:
            b = agr["bias"][a]
            lines.append(f"{a:<{w}}  {_f(agr['human_means'][a], 4):>7} {rank_h[a]:>4}  "
                         f"{_f(agr['synthetic_means'][a], 4):>7} {rank_s[a]:>4}  "
                         f"{_f(b['value'], 4):>8} [{_f(b['ci_low'], 4)}, {_f(b['ci_high'], 4)}]")
        f = agr["figures"]
        lines.append(f"Kendall's τ-b {_ci_txt(f['tau_b'])}, τ-a {_ci_txt(f['tau_a'])}, τ_AP {_ci_txt(f['tau_ap'])}; "
                     f"top-1 {'same' if f['top1']['value'] else 'different'} (same in {f['top1']['share']:.0%} of "
                     "resamples)")
        p = block["pairs"]
        if p["human_significant"]:
            lines.append(f"of {p['human_significant']} of {p['pairs']} arm pairs the human judgments separate "
                         f"significantly, the synthetic truth keeps the order of {p['kept']} ({p['kept_significant']} "
                         f"significantly) and reverses {p['reversed']} ({p['reversed_significant']} significantly)")
            rev = [r for r in p["rows"] if r["outcome"].startswith("reversed")]
            for r in rev:
                lines.append(f"  reversed: {r['better']} > {r['worse']} for humans (+{r['human_diff']:.4f}), "
                             f"{r['synthetic_diff']:+.4f} on synthetic queries"
                             + (" (significant)" if r["synthetic_significant"] else ""))
        else:
            lines.append(f"no pair of the {p['pairs']} is significantly different under the human judgments")
        lm = block.get("agreement_leak_matched")
        if lm:
            fl = lm["figures"]
            lines.append(f"leak-matched (synthetic queries weighted to the leak target, {lm.get('target_source')}; "
                         f"effective sample size {lm.get('ess', float('nan')):.1f} of {lm['n_synthetic']}): "
                         f"synthetic order {' > '.join(lm['synthetic_order'])}; Kendall's τ-b {_ci_txt(fl['tau_b'])}, "
                         f"τ_AP {_ci_txt(fl['tau_ap'])}")
        if block.get("bias_by_leak"):
            lines.append("bias by leak bucket of the synthetic queries (synth - human, mean):")
            for label, cell in block["bias_by_leak"].items():
                lines.append(f"  leak {label} (n={cell['n']}): " + ", ".join(
                    f"{a} {_f(cell['bias'][a]['value'], 3)}" for a in agr["human_order"]))
    lines.extend(_pooled_lines(record.get("pooled")))
    v = record.get("verdict") or {}
    if v:
        lines.append("")
        lines.append(f"verdict on human judgments: {v['human'].get('headline')}")
        lines.append(f"verdict on synthetic queries: {v['synthetic'].get('headline')}")
        if v.get("synthetic_unweighted") and v["synthetic_unweighted"].get("headline") != v["synthetic"].get("headline"):
            lines.append(f"the same queries unweighted: {v['synthetic_unweighted'].get('headline')}")
    lines.append("")
    lines.append(summary_line(record))
    return "\n".join(lines)


# --- lookup: the calibration line of a synthetic-truth report -------------------------------------------

#: Sub-folder of a cache folder holding calibration records, one ``<generator key>/<corpus fp>.json`` each.
RECORDS_DIR = "calibrations"


def run_provenance(results: StoredResults) -> dict[str, Any] | None:
    """The ``provenance.json`` of ``bakeoff generate`` behind a results set's queries, or None (human
    queries, or a truth folder that moved)."""
    import json
    from pathlib import Path

    src = results.source
    folders = [Path(results.dataset.truth)] if results.dataset.truth else []
    for key in ("beir", "queries", "qrels"):
        if src.get(key):
            p = Path(str(src[key]))
            folders += [p if p.is_dir() else p.parent, p.parent.parent]
    for folder in folders:
        try:
            obj = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(obj, Mapping) and obj.get("mode") in ("describe", "clusters"):
            return dict(obj)
    return None


def read_record(path: Any) -> dict[str, Any]:
    """A ``calibration.json`` (or a folder holding one); bad input is an :class:`~bakeoff.errors.InputError`."""
    import json
    from pathlib import Path

    from ..errors import InputError

    p = Path(path)
    if p.is_dir():
        p = p / "calibration.json"
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such calibration record", path=p) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable JSON calibration record ({exc})", path=p) from None
    if not isinstance(obj, dict) or obj.get("schema") != "bakeoff.calibration":
        raise InputError("not a bakeoff calibration record", path=p, field="schema")
    for key in ("generator", "corpus", "measures", "verdict"):
        if not isinstance(obj.get(key), Mapping):
            raise InputError("incomplete calibration record", path=p, field=key)
    obj["_path"] = str(p)
    return obj


def _candidates(folders: Sequence[Any], key: str) -> list[Any]:
    from pathlib import Path

    out = []
    for f in folders:
        f = Path(f)
        if (f / "calibration.json").is_file():
            out.append(f / "calibration.json")
        sub = f / RECORDS_DIR / key
        if sub.is_dir():
            out.extend(sorted(sub.glob("*.json")))
    return out


def lookup_calibration(results: StoredResults, *, explicit: Any = None,
                       folders: Sequence[Any] = ()) -> dict[str, Any] | None:
    """The calibration section of a report on ``results``: None when its queries are not synthetic
    (no ``provenance.json`` of ``bakeoff generate`` found).

    Records are looked up in this order: ``explicit`` (``--calibration FILE``: a record of another
    generator is an :class:`~bakeoff.errors.InputError`), then ``calibration.json`` and
    ``calibrations/<key>/*.json`` in each of ``folders`` (the run's folder, the cache folder); a
    record matches when its generator key equals the run's
    (:func:`generator_identity`). Returns ``{"generator": {"key", "model"}, "found": bool,
    "lines": [str], "records": [{"path", "corpus", "primary", "tau_b", "tau_ap", "verdict",
    "plot": {...}}]}``; without a record, ``lines`` says so and which command makes one.
    """
    from ..errors import InputError

    prov = run_provenance(results)
    if prov is None:
        return None
    try:
        ident = generator_identity(prov)
    except ValueError:
        return None
    found: list[dict[str, Any]] = []
    if explicit is not None:
        rec = read_record(explicit)
        if rec["generator"].get("key") != ident["key"]:
            raise InputError(f"a calibration of another generator ({rec['generator'].get('key')}: "
                             f"{rec['generator'].get('model')}), not of this run's ({ident['key']}: {ident['model']})",
                             path=rec["_path"], field="generator.key")
        found.append(rec)
    seen = {str(r["_path"]) for r in found}
    for path in _candidates(folders, ident["key"]):
        try:
            rec = read_record(path)
        except InputError:
            continue
        if rec["generator"].get("key") == ident["key"] and str(rec["_path"]) not in seen:
            seen.add(str(rec["_path"]))
            found.append(rec)
    out: dict[str, Any] = {"generator": {"key": ident["key"], "model": ident["model"]}, "found": bool(found),
                           "lines": [], "records": []}
    for rec in found:
        m = rec.get("primary")
        agr = ((rec["measures"].get(m) or {}).get("agreement")) or {}
        out["lines"].append(summary_line(rec) + f" (record {rec['_path']})")
        out["records"].append({
            "path": rec["_path"], "corpus": rec["corpus"].get("name"), "primary": m,
            "tau_b": (agr.get("figures") or {}).get("tau_b"), "tau_ap": (agr.get("figures") or {}).get("tau_ap"),
            "verdict": (rec.get("verdict") or {}).get("agreement"),
            "plot": {k: agr.get(k) for k in ("arms", "human_means", "synthetic_means", "human_ci", "synthetic_ci",
                                             "n_human", "n_synthetic")}})
    if not found:
        out["lines"].append(
            f"no calibration exists for this generator ({ident['key']}: {ident['model']}): nothing says how far its "
            "verdict matches human judgments. Measure it on a judged corpus like yours: `bakeoff calibrate "
            "--dataset JUDGED_BEIR_FOLDER --llm <the --llm of bakeoff generate> --out DIR` (with the same generator "
            "options), then `bakeoff report RUN --calibration DIR/calibration.json`.")
    return out


def scatter_svg(plot: Mapping[str, Any], *, measure: str, size: int = 360) -> str:
    """An inline SVG: synthetic (y) against human (x) mean per arm with their CIs as whiskers, and the
    diagonal ``y = x`` (an arm above it is flattered by the synthetic queries). Arm names are escaped."""
    from html import escape

    arms = list(plot.get("arms") or [])
    hm, sm = plot.get("human_means") or {}, plot.get("synthetic_means") or {}
    hci, sci = plot.get("human_ci") or {}, plot.get("synthetic_ci") or {}
    vals = [v for a in arms for v in (hm.get(a), sm.get(a), *(hci.get(a) or []), *(sci.get(a) or []))
            if isinstance(v, (int, float)) and math.isfinite(v)]
    if not vals:
        return ""
    lo, hi = min(vals), max(vals)
    pad = max((hi - lo) * 0.08, 0.01)
    lo, hi = max(0.0, lo - pad), min(1.0, hi + pad) if hi <= 1.0 else hi + pad
    m0, m1 = 48, size - 12  # plot area in pixels

    def px(v: float) -> float:
        return m0 + (v - lo) / (hi - lo) * (m1 - m0)

    def py(v: float) -> float:
        return size - px(v)

    parts = [(f'<svg class="calibration-plot" xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
             f'viewBox="0 0 {size} {size}" role="img" aria-label="synthetic vs human {escape(measure)} per arm">'),
             f'<rect x="{m0}" y="{size - m1}" width="{m1 - m0}" height="{m1 - m0}" fill="none" stroke="#999"/>',
             (f'<line x1="{px(lo):.1f}" y1="{py(lo):.1f}" x2="{px(hi):.1f}" y2="{py(hi):.1f}" stroke="#bbb" '
             'stroke-dasharray="4 3"><title>y = x: same score on both truths</title></line>')]
    for t in np.linspace(lo, hi, 5):
        parts.append(f'<text x="{px(t):.1f}" y="{size - m0 + 16}" font-size="10" text-anchor="middle">{t:.2f}</text>')
        parts.append(f'<text x="{m0 - 4}" y="{py(t) + 3:.1f}" font-size="10" text-anchor="end">{t:.2f}</text>')
    parts.append(f'<text x="{(m0 + m1) / 2:.0f}" y="{size - 4}" font-size="11" text-anchor="middle">human '
                 f'{escape(measure)}</text>')
    parts.append(f'<text x="12" y="{size / 2:.0f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 12 {size / 2:.0f})">synthetic {escape(measure)}</text>')
    for a in arms:
        x, y = hm.get(a), sm.get(a)
        if not (isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isfinite(x) and math.isfinite(y)):
            continue
        xl, xh = (hci.get(a) or [x, x])
        yl, yh = (sci.get(a) or [y, y])
        tip = escape(f"{a}: human {x:.4f} [{xl:.4f}, {xh:.4f}], synthetic {y:.4f} [{yl:.4f}, {yh:.4f}]")
        parts.append(f'<g><title>{tip}</title>'
                     f'<line x1="{px(xl):.1f}" y1="{py(y):.1f}" x2="{px(xh):.1f}" y2="{py(y):.1f}" stroke="#4a7"/>'
                     f'<line x1="{px(x):.1f}" y1="{py(yl):.1f}" x2="{px(x):.1f}" y2="{py(yh):.1f}" stroke="#4a7"/>'
                     f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="#275"/>'
                     f'<text x="{px(x) + 5:.1f}" y="{py(y) - 5:.1f}" font-size="10">{escape(a)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)
