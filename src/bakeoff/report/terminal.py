"""The terminal table: one row per arm, side by side.

Columns: the measures, arm-specific figures, ``Judged@k`` (the share of each arm's top ``k``
that has any judgment: low means the measures read many unjudged documents as non-relevant), then ``p50 ms``/``p95 ms`` (end-to-end single-query
latency, :meth:`bakeoff.runner.context.Context.measure_latency`; falls back to the
batch ``ms/query`` when no latency was measured, marked ``~``), ``$/1k q``
(:mod:`bakeoff.runner.costs`) and ``cached``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from ..metrics import conventions_line

if TYPE_CHECKING:
    from ..runner.results import StoredArm, StoredResults

__all__ = ["arm_letters", "leak_bucket_rows", "print_agreement", "print_table", "print_truth_quality", "table_rows",
           "truth_quality_rows", "verdict_measure"]


def verdict_measure(report: Mapping[str, Any]) -> str:
    """The measure the verdict decides on (the report's primary measure without a verdict),
    which the win/tie/loss table and heat map use too."""
    m = (report.get("verdict") or {}).get("measure") or report["primary"]
    return m if m in report["diagnostics"]["win_tie_loss"] else report["primary"]


def table_rows(results: StoredResults, *, measures: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows (strings) of the results table of a results set."""
    k = results.k
    lower = _lower_bound(results)
    measures = list(measures or ([f"recall@{k}", f"mrr@{k}"] if lower else [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}"]))
    header = ["arm", *[m.replace("ndcg", "NDCG").replace("recall", "Recall").replace("mrr", "MRR")
                       + (" (lower bound)" if lower else "") for m in measures],
              "p50 ms", "p95 ms", "$/1k q", "model MB", "mem MB", "cached"]
    extras = sorted({m for a in results.arms for m in a.extra_metrics})
    judged = any(a.judged is not None for a in results.arms)  # results written before judged@k have none
    header[len(measures) + 1 : len(measures) + 1] = [*extras, *([f"Judged@{k}"] if judged else [])]
    rows = []
    for a in results.arms:
        vals = [a.metrics.get(m, math.nan) for m in measures]
        ex = [a.extra_metrics.get(m) for m in extras]
        timing = a.timing
        lat = timing.get("latency") or {}
        if "p50_ms" in lat:
            p50, p95 = _ms(lat["p50_ms"]), _ms(lat["p95_ms"])
        else:
            batch = timing.get("ms_per_query_total", timing.get("ms_per_query"))
            p50 = p95 = "-" if batch is None else "~" + _ms(batch)
        usd = (a.cost or {}).get("usd_per_1k_queries")
        name = a.name
        if a.fine_tuned:
            name += f" (trained on {a.fine_tuned.get('trained_on')})"
        name += _broken_mark(a)
        jd = [] if not judged else ["-" if a.judged is None else f"{a.judged['mean']:.3f}"]
        rows.append([name, *[f"{v:.4f}" for v in vals], *["" if v is None else f"{v:.4f}" for v in ex], *jd,
                     p50, p95, "-" if usd is None else _usd(usd), *_footprint_cells(a), "yes" if a.cached else ""])
    return header, rows


def _broken_mark(arm: StoredArm) -> str:
    """`` BROKEN (empty for 100% of queries)`` for an arm the empty-run guard flagged, else ``""``."""
    empty = arm.empty or {}
    if not empty.get("broken"):
        return ""
    return f" BROKEN (empty for {empty.get('share', 0):.0%} of queries)"


def _footprint_cells(arm: StoredArm) -> list[str]:
    """``model MB`` (model files on disk; 0 for arms without a model) and ``mem MB`` (peak memory the
    arm's index and search added, :mod:`bakeoff.runner.footprint`); ``-`` when not recorded."""
    fp = arm.footprint or {}
    size, mem = fp.get("model_bytes"), fp.get("added_mb")
    return ["-" if size is None else f"{size / float(1 << 20):.0f}",
            "-" if mem is None else f"{mem:.0f}"]


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _usd(value: float) -> str:
    """USD per 1,000 queries: one format for every row, three significant digits in scientific
    notation (``6.52e-06``, ``1.00e-02``), so magnitudes compare at a glance."""
    return f"{value:.2e}"


def _lower_bound(results: StoredResults) -> bool:
    """Citation-mined labels: only cited targets are known relevant, so metrics are lower bounds."""
    return results.label_kind == "citation"


def print_table(results: StoredResults, *, measures: Sequence[str] | None = None, file: IO[str] | None = None) -> None:
    """Print the table with rich (plain text when the output is not a terminal)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    header, rows = table_rows(results, measures=measures)
    ds = results.dataset
    title = f"{ds.name} ({ds.split}): {results.n_evaluated} queries, {ds.n_docs} docs"
    if ds.search_mode:
        title += " — " + ("as of each query's date" if ds.search_mode == "as_of" else "latest versions")
    table = Table(title=title)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*(escape(c) for c in r))  # arm names are user text, not rich markup
    # wide enough that no header or cell wraps (the title may wrap)
    widths = [max([len(h), *(len(r[i]) for r in rows)]) + 3 for i, h in enumerate(header)]
    console = Console(file=file, width=max(100, sum(widths) + 4))
    conventions = {"averaging": results.averaging, "relevance_level": results.relevance_level,
                   "dataset": ds.to_dict()}
    console.print(escape(conventions_line(conventions)), soft_wrap=True)  # how the numbers below were computed
    console.print(table)
    if _lower_bound(results):
        console.print("citation-mined: Recall/MRR are LOWER BOUNDS (uncited targets are unknown, not wrong)",
                      soft_wrap=True)
    for a in results.arms:
        empty = a.empty or {}
        if empty.get("broken"):
            console.print(f"BROKEN: {escape(a.name)} returned an empty ranking for {empty['queries']} of "
                          f"{empty['n']} queries (more than {empty['max_share']:.0%}); reports leave it out of the "
                          "ranking and the tests.", soft_wrap=True)


def arm_letters(n: int) -> list[str]:
    """Arm labels a, b, ..., z, aa, ab, ... used for significance marks."""
    out = []
    for i in range(n):
        s = ""
        i += 1
        while i:
            i, r = divmod(i - 1, 26)
            s = chr(97 + r) + s
        out.append(s)
    return out


def _fmt(v: Any, digits: int = 4) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _fmt_p(p: Any) -> str:
    if p is None:
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def report_rows(report: Mapping[str, Any], *, measures: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the report table: each mean with its CI and significance letters.

    Each arm gets a letter (a, b, ...); a cell ``0.6650 [0.6300, 0.7000] bc`` means the arm is
    significantly better than arms b and c on that measure after Holm correction.
    """
    k = report["k"]
    measures = [m for m in (measures or [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}"]) if m in report["measures"]]
    if not measures:
        measures = list(report["measures"][:3])
    letters = dict(zip([a["name"] for a in report["arms"]], arm_letters(len(report["arms"]))))
    header = ["", "arm", *[m.replace("ndcg", "NDCG").replace("recall", "Recall").replace("mrr", "MRR") + " [95% CI]"
                           for m in measures], "ms/query"]
    rows = []
    for a in report["arms"]:
        cells = []
        for m in measures:
            s = a["metrics"][m]
            marks = "".join(sorted(letters[b] for b in a["beats"].get(m, [])))
            cells.append(f"{_fmt(s['mean'])} [{_fmt(s['ci_low'])}, {_fmt(s['ci_high'])}]" + (f" {marks}" if marks else ""))
        ms = a.get("latency_ms", (a.get("timing") or {}).get("ms_per_query"))
        rows.append([letters[a["name"]], a["name"], *cells, _fmt(ms, 2)])
    return header, rows


def pair_rows(report: Mapping[str, Any], measure: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the pairwise table for one measure."""
    wtl = {(w["a"], w["b"]): w for w in report["diagnostics"]["win_tie_loss"].get(measure, [])}
    header = ["A", "B", "A-B [95% CI]", "p (perm)", "p Holm", "p (t)", "d_z", "W/T/L", ""]
    rows = []
    for p in report["stats"]["pairs"]:
        if p["measure"] != measure:
            continue
        w = wtl.get((p["a"], p["b"]))
        rows.append([p["a"], p["b"],
                     f"{p['diff']:+.4f} [{_fmt(p['diff_ci_low'])}, {_fmt(p['diff_ci_high'])}]",
                     _fmt_p(p["p_perm"]), _fmt_p(p["p_perm_holm"]), _fmt_p(p["p_ttest"]), _fmt(p["d_z"], 2),
                     f"{w['wins']}/{w['ties']}/{w['losses']}" if w else "",
                     "*" if p["significant"] else ""])
    return header, rows


def print_report(report: Mapping[str, Any], *, file: IO[str] | None = None) -> None:
    """Print the report: means with CIs and marks, the pairwise table, the note and the oracle."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, width=160)
    print_verdict(report, console=console)
    if not report["arms"]:
        return
    ds = report["dataset"]
    title = (f"{ds.get('name')} ({ds.get('split')}): {report['n_queries']} queries, {ds.get('n_docs')} docs; "
             f"k={report['k']}")
    header, rows = report_rows(report)
    table = Table(title=title)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i < 2 else "right")
    for r in rows:
        table.add_row(*r)
    console.print(conventions_line(report), soft_wrap=True, markup=False)  # how the numbers below were computed
    console.print(table)
    print_truth_quality(report, console)
    st = report["stats"]
    console.print(f"Means with {int(st['confidence'] * 100)}% bootstrap CIs ({st['n_resamples']} resamples, seed "
                  f"{st['seed']}). Letters: the arm is significantly better than those arms (paired randomization "
                  f"test, Holm-corrected across pairs, alpha={st['alpha']}).", soft_wrap=True)
    if report.get("note"):
        console.print(f"[bold]Note:[/bold] {report['note']}", soft_wrap=True)
    m = report["primary"]
    ph, pr = pair_rows(report, m)
    if pr:
        pt = Table(title=f"Pairs on {m} (* = significant after Holm)")
        for i, h in enumerate(ph):
            pt.add_column(h, justify="left" if i < 2 else "right")
        for r in pr:
            pt.add_row(*r)
        console.print(pt)
    dg = report["diagnostics"]
    k = report["k"]
    wm = verdict_measure(report)
    arms = [a["name"] for a in report["arms"]]
    wtl = {(w["a"], w["b"]): w for w in dg["win_tie_loss"].get(wm, [])}
    if len(arms) > 1:
        wt = Table(title=f"Win/tie/loss of row vs column on {wm} ({report['n_queries']} queries)")
        wt.add_column("")
        for b in arms:
            wt.add_column(b, justify="right")
        for a in arms:
            wt.add_row(a, *[("-" if a == b else f"{wtl[(a, b)]['wins']}/{wtl[(a, b)]['ties']}/{wtl[(a, b)]['losses']}")
                            for b in arms])
        console.print(wt)
    for meas in dict.fromkeys([m, wm]):
        o = dg["oracle"].get(meas)
        if o and o.get("best_arm"):
            console.print(f"Oracle (best arm per query) {meas}: {_fmt(o['mean'])}; best single arm {o['best_arm']} "
                          f"{_fmt(o['best_mean'])}; head-room {o['headroom']:+.4f}; {o['all_zero']} queries score 0 "
                          "on every arm.")
    if dg.get("churn"):
        ct = Table(title=f"Churn in the top {k}: an arm and its fused/reranked version")
        for h in ("from", "to", "gained a relevant", "lost a relevant", "both", "rescued", "broken", "docs in", "docs out"):
            ct.add_column(h, justify="left" if h in ("from", "to") else "right")
        for c in dg["churn"]:
            ct.add_row(c["base"], c["new"], *[str(c[x]) for x in ("gained", "lost", "both", "rescued", "broken",
                                                                   "docs_gained", "docs_lost")])
        console.print(ct)
    for d in dg.get("decomposition", []):
        if d["by"] != "relevant documents":
            continue
        dt = Table(title=f"{d['a']} - {d['b']} on {d['measure']} (delta {d['delta']:+.4f}) by relevant documents")
        for h in ("bucket", "n", "mean A", "mean B", "delta", "contribution", "W/T/L"):
            dt.add_column(h, justify="left" if h == "bucket" else "right")
        for r in d["rows"]:
            dt.add_row(r["bucket"], str(r["n"]), _fmt(r["mean_a"]), _fmt(r["mean_b"]), f"{r['delta']:+.4f}",
                       f"{r['contribution']:+.4f}", f"{r['wins']}/{r['ties']}/{r['losses']}")
        console.print(dt)
    cov = dg.get("coverage")
    if cov is not None:
        console.print(f"Coverage: {len(cov['uncoverable'])} of {cov['n_queries']} queries have no relevant document in "
                      f"the corpus, {len(cov['partial'])} only some; they are counted apart from retrieval failures.")
        if dg.get("failures"):
            console.print("Retrieval failures (coverable queries with no relevant document in the top "
                          f"{k}): " + ", ".join(f"{a} {f['count']}" for a, f in dg["failures"].items()) + ".")


# --- the verdict (bakeoff.report.verdict) ------------------------------------------------------------

def print_verdict(report: Mapping[str, Any], *, console: Any) -> None:
    """The verdict at the top of the terminal report: the decision, head-room, broken arms, caveats,
    then the costs of every valid arm (candidates marked)."""
    from rich.markup import escape
    from rich.table import Table

    from .verdict import cost_rows

    v = report.get("verdict")
    if not v:
        return
    console.print(f"[bold]Verdict[/bold] (on {escape(v['measure'])}, alpha={v['alpha']}): {escape(v['headline'])}",
                  soft_wrap=True)
    for line in v["lines"][1:]:
        console.print("  " + escape(line), soft_wrap=True)
    for line in (report.get("calibration") or {}).get("lines") or []:
        console.print("  Calibration: " + escape(line), soft_wrap=True)
    header, rows = cost_rows(v)
    if len(rows) > 1:
        t = Table(title="What each arm costs (the pick is the cheapest arm statistically tied with the best)")
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i < 2 else "right")
        for r in rows:
            t.add_row(*(escape(c) for c in r))
        console.print(t)
        console.print("  A cost decides only when it differs by more than 10%, in the column order. Index time is what "
                      "building the index takes (embeddings restored from the cache count what computing them took); memory is the peak the arm's "
                      "index and search added (- when restored from an older cache entry).", soft_wrap=True)


def truth_quality_rows(report: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the truth-quality table (:mod:`bakeoff.report.quality`): per arm
    Judged@k, unjudged documents in its top k (of them disputed), round trip @10/@100."""
    tq = report.get("truth_quality") or {}
    k = tq.get("k", report.get("k"))
    judged, holes, rt = tq.get("judged") or {}, tq.get("holes") or {}, tq.get("round_trip") or {}
    header = ["arm", f"Judged@{k}", f"unjudged in top {k} (disputed)"]
    if rt:
        header += [f"source in top {x}" for x in rt["ks"]]
    rows = []
    for a in report["arms"]:
        name = a["name"]
        if name not in judged:
            continue
        row = [name, _fmt(judged[name], 3),
               f"{holes.get('per_arm', {}).get(name, 0)} ({holes.get('disputed_per_arm', {}).get(name, 0)})"]
        if rt:
            row += [_fmt((rt["arms"].get(name) or {}).get(f"top{x}"), 3) for x in rt["ks"]]
        rows.append(row)
    return header, rows


def leak_bucket_rows(pair: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one leak-robust verdict table (one pair of arms, one row per leak bucket)."""
    header = ["leak bucket", "n", "mean A", "mean B", "A-B", "W/T/L", "p (perm)", "p Holm", ""]
    rows = [[r["bucket"], str(r["n"]), _fmt(r["mean_a"]), _fmt(r["mean_b"]), f"{r['delta']:+.4f}",
             f"{r['wins']}/{r['ties']}/{r['losses']}", _fmt_p(r.get("p_perm")), _fmt_p(r.get("p_perm_holm")),
             "*" if r.get("significant") else ""] for r in pair["rows"]]
    return header, rows


def leak_matched_rows(lm: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the leak-matched table (:mod:`bakeoff.report.leak_match`): each arm's weighted mean with
    its 95 % CI, its unweighted mean, and its mean inside each leak bin (header: the bin, its query count and
    target share); arms by weighted mean, best first."""
    bins = list(lm["by_bin"])
    header = ["arm", "leak-matched", "95% CI", "unweighted",
              *[f"{b['bin']} n={b['n']} t={b['target']:.0%}" for b in bins]]
    rows = []
    for a in sorted(lm["arms"], key=lambda x: -lm["arms"][x]["mean"]):
        r = lm["arms"][a]
        rows.append([a, _fmt(r["mean"]), f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]", _fmt(r["unweighted"]),
                     *[(_fmt(b["means"][a]) if b["means"] else "-") for b in bins]])
    return header, rows


def leak_matched_line(lm: Mapping[str, Any]) -> str:
    """One sentence under the leak-matched table: the target, the effective sample size, the uncovered mass."""
    target = ", ".join(f"{t:.0%}" for t in lm["target"])
    txt = (f"Weighted to the leak target ({lm['target_source']}: {target} from the lowest bin up): {lm['n']} queries "
           f"count as {lm['ess']:.1f} (effective sample size; no pick below {lm['min_ess']:.0f}).")
    if lm.get("uncovered"):
        txt += f" {lm['uncovered']:.0%} of the target lies in bins that hold no query."
    return txt


def _ranks(arms: Sequence[str], means: Mapping[str, float]) -> dict[str, int]:
    """Each arm's 1-based rank by mean, highest first."""
    return {a: r for r, a in enumerate(sorted(arms, key=lambda a: -means[a]), start=1)}


def print_truth_quality(report: Mapping[str, Any], console: Any) -> None:
    """The truth-quality table, the holes summary and the leak-robust verdict (when present)."""
    from rich.markup import escape
    from rich.table import Table

    tq = report.get("truth_quality")
    if not tq:
        return
    header, rows = truth_quality_rows(report)
    if rows:
        t = Table(title="Truth quality: how much of each arm's top k the judgments cover")
        for i, h in enumerate(header):
            t.add_column(h, justify="left" if i == 0 else "right")
        for r in rows:
            t.add_row(*(escape(c) for c in r))
        console.print(t)
        holes = tq.get("holes") or {}
        rt = tq.get("round_trip")
        console.print(f"Holes: {holes.get('total', 0)} unjudged (query, document) pairs in the arms' pooled top "
                      f"{tq['k']} over {holes.get('queries', 0)} queries, {holes.get('disputed', 0)} of them in some "
                      f"arms' top {tq['k']} but not all (listed in {holes.get('file')}; grade them with "
                      "`bakeoff assess`). Unjudged documents count as non-relevant in every measure.", soft_wrap=True)
        if rt:
            console.print(f"Round trip: share of the {rt['n']} queries whose source document (metadata "
                          f"'{rt['field']}') is in the arm's top k; reported, never used as a filter (it favours "
                          "the arm that would filter).", soft_wrap=True)
    lm = tq.get("leak_matched")
    if lm:
        head, rows = leak_matched_rows(lm)
        t = Table(title=f"Leak-matched {lm['measure']}: the verdict's table (queries weighted to people's leak)")
        for i, c in enumerate(head):
            t.add_column(escape(c), justify="left" if i == 0 else "right")
        for r in rows:
            t.add_row(*(escape(c) for c in r))
        console.print(t)
        console.print(escape(leak_matched_line(lm)), soft_wrap=True)
    lb = tq.get("leak_buckets")
    if lb:
        counts = ", ".join(f"{b} {n}" for b, n in lb["counts"].items())
        console.print(f"Leak-robust verdict on {lb['measure']} (queries per leak bucket: {counts}); a win that holds "
                      "only at high leak is a win on words copied from the answer.", soft_wrap=True)
        for pair in lb["pairs"]:
            head, rows = leak_bucket_rows(pair)
            t = Table(title=f"{pair['a']} - {pair['b']} by leak bucket (delta {pair['delta']:+.4f}; * = significant "
                            f"after Holm within the bucket, alpha={lb['alpha']})")
            for i, c in enumerate(head):
                t.add_column(c, justify="left" if i == 0 else "right")
            for r in rows:
                t.add_row(*(escape(c) for c in r))
            console.print(t)


def print_agreement(agr: Mapping[str, Any], *, file: IO[str] | None = None) -> None:
    """The synthetic-vs-real ranking agreement (:mod:`bakeoff.report.agreement`): both sets' arm means
    side by side, Kendall's τ with its CI, and the verdict in one sentence."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(file=file, width=120)
    labels = agr["labels"]
    t = Table(title=f"Arm means on {agr['measure']}: {labels[0]} ({agr['n_queries'][0]} queries) vs {labels[1]} "
                    f"({agr['n_queries'][1]} queries)")
    t.add_column("arm")
    for i, lab in enumerate(labels):
        tag = "real" if lab != agr["synthetic"] else ("synthetic" if any(agr.get("synthetic_detected", [True]))
                                                      else "taken as synthetic")
        t.add_column(f"{lab} ({tag})", justify="right")
        t.add_column("rank", justify="right")
    ranks = [_ranks(agr["arms"], m) for m in agr["means"]]
    for a in agr["arms"]:
        t.add_row(escape(a), _fmt(agr["means"][0][a]), str(ranks[0][a]), _fmt(agr["means"][1][a]), str(ranks[1][a]))
    console.print(t)
    console.print(escape(agr["text"]), soft_wrap=True)
    if agr.get("undefined_resamples"):
        console.print(f"({agr['undefined_resamples']} of {agr['n_resamples']} resamples had all arm means tied: "
                      "no τ, left out of the CI.)", soft_wrap=True)
