"""The browser the tests drive: Debian's chromium through Playwright (never a downloaded browser).

``make test`` sets ``BAKEOFF_REQUIRE_BROWSER=1`` (the README's test command installs chromium), so a
missing browser or Playwright fails the browser tests instead of skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["ARTIFACTS", "BROWSER_ARGS", "CHROMIUM", "require_browser"]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
#: Without the background-networking flags chromium tries to reach Google's hosts from this closed network.
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync", "--disable-quic"]


def require_browser() -> None:
    """Skip (or, with ``BAKEOFF_REQUIRE_BROWSER=1``, fail) unless chromium and Playwright are installed."""
    missing = pytest.fail if os.environ.get("BAKEOFF_REQUIRE_BROWSER") == "1" else pytest.skip
    if not CHROMIUM.exists():
        missing("/usr/bin/chromium missing (make install runs scripts/system-deps.sh)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("the playwright Python package is not installed (the [test] extra)")
