"""The benchmark suite's runner records a benchmark's output with where and when it ran, and the docs hook
renders that record (and says how to make one when there is none)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_runner_records_output_figures_machine_versions_and_commit(tmp_path: Path) -> None:
    run = load(ROOT / "benchmarks" / "run.py", "bench_run")
    script = tmp_path / "tiny.py"
    script.write_text("import json, sys\nprint('ratio: 2.50x')\n"
                      "json.dump({'ratio': 2.5}, open(sys.argv[sys.argv.index('--json') + 1], 'w'))\n")
    bench = run.Bench("a tiny benchmark", str(script), ("--x", "1"), json=True)
    record = run.run_one("tiny", bench, quick=False, out=tmp_path / "records")
    stored = json.loads((tmp_path / "records" / "tiny.json").read_text())
    assert stored == json.loads(json.dumps(record))
    assert stored["output"] == "ratio: 2.50x" and stored["figures"] == {"ratio": 2.5}
    assert stored["returncode"] == 0 and stored["command"].endswith("tiny.py --x 1")
    assert dt.datetime.fromisoformat(stored["date"]).tzinfo is not None
    assert re.fullmatch(r"[0-9a-f]{40}", stored["commit"])
    assert stored["machine"]["cores"] >= 1 and isinstance(stored["machine"]["load1_before"], float)
    assert stored["versions"]["numpy"] and stored["versions"]["python"].count(".") == 2

    failing = tmp_path / "fail.py"
    failing.write_text("import sys\nprint('half')\nsys.exit('broken input')\n")
    bad = run.run_one("fail", run.Bench("fails", str(failing)), quick=False, out=tmp_path / "records")
    assert bad["returncode"] == 1 and bad["error"] == "broken input" and bad["output"] == "half"


def test_every_suite_script_exists_and_the_list_is_printed(capsys) -> None:
    run = load(ROOT / "benchmarks" / "run.py", "bench_run")
    for name, bench in run.SUITE.items():
        assert (ROOT / "benchmarks" / bench.script).exists(), name
    assert run.main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(run.SUITE)
    assert run.main(["no_such_benchmark"]) == 2


def test_hook_renders_a_record_and_a_missing_one(tmp_path: Path, monkeypatch) -> None:
    hook = load(ROOT / "docs" / "_hooks" / "bench_results.py", "docs_hook_bench_results")
    monkeypatch.setattr(hook, "RESULTS", tmp_path)
    (tmp_path / "speed.json").write_text(json.dumps({
        "name": "speed", "command": "python benchmarks/speed.py --n 3", "quick": True,
        "date": "2026-12-04T05:00:00+00:00", "wall_s": 12.4, "returncode": 0, "commit": "a" * 40, "dirty": False,
        "machine": {"cpu": "Some <CPU>", "cores": 2, "load1_before": 1.0, "load1_after": 1.5},
        "versions": {"python": "3.11.2", "bakeoff": "0.1.0", "numpy": "2.1.0"}, "output": "x ``` y\nratio 2.5x"}))
    page = hook.on_page_markdown("a\n<!-- bakeoff-bench: speed -->\nb\n<!-- bakeoff-bench: never -->", None, None,
                                 None)
    assert "Recorded **2026-12-04 05:00 UTC** (quick sizes) in 12 s: `python benchmarks/speed.py --n 3`" in page
    assert "Some &lt;CPU&gt;, 2 logical cores, load 1.0 → 1.5; bakeoff 0.1.0 at `aaaaaaaaaa`" in page
    assert "````text\nx ``` y\nratio 2.5x\n````" in page  # a longer fence than any run of backticks inside
    assert "Record it with `python benchmarks/run.py never`" in page


def test_exact_stored_index_makes_the_vectors_it_needs(tmp_path: Path) -> None:
    """The suite runs ``exact_stored_index`` on a fresh machine: it generates the corpus vectors itself (as
    ``exact_search.py`` would) instead of failing on a missing ``doc_vecs.npy``, and reuses them after."""
    import os
    import subprocess

    cmd = [sys.executable, str(ROOT / "benchmarks" / "exact_stored_index.py"), "--n", "3000", "--queries", "1,10",
           "--repeat", "1", "--workdir", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    first = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "3000" / "doc_vecs.npy").exists() and "vectors generated" in first.stdout
    assert first.stdout.count(", identical") == 2
    again = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=300)
    assert again.returncode == 0 and "vectors generated" not in again.stdout
