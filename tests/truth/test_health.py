"""Generation that degrades honestly: title-like queries and a low kept share are named in one line."""

from __future__ import annotations

import pytest

from bakeoff.truth.generation.health import MAX_TITLE_LIKE, MIN_KEPT_SHARE, looks_like_title, truth_health


@pytest.mark.parametrize("query,title,expected", [
    ("Document on the role of PTH in bone growth", "", True),          # a label, not a need
    ("Papers about library automation costs", "", True),
    ("The cost of library automation", "", True),                     # a noun phrase
    ("What does PTH signaling do in bone growth?", "", False),        # a question
    ("how do libraries share catalog records", "", False),
    ("Is aspirin linked to lower colon cancer risk", "", False),
    ("bone growth regulation by parathyroid hormone in osteoblasts", "PTH regulates bone growth in osteoblasts", True),
    ("bone marrow transplant outcomes in children", "Aspirin and the heart", False),
])
def test_looks_like_title(query, title, expected) -> None:
    assert looks_like_title(query, title) is expected


def test_health_ok_and_the_two_reasons() -> None:
    good = truth_health(sampled=10, kept=8, rejections={"not_answerable": 2}, queries=["what is x?"] * 8,
                        titles=["t"] * 8)
    assert good["ok"] and good["line"] is None and good["kept_share"] == 0.8
    titles = ["Document on x", "The y of z", "what is w?", "The v"]
    bad = truth_health(sampled=10, kept=4, rejections={"copies_title": 7, "not_answerable": 3, "failed": 1,
                                                       "leak": 0}, queries=titles, titles=[""] * 4)
    assert not bad["ok"]
    assert bad["kept_share"] == 0.4 < MIN_KEPT_SHARE
    assert bad["title_like"] == 3 and bad["title_like_share"] == 0.75 > MAX_TITLE_LIKE
    line = bad["line"]
    assert "\n" not in line
    assert "only 4 of 10 sampled documents kept a query (40%)" in line
    assert "3 of 4 kept queries read like titles" in line
    assert "(most rejected: copies_title 7, not_answerable 3, failed 1)" in line
    # keyword queries are not questions by design: the title check does not apply
    kw = truth_health(sampled=4, kept=4, rejections={}, queries=titles, titles=[""] * 4, style="keywords")
    assert kw["ok"]
