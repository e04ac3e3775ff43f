"""``bakeoff ingest files``: PDF (reportlab-made, plain / owner-password / user-password / corrupt),
DOCX (python-docx-made), HTML, Markdown and text files made by the test; extracted text checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bakeoff.cli import main

pypdf = pytest.importorskip("pypdf")
docx = pytest.importorskip("docx")
reportlab = pytest.importorskip("reportlab")

FACTS = "Ernesto Miranda was questioned for two hours without being told of his rights."
HOLDING = "Statements from custodial interrogation need prior warnings."


def make_pdf(path: Path, pages: list[list[str]], *, title: str | None = None) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4, invariant=1)
    if title:
        c.setTitle(title)
    for lines in pages:
        y = 800
        for line in lines:
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()


def encrypt(src: Path, dst: Path, *, user: str, owner: str) -> None:
    reader = pypdf.PdfReader(src)
    writer = pypdf.PdfWriter()
    for page in reader.pages:
        writer.add_page(page)
    writer.add_metadata({"/Title": "Sealed ruling"})
    writer.encrypt(user_password=user, owner_password=owner, algorithm="AES-128")
    with dst.open("wb") as fh:
        writer.write(fh)


def make_docx(path: Path) -> None:
    d = docx.Document()
    d.add_heading("Gideon v. Wainwright", level=1)
    d.add_paragraph("Clarence Earl Gideon asked for a lawyer and was refused.")
    d.add_paragraph("")
    d.add_paragraph("The Court held that states must appoint counsel.")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "vote", "9-0"
    table.cell(1, 0).text, table.cell(1, 1).text = "term", "1962"
    d.save(str(path))


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "rulings").mkdir(parents=True)
    make_pdf(root / "rulings" / "miranda.pdf", [[FACTS], ["Second page:", HOLDING]], title="Miranda v. Arizona")
    make_pdf(root / "rulings" / "untitled.pdf", [["Only a body line here."]])
    make_pdf(root / "plain.pdf", [[FACTS]])
    encrypt(root / "plain.pdf", root / "rulings" / "owner-only.pdf", user="", owner="owner-secret")
    encrypt(root / "plain.pdf", root / "rulings" / "locked.pdf", user="reader-secret", owner="owner-secret")
    (root / "plain.pdf").unlink()
    good = (root / "rulings" / "miranda.pdf").read_bytes()
    (root / "rulings" / "broken.pdf").write_bytes(good[: len(good) // 3])
    (root / "rulings" / "empty.pdf").write_bytes(b"")  # no bytes at all
    make_pdf(root / "rulings" / "blank.pdf", [[]])  # a page without text: no text layer
    make_docx(root / "gideon.docx")
    (root / "bad.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (root / "page.html").write_text(
        "<html><head><title>Tinker &amp; the armbands</title><style>p{color:red}</style>"
        "<script>var x = 1;</script></head><body><h1>Heading one</h1><p>Students wore <b>black</b> armbands."
        "</p><p>The Court sided with them.</p></body></html>", encoding="utf-8")
    (root / "latin1.htm").write_bytes("<html><head><meta charset='iso-8859-1'><title>Caf\xe9</title></head>"
                                      "<body><p>Cr\xe8me br\xfbl\xe9e</p></body></html>".encode("latin-1"))
    (root / "notes.md").write_text("Intro line.\n\n# Loving *v.* Virginia\n\nThe [Lovings](http://x.org) married "
                                   "in **Washington**.\n\n- item one\n- item two\n", encoding="utf-8")
    (root / "readme.txt").write_text("Plain text file.\n", encoding="utf-8")
    (root / "photo.png").write_bytes(b"\x89PNG\r\n")
    return root


def read_jsonl(path: Path) -> dict[str, dict]:
    return {json.loads(line)["id"]: json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()}


def test_folder_of_documents_becomes_a_corpus(folder: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "corpus.jsonl"
    assert main(["ingest", "files", str(folder), "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    docs = read_jsonl(out)
    assert list(docs) == ["gideon.docx", "latin1.htm", "notes.md", "page.html", "readme.txt",
                          "rulings/miranda.pdf", "rulings/owner-only.pdf", "rulings/untitled.pdf"]
    m = docs["rulings/miranda.pdf"]
    assert m["title"] == "Miranda v. Arizona" and m["pages"] == 2 and m["format"] == "pdf"
    assert m["text"] == f"{FACTS}\n\nSecond page:\n{HOLDING}"
    owner = docs["rulings/owner-only.pdf"]  # encrypted with an empty user password: readable
    assert owner["text"] == FACTS and owner["title"] == "Sealed ruling"
    assert docs["rulings/untitled.pdf"]["title"] == "untitled"  # reportlab's default /Title, reported as is
    g = docs["gideon.docx"]
    assert g["title"] == "Gideon v. Wainwright"
    assert g["text"] == ("Gideon v. Wainwright\n\nClarence Earl Gideon asked for a lawyer and was refused.\n\n"
                         "The Court held that states must appoint counsel.\n\nvote 9-0\nterm 1962")  # cells: tab, normalised
    p = docs["page.html"]
    assert p["title"] == "Tinker & the armbands"
    assert p["text"] == "Heading one\n\nStudents wore black armbands.\n\nThe Court sided with them."
    assert docs["latin1.htm"]["title"] == "Café" and docs["latin1.htm"]["text"] == "Crème brûlée"
    n = docs["notes.md"]
    assert n["title"] == "Loving v. Virginia"
    assert n["text"] == "Intro line.\n\nLoving v. Virginia\n\nThe Lovings married in Washington.\n\nitem one\n\nitem two"
    assert docs["readme.txt"] == {"id": "readme.txt", "title": "", "text": "Plain text file.", "path": "readme.txt",
                                  "format": "text", "pages": None}
    # nothing dropped silently: failed, empty and skipped files counted, listed and warned about
    prov = json.loads((tmp_path / "corpus.jsonl.provenance.json").read_text())
    assert prov["counts"] == {"files": 14, "documents": 8, "failed": 4, "empty": 1, "skipped": 1}
    failed = {f["path"]: f["error"] for f in prov["failed"]}
    assert failed["rulings/locked.pdf"] == "encrypted PDF: a password is needed to open it"
    assert failed["rulings/broken.pdf"].startswith("not a readable PDF (")
    assert failed["bad.docx"].startswith("not a readable DOCX (")
    assert failed["rulings/empty.pdf"] == "not a readable PDF (EmptyFileError: Cannot read an empty file)"
    assert prov["empty"] == ["rulings/blank.pdf"]  # a page without a text layer
    assert prov["skipped"] == ["photo.png"]
    err = captured.err
    assert f"{folder / 'rulings' / 'locked.pdf'}: encrypted PDF: a password is needed to open it; skipped" in err
    assert f"{folder / 'rulings' / 'blank.pdf'}: no text extracted; left out" in err
    assert "14 files: 8 documents, 4 failed, 1 without text, 1 of other types" in captured.out


def test_strict_fails_on_the_first_bad_file_and_writes_nothing(folder: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "corpus.jsonl"
    assert main(["ingest", "files", str(folder), "--out", str(out), "--strict", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0] == f"error: {folder / 'bad.docx'}: not a readable DOCX (" + err[0].split("(", 1)[1]
    assert not out.exists() and not (tmp_path / "corpus.jsonl.provenance.json").exists()


def test_only_unreadable_files_is_one_line_error(tmp_path: Path, capsys) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    make_pdf(tmp_path / "p.pdf", [["text"]])
    encrypt(tmp_path / "p.pdf", root / "locked.pdf", user="pw", owner="pw2")
    (root / "corrupt.pdf").write_bytes(b"%PDF-1.4\n%%garbage")
    out = tmp_path / "c.jsonl"
    assert main(["ingest", "files", str(root), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"error: {root}: no file yielded text (2 failed, 0 empty, 0 of unsupported types; supported: " \
                      ".docx, .htm, .html, .markdown, .md, .pdf, .rst, .txt)"
    assert not out.exists()


def test_parquet_output_and_min_chars(folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from bakeoff.data.loaders import read_records

    out = tmp_path / "c.parquet"
    assert main(["ingest", "files", str(folder), "--out", str(out), "--min-chars", "40", "--no-progress"]) == 0
    corpus = read_records(out)
    assert all(len(t) >= 40 for t in corpus.texts)
    assert "readme.txt" not in corpus and "rulings/miranda.pdf" in corpus
    prov = json.loads((tmp_path / "c.parquet.provenance.json").read_text())
    assert "readme.txt" in prov["empty"] and prov["corpus_fingerprint"] == corpus.fingerprint()
