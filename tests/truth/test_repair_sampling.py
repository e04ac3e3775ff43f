"""Cluster-answer repairs, stratified sampling and the train/test split (hand-worked cases)."""

from __future__ import annotations

import numpy as np

from bakeoff.data.model import Corpus
from bakeoff.truth.generation.repair import GradeMap, repair_question
from bakeoff.truth.generation.sampling import sample_rows, sampled_mix, split_of

LABELS = ["D1", "D2", "D3", "D4"]


def j(id_: str, rel: bool, rank: int, reason: str = "r") -> dict:
    return {"id": id_, "relevant": rel, "rank": rank, "reason": reason}


def test_clean_answer_needs_no_repair_and_grades_follow_rank() -> None:
    q, c = repair_question("q?", [j("D2", True, 1), j("D4", True, 2), j("D1", True, 3), j("D3", False, 4)], LABELS)
    assert not c
    assert q.order == ("D2", "D4", "D1", "D3")
    assert q.grades(GradeMap()) == {"D2": 3, "D4": 2, "D1": 2}
    assert q.grades(GradeMap(by_rank=(2,), default=1)) == {"D2": 2, "D4": 1, "D1": 1}
    assert q.negatives() == ("D3",)


def test_every_repair_is_applied_and_counted() -> None:
    ans = [j("D3", True, 2), j("D9", True, 1), j("D3", False, 3), j("D1", True, 2), j("D2", False, 1)]
    q, c = repair_question(" which one? ", ans, LABELS)
    # D9 hallucinated; second D3 duplicate id; D3 and D1 share rank 2 (one duplicate rank);
    # sorted by (rank, position): D2(1) D3(2) D1(2) -> irrelevant D2 above relevant -> moved;
    # D4 left out -> imputed irrelevant, last.
    assert c == {"hallucinated_id": 1, "duplicate_id": 1, "duplicate_rank": 1, "irrelevant_above_relevant": 1,
                 "left_out": 1}
    assert q.question == "which one?"
    assert q.order == ("D3", "D1", "D2", "D4")
    assert q.grades(GradeMap()) == {"D3": 3, "D1": 2}
    assert q.negatives() == ("D2", "D4")


def test_empty_question_and_no_relevant_are_dropped() -> None:
    q, c = repair_question("   ", [j("D1", True, 1)], LABELS)
    assert q is None and c == {"empty_question": 1}
    q, c = repair_question("q", [j("D1", False, 1), j("D7", True, 2)], LABELS)
    assert q is None and c == {"hallucinated_id": 1, "left_out": 3, "no_relevant": 1}


def test_grade_map_parse() -> None:
    assert GradeMap.parse("3,2;0") == GradeMap((3, 2), 0)
    assert GradeMap.parse("2") == GradeMap((2,), 1)


def _corpus(groups: list[str | None]) -> Corpus:
    n = len(groups)
    return Corpus(tuple(f"d{i}" for i in range(n)), tuple("t" for _ in range(n)), tuple("" for _ in range(n)),
                  tuple({} if g is None else {"src": g} for g in groups))


def test_stratified_allocation_is_proportional_with_largest_remainder() -> None:
    corpus = _corpus(["a"] * 6 + ["b"] * 3 + ["c"] * 1)
    rows = sample_rows(corpus, 5, rng=np.random.default_rng(1), stratify_by="src")
    mix = sampled_mix(corpus, rows, "src")
    # exact shares 3.0, 1.5, 0.5 -> floors 3, 1, 0; two... one slot left: remainders b .5, c .5 -> tie by name -> b
    assert {g: m["sampled"] for g, m in mix.items()} == {"a": 3, "b": 2, "c": 0}
    assert len(set(rows.tolist())) == 5
    again = sample_rows(corpus, 5, rng=np.random.default_rng(1), stratify_by="src")
    assert rows.tolist() == again.tolist()
    missing = sampled_mix(_corpus(["a", None]), [1], "src")
    assert missing["<missing>"]["sampled"] == 1


def test_uniform_sample_is_seeded_and_capped() -> None:
    corpus = _corpus(["a"] * 10)
    a = sample_rows(corpus, 4, rng=np.random.default_rng(7))
    assert a.tolist() == sample_rows(corpus, 4, rng=np.random.default_rng(7)).tolist()
    assert sorted(sample_rows(corpus, 50, rng=np.random.default_rng(7)).tolist()) == list(range(10))


def test_split_is_deterministic_and_about_the_fraction() -> None:
    ids = [f"q{i}" for i in range(2000)]
    test = [q for q in ids if split_of(q, test_fraction=0.3, seed=5) == "test"]
    assert 0.26 < len(test) / 2000 < 0.34
    assert test == [q for q in ids if split_of(q, test_fraction=0.3, seed=5) == "test"]
    assert all(split_of(q, test_fraction=1.0) == "test" for q in ids[:50])
    assert all(split_of(q, test_fraction=0.0) == "train" for q in ids[:50])
