"""The one id rule (bakeoff.data.ids): ids TREC files can carry, derived from any file name, the same for
`bakeoff ingest files` and `--corpus FOLDER`; real files on disk, read back by the real readers."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bakeoff.cli import main
from bakeoff.data.ids import file_ids, folder_files, id_problem, source_path
from bakeoff.data.loaders import LoadReport, read_folder, read_records
from bakeoff.data.model import Qrels
from bakeoff.data.trec import read_qrels
from bakeoff.data.writers import write_trec_qrels
from bakeoff.errors import InputError

NFD = unicodedata.normalize("NFD", "Résumé.txt")


def test_file_names_become_ids_trec_files_can_carry() -> None:
    ids = file_ids(["Annual Report 2023.md", "My Docs/sub dir/Résumé du projet.pdf", "tab\tand\nnewline.txt",
                    "nbsp\u00a0name.html", "plain/name-1_2.txt", "README", "READ ME"])
    assert ids == {"Annual Report 2023.md": "Annual_Report_2023.md",
                   "My Docs/sub dir/Résumé du projet.pdf": "My_Docs/sub_dir/Résumé_du_projet.pdf",
                   "tab\tand\nnewline.txt": "tab_and_newline.txt",
                   "nbsp\u00a0name.html": "nbsp_name.html",
                   "plain/name-1_2.txt": "plain/name-1_2.txt",
                   "README": "README", "READ ME": "READ_ME"}


def test_same_stem_two_extensions_stay_apart() -> None:
    assert file_ids(["report.pdf", "report.docx", "report"]) == {"report.pdf": "report.pdf",
                                                                 "report.docx": "report.docx", "report": "report"}


def test_clashes_are_told_apart_deterministically() -> None:
    # a valid name keeps its id; the changed ones, in code-point order ("\t" < " "), take ~2, ~3 ...
    names = ["a b.txt", "a_b.txt", "a\tb.txt", "x y.txt", "x_y~2.txt", NFD, "Résumé.txt", "no ext", "no\text"]
    ids = file_ids(names)
    assert ids == {"a_b.txt": "a_b.txt", "a\tb.txt": "a_b~2.txt", "a b.txt": "a_b~3.txt",
                   "x y.txt": "x_y.txt", "x_y~2.txt": "x_y~2.txt",
                   "Résumé.txt": "Résumé.txt", NFD: "Résumé~2.txt",
                   "no\text": "no_ext", "no ext": "no_ext~2"}
    assert file_ids(reversed(names)) == ids  # the order given does not matter


def test_a_decomposed_name_gives_the_composed_id() -> None:
    # macOS stores names decomposed (NFD); the id is the one typed on any keyboard (NFC)
    assert file_ids([NFD]) == {NFD: "Résumé.txt"}


def test_bytes_that_are_not_utf8_become_underscores() -> None:
    assert file_ids(["bad\udcff\udcfe.txt"]) == {"bad\udcff\udcfe.txt": "bad_.txt"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1, max_size=8)
                .filter(lambda s: s not in (".", "..")), max_size=12))
def test_ids_are_distinct_and_valid_for_any_names(names: list[str]) -> None:
    ids = file_ids(names)
    assert set(ids) == set(names)
    assert len(set(ids.values())) == len(ids)
    assert all(id_problem(i) is None for i in ids.values())
    # a valid name in NFC is never renamed; one that NFC changes (decomposed accents, compatibility ideographs
    # such as U+F900) gets its NFC form, as the same name typed on another system would
    assert all(ids[n] == n for n in names if id_problem(n) is None and unicodedata.normalize("NFC", n) == n)


def test_source_path_only_when_the_id_differs() -> None:
    assert source_path({"path": "My Docs/a b.txt"}, "My_Docs/a_b.txt") == "My Docs/a b.txt"
    assert source_path({"path": "a.txt"}, "a.txt") is None
    assert source_path({}, "d1") is None and source_path({"path": 3}, "d1") is None


def _folder(root: Path) -> Path:
    (root / "Réunions 2024").mkdir(parents=True)
    (root / "Annual Report 2023.md").write_text("# Annual report\n\nRevenue grew in 2023.\n", encoding="utf-8")
    (root / "Annual Report 2023.txt").write_text("The plain-text copy of the annual report.\n", encoding="utf-8")
    (root / "Annual_Report_2023.md").write_text("An older draft with an underscore name.\n", encoding="utf-8")
    (root / "Réunions 2024" / "Compte rendu n°1.html").write_text(
        "<html><head><title>Compte rendu</title></head><body><p>Décisions prises.</p></body></html>",
        encoding="utf-8")
    (root / "Réunions 2024" / NFD).write_text("Curriculum vitae.\n", encoding="utf-8")
    (root / "photo 1.png").write_bytes(b"\x89PNG\r\n")
    return root


def test_ingest_files_and_corpus_folder_give_the_same_ids(tmp_path: Path, capsys) -> None:
    root = _folder(tmp_path / "My Docs")
    out = tmp_path / "corpus.jsonl"
    assert main(["ingest", "files", str(root), "--out", str(out), "--no-progress"]) == 0
    ingested = read_records(out)
    report = LoadReport()
    folder = read_folder(root, report=report)
    # in code-point order of the original paths (" " < "_"); the valid name keeps its id, its clash takes ~2
    want = ("Annual_Report_2023~2.md", "Annual_Report_2023.txt", "Annual_Report_2023.md",
            "Réunions_2024/Compte_rendu_n°1.html", "Réunions_2024/Résumé.txt")
    assert folder.ids == ingested.ids == want
    assert [folder[i].metadata["path"] for i in want] == [
        "Annual Report 2023.md", "Annual Report 2023.txt", "Annual_Report_2023.md",
        "Réunions 2024/Compte rendu n°1.html", f"Réunions 2024/{NFD}"]
    assert [ingested[i].metadata["path"] for i in want] == [folder[i].metadata["path"] for i in want]
    assert folder["Réunions_2024/Compte_rendu_n°1.html"].title == "Compte rendu"
    assert report.other_files == ["photo 1.png"]
    assert {p.name: i for p, i in folder_files(root).items()}["photo 1.png"] == "photo_1.png"
    # the ids go through a TREC qrels file and back unchanged
    write_trec_qrels(Qrels({"q1": {i: 1 for i in want}}), tmp_path / "q.txt")
    assert set(read_qrels(tmp_path / "q.txt")["q1"]) == set(want)


def test_corpus_folder_skips_unreadable_files_with_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good one.txt").write_text("readable\n", encoding="utf-8")
    (root / "bad one.txt").write_bytes(b"caf\xe9\n")
    report = LoadReport()
    assert read_folder(root, report=report).ids == ("good_one.txt",)
    assert report.warnings() == [(f"{root / 'bad one.txt'}: not valid UTF-8 (byte 3); re-encode the file as UTF-8; "
                                  "skipped")]


def test_corpus_folder_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing: not a folder"):
        read_folder(tmp_path / "missing")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "dangling link.txt").symlink_to(root / "nowhere.txt")
    with pytest.raises(InputError, match=r"dangling link\.txt: a symbolic link that leads nowhere"):
        read_folder(root)


def test_ingest_writes_the_original_path_in_the_record(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "été 2024.txt").write_text("summer\n", encoding="utf-8")
    out = tmp_path / "c.jsonl"
    assert main(["ingest", "files", str(root), "--out", str(out), "--no-progress"]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == {"id": "été_2024.txt", "title": "", "text": "summer",
                                                          "path": "été 2024.txt", "format": "text", "pages": None}
