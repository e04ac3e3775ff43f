"""``bakeoff ingest api|files``: bring a corpus from a JSON web API or a folder of documents."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from ..errors import ConfigError
from ._common import warn_all

log = logging.getLogger("bakeoff")

app = typer.Typer(help="Bring a corpus from where it lives: a paginated JSON web API or a folder of files.",
                  no_args_is_help=True)


#: ``--help`` epilog (``\b``: click keeps its line breaks).
API_EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff ingest api https://api.example.org/cases --out cases.jsonl \\\n"
    "      --id ID --text facts --contact you@example.org")

#: ``--help`` epilog (``\b``: click keeps its line breaks).
FILES_EXAMPLES = ("\b\nExamples:\n"
    "  bakeoff ingest files docs/ --out docs.jsonl")


@app.command("api", epilog=API_EXAMPLES)
def api(
    url: Annotated[str, typer.Argument(help="The listing URL, e.g. https://api.example.org/cases")],
    out: Annotated[Path, typer.Option(help="Corpus file to write: .jsonl or .parquet (records id, title, text, fields).")],
    items: Annotated[str | None, typer.Option(help="JMESPath of the item list in a listing page (default: the page itself).")] = None,
    pagination: Annotated[str, typer.Option(help="page | offset | cursor | link | none.")] = "page",
    page_param: Annotated[str | None, typer.Option(help="Query parameter of the page / offset / cursor (default page, offset, cursor).")] = None,
    size_param: Annotated[str | None, typer.Option(help="Query parameter of the page size (default per_page; offset style: limit).")] = None,
    per_page: Annotated[int | None, typer.Option(help="Items per page to ask for (page/offset styles).")] = None,
    start_page: Annotated[int | None, typer.Option(help="First page number (default 1) or offset (default 0).")] = None,
    next_: Annotated[str | None, typer.Option("--next", help="cursor style: JMESPath of the next cursor or next-page link in the body.")] = None,
    stop_on: Annotated[str, typer.Option(help="page/offset styles: stop on a 'short' or only an 'empty' page.")] = "short",
    max_pages: Annotated[int | None, typer.Option(help="Read at most this many listing pages.")] = None,
    detail_field: Annotated[str | None, typer.Option(help="JMESPath of each item's detail URL (e.g. href); fetched per item.")] = None,
    detail_template: Annotated[str | None, typer.Option(help="RFC 6570 template of the detail URL over the item's fields.")] = None,
    id_: Annotated[str, typer.Option("--id", help="JMESPath of the document id.")] = "id",
    title: Annotated[str | None, typer.Option(help="JMESPath of the title.")] = None,
    text: Annotated[list[str], typer.Option("--text", help="JMESPath of a text part; repeat to join several (blank line between).")] = ["text"],  # noqa: B006 - typer passes a new list
    field: Annotated[list[str], typer.Option("--field", help="NAME=JMESPATH copied into the metadata; repeatable.")] = [],  # noqa: B006 - typer passes a new list
    strip_html: Annotated[bool, typer.Option(help="Reduce HTML markup in title and text to text.")] = False,
    normalize_space: Annotated[bool, typer.Option(help="Normalise Unicode spaces and newlines.")] = False,
    min_chars: Annotated[int, typer.Option(help="Drop documents whose cleaned text is shorter.")] = 0,
    rate: Annotated[float, typer.Option(help="Requests per second at most (0: no limit).")] = 1.0,
    concurrency: Annotated[int, typer.Option(help="Detail requests in flight at most.")] = 1,
    contact: Annotated[str | None, typer.Option(help="E-mail or URL for the site operator, added to the User-Agent.")] = None,
    ignore_robots: Annotated[bool, typer.Option("--ignore-robots", help="Do not read or obey robots.txt (only with the site's permission).")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds a whole request may take before a retry.")] = 30.0,
    retries: Annotated[int, typer.Option(help="Retries of a failed request (timeouts, 429, 5xx, bodies that are not JSON).")] = 3,
    backoff_max: Annotated[float, typer.Option(help="Longest wait between retries, seconds (also caps Retry-After).")] = 30.0,
    header: Annotated[list[str], typer.Option("--header", help="Extra request header 'Name: value'; repeatable.")] = [],  # noqa: B006 - typer passes a new list
    api_key_env: Annotated[str | None, typer.Option(help="NAME of the environment variable holding a bearer token.")] = None,
    state: Annotated[Path | None, typer.Option(help="Resume state file (default OUT.state.sqlite).")] = None,
    restart: Annotated[bool, typer.Option("--restart", help="Discard the resume state and start over.")] = False,
    refresh: Annotated[bool, typer.Option("--refresh", help="Walk again, revalidating every stored response.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Fetch again the items that failed.")] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Read a paginated JSON API (and each item's detail) into a corpus file, politely and resumably.

    Provenance goes to OUT.provenance.json, the resume state to OUT.state.sqlite."""
    from ..data.clean import CleanOptions
    from ..ingest.mapping import FieldSpec, parse_field_assignment
    from ..ingest.pagination import Pagination
    from ..ingest.web_api import ApiSource, Manners, ingest_api

    headers = []
    for h in header:
        name, colon, value = h.partition(":")
        if not colon or not name.strip():
            raise ConfigError(f"--header {h!r}: expected 'Name: value'")
        headers.append((name.strip(), value.strip()))
    source = ApiSource(
        url=url, items=items,
        pagination=Pagination(style=pagination, param=page_param, size_param=size_param, size=per_page,  # type: ignore[arg-type]
                              start=start_page, next=next_, stop_on=stop_on, max_pages=max_pages),  # type: ignore[arg-type]
        detail_field=detail_field, detail_template=detail_template,
        fields=FieldSpec(id=id_, title=title, text=tuple(text), fields=tuple(parse_field_assignment(f) for f in field)),
    )
    manners = Manners(rate=rate, concurrency=concurrency, respect_robots=not ignore_robots, contact=contact,
                      timeout=timeout, retries=retries, backoff_max=backoff_max, headers=tuple(headers),
                      api_key_env=api_key_env)
    res = ingest_api(source, out=out, manners=manners,
                     clean=CleanOptions(strip_html=strip_html, normalize_space=normalize_space, min_chars=min_chars),
                     state_path=state, restart=restart, refresh=refresh, retry_failed=retry_failed, progress=progress)
    warn_all(res.warnings)
    c = res.counts
    typer.echo(f"listing: {c['pages']} pages, {c['listing_rows']} rows, {c['unique_items']} unique items "
               f"({c['duplicates_in_listing']} repeated rows dropped before fetching)")
    if detail_field or detail_template:
        typer.echo(f"details: {c['details_fetched']} fetched, {c['not_modified']} not modified, {c['failures']} "
                   f"failed, {c['robots_disallowed']} disallowed by robots.txt")
    typer.echo(f"this run: {c['requests_this_run']} requests, {c['retries_this_run']} retries")
    typer.echo(f"wrote {c['documents']} documents to {res.out} (duplicates dropped: {c['duplicates_dropped']}; "
               f"provenance: {res.provenance})")


@app.command("files", epilog=FILES_EXAMPLES)
def files(
    folder: Annotated[Path, typer.Argument(help="Folder of .pdf, .docx, .html, .md and .txt files (recursive).")],
    out: Annotated[Path, typer.Option(help="Corpus file to write: .jsonl or .parquet.")],
    normalize_space: Annotated[bool, typer.Option(help="Normalise Unicode spaces and newlines.")] = True,
    min_chars: Annotated[int, typer.Option(help="Files with less text count as empty.")] = 0,
    strict: Annotated[bool, typer.Option("--strict", help="A file that fails or yields no text is an error (exit 2).")] = False,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Turn a folder of PDF, DOCX, HTML, Markdown and text files into a corpus file.

    One document per file (id = relative path, title from metadata or the first heading); files that fail
    or yield no text are counted and listed; provenance goes to OUT.provenance.json."""
    from ..data.clean import CleanOptions
    from ..ingest.documents import ingest_files

    res = ingest_files(folder, out=out, clean=CleanOptions(normalize_space=normalize_space, min_chars=min_chars),
                       strict=strict, progress=progress)
    warn_all(res.warnings)
    c = res.counts
    typer.echo(f"{c['files']} files: {c['documents']} documents, {c['failed']} failed, {c['empty']} without text, "
               f"{c['skipped']} of other types")
    typer.echo(f"wrote {c['documents']} documents to {res.out} (provenance: {res.provenance})")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="ingest")
