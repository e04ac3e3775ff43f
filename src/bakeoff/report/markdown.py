"""The report as GitHub-flavoured Markdown: for a pull-request comment or a CI job's step summary.

:func:`render_markdown` is a function of the report dict (:mod:`bakeoff.report.model`), like the
other renderers: the verdict (decision, then the other verdict lines), the table of means with
their bootstrap CIs and significance letters, the pairwise tests on the verdict's measure, the
conventions line (averaging rule, relevance level, identical ids) and the caveats. A ``gate``
(:class:`bakeoff.report.gate.GateResult`, ``compare --fail-if-worse``) adds its outcome at the top.

Every user-supplied text (arm and dataset names, verdict sentences that quote them) is escaped so
that it renders as text: Markdown's punctuation gets a backslash, ``|`` inside tables too, and
``<`` / ``>`` / ``&`` become entities (GitHub renders HTML in Markdown).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..metrics import conventions_line
from .terminal import pair_rows, report_rows

__all__ = ["md_escape", "render_markdown"]

_SPECIAL = re.compile(r"([\\`*_{}\[\]|~])")


def md_escape(text: Any) -> str:
    """``text`` as literal Markdown text (no emphasis, links, HTML or table cells broken by ``|``)."""
    s = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", s).replace("\n", " ")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int) -> list[str]:
    out = ["| " + " | ".join(md_escape(h) for h in header) + " |",
           "|" + "|".join(":---" if i < left else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(md_escape(c) for c in r) + " |" for r in rows]
    return out


def render_markdown(report: Mapping[str, Any], *, gate: Any = None, title: str | None = None) -> str:
    """The report (and a gate's outcome) as GitHub-flavoured Markdown (module docstring)."""
    ds = report.get("dataset") or {}
    lines = [f"## {md_escape(title or 'bakeoff: ' + str(ds.get('name')) + ' (' + str(ds.get('split')) + ')')}", ""]
    if gate is not None:
        status = "❌ **gate failed**" if gate.failed else "✅ gate passed"
        lines.append(status + (":" if gate.lines else ""))
        lines += [f"- {md_escape(line)}" for line in gate.lines]
        lines.append("")
    v = report.get("verdict") or {}
    if v:
        lines.append(f"**Verdict** (on {md_escape(v.get('measure'))}, alpha={v.get('alpha')}): "
                     f"{md_escape(v.get('headline', ''))}")
        lines += [f"- {md_escape(line)}" for line in v.get("lines", [])[1:] if not line.startswith("Caveat: ")]
        lines.append("")
    if report.get("arms"):
        st = report["stats"]
        lines.append(f"{report['n_queries']} queries, {ds.get('n_docs')} documents, k={report['k']}. "
                     f"{md_escape(conventions_line(report))}.")
        lines.append("")
        header, rows = report_rows(report, measures=report["measures"])
        lines += _table(header[:-1] + ["latency ms"], rows, left=2)
        lines.append("")
        lines.append(f"Means with {int(st['confidence'] * 100)}% bootstrap CIs ({st['n_resamples']} resamples). "
                     "Letters: significantly better than those arms (paired randomization test, Holm-corrected, "
                     f"alpha={st['alpha']}).")
        m = v.get("measure") or report["primary"]
        ph, pr = pair_rows(report, m)
        if pr:
            lines += ["", f"<details><summary>Pairs on {md_escape(m)} (* = significant after Holm)</summary>", ""]
            lines += _table(ph[:-1] + ["sig."], pr, left=2)
            lines += ["", "</details>"]
    caveats = list(v.get("caveats") or [])
    if report.get("note"):
        caveats.append(str(report["note"]))
    if caveats:
        lines += ["", "**Caveats**", ""]
        lines += [f"- {md_escape(c)}" for c in caveats]
    return "\n".join(lines).rstrip() + "\n"
