"""``bakeoff run`` with external arms end to end: results written, errors one line with exit 2, secrets absent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bakeoff.cli import main
from bakeoff.runner.config import load_config


@pytest.fixture()
def tiny_beir(tmp_path: Path) -> Path:
    d = tmp_path / "beir"
    (d / "qrels").mkdir(parents=True)
    docs = {"d1": "The cat sat on the mat", "d2": "Cats and dogs; a cat chased another cat", "d3": "Dogs bark loudly"}
    (d / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items()))
    (d / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "cat"}) + "\n" +
                                     json.dumps({"_id": "q2", "text": "barking dogs"}) + "\n")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td3\t1\n")
    return d


@pytest.mark.slow  # PostgreSQL
def test_cli_runs_pgfts_and_command_arms(tiny_beir: Path, tmp_path: Path, pg_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "ret.py"
    script.write_text("import json,sys\nfor l in sys.stdin:\n    q=json.loads(l)\n"
                      "    print(q['id'],'Q0','d3' if 'dog' in q['text'] else 'd2',1,1.0,'x')\n")
    out = tmp_path / "out"
    code = main(["run", "--beir", str(tiny_beir), "--arm", f"fts=pgfts:dsn={pg_dsn}", "--arm",
                 f"cmd=command:command={sys.executable} {script}", "--out", str(out), "--cache", "off", "--no-progress"])
    assert code == 0, capsys.readouterr().err
    res = json.loads((out / "results.json").read_text())
    metrics = {a["name"]: a["metrics"] for a in res["arms"]}
    assert metrics["fts"]["ndcg@10"] == pytest.approx(1.0)  # q1 -> d2 first (0.3 > 0.1), q2 -> d3 (dog & bark)
    assert metrics["cmd"]["ndcg@10"] == pytest.approx(1.0)
    assert (out / "runs" / "fts.trec").read_text().splitlines()[0].split()[:3] == ["q1", "Q0", "d2"]


def test_cli_unreachable_database_is_one_line_exit_2(tiny_beir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psycopg")
    out = tmp_path / "out"
    code = main(["run", "--beir", str(tiny_beir), "--arm", "pgfts:dsn=postgresql://bob:hunter2@127.0.0.1:1/db,table=docs",
                 "--out", str(out), "--cache", "use", "--cache-dir", str(tmp_path / "c"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("error: pgfts arm") and "cannot connect to PostgreSQL at postgresql://bob:***@127.0.0.1:1/db" in err
    assert "hunter2" not in err and len(err.splitlines()) == 1
    assert not out.exists()
    assert not [p for p in (tmp_path / "c").rglob("*") if p.is_file()] if (tmp_path / "c").exists() else True


def test_toml_engine_table(tmp_path: Path) -> None:
    cfg = tmp_path / "b.toml"
    cfg.write_text('[dataset]\nbeir = "."\n[engine]\nray = "auto"\nactors = 4\n[[arms]]\ntype = "bm25"\n')
    from bakeoff.engine import make_engine

    eng = make_engine(load_config(cfg).extra.get("engine"))
    assert eng is not None and eng.address == "auto" and eng.actors == 4
