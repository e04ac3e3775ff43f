"""``bakeoff report --format md``, ``compare --fail-if-worse --summary md``, the conventions line in every
table, and the P-R / per-topic figures, on the tiny BEIR folder (real CLI, real arms)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from bakeoff.cli import main
from bakeoff.report.markdown import md_escape, render_markdown
from tests.support.report_fixture import run_tiny

RESAMPLES = "2000"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return run_tiny(tmp_path_factory.mktemp("md"))


def _run(args: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(args)
    return rc, buf.getvalue()


@pytest.fixture(scope="module")
def md_report(tiny: Path, tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("md-out")
    rc, text = _run(["report", str(tiny), "--out", str(out), "--resamples", RESAMPLES, "--format", "md",
                     "--no-html", "--no-progress"])
    assert rc == 0
    return out, text


def test_report_format_md_prints_and_writes_gfm(md_report) -> None:
    out, text = md_report
    assert text == (out / "report.md").read_text(encoding="utf-8")
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert text.startswith("## bakeoff: ")
    assert f"**Verdict** (on {md_escape(rep['verdict']['measure'])}" in text
    assert "averaging: bakeoff (judged queries with a relevant document; a query missing from a run scores 0); " \
           "relevant: grade >= 1; own-id documents kept" in text.replace("&gt;", ">")
    # the table: one row per arm with mean [CI] and the significance letters, GitHub's pipe syntax
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("|  | arm | NDCG@3 \\[95% CI\\]")
    for a in rep["arms"]:
        m = a["metrics"]["ndcg@3"]
        assert any(f"{m['mean']:.4f} \\[{m['ci_low']:.4f}, {m['ci_high']:.4f}\\]" in r for r in rows), a["name"]
    assert "**Caveats**" in text and "Only 10 queries" in text


def test_markdown_renders_as_tables_and_escapes_user_text(md_report) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    _, text = md_report
    md = markdown_it.MarkdownIt("commonmark").enable("table")  # GitHub's tables, no extra packages
    html = md.render(text)
    assert html.count("<table>") == 2 and "<details>" in html  # means, then the pairs (folded)
    assert ">NDCG@3 [95% CI]</th>" in html
    evil = {"dataset": {"name": "x|<script>alert(1)</script>*y*", "split": "test"}, "arms": [], "verdict": {
        "measure": "ndcg@10", "alpha": 0.05, "headline": "No valid arm: [link](http://e)", "lines": [],
        "caveats": []}}
    rendered = md.render(render_markdown(evil))
    assert "<script>" not in rendered and "<a href" not in rendered and "<em>" not in rendered


def test_report_figures_written_and_inlined(tiny: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("plotly")
    rc, text = _run(["report", str(tiny), "--out", str(tmp_path), "--resamples", RESAMPLES, "--no-progress"])
    assert rc == 0
    for name in ("pr_curves", "per_topic"):
        for fmt in ("svg", "png", "pdf"):
            f = tmp_path / "figures" / f"{name}.{fmt}"
            assert f.stat().st_size > 1000, f
        assert (tmp_path / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "figures" / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="figure-pr_curves"' in page and 'id="figure-per_topic"' in page and page.count("<svg") >= 2
    assert '<p class="conventions">averaging: bakeoff (' in page  # the HTML table states its rule too
    assert "figures/pr_curves.svg" in text  # listed among the files written
    # the same figure twice gives the same bytes (no date in SVG and PDF)
    first = (tmp_path / "figures" / "pr_curves.svg").read_bytes()
    assert _run(["report", str(tiny), "--out", str(tmp_path), "--resamples", RESAMPLES, "--no-progress",
                 "--no-html"])[0] == 0
    assert (tmp_path / "figures" / "pr_curves.svg").read_bytes() == first


def test_compare_fail_if_worse_summary_md(tiny: Path, tmp_path: Path) -> None:
    """BASE = the tiny results; NEW = the same with the stemmed arm's per-query values zeroed: significantly
    worse on mrr@3, so the gate fails (exit 1) and the Markdown says so at the top."""
    res = json.loads((tiny / "results.json").read_text(encoding="utf-8"))
    new = tmp_path / "new"
    shutil.copytree(tiny, new)
    for a in res["arms"]:
        for m in a["per_query"]:
            a["per_query"][m] = {q: 0.0 for q in a["per_query"][m]}
        a["metrics"] = {m: 0.0 for m in a["metrics"]}
    (new / "results.json").write_text(json.dumps(res), encoding="utf-8")
    rc, text = _run(["compare", str(tiny), str(new), "--fail-if-worse", "mrr@3", "--resamples", RESAMPLES,
                     "--summary", "md", "--no-progress"])
    assert rc == 1
    assert text.startswith("## bakeoff: ")
    assert "❌ **gate failed**:" in text and "\n- " in text
    assert "averaging: bakeoff" in text
    assert "gate:" not in text  # the plain gate lines go to stderr: stdout is the Markdown only
    rc_ok, text_ok = _run(["compare", str(tiny), str(tiny / "results.json"), "--fail-if-worse", "mrr@3",
                           "--resamples", RESAMPLES, "--summary", "md", "--no-progress"])
    assert rc_ok == 0 and "✅ gate passed" in text_ok


def test_terminal_table_states_the_rule(tiny: Path) -> None:
    rc, text = _run(["report", str(tiny), "--resamples", "200", "--no-html", "--no-progress",
                     "--out", str(tiny.parent / "plain")])
    assert rc == 0 and "averaging: bakeoff (" in text and "relevant: grade >= 1" in text
    tex = (tiny.parent / "plain" / "report.tex").read_text(encoding="utf-8")
    assert r"Averaging: bakeoff (" in tex and r"grade $\geq$ 1" in tex
