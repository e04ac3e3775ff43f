"""A tiny BEIR folder for fine-tuning tests: 40 documents on distinct topics, 24 training
queries and 6 test queries (each judged relevant to the document on its topic)."""

from __future__ import annotations

import json
from pathlib import Path

TOPICS = [
    ("volcano", "magma erupts through the crust and forms ash clouds"),
    ("glacier", "slow rivers of ice carve valleys in the mountains"),
    ("coral", "reef animals build limestone skeletons in warm seas"),
    ("comet", "icy bodies grow tails of gas when they near the sun"),
    ("insulin", "a hormone that lowers blood sugar after meals"),
    ("photosynthesis", "plants turn light water and carbon dioxide into sugar"),
    ("tectonics", "plates of the lithosphere drift and collide"),
    ("vaccine", "trains the immune system with a harmless antigen"),
    ("neutron", "an uncharged particle found in atomic nuclei"),
    ("mitochondria", "organelles that produce the cell's energy"),
    ("tsunami", "a series of waves caused by undersea earthquakes"),
    ("antibiotic", "a drug that kills or stops bacteria"),
    ("enzyme", "a protein that speeds up chemical reactions"),
    ("monsoon", "a seasonal wind that brings heavy rain"),
    ("telescope", "an instrument that gathers light from distant objects"),
    ("ribosome", "the machine that builds proteins from messenger RNA"),
    ("hurricane", "a rotating tropical storm with strong winds"),
    ("semiconductor", "a material whose conductivity lies between metal and insulator"),
    ("pollination", "bees carry pollen between flowers"),
    ("supernova", "the explosive death of a massive star"),
    ("erosion", "wind and water wear away rock and soil"),
    ("antibody", "a protein that binds a specific antigen"),
    ("desalination", "removing salt from seawater to make it drinkable"),
    ("fermentation", "yeast converts sugar into alcohol and gas"),
    ("aurora", "charged particles light up the polar sky"),
    ("neuron", "a cell that transmits electrical signals in the brain"),
    ("photon", "a particle of light with no mass"),
    ("cholesterol", "a waxy lipid carried in the blood by lipoproteins"),
    ("earthquake", "sudden slip on a fault shakes the ground"),
    ("chlorophyll", "the green pigment that absorbs light in leaves"),
]
FILLER = [f"filler note {i} with science facts about unrelated household chores and weekend plans" for i in range(10)]


def make_tiny_beir(root: Path, *, name: str = "tiny") -> Path:
    """Write the tiny BEIR folder under ``root/name`` and return its path."""
    folder = root / name
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps({"_id": f"d{i}", "title": topic.title(), "text": f"Science facts. {topic}: {text}."}) + "\n" for i, (topic, text) in enumerate(TOPICS))
        fh.writelines(json.dumps({"_id": f"f{j}", "title": "", "text": text}) + "\n" for j, text in enumerate(FILLER))
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as qf, \
            open(folder / "qrels" / "train.tsv", "w", encoding="utf-8") as tr, \
            open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as te:
        tr.write("query-id\tcorpus-id\tscore\n")
        te.write("query-id\tcorpus-id\tscore\n")
        for i, (topic, text) in enumerate(TOPICS):
            split, fh = ("test", te) if i >= 24 else ("train", tr)
            qid = f"{split[:2]}q{i}"
            words = text.split()
            qf.write(json.dumps({"_id": qid, "text": f"science facts: which {topic} {' '.join(words[1:4])}"}) + "\n")
            fh.write(f"{qid}\td{i}\t1\n")
    return folder
