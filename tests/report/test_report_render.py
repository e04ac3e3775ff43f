"""Renderer helpers: HTML-safe JSON, the Pareto front, LaTeX escaping, lenient leak discovery."""

from __future__ import annotations

import json
import math

import pytest

from bakeoff.report.html import json_for_html, pareto_front
from bakeoff.report.latex import latex_escape
from bakeoff.report.model import find_leak


def test_json_for_html_cannot_close_the_script_block() -> None:
    obj = {"x": "</script><script>alert(1)</script>", "y": "a & b > c \u2028 d"}
    s = json_for_html(obj)
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert json.loads(s) == obj  # still the same data


def test_pareto_front() -> None:
    pts = [("fast-bad", 1.0, 0.5), ("slow-good", 10.0, 0.7), ("dominated", 12.0, 0.6), ("mid", 5.0, 0.65),
           ("also-dominated", 5.0, 0.64), ("no-timing", math.nan, 0.9)]
    assert pareto_front(pts) == ["fast-bad", "slow-good", "mid"]
    assert pareto_front([("a", 1.0, 0.5), ("b", 1.0, 0.5)]) == ["a", "b"]  # equal points do not dominate


def test_latex_escape() -> None:
    assert latex_escape("rrf_k=60 & 50% #1 {x} ~ ^ \\") == (
        r"rrf\_k=60 \& 50\% \#1 \{x\} \textasciitilde{} \textasciicircum{} \textbackslash{}")


def test_find_leak_lenient(tmp_path) -> None:
    (tmp_path / "qrels").mkdir()
    src = {"beir": str(tmp_path), "split": "test"}
    assert find_leak(src, None, ["q1"]) is None
    (tmp_path / "provenance.json").write_text(json.dumps(
        {"model": "gemma", "stats": {"leak": {"per_query": {"q1": 0.1, "q2": 0.3, "other": 0.9},
                                              "rejection_rate": 0.25}}}))
    leak = find_leak(src, None, ["q1", "q2"])
    assert leak["values"] == [0.1, 0.3] and leak["mean"] == pytest.approx(0.2) and leak["rejection_rate"] == 0.25
    (tmp_path / "provenance.json").write_text(json.dumps({"leak": {"histogram": {"edges": [0, 0.5, 1], "counts": [3, 1]},
                                                                   "mean": 0.2}}))
    leak = find_leak(src, None, ["q1"])
    assert leak["histogram"] == {"edges": [0.0, 0.5, 1.0], "counts": [3, 1]} and "values" not in leak
    (tmp_path / "provenance.json").write_text("{not json")
    assert find_leak(src, None, ["q1"]) is None  # lenient: a broken file is ignored
