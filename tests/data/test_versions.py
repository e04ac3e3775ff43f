"""Dated target versions and as-of snapshots on the fixture law (Ley N° 20.118, fictional).

Amendment history (tests/fixtures/citations/law.py): art. 12 amended 2014-07-01 and
2021-09-01; art. 25 amended 2014-07-01; art. 20 amended 2018-01-15; art. 12 bis added
2018-01-15; art. 30 amended 2021-09-01; art. 33 repealed 2021-09-01.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from bakeoff.data.model import Qrels
from bakeoff.data.versions import Versions, read_targets
from bakeoff.errors import InputError

FIX = Path(__file__).parents[1] / "fixtures" / "citations"


@pytest.fixture(scope="module")
def targets():
    return read_targets(FIX / "targets.jsonl")


@pytest.fixture(scope="module")
def versions(targets):
    return Versions.from_targets(targets)


def _ids(versions: Versions, mask: np.ndarray) -> set[str]:
    return {d for d, m in zip(versions.ids, mask) if m}


def test_targets_read(targets):
    assert len(targets) == 46  # 40 originals + 12 (x2) + 25 + 20 + 12bis + 30
    by_unit: dict[str, list] = {}
    for t in targets:
        by_unit.setdefault(t.unit, []).append(t)
    assert len(by_unit) == 41
    a12 = [(t.id, t.valid_from.isoformat(), t.valid_to and t.valid_to.isoformat()) for t in by_unit["art-12"]]
    assert a12 == [("art-12@2010-03-01", "2010-03-01", "2014-07-01"),
                   ("art-12@2014-07-01", "2014-07-01", "2021-09-01"),
                   ("art-12@2021-09-01", "2021-09-01", None)]
    assert [(t.id, t.valid_to) for t in by_unit["art-33"]] == [("art-33@2010-03-01", dt.date(2021, 9, 1))]
    assert [t.id for t in by_unit["art-12bis"]] == ["art-12bis@2018-01-15"]


def test_as_of_snapshots(versions):
    # 2013: the 40 original articles
    s2013 = _ids(versions, versions.as_of("2013-01-01"))
    assert len(s2013) == 40 and all(d.endswith("@2010-03-01") for d in s2013)
    # half-open intervals: the amendment day belongs to the new version
    assert "art-12@2010-03-01" in _ids(versions, versions.as_of("2014-06-30"))
    day = _ids(versions, versions.as_of("2014-07-01"))
    assert "art-12@2014-07-01" in day and "art-12@2010-03-01" not in day
    assert "art-25@2014-07-01" in day and "art-25@2010-03-01" not in day
    # 2018-06: 12 bis exists, art. 20 amended
    s2018 = _ids(versions, versions.as_of(dt.date(2018, 6, 1)))
    assert len(s2018) == 41
    assert {"art-12bis@2018-01-15", "art-20@2018-01-15", "art-12@2014-07-01"} <= s2018
    # 2022: art. 33 repealed, art. 12 and 30 in their 2021 text
    s2022 = _ids(versions, versions.as_of("2022-01-01"))
    assert len(s2022) == 40
    assert not any(d.startswith("art-33@") for d in s2022)
    assert {"art-12@2021-09-01", "art-30@2021-09-01"} <= s2022
    # before the law: nothing
    assert not versions.as_of("2009-12-31").any()


def test_latest_and_any(versions):
    latest = _ids(versions, versions.latest())
    assert len(latest) == 41  # one per unit; a repealed unit keeps its final text
    assert {"art-12@2021-09-01", "art-33@2010-03-01", "art-25@2014-07-01"} <= latest
    both = _ids(versions, versions.as_of_any(["2013-01-01", "2022-01-01"]))
    assert {"art-12@2010-03-01", "art-12@2021-09-01", "art-33@2010-03-01"} <= both
    assert "art-12@2014-07-01" not in both
    assert versions.in_force("art-12", "2016-05-05") == "art-12@2014-07-01"
    assert versions.in_force("art-33", "2022-05-05") is None


def test_to_latest_qrels(versions):
    q = Qrels({"a": {"art-12@2010-03-01": 1, "art-5@2010-03-01": 1}, "b": {"art-12@2014-07-01": 1}})
    out = versions.to_latest(q)
    assert dict(out["a"]) == {"art-12@2021-09-01": 1, "art-5@2010-03-01": 1}
    assert dict(out["b"]) == {"art-12@2021-09-01": 1}


@pytest.mark.parametrize("line, expected", [
    ('{"unit": "a", "text": "x", "valid_from": "2020-13-01"}',
     "t.jsonl:2: field 'valid_from': expected a date YYYY-MM-DD, got '2020-13-01'"),
    ('{"text": "x", "valid_from": "2020-01-01"}', "t.jsonl:2: field 'unit': missing"),
    ('{"unit": "a", "text": "x", "valid_from": "2020-01-01", "valid_to": "2019-01-01"}',
     "t.jsonl:2: field 'valid_to': valid_to 2019-01-01 is not after valid_from 2020-01-01"),
    ('{"unit": "a", "text": "x", "valid_from": "2019-06-01"}',
     ("t.jsonl:2: field 'valid_from': version of 'a' from 2019-06-01 overlaps the one from 2019-01-01 (line 1); "
      "end the earlier one with valid_to")),
    ('{"unit": "a", "text": "x", "valid_from": "2019-01-01"}',
     "t.jsonl:2: field 'valid_from': duplicate version 'a@2019-01-01' (first on line 1)"),
])
def test_target_errors(tmp_path, monkeypatch, line, expected):
    monkeypatch.chdir(tmp_path)
    Path("t.jsonl").write_text('{"unit": "a", "text": "old", "valid_from": "2019-01-01"}\n' + line + "\n")
    with pytest.raises(InputError) as err:
        read_targets("t.jsonl")
    assert str(err.value) == expected


def test_targets_csv(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("unit,text,valid_from,valid_to\na,uno,2019-01-01,2020-01-01\na,dos,2020-01-01,\n", encoding="utf-8")
    ts = read_targets(p)
    assert [(t.id, t.valid_to) for t in ts] == [("a@2019-01-01", dt.date(2020, 1, 1)), ("a@2020-01-01", None)]


def test_as_of_masks_per_query(versions):
    from bakeoff.data.model import Queries, Query
    from bakeoff.data.versions import as_of_masks

    qs = Queries.from_queries([Query("a", "x", {"date": "2013-01-01"}), Query("b", "y", {"date": "2013-01-01"}),
                               Query("c", "z", {"date": "2019-04-03", "as_of": ["2014-01-10"]})])
    m = as_of_masks(versions, qs)
    assert m["a"] is m["b"] and not m["a"].flags.writeable  # one shared array per distinct date
    assert np.array_equal(m["c"], versions.as_of("2014-01-10"))  # explicit as_of dates win over the date
    with pytest.raises(InputError, match=r"query:q: field 'date': query has no date for as-of search"):
        as_of_masks(versions, Queries.from_queries([Query("q", "x")]))
