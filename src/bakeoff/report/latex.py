"""A LaTeX table for papers (``booktabs``): mean, 95 % CI and significance letters per arm.

Needs ``\\usepackage{booktabs}`` in the preamble. Each arm gets a letter (a), (b), ...; a
superscript lists the arms it is significantly better than (paired randomization test,
Holm-corrected); the best mean per column is bold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..metrics import conventions_line
from .terminal import arm_letters

__all__ = ["latex_escape", "render_latex", "write_latex"]

_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
            "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}"}


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters in ``text``."""
    return "".join(_SPECIAL.get(c, c) for c in str(text))


def _label(m: str) -> str:
    name, _, k = m.partition("@")
    pretty = {"ndcg": "nDCG", "recall": "Recall", "mrr": "MRR", "precision": "P", "hit": "Hit", "map": "MAP",
              "ndcg_exp": "nDCG$_{exp}$"}.get(name, latex_escape(name))
    return f"{pretty}@{k}" if k else pretty


def render_latex(report: Mapping[str, Any], *, measures: Sequence[str] | None = None, digits: int = 3) -> str:
    """The ``table`` environment as a string."""
    k = report["k"]
    measures = [m for m in (measures or [f"ndcg@{k}", f"recall@{k}", f"mrr@{k}"]) if m in report["measures"]]
    if not measures:
        measures = list(report["measures"][:3])
    arms = report["arms"]
    letters = dict(zip([a["name"] for a in arms], arm_letters(len(arms))))
    best = {m: max((a["metrics"][m]["mean"] for a in arms if a["metrics"][m]["mean"] is not None), default=math.nan)
            for m in measures}
    st = report["stats"]
    lines = [r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{l" + "r" * len(measures) + "}", r"\toprule",
             "Arm & " + " & ".join(_label(m) for m in measures) + r" \\", r"\midrule"]
    for a in arms:
        cells = []
        for m in measures:
            s = a["metrics"][m]
            if s["mean"] is None:
                cells.append("--")
                continue
            v = f"{s['mean']:.{digits}f}"
            if abs(s["mean"] - best[m]) < 1e-12:
                v = rf"\textbf{{{v}}}"
            marks = "".join(sorted(letters[b] for b in a["beats"].get(m, [])))
            sup = rf"$^{{\mathrm{{{marks}}}}}$" if marks else ""
            ci = (rf" {{\scriptsize[{s['ci_low']:.{digits}f}, {s['ci_high']:.{digits}f}]}}"
                  if s["ci_low"] is not None and s["ci_high"] is not None else "")
            cells.append(v + sup + ci)
        lines.append(f"({letters[a['name']]}) {latex_escape(a['name'])} & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    ds = report["dataset"]
    caption = (f"{latex_escape(str(ds.get('name')))} ({latex_escape(str(ds.get('split')))}), "
               f"{report['n_queries']} queries. Mean with {int(st['confidence'] * 100)}\\% bootstrap CI "
               f"({st['n_resamples']} resamples). Superscripts: significantly better than those arms "
               f"(paired randomization test, Holm-corrected, $\\alpha={st['alpha']}$).")
    line = conventions_line(report)
    caption += " " + latex_escape(line[0].upper() + line[1:]).replace(">=", r"$\geq$") + "."
    if report.get("note"):
        caption += " " + latex_escape(report["note"])
    lines += [rf"\caption{{{caption}}}", r"\label{tab:bakeoff}", r"\end{table}", ""]
    return "\n".join(lines)


def write_latex(path: str | Path, report: Mapping[str, Any], **kwargs: Any) -> Path:
    """Write :func:`render_latex` atomically."""
    from .._io import atomic_write_text

    p = Path(path)
    atomic_write_text(p, render_latex(report, **kwargs))
    return p
