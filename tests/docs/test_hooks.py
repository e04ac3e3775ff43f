"""The docs build's hooks: the link check of the built site finds exactly the broken internal links and
anchors of a hand-made site, and the help marker renders the command line's own ``--help``."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def hook(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "_hooks" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<!doctype html><html><body>{body}</body></html>", encoding="utf-8")


def test_link_check_reports_each_broken_internal_link(tmp_path: Path) -> None:
    site = tmp_path / "site"
    page(site / "index.html",
         '<a href="arms/">ok dir</a> <a href="arms/#rrf">ok anchor</a> <a href="#top">ok self</a>'
         '<h1 id="top">t</h1> <a href="arms/#nope">bad anchor</a> <a href="missing/">bad dir</a>'
         '<a href="https://example.org/x#y">external</a> <a href="mailto:a@b.c">mail</a>'
         '<img src="img/logo.png"> <script src="js/app.js"></script> <a href="../outside.html">out</a>')
    page(site / "arms" / "index.html",
         '<h2 id="rrf">RRF</h2> <a href="../#top">ok up</a> <a href="../index.html#gone">bad up</a>'
         '<a name="legacy"></a> <a href="#legacy">ok name</a> <a href="../api/#bakeoff.Run">ok api</a>')
    page(site / "api" / "index.html", '<div id="bakeoff.Run"></div>')
    (site / "img").mkdir()
    (site / "img" / "logo.png").write_bytes(b"\x89PNG")
    counts: dict[str, int] = {}
    broken = sorted(hook("link_check").broken_links(site, counts=counts))
    assert broken == [
        "arms/index.html: ../index.html#gone (no anchor #gone)",
        "index.html: ../outside.html (outside the site)",
        "index.html: arms/#nope (no anchor #nope)",
        "index.html: js/app.js (no such file)",
        "index.html: missing/ (no such file)",
    ]
    assert counts == {"pages": 3, "links": 12}  # 8 + 4 internal; https: and mailto: are not counted


def test_help_marker_renders_the_command_help() -> None:
    cli_help = hook("cli_help")
    text = cli_help.on_page_markdown("before\n<!-- bakeoff-help: eval -->\nafter", None, None, None)
    before, block, after = text.split("\n", 1)[0], text.split("\n", 1)[1], text.rsplit("\n", 1)[1]
    assert before == "before" and after == "after"
    assert block.startswith("```text\n$ bakeoff eval --help\n")
    for option in ("--trec-eval", "--relevance-level", "--max-docs", "--allow-duplicate-judgments"):
        assert option in block
    assert max(len(line) for line in block.splitlines()) <= cli_help.WIDTH


def test_sphinx_roles_become_code_spans() -> None:
    rewrite = hook("griffe_sphinx_roles").rewrite
    text = ("Score a :class:`~bakeoff.data.model.Run` with :func:`bakeoff.metrics.score_run`, "
            ":meth:`Arm.search` and :py:attr:`~x.y`; :func:`the rule <bakeoff.data.ranking.rank>`.\n\n"
            "Layout::\n\n    [run]\n    k = 10\n\nA C++ ``a::b`` stays.")
    assert rewrite(text) == ("Score a `Run` with `bakeoff.metrics.score_run`, `Arm.search` and `y`; `the rule`.\n\n"
                             "Layout:\n\n    [run]\n    k = 10\n\nA C++ ``a::b`` stays.")
