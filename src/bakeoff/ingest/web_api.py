"""Reading a corpus from a paginated JSON web API: ``bakeoff ingest api``.

The walk, for one *pass* (see :mod:`bakeoff.ingest.state`):

1. **robots.txt** of the listing's host is read first (:mod:`bakeoff.ingest.manners`);
   a disallowed URL is never requested (listing: an error; item: counted).
2. **Listing**: pages are fetched in order (:mod:`bakeoff.ingest.pagination`); the
   items of a page are the JSON list at ``items`` (a JMESPath; the page itself when it
   is a list). Each item gets a *key*: its id (the ``--id`` expression on the listing
   item), else its detail URL. An item whose key was already seen in this pass is a
   **duplicate**, dropped *before* any detail fetch (overlapping pages cost one
   listing row, never a request). Each page, with its new items and the cursor to
   the next page, is committed to the state in one transaction.
3. **Details** (with ``detail_field``, a JMESPath giving a URL, or ``detail_template``,
   an RFC 6570 URI template over the listing item's top-level fields, expanded by
   the ``uritemplate`` package): the pending items are fetched in listing order,
   at most ``concurrency`` at a time, each committed as it arrives. An item whose
   detail fails after the client's retries is recorded as failed (counted, listed
   in the provenance, not retried by a resume; ``retry_failed`` retries them).
4. **Assembly**: for every item in listing order, the field mapping
   (:mod:`bakeoff.ingest.mapping`) reads id, title, text and fields from the detail
   (falling back to the listing item); cleaning uses
   :class:`bakeoff.data.clean.CleanOptions` through the loaders' corpus builder
   (HTML stripped, spaces normalised, a repeated *id* dropped and counted, short
   documents dropped and counted). Items without an id are counted and skipped; an
   expression that matches nothing on *every* item is an error naming it.
5. The corpus is written atomically (:mod:`bakeoff.ingest.output`), then its
   provenance (:mod:`bakeoff.ingest.provenance`).

Politeness is the shared client's (:class:`bakeoff.net.HttpClient`): ``rate``
requests/second across threads (``min_interval = 1/rate``), retries with bounded
exponential backoff honouring ``Retry-After`` on 429/503, the honest User-Agent.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.clean import CleanOptions
from ..data.loaders import CorpusBuilder, LoadReport
from ..data.model import Corpus
from ..errors import ConfigError, InputError, MissingDependencyError
from ..net import HttpClient, HttpError, default_user_agent
from ..progress import progress_bar
from .fetch import Fetched, NotJson, fetch_json
from .manners import Robots
from .mapping import FieldSpec, Mapper, compile_expression, keys_hint
from .output import corpus_format, write_corpus
from .pagination import Pagination
from .provenance import iso, write_provenance
from .state import IngestState

__all__ = ["ApiSource", "IngestResult", "Manners", "default_state_path", "ingest_api"]

log = logging.getLogger("bakeoff")

#: At most this many failures / disallowed URLs / missing-id examples are listed in the provenance.
LIST_LIMIT = 200


@dataclass(frozen=True, kw_only=True)
class ApiSource:
    """Where the records are and how to read them (everything that decides *what is fetched*
    except ``fields``, which only decides how records become documents)."""

    url: str
    items: str | None = None
    pagination: Pagination = field(default_factory=Pagination)
    detail_field: str | None = None
    detail_template: str | None = None
    fields: FieldSpec = field(default_factory=FieldSpec)

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"URL must start with http:// or https://, got {self.url!r}")
        if self.detail_field and self.detail_template:
            raise ConfigError("give --detail-field or --detail-template, not both")
        if self.items:
            compile_expression(self.items, option="--items")
        if self.detail_field:
            compile_expression(self.detail_field, option="--detail-field")
        if self.detail_template:
            _template(self.detail_template)

    def crawl_key(self) -> dict[str, Any]:
        """The parameters a resume state must share (see :mod:`bakeoff.ingest.state`)."""
        return {"url": self.url, "items": self.items, "pagination": self.pagination.as_dict(),
                "detail_field": self.detail_field, "detail_template": self.detail_template, "id": self.fields.id}


@dataclass(frozen=True, kw_only=True)
class Manners:
    """How to behave: ``rate`` requests per second (0 = unlimited), ``concurrency`` requests
    in flight, robots.txt (``respect_robots``), User-Agent ``contact``, client timeout and
    retry policy, extra ``headers``, and ``api_key_env`` (the NAME of the environment
    variable holding a bearer token; the key itself is never stored or written)."""

    rate: float = 1.0
    concurrency: int = 1
    respect_robots: bool = True
    contact: str | None = None
    user_agent: str | None = None
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    backoff_max: float = 30.0
    headers: tuple[tuple[str, str], ...] = ()
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        if self.rate < 0:
            raise ConfigError(f"--rate must be >= 0 requests/second, got {self.rate}")
        if self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1, got {self.concurrency}")

    def client(self) -> HttpClient:
        return HttpClient(timeout=self.timeout, retries=self.retries, backoff=self.backoff,
                          backoff_max=self.backoff_max, min_interval=(1.0 / self.rate) if self.rate > 0 else 0.0,
                          user_agent=self.user_agent or default_user_agent(self.contact),
                          headers=dict(self.headers), auth_env=self.api_key_env)

    def as_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "concurrency": self.concurrency, "respect_robots": self.respect_robots,
                "user_agent": self.user_agent or default_user_agent(self.contact), "timeout": self.timeout,
                "retries": self.retries, "backoff": self.backoff, "backoff_max": self.backoff_max,
                "headers": sorted(k for k, _ in self.headers), "api_key_env": self.api_key_env}


@dataclass
class IngestResult:
    """What an ingest did: the corpus, where it was written, counts and warnings."""

    corpus: Corpus
    out: Path
    provenance: Path
    state: Path
    counts: dict[str, int]
    warnings: list[str]


def default_state_path(out: str | Path) -> Path:
    """``corpus.jsonl`` -> ``corpus.jsonl.state.sqlite`` (beside the corpus)."""
    p = Path(out)
    return p.with_name(p.name + ".state.sqlite")


def _template(text: str) -> Any:
    try:
        import uritemplate
    except ImportError:
        raise MissingDependencyError("uritemplate", "ingest", "--detail-template") from None
    try:
        return uritemplate.URITemplate(text)
    except Exception as exc:  # noqa: BLE001 - the library raises several types
        raise ConfigError(f"--detail-template {text!r}: not an RFC 6570 URI template ({exc})") from None


class _Walker:
    """One ingest invocation over one state (see module docstring)."""

    def __init__(self, source: ApiSource, manners: Manners, state: IngestState, *, progress: bool) -> None:
        self.source, self.manners, self.state, self.progress = source, manners, state, progress
        self.client = manners.client()
        self.robots = Robots(self.client, respect=manners.respect_robots)
        self.mapper = Mapper(source.fields)
        self._items_expr = compile_expression(source.items, option="--items") if source.items else None
        self._detail_expr = (compile_expression(source.detail_field, option="--detail-field")
                             if source.detail_field else None)
        self._template = _template(source.detail_template) if source.detail_template else None
        self.requests_before = 0

    # -- listing ------------------------------------------------------------------
    def _items_of(self, page: Fetched) -> list[Any]:
        body = page.body
        got = self._items_expr.search(body) if self._items_expr is not None else body
        if isinstance(got, list):
            return got
        if self._items_expr is None and isinstance(body, dict):
            lists = [k for k, v in body.items() if isinstance(v, list)]
            hint = f"; its list fields: {', '.join(lists)}" if lists else ""
            raise InputError(f"the listing page is a JSON object ({keys_hint(body)}){hint}; pass --items "
                             f"EXPRESSION naming the list of items", path=page.url, field="items")
        what = "nothing" if got is None else f"a {type(got).__name__}"
        raise InputError(f"--items {self.source.items!r} gave {what}, not a list of items ({keys_hint(body)})",
                         path=page.url, field="items")

    def _detail_url(self, record: Any, page_url: str) -> str | None:
        import httpx

        if self._detail_expr is not None:
            value = self._detail_expr.search(record)
        elif self._template is not None:
            if not isinstance(record, dict):
                return None
            names = self._template.variable_names
            if any(record.get(n) is None for n in names):
                return None
            value = self._template.expand({n: record[n] for n in names})
        else:
            return None
        if not isinstance(value, str) or not value.strip():
            return None
        return str(httpx.URL(page_url).join(value.strip()))

    def _key(self, record: Any, detail_url: str | None) -> str:
        key = self.mapper.key(record)
        if key is not None:
            return "id:" + key
        if detail_url is not None:
            return "url:" + detail_url
        blob = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return "row:" + hashlib.sha256(blob.encode()).hexdigest()

    def _fetch(self, url: str) -> Fetched:
        """Fetch, revalidating a response stored by an earlier pass; reuse one from this pass."""
        stored = self.state.response(url)
        if stored is not None and stored.gen == self.state.gen:
            return Fetched(url, json.loads(stored.body), stored.body, {}, "stored", stored.etag,
                           stored.last_modified, stored.content_type)
        return fetch_json(self.client, url, stored=stored)

    def walk_listing(self) -> None:
        src, pag, st = self.source, self.source.pagination, self.state
        next_url, pos, done = st.listing_cursor()
        if done:
            return
        if next_url is None:
            next_url, pos = pag.first_url(src.url), pag.first
        visited = st.page_urls()
        bar = progress_bar(desc="listing pages", enabled=self.progress, unit="page")
        bar.update(st.n_pages())
        no_detail = self._detail_expr is None and self._template is None
        try:
            while next_url is not None:
                if pag.max_pages is not None and st.n_pages() >= pag.max_pages:
                    note = f"stopped after --max-pages {pag.max_pages} listing pages (next: {next_url})"
                    log.warning(note)
                    st.end_listing(note)
                    break
                if not self.robots.allowed(next_url):
                    raise InputError("robots.txt disallows this listing page; pass --ignore-robots only with the "
                                     "site's permission", path=next_url)
                page = self._fetch(next_url)
                rows = self._items_of(page)
                items = []
                for rec in rows:
                    durl = self._detail_url(rec, next_url)
                    items.append((self._key(rec, durl), durl, rec))
                nxt = pag.next_url(base=src.url, current=next_url, body=page.body, headers=page.headers,
                                   n_items=len(rows), position=int(pos or 0))
                stop: str | None = None
                keys = [k for k, _, _ in items]
                prev = st.page_keys(st.n_pages() - 1) if st.n_pages() else None
                if nxt is not None and nxt in visited | {next_url}:
                    stop = f"the next page {nxt} was already read in this pass (a loop); stopped"
                    nxt = None
                elif pag.style in ("page", "offset") and keys and prev == keys:
                    stop = (f"page {next_url} repeats the previous page's items; stopped (does the server "
                            f"honour the {pag.page_param!r} parameter?)")
                    nxt = None
                if stop:
                    log.warning(stop)
                st.record_page(url=next_url, items=items, n_rows=len(rows), next_url=nxt,
                               next_pos=pag.position_after(int(pos or 0), len(rows)) if nxt else None,
                               response=(next_url, page.raw, page.etag, page.last_modified, page.content_type),
                               item_status="done" if no_detail else "pending", note=stop,
                               not_modified=page.outcome == "not_modified")
                visited.add(next_url)
                bar.update(1)
                next_url, pos = nxt, (pag.position_after(int(pos or 0), len(rows)) if nxt else None)
        finally:
            bar.close()

    # -- details --------------------------------------------------------------------
    def fetch_details(self) -> None:
        st = self.state
        if self._detail_expr is None and self._template is None:
            return
        pending = st.pending()
        if not pending:
            return
        bar = progress_bar(total=len(pending), desc="item details", enabled=self.progress, unit="item")
        queue = iter(pending)
        in_flight: dict[cf.Future[Fetched], tuple[str, str]] = {}

        def submit(pool: cf.ThreadPoolExecutor) -> bool:
            for key, url, _rec in queue:
                if url is None:
                    st.set_status(key, "failed", error="no detail URL in the listing item")
                    bar.update(1)
                    continue
                if not self.robots.allowed(url):
                    st.set_status(key, "disallowed", error="robots.txt disallows it")
                    bar.update(1)
                    continue
                stored = st.response(url)
                if stored is not None and stored.gen == st.gen:  # another key with the same detail URL
                    st.set_status(key, "done")
                    bar.update(1)
                    continue
                in_flight[pool.submit(fetch_json, self.client, url, stored=stored)] = (key, url)
                return True
            return False

        try:
            with cf.ThreadPoolExecutor(max_workers=self.manners.concurrency, thread_name_prefix="ingest") as pool:
                while len(in_flight) < self.manners.concurrency and submit(pool):
                    pass
                while in_flight:
                    finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                    for fut in finished:
                        key, url = in_flight.pop(fut)
                        try:
                            got = fut.result()
                        except (HttpError, NotJson) as exc:
                            st.set_status(key, "failed", error=str(exc))
                            log.warning("item %s: %s", key.partition(":")[2], exc)
                        else:
                            st.store_response(url, got.raw, etag=got.etag, last_modified=got.last_modified,
                                              content_type=got.content_type, item_key=key,
                                              counter="not_modified" if got.outcome == "not_modified"
                                              else "details_fetched")
                        bar.update(1)
                        while len(in_flight) < self.manners.concurrency and submit(pool):
                            pass
        finally:
            bar.close()

    # -- assembly ----------------------------------------------------------------------
    def assemble(self, clean: CleanOptions) -> tuple[Corpus, dict[str, Any]]:
        st, mapper = self.state, self.mapper
        report = LoadReport()
        builder = CorpusBuilder(Path(self.source.url), CleanOptions(
            strip_html=clean.strip_html, normalize_space=clean.normalize_space, dedupe=True,
            min_chars=clean.min_chars), report)
        empty: Counter[str] = Counter()
        n_mapped = 0
        first_record: Any = None
        missing_id: list[str] = []
        failures: list[dict[str, str]] = []
        disallowed: list[str] = []
        for i, (key, url, listing, status, error) in enumerate(st.items(), start=1):
            if status == "failed":
                failures.append({"item": key.partition(":")[2], "url": url or "", "error": error or ""})
                continue
            if status == "disallowed":
                disallowed.append(url or key)
                continue
            if status != "done":
                continue
            detail = None
            if url is not None and (self._detail_expr is not None or self._template is not None):
                stored = st.response(url)
                detail = json.loads(stored.body) if stored is not None else None
            m = mapper.apply(detail if detail is not None else listing, listing if detail is not None else None)
            n_mapped += 1
            if first_record is None:
                first_record = detail if detail is not None else listing
            empty.update(m.empty)
            if m.id is None:
                if len(missing_id) < LIST_LIMIT:
                    missing_id.append(url or json.dumps(listing, ensure_ascii=False)[:120])
                continue
            builder.add(m.id, m.title, m.text, m.metadata, i)
        for label in mapper.labels:
            if n_mapped and empty[label] == n_mapped:
                raise InputError(f"{mapper.option_of(label)} matched nothing on any of the {n_mapped} items "
                                 f"(the first item has {keys_hint(first_record)})", path=self.source.url,
                                 field=label.partition(":")[0] if ":" in label else label)
        corpus = builder.build()
        info = {"report": report, "empty": {k: v for k, v in empty.items() if v}, "n_mapped": n_mapped,
                "missing_id": missing_id, "n_missing_id": empty["id"], "failures": failures,
                "disallowed": disallowed}
        return corpus, info


def ingest_api(
    source: ApiSource,
    *,
    out: str | Path,
    manners: Manners = Manners(),
    clean: CleanOptions = CleanOptions(),
    state_path: str | Path | None = None,
    restart: bool = False,
    refresh: bool = False,
    retry_failed: bool = False,
    progress: bool = True,
    now: Callable[[], float] = time.time,
) -> IngestResult:
    """Read the API described by ``source`` into a corpus file at ``out`` (``.jsonl`` or
    ``.parquet``) with its provenance beside it; see the module docstring for the walk.

    ``state_path`` (default ``<out>.state.sqlite``) holds the resume state: a killed
    ingest re-run with the same arguments continues where it stopped; a finished one is
    re-assembled without a request unless ``refresh`` (revalidate everything with
    conditional requests) or ``retry_failed``. ``restart`` discards the state.
    """
    started = now()
    out = Path(out)
    fmt = corpus_format(out)
    Mapper(source.fields)  # bad expressions fail before any request
    state_file = Path(state_path) if state_path is not None else default_state_path(out)
    with IngestState(state_file, crawl=source.crawl_key(), restart=restart) as st:
        _open_pass(st, refresh=refresh, retry_failed=retry_failed)
        walker = _Walker(source, manners, st, progress=progress)
        resumed = st.n_pages() > 0 and not st.pass_finished()
        with walker.client:
            _walk(walker, st, source, state_file, resumed=resumed)
            corpus, info = walker.assemble(clean)
        counts_out = _counts(st, walker, info, corpus)
        first, last = st.fetch_span()
        notes = st.notes()
    warnings = _warnings(notes, counts_out, info, walker, source, clean)
    output = write_corpus(corpus, out)
    prov = write_provenance(out, {
        "kind": "api",
        "source": source.url,
        "started": iso(started),
        "finished": iso(now()),
        "fetched": {"first": iso(first), "last": iso(last)},
        "parameters": {"crawl": source.crawl_key(), "fields": source.fields.as_dict(), "manners": manners.as_dict(),
                       "clean": {"strip_html": clean.strip_html, "normalize_space": clean.normalize_space,
                                 "dedupe": True, "min_chars": clean.min_chars},
                       "format": fmt, "state": str(state_file)},
        "robots": {"respected": manners.respect_robots, "files": list(walker.robots.seen.values()),
                   "disallowed": info["disallowed"][:LIST_LIMIT]},
        "counts": counts_out,
        "failures": info["failures"][:LIST_LIMIT],
        "missing_id_examples": info["missing_id"],
        "empty_expressions": info["empty"],
        "output": output,
        "corpus_fingerprint": corpus.fingerprint(),
        "warnings": warnings,
    })
    return IngestResult(corpus=corpus, out=out, provenance=prov, state=state_file, counts=counts_out,
                        warnings=warnings)


def _open_pass(st: IngestState, *, refresh: bool, retry_failed: bool) -> None:
    """Start a new pass (``refresh``) or reopen the finished one or requeue failed items (``retry_failed``)."""
    if st.pass_finished() and refresh:
        st.start_next_pass()
    elif st.pass_finished() and retry_failed and st.retry_failed():
        st.reopen_pass()
    elif retry_failed:
        st.retry_failed()


def _walk(walker: _Walker, st: IngestState, source: ApiSource, state_file: Path, *, resumed: bool) -> None:
    """Walk the listing and fetch the details unless the pass is already finished (then only say so)."""
    if not st.pass_finished():
        if resumed:
            log.info("resuming: %d listing pages and %d items already in %s", st.n_pages(),
                     st.status_counts().get("done", 0), state_file)
        walker.robots.pace(source.url)
        walker.walk_listing()
        walker.fetch_details()
        st.finish_pass()
    else:
        log.info("this ingest already finished (%s); assembling from the stored responses without a "
                 "request (pass --refresh to revalidate them with the server)", state_file)


def _counts(st: IngestState, walker: _Walker, info: dict[str, Any], corpus: Corpus) -> dict[str, int]:
    """The ``counts`` of the provenance: pages, listing rows, items, duplicates, failures, documents, requests."""
    counts = st.counters()
    statuses = st.status_counts()
    n_items = sum(statuses.values())
    listing_rows = counts.get("listing_rows", 0)
    rep: LoadReport = info["report"]
    return {
        "pages": counts.get("pages", 0),
        "pages_not_modified": counts.get("pages_not_modified", 0),
        "listing_rows": listing_rows,
        "unique_items": n_items,
        "duplicates_in_listing": listing_rows - n_items,
        "duplicate_ids": rep.duplicate_ids,
        "duplicates_dropped": listing_rows - n_items + rep.duplicate_ids,
        "details_fetched": counts.get("details_fetched", 0),
        "not_modified": counts.get("not_modified", 0),
        "failures": statuses.get("failed", 0),
        "robots_disallowed": statuses.get("disallowed", 0),
        "missing_id": info["n_missing_id"],
        "short_dropped": rep.short_dropped,
        "documents": len(corpus),
        "requests_this_run": walker.client.n_requests,
        "retries_this_run": walker.client.n_retries,
    }


def _warnings(notes: list[str], counts_out: dict[str, int], info: dict[str, Any], walker: _Walker, source: ApiSource,
              clean: CleanOptions) -> list[str]:
    """The provenance's warnings: the state's notes, then duplicates, failures, robots, missing ids, short and empty."""
    warnings = [*notes]
    if counts_out["duplicates_dropped"]:
        warnings.append(f"dropped {counts_out['duplicates_dropped']} duplicates ({counts_out['duplicates_in_listing']} "
                        f"repeated listing rows, {counts_out['duplicate_ids']} repeated ids); kept the first of each")
    if counts_out["failures"]:
        warnings.append(f"{counts_out['failures']} items failed (listed in the provenance; "
                        "--retry-failed retries them)")
    if counts_out["robots_disallowed"]:
        warnings.append(f"{counts_out['robots_disallowed']} items not fetched: robots.txt disallows them")
    if counts_out["missing_id"]:
        warnings.append(f"{counts_out['missing_id']} items have no id ({source.fields.id!r} matched nothing); skipped")
    if counts_out["short_dropped"]:
        warnings.append(f"dropped {counts_out['short_dropped']} documents shorter than {clean.min_chars} characters")
    for label, n in sorted(info["empty"].items()):
        if label != "id":
            warnings.append(f"{walker.mapper.option_of(label)} matched nothing on {n} of {info['n_mapped']} items")
    return warnings
