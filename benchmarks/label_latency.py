"""Time to judge: keypress-to-update latency of the ``bakeoff label`` page, measured in the browser.

Usage::

    .venv/bin/python benchmarks/label_latency.py [--data ../shared/data/scifact] [--pool bm25 --pool dense]
        [--depth 20] [--keys 60] [--cache-dir DIR]

Starts ``python -m bakeoff label DATA --pool ... --depth ...`` on a fresh database (a free
loopback port), opens the page in Debian's headless Chromium (Playwright, ``executable_path``),
and presses ``--keys`` grade keys one after another (grades drawn from a seeded
``np.random.Generator``), waiting for each answer before the next key. Per key it records, in
the page: the time from the key event to the updated work area (``dom``) and to the next
animation frame (``frame``); per request the fetch duration (Resource Timing) and the
server's own time (``Server-Timing: app``, from request in to response out, including the
SQLite commit). As a reference measured in the same run: the page's fetch of a static 204
(``/favicon.ico``), i.e. the bare HTTP round trip on this machine right now. Prints median,
p90 and max of each, the ratio to the reference, and the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync"]


def stats(xs: list[float]) -> str:
    xs = sorted(xs)
    return (f"median {statistics.median(xs):6.1f}  p90 {xs[int(0.9 * (len(xs) - 1))]:6.1f}  "
            f"max {xs[-1]:6.1f} ms  (n={len(xs)})")


def wait_idle(page) -> None:
    for _ in range(6000):
        if page.evaluate("window.__bakeoffPending") == 0:
            return
        time.sleep(0.005)
    raise TimeoutError("page busy")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--pool", action="append", default=None)
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--keys", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache-dir", type=Path, default=None)
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    pool = a.pool or ["bm25", "dense"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "bakeoff", "label", str(a.data), "--db", f"{tmp}/bench.sqlite", "--annotator",
               "bench", "--depth", str(a.depth), "--port", "0", "--no-progress", "--overlap", "0"]
        for p in pool:
            cmd += ["--pool", p]
        if a.cache_dir:
            cmd += ["--cache-dir", str(a.cache_dir)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)  # stderr: progress and errors
        try:
            assert proc.stdout is not None
            url = ""
            for line in proc.stdout:
                m = re.search(r"http://\S+", line.decode())
                if m:
                    url = m.group(0)
                    break
            if not url:
                raise SystemExit("the server did not start")
            print(f"server up after {time.perf_counter() - t0:.1f} s (pooling included): {url}")
            grades = np.random.default_rng(a.seed).integers(0, 4, size=a.keys)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(url, wait_until="load")
                wait_idle(page)  # the page refreshes its work area once on load
                pool_size = page.locator("#items .chip").count()
                for g in grades:
                    page.keyboard.press(str(int(g)))
                    wait_idle(page)
                rec = page.evaluate("window.__bakeoffLatency")
                res = page.evaluate("""() => performance.getEntriesByType('resource')
                    .filter(e => e.initiatorType === 'fetch')
                    .map(e => [e.duration, e.serverTiming.length ? e.serverTiming[0].duration : null])""")
                ref = page.evaluate("""async (n) => { const out = [];
                    for (let i = 0; i < n; i++) { const t = performance.now();
                        await fetch('/favicon.ico', {cache: 'no-store'}); out.push(performance.now() - t); }
                    return out; }""", a.keys)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    dom = [r["dom_ms"] for r in rec]
    print(f"data {a.data.name}, pool {' + '.join(pool)} depth {a.depth} (first query: {pool_size} documents), "
          f"{a.keys} keys, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"keypress -> DOM updated      {stats(dom)}")
    print(f"keypress -> next frame       {stats([r['frame_ms'] for r in rec])}")
    print(f"fetch (browser view)         {stats([r[0] for r in res])}")
    print(f"server app time (incl. commit) {stats([r[1] for r in res if r[1] is not None])}")
    print(f"reference: fetch of a 204    {stats(ref)}")
    print("first keys (dom / server ms): " + ", ".join(f"{r['dom_ms']:.0f}/{r['server_ms'] or 0:.0f}" for r in rec[:5]))
    print(f"ratio keypress->DOM / reference round trip (medians): "
          f"{statistics.median(dom) / statistics.median(ref):.1f}x; under 50 ms: "
          f"{sum(d < 50 for d in dom)}/{len(dom)} keys")


if __name__ == "__main__":
    main()
