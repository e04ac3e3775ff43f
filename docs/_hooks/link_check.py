"""MkDocs hook: after the build, check every internal link of the built site (no network).

Each ``href``/``src`` of every HTML page that does not name a scheme or a host must resolve to a file of
the site, and its ``#fragment`` to an ``id`` (or ``name``) on the target page. One line per broken link,
then the build fails. External links are not fetched.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mkdocs.exceptions import Abort

log = logging.getLogger("mkdocs.hooks.link_check")


class _Page(HTMLParser):
    """The anchors a page defines and the links it makes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for key in ("id", "name") if tag in ("a", "input") else ("id",):
            if a.get(key):
                self.ids.add(str(a[key]))
        for key in ("href", "src"):
            if a.get(key) and not (tag == "link" and a.get("rel") in ("preconnect", "dns-prefetch")):
                self.links.append(str(a[key]))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _target(site: Path, page: Path, link: str) -> tuple[Path, str] | None:
    """The file and fragment an internal link points at; ``None`` for external links."""
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith("//"):
        return None
    if not parts.path:
        return page, unquote(parts.fragment)
    base = "" if parts.path.startswith("/") else posixpath.dirname(page.relative_to(site).as_posix())
    rel = posixpath.normpath(posixpath.join(base, unquote(parts.path).lstrip("/")))
    target = site / rel
    if target.is_dir() or parts.path.endswith("/"):
        target = target / "index.html"
    return target, unquote(parts.fragment)


def broken_links(site: Path, *, counts: dict[str, int] | None = None) -> Iterator[str]:
    """``page: link (reason)`` for every internal link of the built ``site`` that does not resolve.

    ``counts``, when given, receives the number of pages read and internal links checked."""
    site = site.resolve()
    counts = {} if counts is None else counts
    counts.update(pages=0, links=0)
    pages: dict[Path, _Page] = {}

    def parsed(path: Path) -> _Page:
        if path not in pages:
            pages[path] = _parse(path)
        return pages[path]

    for page in sorted(site.rglob("*.html")):
        counts["pages"] += 1
        for link in parsed(page).links:
            target = _target(site, page, link)
            if target is None:
                continue
            counts["links"] += 1
            path, fragment = target
            where = page.relative_to(site).as_posix()
            if site not in path.resolve().parents and path.resolve() != site:
                yield f"{where}: {link} (outside the site)"
            elif not path.is_file():
                yield f"{where}: {link} (no such file)"
            elif fragment and path.suffix == ".html" and fragment not in parsed(path).ids:
                yield f"{where}: {link} (no anchor #{fragment})"


def on_post_build(config) -> None:
    counts: dict[str, int] = {}
    broken = sorted(set(broken_links(Path(config["site_dir"]), counts=counts)))
    for line in broken:
        log.error("link check: %s", line)
    if broken:
        raise Abort(f"link check: {len(broken)} broken internal link(s) in the built site")
    log.info("link check: %d internal links in %d pages, all resolve", counts["links"], counts["pages"])
