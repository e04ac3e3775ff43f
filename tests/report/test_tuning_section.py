"""The HTML report's tuning section: one SVG per swept option, escaped text, the chosen setting
and the defaults marked, nothing when the results carry no sweep."""

from __future__ import annotations

import re

from bakeoff.report.tuning import tuning_section


def sweep(name: str = "h<b>x</b>") -> dict:
    trials = [{"index": i, "params": {"k": k, "depth": d}, "dev": 0.5 + 0.01 * i, "cached": False}
              for i, (k, d) in enumerate([(1, 10), (1, 20), (60, 10), (60, 20)])]
    return {"arm": name, "type": "rrf", "tuned_arm": f"{name}-tuned", "measure": "ndcg@10",
            "tie_rule": "highest mean; ties -> first", "space": {"search": "grid", "params": {"k": [1, 60],
                                                                                          "depth": [10, 20]}},
            "defaults": {"k": 60, "depth": 20}, "trials": trials,
            "chosen": {"index": 3, "params": {"k": 60, "depth": 20}, "dev": 0.53},
            "dev": {"describe": "split train", "n_queries": 10, "default_score": 0.53,
                    "dropped_leaks": [["q<1>", "t1", "same text"]]},
            "test": {"split": "test", "n_queries": 5},
            "result": {"defaults": {"mean": 0.4, "ci_low": 0.3, "ci_high": 0.5},
                       "tuned": {"mean": 0.42, "ci_low": 0.31, "ci_high": 0.52}, "diff": 0.02,
                       "diff_ci_low": -0.01, "diff_ci_high": 0.05, "p_perm": 0.3, "significant": False,
                       "alpha": 0.05, "confidence": 0.95}}


def test_section_draws_one_plot_per_option_and_escapes():
    html = tuning_section({"tune": sweep()})
    assert html.count("<svg") == 2 and html.count("</svg>") == 2
    assert "h<b>x</b>" not in html and "h&lt;b&gt;x&lt;/b&gt;" in html and "q&lt;1&gt;" in html
    # two-option grid: one line per value of the other option, the chosen ringed in red, defaults dashed
    first = html[html.index("<svg"):html.index("</svg>")]
    assert first.count("<polyline") == 2 and 'stroke="#d62728"' in first and "stroke-dasharray" in first
    assert "depth=10" in first and "depth=20" in first  # the plot of k has one line per depth
    assert "+0.0200 [-0.0100, 0.0500]" in html and "not significant at alpha 0.05" in html
    # the chosen trial sits at the highest dev value: its ring is drawn at the smallest y of all dots
    ring_y = float(re.findall(r'cy="([\d.]+)" r="7"', first)[0])
    dots_y = [float(y) for y in re.findall(r'cy="([\d.]+)" r="3"', first)]
    assert ring_y == min(dots_y)


def test_no_sweep_no_section():
    assert tuning_section({}) == "" and tuning_section({"tune": None}) == ""
