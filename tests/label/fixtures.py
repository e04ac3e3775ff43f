"""Small datasets for the labelling tests: a tiny BEIR folder whose documents and queries
carry script injections, a synthetic set to review, and helpers to build a judgments
database with the real pooling code and to run the real server as a subprocess."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
from tests.support.browser import ARTIFACTS, BROWSER_ARGS, CHROMIUM  # noqa: F401  (re-exported for the label tests)

INJECT = '<script>window.__pwned = 1;</script><img src=x onerror="window.__pwned = 2">'

DOCS = [
    ("d1", "Vitamin D and bone", "Vitamin D deficiency weakens bone density in adults."),
    ("d2", "Bone marrow", "Bone marrow cells form blood cells and contribute to immunity."),
    ("d3", "Evil <script>alert(1)</script> title", "Sleep quality " + INJECT + " improves memory consolidation."),
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
    ("q1", "vitamin D deficiency bone"),
    ("q2", "does sleep help memory consolidation? " + INJECT),
    ("q3", "caffeine heart rate"),
    ("q4", "obesity and type 2 diabetes"),
    ("q5", "antibiotic resistance gene transfer"),
    ("q6", "blood pressure lowering exercise"),
]
QRELS = [("q1", "d1", 1), ("q2", "d4", 1), ("q3", "d5", 1), ("q4", "d7", 1), ("q5", "d9", 1), ("q6", "d11", 1)]


def write_beir(root: Path, *, docs=DOCS, queries=QUERIES, qrels=QRELS, provenance: dict | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i, t, x in docs:
            f.write(json.dumps({"_id": i, "title": t, "text": x}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps({"_id": q[0], "text": q[1], "metadata": q[2] if len(q) > 2 else {}}) + "\n")
    (root / "qrels").mkdir(exist_ok=True)
    with (root / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q, d, g in qrels:
            f.write(f"{q}\t{d}\t{g}\n")
    if provenance is not None:
        (root / "provenance.json").write_text(json.dumps(provenance), encoding="utf-8")
    return root


#: A describe-mode synthetic set over the tiny corpus: one query per source document.
SYNTH_QUERIES = [
    ("describe-00000", "why are my bones weak without sunshine vitamin", {"source_doc": "d1"}),
    ("describe-00001", "coffee makes heart beat faster", {"source_doc": "d5"}),
    ("describe-00002", "bacteria sharing genes antibiotic", {"source_doc": "d10"}),
    ("describe-00003", "salt blood presure", {"source_doc": "d12"}),
]
SYNTH_QRELS = [("describe-00000", "d1", 1), ("describe-00001", "d5", 1), ("describe-00002", "d10", 1),
               ("describe-00003", "d12", 1)]


def write_synthetic(root: Path) -> Path:
    return write_beir(root, queries=SYNTH_QUERIES, qrels=SYNTH_QRELS, provenance={"mode": "describe"})


def env(cache_dir: Path | None = None) -> dict[str, str]:
    e = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
         "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    if cache_dir is not None:
        e["BAKEOFF_CACHE_DIR"] = str(cache_dir)
    return e


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Server:
    """``python -m bakeoff label ...`` as a real subprocess; ``url`` is read from its stdout."""

    def __init__(self, args: list[str], *, log: Path, cache_dir: Path | None = None, timeout: float = 900) -> None:
        self.log = log
        self._fh = log.open("ab")
        # Ctrl-C reaches the server as it would from a terminal, also when the test session itself was
        # started in the background of a script (which leaves SIGINT ignored for it and its children)
        self.proc = subprocess.Popen([sys.executable, "-m", "bakeoff", "label", *args, "--port", "0", "--no-progress"],
                                     stdout=subprocess.PIPE, stderr=self._fh, env=env(cache_dir), cwd=ROOT,
                                     preexec_fn=_default_sigint)  # noqa: PLW1509 - the child only calls signal()
        self.url = ""
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline().decode()
            if not line:
                break
            m = re.search(r"(http://[0-9.]+:\d+)(\S*)", line)
            if m:
                self.base, self.url = m.group(1), m.group(1) + m.group(2)
                self.key = re.search(r"[?&]key=([A-Za-z0-9_-]+)", self.url).group(1)
                return
        self.proc.kill()
        raise RuntimeError(f"server did not start: {log.read_text()[-2000:]}")

    def link(self, path: str) -> str:
        """``path`` on this server with the launch key (a fresh browser context has no key cookie)."""
        return f"{self.base}{path}{'&' if '?' in path else '?'}key={self.key}"

    def kill(self) -> None:
        """SIGKILL: no shutdown handler, no checkpoint, nothing flushed by the app."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._fh.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self._fh.close()


def settle(page, timeout: float = 30.0) -> None:
    """Wait until the page has no action in flight (polled with evaluate: the CSP forbids
    the string evaluation ``wait_for_function`` uses)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if page.evaluate("window.__bakeoffPending") == 0:
            return
        time.sleep(0.01)
    raise TimeoutError("the page still has actions in flight")


def current_item(page) -> tuple[str, str]:
    s = page.locator("#state")
    return s.get_attribute("data-qid") or "", s.get_attribute("data-doc") or ""
