from __future__ import annotations

from pathlib import Path

import pytest

from tests.label.fixtures import BROWSER_ARGS, CHROMIUM, write_beir
from tests.support.browser import require_browser


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    return write_beir(tmp_path / "tiny")


@pytest.fixture()
def make_db(tmp_path: Path, tiny: Path):
    """Create a judgments database over the tiny set with the real pooling code (bm25 + tfidf,
    depth 3) through :func:`open_session`; returns (db path, store-opening function)."""
    from bakeoff.label.session import LabelOptions, open_session

    def make(name: str = "j.sqlite", **kw) -> Path:
        db = tmp_path / name
        opts = {"dataset": tiny, "db": db, "pool": ("bm25", "tfidf"), "depth": 3, "port": 0, "cache": "off",
                "progress": False, **kw}
        with open_session(LabelOptions(**opts)):
            pass
        return db

    return make


@pytest.fixture(scope="module")
def browser():
    """Headless Debian Chromium through Playwright, one per test module."""
    require_browser()
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()
