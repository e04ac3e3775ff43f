"""Third-party arm types through the ``bakeoff.arms`` entry-point group, for real: a tiny installed
distribution (a ``*.dist-info`` folder with ``entry_points.txt`` beside its module) on a PYTHONPATH
entry, and ``bakeoff run --arm TYPE:...`` in a subprocess. The plugin module is the docs' example
arm, taken from the plugins page itself, so the documented example is the tested one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.test_loaders import beir_folder

ROOT = Path(__file__).resolve().parents[2]

CORPUS = ('{"_id": "d1", "title": "", "text": "Alpha beta"}\n'
          '{"_id": "d2", "title": "", "text": "alpha gamma"}\n'
          '{"_id": "d3", "title": "", "text": "beta gamma delta"}\n')
QUERIES = '{"_id": "q1", "text": "alpha beta"}\n{"_id": "q2", "text": "delta"}\n'
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n"


def docs_example() -> str:
    """The first ``python`` block of the docs' plugins page."""
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert match, "docs/plugins.md: no python example"
    return match.group(1)


def install(site: Path, dist: str, module: str, source: str, entry_points: str) -> None:
    """What ``pip install`` leaves behind: the module and ``<dist>-0.1.dist-info`` with its entry points."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(source, encoding="utf-8")
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


def bakeoff(site: Path, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src"), str(ROOT)]),
           "BAKEOFF_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, "-m", "bakeoff", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    install(site, "bakeoff-overlap", "bakeoff_overlap", docs_example(),
            "[bakeoff.arms]\noverlap = bakeoff_overlap:OverlapArm\n")
    install(site, "bakeoff-broken", "bakeoff_broken", "import heavy_dependency_not_installed\n",
            "[bakeoff.arms]\nbroken = bakeoff_broken:BrokenArm\n")
    return site


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_installed_plugin_arm_runs_like_a_builtin(site: Path, tmp_path: Path) -> None:
    data = beir_folder(tmp_path / "data", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    out = tmp_path / "out"
    proc = bakeoff(site, "run", "--beir", str(data), "--arm", "overlap", "--arm", "exact=overlap:lowercase=false",
                   "--arm", "h=rrf:arms=overlap+exact,rank_constant=1", "--latency-sample", "0", "--no-progress",
                   "--out", str(out), cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    res = json.loads((out / "results.json").read_text())
    overlap, exact, fused = res["arms"]
    assert (overlap["type"], exact["type"], fused["type"]) == ("overlap", "overlap", "rrf")
    assert overlap["config"] == {"lowercase": True} and exact["config"] == {"lowercase": False}

    def lines(arm: dict) -> list[str]:
        return (out / arm["run_file"]).read_text().splitlines()

    # q1 "alpha beta": d1 has both words (once lower-cased), d2 and d3 one each: tie -> doc id desc
    assert lines(overlap) == ["q1 Q0 d1 1 2.0 overlap", "q1 Q0 d3 2 1.0 overlap", "q1 Q0 d2 3 1.0 overlap",
                              "q2 Q0 d3 1 1.0 overlap"]
    # case-sensitive: "Alpha" != "alpha", so all three tie at 1
    assert lines(exact)[:3] == ["q1 Q0 d3 1 1.0 exact", "q1 Q0 d2 2 1.0 exact", "q1 Q0 d1 3 1.0 exact"]
    # rrf with k=1: d1 1/2 + 1/4, d3 1/3 + 1/2, d2 1/4 + 1/3 (hand-computed)
    assert [ln.split()[2] for ln in lines(fused) if ln.startswith("q1 ")] == ["d3", "d1", "d2"]
    assert overlap["metrics"]["mrr@10"] == 1.0 and exact["metrics"]["mrr@10"] == pytest.approx((1 / 3 + 1) / 2)
    # a warm re-run takes the plugin's runs from the cache, like any arm's
    again = bakeoff(site, "run", "--beir", str(data), "--arm", "overlap", "--latency-sample", "0", "--no-progress",
                    "--out", str(tmp_path / "out2"), cache=tmp_path / "c")
    assert again.returncode == 0 and json.loads((tmp_path / "out2" / "results.json").read_text())["arms"][0]["cached"]


@pytest.mark.slow  # the command line in a subprocess or a served app
def test_broken_plugin_is_one_line_naming_it(site: Path, tmp_path: Path) -> None:
    data = beir_folder(tmp_path / "data", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    proc = bakeoff(site, "run", "--beir", str(data), "--arm", "broken", "--no-progress", "--out", str(tmp_path / "o"),
                   cache=tmp_path / "c")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        ("error: arm plugin 'broken' (bakeoff_broken:BrokenArm from bakeoff-broken 0.1) failed to load: "
        "ModuleNotFoundError: No module named 'heavy_dependency_not_installed'")]
    assert not (tmp_path / "o" / "results.json").exists()
    # a broken plugin that is not asked for stays silent (it is never imported) ...
    ok = bakeoff(site, "run", "--beir", str(data), "--arm", "bm25", "--latency-sample", "0", "--no-progress",
                 "--out", str(tmp_path / "o2"), cache=tmp_path / "c")
    assert ok.returncode == 0 and "broken" not in ok.stderr
    # ... and listing the types (an unknown type) names it in one warning line, then lists the working ones
    bad = bakeoff(site, "run", "--beir", str(data), "--arm", "nosuch", "--no-progress", "--out", str(tmp_path / "o3"),
                  cache=tmp_path / "c")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    err = bad.stderr.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("warning: arm plugin 'broken' (bakeoff_broken:BrokenArm from bakeoff-broken 0.1) failed")
    assert err[-1].startswith("error: --arm 'nosuch': unknown arm type 'nosuch'; known: ") and "overlap" in err[-1]
    assert "broken" not in err[-1].split("known: ")[1]


def test_plugin_lookup_is_lazy(site: Path, tmp_path: Path) -> None:
    """Building built-in arms imports no plugin; asking for a plugin type imports that plugin only."""
    code = ("import sys\n"
            "from bakeoff.arms.registry import arm_type\n"
            "arm_type('bm25')\n"
            "print('bakeoff_overlap' in sys.modules, 'bakeoff_broken' in sys.modules)\n"
            "cls = arm_type('overlap')\n"
            "print(cls.__name__, cls.type, 'bakeoff_broken' in sys.modules, arm_type('nosuch'))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False False", "OverlapArm overlap False None"]
