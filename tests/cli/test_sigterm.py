"""SIGTERM ends a command cleanly: exit 143, one line, nothing staged left behind (here `bakeoff calibrate`
waiting on an LLM server that accepts connections and never answers)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


def _silent_server() -> tuple[socket.socket, list[socket.socket]]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)  # read nothing, answer nothing

    threading.Thread(target=accept, daemon=True).start()
    return srv, held


def _judged(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    topics = ["volcano", "glacier", "river", "desert", "forest", "reef"]
    (root / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "title": t, "text": f"A {t} is a landform; this text explains how a {t} forms."})
        + "\n" for i, t in enumerate(topics)))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"how does a {t} form"}) + "\n"
                                                for i, t in enumerate(topics)))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                             + "".join(f"q{i}\td{i}\t1\n" for i in range(len(topics))))
    return root


def test_sigterm_during_calibrate_removes_its_staging_folder_and_exits_143(tmp_path: Path) -> None:
    data = _judged(tmp_path / "judged")
    srv, held = _silent_server()
    port = srv.getsockname()[1]
    out = tmp_path / "cal"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BAKEOFF_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bakeoff", "calibrate", "--dataset", str(data), "--out", str(out), "-n", "4",
         "--llm", f"http://127.0.0.1:{port}/v1|fake", "--answerability", "off", "--no-progress",
         "--arm", "tfidf", "--arm", "bm25", "--arm", "l=bm25:method=bm25l", "--train-fraction", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while not held and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)  # the first request reaches the silent server once the staging folder exists
        assert held, proc.communicate(timeout=5)
        assert list(tmp_path.glob(".cal.calibrating-*")), "the staging folder exists while waiting"
        proc.send_signal(signal.SIGTERM)
        _stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        srv.close()
        for c in held:
            c.close()
    assert proc.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1] == "terminated"
    assert not list(tmp_path.glob(".cal.calibrating-*")) and not out.exists()
