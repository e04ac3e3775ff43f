"""Query sources: query logs (plain and JSONL) deduplicated after normalisation and counted,
seeded uniform / frequency-weighted samples, routing to a second annotator, bad rows."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np
import pytest

from bakeoff.errors import InputError
from bakeoff.label.sources import log_queries, read_query_log, routed_twice, sample_indices, unit_hash


def test_plain_log_dedupes_after_normalisation_and_counts(tmp_path):
    log = tmp_path / "q.txt"
    log.write_text("Does ACE2 bind?\n\ndoes  ace2 bind\nvitamin d\nVitamin D!\nvitamin d\n???\n", encoding="utf-8")
    qs = log_queries(log, sample=None, weighted=False, rng=np.random.default_rng(0))
    assert [(q.text, q.count) for q in qs.queries] == [("Does ACE2 bind?", 2), ("vitamin d", 3)]
    # ids are sha256 of the normalised text: stable across files and runs
    assert qs.queries[1].qid == "log-" + hashlib.sha256(b"vitamin d").hexdigest()[:12]
    c = qs.info["counts"]
    assert (c["lines"], c["blank_lines"], c["rows"], c["total_count"]) == (7, 1, 6, 6)
    assert (c["distinct_texts"], c["unique_after_normalisation"], c["merged_by_normalisation"]) == (4, 2, 2)
    assert c["empty_after_normalisation"] == 1 and c["sampled"] == 2 and c["sampled_count"] == 5


def test_jsonl_log_sums_counts_and_keeps_most_frequent_surface(tmp_path):
    log = tmp_path / "q.jsonl"
    rows = [{"query": "Sleep and memory", "count": 3}, {"text": "sleep & memory", "count": 5},
            {"q": "coffee"}, {"query": "SLEEP AND MEMORY", "count": 1}]
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    qs = log_queries(log, sample=None, weighted=False, rng=np.random.default_rng(0))
    # "sleep & memory" normalises to "sleep memory", not "sleep and memory": two groups
    got = {q.text: q.count for q in qs.queries}
    assert got == {"Sleep and memory": 4, "sleep & memory": 5, "coffee": 1}


@pytest.mark.parametrize("line, field, msg", [
    ('{"query": "x", "count": 0}', "count", "positive integer"),
    ('{"query": "x", "count": "7"}', "count", "positive integer"),
    ('{"count": 3}', "query", "missing"),
    ('{"query": 5}', "query", "missing"),
    ('{"query": "x"', None, "invalid JSON"),
    ('["x"]', None, "expected a JSON object"),
])
def test_bad_log_rows_name_file_line_and_field(tmp_path, line, field, msg):
    log = tmp_path / "q.jsonl"
    log.write_text('{"query": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_query_log(log)
    assert err.value.line == 2 and err.value.field == field and msg in str(err.value)
    assert str(log) in str(err.value) and "\n" not in str(err.value)


def test_log_not_utf8_and_empty(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(InputError, match=r"bad.txt:2: not valid UTF-8"):
        read_query_log(bad)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="no queries"):
        read_query_log(empty)


def test_sampling_is_seeded_uniform_or_weighted():
    a = sample_indices(100, sample=10, rng=np.random.default_rng(7))
    assert a == sample_indices(100, sample=10, rng=np.random.default_rng(7))
    assert len(set(a)) == 10 and a != sample_indices(100, sample=10, rng=np.random.default_rng(8))
    assert sample_indices(5, sample=None, rng=np.random.default_rng(0)) == [0, 1, 2, 3, 4]
    assert sorted(sample_indices(5, sample=50, rng=np.random.default_rng(0))) == [0, 1, 2, 3, 4]
    # weighted: item 0 has 97 % of the mass, so it is the first draw almost always
    w = [970, 10, 10, 10]
    firsts = Counter(sample_indices(4, sample=1, rng=np.random.default_rng(s), weights=w)[0] for s in range(400))
    assert firsts[0] > 360
    uniform = Counter(sample_indices(4, sample=1, rng=np.random.default_rng(s))[0] for s in range(400))
    assert uniform[0] < 140


def test_routing_share_is_close_to_overlap_and_order_free():
    ids = [f"q{i}" for i in range(4000)]
    share = sum(routed_twice(q, overlap=0.1, seed=3) for q in ids) / len(ids)
    assert 0.085 < share < 0.115
    assert all(routed_twice(q, overlap=1.0, seed=0) for q in ids[:50])
    assert not any(routed_twice(q, overlap=0.0, seed=0) for q in ids[:50])
    assert unit_hash(3, "route", "q1") == int.from_bytes(hashlib.sha256(b"3:route:q1").digest()[:8], "big") / 2**64
