"""A tiny BEIR folder for report tests: a document carrying an XSS payload, a judged document
absent from the corpus, query metadata, and a results folder produced by the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

PAYLOAD = '<script>window.__pwned = 1;</script></script><script>window.__pwned = 2;</script><img src=x onerror="window.__pwned = 3">'

DOCS = [
    ("d1", "Vitamin D and bone", "Vitamin D deficiency weakens bone density in adults."),
    ("d2", "Bone marrow", "Bone marrow cells form blood cells and contribute to immunity."),
    ("d3", "Evil <script>", "Sleep quality " + PAYLOAD + " improves memory consolidation in students."),
    ("d4", "Memory", "Memory consolidation happens during deep sleep phases."),
    ("d5", "Coffee", "Coffee consumption and heart rhythm: caffeine raises heart rate briefly."),
    ("d6", "Heart", "Heart rate variability predicts cardiac events in older adults."),
    ("d7", "Insulin", "Insulin resistance is linked to obesity and type 2 diabetes."),
    ("d8", "Diabetes", "Type 2 diabetes prevalence rises with obesity rates worldwide."),
    ("d9", "Antibiotics", "Antibiotic resistance spreads through horizontal gene transfer."),
    ("d10", "Genes", "Gene transfer between bacteria carries resistance genes."),
    ("d11", "Running", "Running improves cardiovascular fitness and lowers blood pressure."),
    ("d12", "Salt", "High salt intake raises blood pressure in sensitive people."),
]
QUERIES = [
    ("q1", "vitamin D deficiency bone", {"topic": "nutrition"}),
    ("q2", "does sleep help memory consolidation? <b>bold</b>", {"topic": "neuro"}),
    ("q3", "caffeine heart rate", {"topic": "cardio"}),
    ("q4", "obesity and type 2 diabetes", {"topic": "metabolic"}),
    ("q5", "antibiotic resistance gene transfer", {"topic": "micro"}),
    ("q6", "blood pressure lowering exercise", {"topic": "cardio"}),
    ("q7", "a lost paper nobody indexed", {"topic": "micro"}),
    ("q8", "runners lowered pressures", {"topic": "cardio"}),
    ("q9", "consolidating memories while sleeping", {"topic": "neuro"}),
    ("q10", "bacterium resistant to antibiotics", {"topic": "micro"}),
]
QRELS = [
    ("q1", "d1", 1), ("q2", "d3", 1), ("q2", "d4", 1), ("q3", "d5", 1), ("q3", "d6", 1), ("q4", "d7", 1),
    ("q4", "d8", 1), ("q5", "d9", 1), ("q6", "d11", 1), ("q7", "absent-doc", 1),
    ("q8", "d11", 1), ("q9", "d4", 1), ("q10", "d10", 1),
]


def write_tiny_beir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i, t, x in DOCS:
            f.write(json.dumps({"_id": i, "title": t, "text": x}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as f:
        for i, t, meta in QUERIES:
            f.write(json.dumps({"_id": i, "text": t, "metadata": meta}) + "\n")
    (root / "qrels").mkdir(exist_ok=True)
    with (root / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q, d, g in QRELS:
            f.write(f"{q}\t{d}\t{g}\n")
    return root


def run_tiny(tmp: Path) -> Path:
    """``bakeoff run`` (the real CLI) with three lexical arms; returns the results folder."""
    from bakeoff.cli import main

    data = write_tiny_beir(tmp / "tiny")
    out = tmp / "results"
    rc = main(["run", "--beir", str(data), "--arm", "bm25", "--arm", "bm25:stemmer=english", "--arm", "tfidf",
               "--out", str(out), "--cache", "off", "--no-progress", "--k", "3", "--depth", "10"])
    assert rc == 0
    return out
