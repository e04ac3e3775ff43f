"""--queries-like: reading real queries, drawing style exemplars, and the prompt that shows them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bakeoff.errors import ConfigError
from bakeoff.truth.generation.prompts import PromptControl, describe_messages
from bakeoff.truth.generation.queries_like import MIN_QUERIES, STYLE_SHOTS, draw_style, read_queries_like


def test_reads_text_and_jsonl(tmp_path) -> None:
    txt = tmp_path / "q.txt"
    txt.write_text("\n".join(f"query  number {i}" for i in range(12)) + "\n\nquery number 0\n", encoding="utf-8")
    qs = read_queries_like(txt)
    assert qs[:2] == ("query number 0", "query number 1") and len(qs) == 12  # whitespace collapsed, duplicate dropped
    js = tmp_path / "q.jsonl"
    js.write_text("\n".join(json.dumps({"_id": str(i), "text": f"need {i}"}) for i in range(10)), encoding="utf-8")
    assert read_queries_like(js) == tuple(f"need {i}" for i in range(10))


def test_bad_files_name_file_line_and_field(tmp_path) -> None:
    js = tmp_path / "q.jsonl"
    js.write_text(json.dumps({"text": "a"}) + "\n" + json.dumps({"title": "b"}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"q.jsonl:2: field 'text' \(or 'query'\) must be non-empty text"):
        read_queries_like(js)
    js.write_text('{"text": "a"}\n{broken\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"q.jsonl:2: not JSON"):
        read_queries_like(js)
    few = tmp_path / "few.txt"
    few.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"2 distinct queries; --queries-like needs at least {MIN_QUERIES}"):
        read_queries_like(few)


def test_draw_is_seeded_per_request_and_in_file_order() -> None:
    qs = tuple(f"q{i}" for i in range(20))
    a = draw_style(qs, seed=0, row=5, number=1)
    assert a == draw_style(qs, seed=0, row=5, number=1)
    assert len(a) == STYLE_SHOTS and list(a) == sorted(a, key=qs.index)
    pick = np.random.default_rng([0, 5, 1]).choice(20, size=STYLE_SHOTS, replace=False)
    assert a == tuple(qs[i] for i in sorted(int(x) for x in pick))
    assert draw_style(qs, seed=0, row=6, number=1) != a or draw_style(qs, seed=0, row=5, number=2) != a


def test_the_prompt_shows_them_as_style_of_other_documents() -> None:
    ctl = PromptControl(style_queries=("How do libraries share catalog records?", "cost of online search"))
    system = describe_messages("Some document.", ctl)[0]["content"]
    assert "queries for OTHER documents: match their form and length, not their topic" in system
    assert "- How do libraries share catalog records?\n- cost of online search" in system
