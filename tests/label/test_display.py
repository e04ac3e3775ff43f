"""Query-word marking and long-document cutting (``bakeoff.label.display``), and in Chromium: a
300 KB document cut with "show all", marks escaped, Arabic shown right-to-left, an annotator
named Jürgen (composed or decomposed: one annotator)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from bakeoff.label.app import annotator_name
from bakeoff.label.display import SHOWN_CHARS, document_view, marked, query_words
from tests.label.fixtures import DOCS, QRELS, QUERIES, Server, current_item, settle, write_beir

SHOTS = Path("/tmp/label-shots")


def test_query_words_and_marks():
    assert query_words("Does vitamin D help the bones of adults?") == ["vitamin", "adults", "bones", "help"]
    text = "Bones and bone density: Vitamin-D deficiency <b>weakens</b> bones."
    segs = marked(text, query_words("bone vitamin"))
    assert "".join(s for s, _ in segs) == text  # nothing lost or added
    assert [s for s, hit in segs if hit] == ["Bones", "bone", "Vitamin", "bones"]
    assert marked("", ["x"]) == [] and marked("abc", []) == [("abc", False)]
    # Unicode words: Arabic and German
    assert [s for s, hit in marked("فيتامين د والعظام", query_words("فيتامين")) if hit] == ["فيتامين"]
    assert [s for s, hit in marked("Müller über Übungen", query_words("über")) if hit] == ["über"]


def test_long_text_cut_at_a_space():
    text = " ".join(f"w{i:05d}" for i in range(2000))  # 14 000 characters
    v = document_view("d", "T", text, "w00001")
    head = "".join(s for s, _ in v.head)
    rest = "".join(s for s, _ in v.rest)
    assert head + rest == text and len(head) <= SHOWN_CHARS and text[len(head)] == " "
    assert v.n_chars == len(text) and v.n_rest == len(rest)
    short = "x" * (SHOWN_CHARS + 100)  # within the slack: shown whole
    assert document_view("d", "", short, "").rest == ()


def test_annotator_names_any_script():
    composed, decomposed = "J\u00fcrgen", unicodedata.normalize("NFD", "J\u00fcrgen")
    assert composed != decomposed and annotator_name(decomposed) == annotator_name(composed) == composed
    for ok in ("ana", "李明", "محمد", "Ørsted", "a.b@c-d_e"):
        assert annotator_name(ok) == ok
    for bad in ("", " ", "_x", "a b", "a/b", "<x>", "x" * 41, "a\u0000"):
        assert annotator_name(bad) is None


@pytest.mark.slow  # a browser
def test_long_arabic_and_unicode_name_in_the_browser(tmp_path, browser):
    para = "Vitamin D deficiency weakens bone density <script>window.__pwned = 1;</script> in adults. "
    huge = para * (300_000 // len(para))  # a 300 KB document
    docs = [("d1", "Vitamin D and bone", huge), *DOCS[1:], ("d13", "فيتامين د", "نقص فيتامين د يضعف كثافة العظام")]
    queries = [*QUERIES, ("q7", "فيتامين د العظام")]
    data = write_beir(tmp_path / "long", docs=docs, queries=queries, qrels=[*QRELS, ("q7", "d13", 1)])
    db = tmp_path / "l.sqlite"
    name = unicodedata.normalize("NFD", "Jürgen")  # typed decomposed: stored composed
    server = Server([str(data), "--pool", "bm25", "--depth", "3", "--db", str(db), "--annotator", name,
                     "--cache", "off"], log=tmp_path / "s.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(server.url, wait_until="load")
        settle(page)
        assert page.inner_text(".who b") == "Jürgen"
        for _ in range(10):
            if current_item(page) == ("q1", "d1"):
                break
            page.keyboard.press("j")
            settle(page)
        assert current_item(page) == ("q1", "d1")
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height < 4000  # not a 96 000 px page
        assert page.locator("#dtext mark").first.inner_text().lower().startswith("vitamin")
        assert page.evaluate("window.__pwned") is None and page.locator("#dtext script").count() == 0
        assert page.locator("#drest").is_hidden() and "more)" in page.inner_text("#showall")
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "long-document-cut.png"))
        page.keyboard.press("m")
        assert page.locator("#drest").is_visible() and page.locator("#cut").is_hidden()
        assert page.evaluate("document.documentElement.scrollHeight") > 20 * height
        assert len(page.inner_text("#dtext")) >= len(huge) - 10
        page.keyboard.press("2")
        settle(page)
        # the Arabic query and document: right to left
        while current_item(page)[0] != "q7":
            page.keyboard.press("n")
            settle(page)
        assert page.evaluate("getComputedStyle(document.getElementById('qtext')).direction") == "rtl"
        assert page.evaluate("getComputedStyle(document.getElementById('dtext')).direction") == "rtl"
        page.set_viewport_size({"width": 375, "height": 740})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.screenshot(path=str(SHOTS / "arabic-375.png"))
    finally:
        server.stop()
    import sqlite3

    conn = sqlite3.connect(db)
    assert conn.execute("SELECT DISTINCT annotator FROM judgments").fetchall() == [("Jürgen",)]
    conn.close()


GUIDE = '''title = "Does the document answer the query?"
text = """
Read the query, then the need below it. <b>Judge</b> the document alone.
"""

[grades]
0 = "Off topic: nothing here helps with the need."
1 = "On the topic, but it does not answer the need."
2 = "Answers part of the need, or answers it indirectly."
3 = "Answers the need directly; the searcher could stop here."

[queries]
q1 = "Whether a lack of vitamin D makes bones weaker in adults."
'''


def test_guidelines_file_checked(tmp_path):
    from bakeoff.errors import InputError
    from bakeoff.label.guidelines import description_of, read_guidelines

    p = tmp_path / "g.toml"
    p.write_text(GUIDE)
    g = read_guidelines(p)
    assert g["grades"]["3"].startswith("Answers the need directly") and g["queries"]["q1"].startswith("Whether")
    assert description_of("q1", {"description": "from the topic"}, g).startswith("Whether")
    assert description_of("q2", {"narrative": "from the topic"}, g) == "from the topic"
    assert description_of("q2", {}, None) == ""
    for bad, field in [(GUIDE.replace('3 = "Answers the need directly; the searcher could stop here."\n', ""),
                        "grades.3"),
                       (GUIDE.replace("[queries]", "[grades.extra]\n[queries]"), "grades.extra"),
                       ("colour = 'blue'\n" + GUIDE, "colour"),
                       (GUIDE.replace('0 = "Off topic: nothing here helps with the need."', "0 = 5"), "grades.0")]:
        p.write_text(bad)
        with pytest.raises(InputError) as e:
            read_guidelines(p)
        assert e.value.field == field, bad
    p.write_text("title = \n")
    with pytest.raises(InputError) as e:
        read_guidelines(p)
    assert e.value.line == 1


@pytest.mark.slow  # a browser
def test_guidelines_shown_and_exported(tmp_path, browser):
    import json

    from bakeoff.cli import main

    data = write_beir(tmp_path / "tiny")
    guide = tmp_path / "guide.toml"
    guide.write_text(GUIDE)
    db = tmp_path / "g.sqlite"
    server = Server([str(data), "--pool", "bm25", "--depth", "3", "--db", str(db), "--annotator", "ana",
                     "--guidelines", str(guide), "--cache", "off"], log=tmp_path / "s.log")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(server.url, wait_until="load")
        settle(page)
        assert page.locator("#guide").is_visible()  # before the first grade, the guidelines open by themselves
        assert "Answers the need directly" in page.inner_text("#guide")
        assert "<b>Judge</b>" in page.inner_text("#guide .gtext")  # text, not markup
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "guidelines.png"))
        page.keyboard.press("2")  # keys do not grade while the guidelines are open
        settle(page)
        assert page.inner_text("#p-mine") == "0"
        page.keyboard.press("g")
        assert page.locator("#guide").is_hidden()
        assert page.inner_text("#qneed") == "The need: Whether a lack of vitamin D makes bones weaker in adults."
        assert page.get_attribute(".grade.g1", "title") == "On the topic, but it does not answer the need."
        page.keyboard.press("2")
        settle(page)
        assert page.inner_text("#p-mine") == "1"
        page.reload(wait_until="load")
        settle(page)
        assert page.locator("#guide").is_hidden()  # not again after the first grade
    finally:
        server.stop()
    out = tmp_path / "exp"
    assert main(["label", "export", "--db", str(db), "--out", str(out)]) == 0
    exported = json.loads((out / "guidelines.json").read_text())
    assert exported["grades"]["0"] == "Off topic: nothing here helps with the need."
    prov = json.loads((out / "provenance.json").read_text())
    import hashlib

    assert prov["guidelines"]["sha256"] == hashlib.sha256(guide.read_bytes()).hexdigest()
