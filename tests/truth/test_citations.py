"""Citation finder, windows, masks, verbatim drops and audit on the Spanish fixture.

Expected offsets are derived from the ruling texts with ``str.index`` on hand-picked
anchors (paragraph openings such as "SEGUNDO:"), never from the code under test.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from bakeoff.data.versions import Versions, read_targets
from bakeoff.errors import InputError
from bakeoff.truth.citations.mined import mine_citations
from bakeoff.truth.citations.mining import MineOptions, NgramIndex, find_mentions, mine_source, paragraphs
from bakeoff.truth.citations.patterns import builtin_patterns, load_patterns, parse_text_date
from bakeoff.truth.citations.sources import read_sources

FIX = Path(__file__).parents[1] / "fixtures" / "citations"
PH = "[CITA OMITIDA]"


@pytest.fixture(scope="module")
def law():
    targets = read_targets(FIX / "targets.jsonl")
    return {"targets": targets, "versions": Versions.from_targets(targets), "units": {t.unit for t in targets},
            "index": NgramIndex(t.text for t in targets)}


@pytest.fixture(scope="module")
def pset():
    return load_patterns(FIX / "patterns.toml")


@pytest.fixture(scope="module")
def sources():
    return {s.id: s for s in read_sources(FIX / "rulings.jsonl")}


@pytest.fixture(scope="module")
def mined(law, pset, sources):
    return mine_citations(law["targets"], sources.values(), pset, progress=False)


def _mine(law, pset, src, **opts):
    return mine_source(src, pset=pset, versions=law["versions"], units=law["units"], index=law["index"],
                       options=MineOptions(**opts))


def _para(text: str, anchor: str) -> tuple[int, int]:
    """[start, end) of the paragraph that starts with ``anchor``."""
    s = text.index(anchor)
    e = text.find("\n\n", s)
    chunk = text[s:] if e < 0 else text[s:e]
    return s, s + len(chunk.rstrip())


# ---------------------------------------------------------------- finder
ES = builtin_patterns("es", law=["Ley de Tránsito", "Ley N° 20.118", "LT"], decree=["DFL N° 3"])


@pytest.mark.parametrize("text, kind, numbers", [
    ("según el artículo 104 de la Ley de Tránsito, el conductor", "target", ("104",)),
    ("los arts. 12 y 13 de la Ley de Tránsito", "target", ("12", "13")),
    ("conforme al Art. 104 LT", "target", ("104",)),
    ("los artículos 14 a 16 de la Ley N° 20.118", "target", ("14", "15", "16")),
    ("los artículos 34 al 37 de la Ley de Tránsito", "target", ("34", "35", "36", "37")),
    ("los artículos 3, 5 y 9 de la Ley de Tránsito", "target", ("3", "5", "9")),
    ("el artículo 12 bis de la Ley de Tránsito", "target", ("12bis",)),
    ("el artículo 5° del DFL N° 3", "target", ("5",)),
    ("el artículo 104, inciso segundo, de la Ley de Tránsito", "target", ("104",)),
    ("la Ley de Tránsito, en su artículo 19, obliga", "target", ("19",)),
    ("la Ley N° 20.118, en sus artículos 7 y 8", "target", ("7", "8")),
    ("el artículo 490 del Código Penal", "other", ("490",)),
    ("el artículo 19 N° 3 de la Constitución Política de la República", "other", ("19",)),
    ("el citado artículo 7 no distingue", "bare", ("7",)),
    ("el Art. 104 lt minúsculas no es la sigla", "bare", ("104",)),
])
def test_spanish_forms(text, kind, numbers):
    ms = find_mentions(text, ES)
    assert [(m.kind, m.numbers) for m in ms] == [(kind, numbers)]


def test_spanish_version_date_and_law_span():
    text = "Se aplica el artículo 12 de la Ley de Tránsito, en su texto vigente al 10 de enero de 2014, a los hechos."
    (m,) = find_mentions(text, ES)
    assert m.vdate == dt.date(2014, 1, 10) and m.vdate_text == "10 de enero de 2014"
    assert text[m.nums_span[0]:m.nums_span[1]] == "12"
    assert m.law_span and text[m.law_span[0]:m.law_span[1]] == "Ley de Tránsito"


EN = builtin_patterns("en", law=["Road Traffic Act", "RTA"], target_id="s-{num}", placeholder="[CITATION]")


@pytest.mark.parametrize("text, kind, numbers", [
    ("under Section 12 of the Road Traffic Act the driver", "target", ("12",)),
    ("sections 12 and 13 of the Road Traffic Act", "target", ("12", "13")),
    ("section 12(1)(a) of the Road Traffic Act", "target", ("12",)),
    ("the Road Traffic Act, s. 4 requires", "target", ("4",)),
    ("as § 12 provides", "target", ("12",)),
    ("§§ 12-14 apply", "target", ("12", "13", "14")),
    ("sections 3 to 5 RTA", "target", ("3", "4", "5")),
    ("section 5 of the Companies Act 2006", "other", ("5",)),
    ("as section 7 says", "bare", ("7",)),
])
def test_english_forms(text, kind, numbers):
    ms = find_mentions(text, EN)
    assert [(m.kind, m.numbers) for m in ms] == [(kind, numbers)]
    if kind == "target":
        assert [EN.unit_of(n) for n in numbers] == [f"s-{n}" for n in numbers]


def test_english_as_it_stood():
    (m,) = find_mentions("section 9 of the Road Traffic Act, as it stood on 3 March 2015, applies", EN)
    assert m.vdate == dt.date(2015, 3, 3)


@pytest.mark.parametrize("text, day", [("15 de marzo de 2016", dt.date(2016, 3, 15)), ("15/03/2016", dt.date(2016, 3, 15)),
                                       ("2016-03-15", dt.date(2016, 3, 15)), ("March 15, 2016", dt.date(2016, 3, 15)),
                                       ("31 de febrero de 2016", None), ("15 de brumario de 2016", None)])
def test_parse_text_date(text, day):
    assert parse_text_date(text) == day


def test_malformed_patterns_are_reported_not_fatal(law, sources):
    ps = load_patterns(FIX / "patterns_malformed.toml")
    path = str(FIX / "patterns_malformed.toml")
    assert len(ps.problems) == 4
    assert ps.problems[0].startswith(f"{path}: pattern 'unclosed': regex does not compile (")
    assert ps.problems[1] == f"{path}: pattern 'no_nums_group': regex has no named group 'nums'; skipped"
    assert ps.problems[2] == f"{path}: pattern 'odd_kind': kind must be one of target, other, bare, got 'sometimes'; skipped"
    assert ps.problems[3] == f"{path}: pattern 'empty': missing 'regex'; skipped"
    m = mine_citations(law["targets"], [sources["r01"]], ps, progress=False)
    assert m.counts["malformed_patterns"] == 4 and m.counts["queries"] == 1
    assert m.problems[:4] == list(ps.problems)


def test_pattern_file_errors(tmp_path):
    p = tmp_path / "p.toml"
    p.write_text('extends = "es"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"p.toml: field 'law': give the cited law's name"):
        load_patterns(p)
    p.write_text('extends = "fr"\nlaw = ["Code de la route"]\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"field 'extends': unknown builtin pattern set 'fr' \(have: es, en\)"):
        load_patterns(p)
    p.write_text('law = [\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"p.toml: invalid TOML"):
        load_patterns(p)


# ---------------------------------------------------------------- windows, masks, drops
def test_paragraphs_offsets():
    text = "uno\n\n  dos tres\n \n\ncuatro  \n"
    assert [text[s:e] for s, e in paragraphs(text)] == ["uno", "dos tres", "cuatro"]


def test_window_snaps_to_paragraphs(law, pset, sources):
    src = sources["r01"]
    text = src.text
    cs = text.index("artículo 12 de la Ley de Tránsito")
    ce = cs + len("artículo 12 de la Ley de Tránsito")
    cite_p = _para(text, "CUARTO:")  # PRIMERO, SEGUNDO: facts; TERCERO: evidence
    # window 0: just the citation's paragraph
    a0 = _mine(law, pset, src, window=0).audit
    assert a0["citations"][0]["start"] == cs and a0["citations"][0]["end"] == ce
    assert a0["windows"] == [list(cite_p)] and a0["kept_paragraphs"] == [list(cite_p)]
    # ±300 chars reach into TERCERO (cs - 300 > its start) and QUINTO (ce + 300 > CUARTO's end)
    before, after = _para(text, "TERCERO:"), _para(text, "QUINTO:")
    assert before[0] < cs - 300 < before[1] and after[0] < ce + 300 < after[1]
    a3 = _mine(law, pset, src, window=300).audit
    assert a3["windows"] == [[before[0], after[1]]]
    assert a3["kept_paragraphs"] == [list(before), list(cite_p), list(after)]


def test_windows_merge_only_when_overlapping(law, pset):
    from bakeoff.truth.citations.sources import Source

    filler = [f"Párrafo de relleno número {i} con hechos sin relación alguna con la norma." for i in range(6)]
    p_a = "Se aplica el artículo 5 de la Ley de Tránsito al caso."
    p_b = "Se aplica también el artículo 7 de la Ley de Tránsito."
    text = "\n\n".join([filler[0], p_a, filler[1], filler[2], filler[3], p_b, filler[4]])
    src = Source("x", text, dt.date(2020, 1, 1))
    far = _mine(law, pset, src, window=0).audit
    assert far["windows"] == [list(_para(text, p_a[:20])), list(_para(text, p_b[:20]))]
    near = _mine(law, pset, src, window=200).audit  # each window reaches the paragraphs between
    assert near["windows"] == [[0, len(text)]]
    assert far["citations"][0]["targets"] == ["art-5@2010-03-01"]


def test_cap_removes_farthest_paragraphs_then_cuts(law, pset):
    from bakeoff.truth.citations.sources import Source

    paras = [f"Párrafo {i}: " + "palabra " * 20 for i in range(5)]
    paras[2] = "Que el artículo 11 de la Ley de Tránsito exige atención."
    text = "\n\n".join(paras)
    src = Source("x", text, dt.date(2020, 1, 1))
    assert [len(p.strip()) for p in paras] == [170, 170, 56, 170, 170]
    mq = _mine(law, pset, src, window=10_000, cap=420)  # 170 + 67 (masked) + 170 + 2 separators = 411
    a = mq.audit
    # distances to the citation paragraph (index 2): 0 and 4 are farthest; the later (4) goes first, then 0
    assert a["removed_for_cap"] == [list(_para(text, "Párrafo 4")), list(_para(text, "Párrafo 0"))]
    assert mq.text == "\n\n".join([paras[1].strip(), "Que el artículo [CITA OMITIDA] de la [CITA OMITIDA] exige atención.",
                                   paras[3].strip()])
    assert [(m["text"], m["reason"]) for m in a["masked"]] == [("11", "cited_number"),
                                                                ("Ley de Tránsito", "law_name+law_or_decree")]
    tiny = _mine(law, pset, src, window=10_000, cap=40)
    assert tiny.audit["truncated"] is True and len(tiny.text) <= 40
    assert tiny.text == "Que el artículo [CITA OMITIDA] de la"


def test_masks_exact_r24(law, pset, sources):
    src = sources["r24"]
    text = src.text
    mq = _mine(law, pset, src)
    cite = text.index("artículos 5 y 7 de la Ley de Tránsito")
    bare = text.index("el citado artículo 7") + len("el citado artículo ")
    nums = cite + len("artículos ")
    law_at = text.index("Ley de Tránsito", cite)
    assert mq.audit["masked"] == [
        {"start": nums, "end": nums + 5, "text": "5 y 7", "reason": "cited_number"},
        {"start": law_at, "end": law_at + 15, "text": "Ley de Tránsito", "reason": "law_name+law_or_decree"},
        {"start": bare, "end": bare + 1, "text": "7", "reason": "bare_cited_number"},
    ]
    assert "los artículos [CITA OMITIDA] de la [CITA OMITIDA] exigen" in mq.text
    assert "el citado artículo [CITA OMITIDA] no distingue" in mq.text
    assert "Ley de Tránsito" not in mq.text and "Ley N° 18.287" in mq.text  # other laws stay visible
    assert mq.positives == ["art-5@2010-03-01", "art-7@2010-03-01"] and mq.metadata["n_targets"] == 2
    # the control keeps the very same paragraphs, unmasked
    assert mq.unmasked.count("\n\n") == mq.text.count("\n\n") and "artículos 5 y 7 de la Ley de Tránsito" in mq.unmasked


def test_other_law_stays_visible_r06(mined):
    q = mined.queries["r06"].text
    assert "sancionado en el artículo 490 del Código Penal, no priva" in q
    assert "Que el artículo [CITA OMITIDA] de la [CITA OMITIDA] impone al conductor" in q
    assert "31" not in q.replace("30 de noviembre", "")
    assert dict(mined.qrels["r06"]) == {"art-31@2010-03-01": 1}


def test_decree_and_alias_masked_r17_r04(mined):
    assert "Que el artículo [CITA OMITIDA] del [CITA OMITIDA], que fija el texto refundido" in mined.queries["r17"].text
    assert "DFL" not in mined.queries["r17"].text
    assert "Que el Art. [CITA OMITIDA] [CITA OMITIDA] prohíbe" in mined.queries["r04"].text


def test_verbatim_transcription_dropped_r02(mined, sources):
    text = sources["r02"].text
    s = text.index("«")
    e = text.index("»") + 1
    audit = next(a for a in mined.audits if a["query_id"] == "r02")
    assert audit["dropped"] == [{"start": s, "end": e, "ratio": 1.0}]
    for q in (mined.queries["r02"].text, mined.unmasked["r02"].text):
        assert "«" not in q and "cero coma cinco e inferior" not in q
    assert "Que el artículo [CITA OMITIDA] de la [CITA OMITIDA] dispone, en lo pertinente:" in mined.queries["r02"].text


def _ratio_by_hand(paragraph: str, targets) -> float:
    """Independent 8-gram overlap: joined-string grams, counted with repeats."""
    def grams(t):
        w = re.findall(r"\w+", t.lower())
        return [" ".join(w[i:i + 8]) for i in range(len(w) - 7)]
    pool = {g for t in targets for g in grams(t.text)}
    g = grams(paragraph)
    return sum(x in pool for x in g) / len(g)


def test_verbatim_threshold_boundary_r23(law, pset, sources):
    src = sources["r23"]
    s, e = _para(src.text, "CUARTO:")  # the paragraph citing art. 18
    r = _ratio_by_hand(src.text[s:e], law["targets"])
    assert r == pytest.approx(8 / 26)  # 8 of its 26 word 8-grams copy art. 18: just over 30 %
    dropped = _mine(law, pset, src).audit["dropped"]
    assert dropped == [{"start": s, "end": e, "ratio": round(8 / 26, 6)}]
    kept = _mine(law, pset, src, verbatim_threshold=0.31)
    assert kept.audit["dropped"] == [] and "Que el artículo [CITA OMITIDA] de la [CITA OMITIDA] obliga" in kept.text


def test_version_date_and_as_of_metadata(mined):
    q = mined.queries["r07"]
    assert q.metadata["date"] == "2019-04-03" and q.metadata["as_of"] == ["2014-01-10"]
    assert "targets" not in q.metadata and "art-12" not in repr(dict(q.metadata))  # no answer in the metadata
    assert dict(mined.qrels["r07"]) == {"art-12@2010-03-01": 1}
    assert "en su texto vigente al 10 de enero de 2014" in q.text  # the date is not a giveaway
    # amended articles resolve by the ruling's date
    assert dict(mined.qrels["r04"]) == {"art-25@2010-03-01": 1}
    assert dict(mined.qrels["r05"]) == {"art-25@2014-07-01": 1}
    assert dict(mined.qrels["r15"]) == {"art-12@2014-07-01": 1}
    assert dict(mined.qrels["r16"]) == {"art-12@2021-09-01": 1}
    assert dict(mined.qrels["r10"]) == {"art-12bis@2018-01-15": 1}
    assert dict(mined.qrels["r08"]) == {f"art-{n}@2010-03-01": 1 for n in (34, 35, 36, 37)}


def test_counts_and_problems(mined):
    c = mined.counts
    assert (c["sources"], c["queries"], c["no_date"], c["unknown_article"], c["not_in_force"],
            c["malformed_patterns"], c["dropped_paragraphs"]) == (25, 24, 1, 1, 1, 0, 3)
    by_id = {a["query_id"]: a for a in mined.audits}
    assert by_id["r14"]["status"] == "no_date"
    assert by_id["r14"]["problems"] == [f"{FIX / 'rulings.jsonl'}:14: field 'date': missing; as-of search needs the source's date"]
    off95 = next(c["start"] for c in by_id["r13"]["citations"] if c["numbers"] == ["95"])
    assert by_id["r13"]["problems"] == [
        f"{FIX / 'rulings.jsonl'}:13: offset {off95}: cites article '95' but no target unit 'art-95' exists; not a positive"]
    assert dict(mined.qrels["r13"]) == {"art-14@2010-03-01": 1}
    assert "art-33" in by_id["r12"]["problems"][0] and "no version in force on 2022-03-15" in by_id["r12"]["problems"][0]
    assert dict(mined.qrels["r12"]) == {"art-11@2010-03-01": 1}
    assert "r14" not in mined.queries
    assert sum(1 for q in mined.queries if q.metadata["n_targets"] == 1) == 21


def test_sources_folder(tmp_path):
    (tmp_path / "a.txt").write_text("date: 2020-02-03\n\nTexto del fallo a.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Texto del fallo b.\n", encoding="utf-8")
    (tmp_path / "b.json").write_text('{"date": "2021-04-05", "url": "https://x/b"}', encoding="utf-8")
    (tmp_path / "c.txt").write_text("Sin fecha.\n", encoding="utf-8")
    (tmp_path / "d.txt").write_text("fecha: 5 de mayo\nTexto.\n", encoding="utf-8")
    got = {s.id: s for s in read_sources(tmp_path)}
    assert (got["a"].date, got["a"].text) == (dt.date(2020, 2, 3), "Texto del fallo a.\n")
    assert (got["b"].date, got["b"].url, got["b"].text) == (dt.date(2021, 4, 5), "https://x/b", "Texto del fallo b.\n")
    assert got["c"].date is None and "no date (give a sidecar c.json" in got["c"].date_problem
    assert got["d"].date is None and got["d"].date_problem.endswith("field 'date': expected YYYY-MM-DD, got '5 de mayo'")


def test_sources_jsonl_errors(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"id": "a", "text": "t", "date": "2020-01-01"}\n{"id": "b"}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_sources(p)
    assert str(err.value) == f"{p}:2: field 'text': missing"


@pytest.mark.parametrize("opts", [{"window": -1}, {"cap": 0}, {"verbatim_threshold": 0.0}, {"verbatim_threshold": 1.5},
                                  {"ngram": 0}])
def test_mine_options_validated(opts):
    from bakeoff.errors import ConfigError

    with pytest.raises(ConfigError):
        MineOptions(**opts)


def test_english_pipeline_end_to_end(tmp_path):
    """A small English act with one amended section; mined with the builtin ``en`` set."""
    from bakeoff.truth.citations.sources import Source

    t = tmp_path / "act.jsonl"
    t.write_text(
        '{"unit": "s-12", "text": "A person must not drive a motor vehicle on a road at a speed exceeding 30 miles per hour.", '
        '"valid_from": "2000-01-01", "valid_to": "2015-06-01"}\n'
        '{"unit": "s-12", "text": "A person must not drive a motor vehicle on a road at a speed exceeding 20 miles per hour in a '
        'residential zone.", "valid_from": "2015-06-01"}\n'
        '{"unit": "s-13", "text": "A driver must stop at a red traffic light.", "valid_from": "2000-01-01"}\n',
        encoding="utf-8")
    targets = read_targets(t)
    p = tmp_path / "p.toml"
    p.write_text('extends = "en"\nlaw = ["Road Traffic Act", "RTA"]\ntarget_id = "s-{num}"\n'
                 'placeholder = "[CITATION]"\n', encoding="utf-8")
    ps = load_patterns(p)
    text = ("The defendant drove at 35 mph past the school.\n\n"
            "Under Section 12 of the Road Traffic Act the limit was exceeded, and section 5 of the Companies Act 2006 "
            "is irrelevant here. As the RTA makes plain, section 12 is strict.\n\n"
            "Costs follow the event.")
    srcs = [Source("old", text, dt.date(2010, 5, 1)), Source("new", text, dt.date(2020, 5, 1)),
            Source("none", "No citation at all.", dt.date(2020, 1, 1))]
    m = mine_citations(targets, srcs, ps, progress=False)
    assert dict(m.qrels["old"]) == {"s-12@2000-01-01": 1} and dict(m.qrels["new"]) == {"s-12@2015-06-01": 1}
    assert m.counts["no_citation"] == 1 and m.counts["queries"] == 2
    q = m.queries["old"].text
    assert q == ("The defendant drove at 35 mph past the school.\n\n"
                 "Under Section [CITATION] of the [CITATION] the limit was exceeded, and section 5 of the Companies Act "
                 "2006 is irrelevant here. As the [CITATION] makes plain, section [CITATION] is strict.\n\n"
                 "Costs follow the event.")
