"""``bakeoff ingest api`` against a real HTTP server on 127.0.0.1 shaped like seed 000's Oyez API
(tests/support/oyez_api.py): overlapping pages, nested details with HTML, 429 + Retry-After,
intermittent 500s, a timeout, a truncated body, robots.txt disallowing one path."""

from __future__ import annotations

import itertools
import json
import os
import urllib.parse
from pathlib import Path

import pytest

from bakeoff.cli import main
from tests.support.oyez_api import OyezServer, make_cases
from tests.support.oyez_cases import CASES

pytest.importorskip("jmespath")

OYEZ_ARGS = ["--per-page", "10", "--start-page", "0", "--detail-field", "href", "--id", "ID", "--title", "name",
             "--text", "facts_of_the_case", "--text", "conclusion", "--field", "winner=decisions[0].winning_party",
             "--field", "decision=decisions[0].decision_type.label", "--strip-html", "--normalize-space",
             "--no-progress", "--timeout", "0.5"]


def ingest(url: str, out: Path, *args: str) -> int:
    return main(["ingest", "api", url, "--out", str(out), *args])


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def listing_rows(n: int, per: int) -> int:
    """Rows the server's overlapping listing serves until the first short page (independent count)."""
    stride, rows, page = per - per // 2, 0, 0
    while True:
        got = len(range(page * stride, min(n, page * stride + per)))
        rows += got
        if got < per:
            return rows
        page += 1


def assert_spacing(starts: list[float], interval: float, *, latency: float = 0.1) -> list[float]:
    """Request starts seen by the server are ``interval`` apart (the client spaces the starts of its
    requests). The server sees a start late by that request's own latency: the first request also
    builds the HTTP client (hundreds of ms on a loaded machine), so it is left out; a new connection
    after a timeout, or this process's GIL, delay others by tens of ms, so a gap may look shorter by
    up to ``latency``. Checked: every gap >= ``interval - latency``, the median gap >= 95 % of the
    interval, and the span >= ``(n - 1) * interval - latency``."""
    starts = sorted(starts)[1:]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= interval - latency, gaps
    assert sorted(gaps)[len(gaps) // 2] >= 0.95 * interval, gaps
    assert starts[-1] - starts[0] >= (len(starts) - 1) * interval - latency, gaps
    return gaps


@pytest.mark.slow  # waits by design (a rate limit)
def test_oyez_every_unique_item_once_html_stripped_robots_and_rate(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES) as srv:
        page1 = "/cases?page=1&per_page=10"
        srv.faults = {page1: ["429"], srv.detail_path(5): ["500"], srv.detail_path(12): ["500", "503"],
                      srv.detail_path(8): ["timeout"], srv.detail_path(9): ["truncated"]}
        out = tmp_path / "oyez.jsonl"
        code = ingest(srv.base_url + "/cases", out, *OYEZ_ARGS, "--rate", "20", "--contact", "ops@example.org")
        captured = capsys.readouterr()
        assert code == 0, captured.err
        log = srv.requests()

    docs = read_jsonl(out)
    # every unique item exactly once, in listing order, the sealed one (robots.txt) absent
    assert [d["id"] for d in docs] == srv.expected_ids()
    assert len(docs) == len(CASES) - 1
    # nested fields and HTML stripped
    by_id = {d["id"]: d for d in docs}
    for i, case in enumerate(CASES):
        if i == srv.sealed:
            continue
        d = by_id[str(srv.case_id(i))]
        assert d["title"] == case["name"]
        assert d["text"] == case["facts"] + "\n\n" + case["conclusion"]
        assert "<" not in d["text"] and "&amp;" not in d["text"] and "&nbsp;" not in d["text"]
        assert d["winner"] == (None if i % 7 == 6 else case["winner"])
        assert d["decision"] == (None if i % 7 == 6 else case["decision"])
    # duplicates: the overlapping pages served this many rows; the count is reported
    rows = listing_rows(len(CASES), 10)
    prov = json.loads((tmp_path / "oyez.jsonl.provenance.json").read_text())
    assert prov["counts"]["listing_rows"] == rows
    assert prov["counts"]["duplicates_dropped"] == rows - len(CASES) == 30
    assert "30 repeated rows dropped" in captured.out and "dropped 30 duplicates" in captured.err
    assert prov["counts"]["robots_disallowed"] == 1 and prov["robots"]["disallowed"] == [
        srv.base_url + srv.detail_path(srv.sealed)]
    # no request ever touched the disallowed path; robots.txt was read first
    assert not [e for e in log if e.route.startswith("/cases/sealed/")]
    assert log[0].route == "/robots.txt"
    # each detail fetched successfully exactly once (failures retried, not refetched after success)
    details = [e for e in log if e.route.startswith("/cases/")]
    ok = [e.route for e in details if e.served]
    assert sorted(ok) == sorted(set(ok)) and len(ok) == len(CASES) - 1
    # the faults happened and were handled: 429 waited Retry-After (1 s), 500/503 retried, timeout, truncated
    p1 = [e for e in log if e.path == page1]
    assert [e.status for e in p1] == [429, 200] and p1[1].t - p1[0].t >= 1.0
    assert [e.status for e in details if e.route == srv.detail_path(12)] == [500, 503, 200]
    assert len([e for e in details if e.route == srv.detail_path(8)]) == 2  # timed out once, then answered
    assert len([e for e in details if e.route == srv.detail_path(9)]) == 2  # truncated once, then whole
    # an honest User-Agent on every request
    assert {e.user_agent for e in log} == {(f"bakeoff/{prov['bakeoff_version']} (+https://pypi.org/project/bakeoff/; "
                                           "ops@example.org)")}
    # rate: request starts are at least 1/20 s apart (the shared client spaces starts)
    assert_spacing([e.t for e in log], 1 / 20)


@pytest.mark.slow  # waits by design (a rate limit)
def test_default_rate_is_one_request_per_second(tmp_path: Path, capsys) -> None:
    """Measured once with the default --rate: the gaps between request starts."""
    with OyezServer(CASES[:3], sealed=None) as srv:
        code = ingest(srv.base_url + "/cases", tmp_path / "c.jsonl", "--per-page", "10", "--start-page", "0",
                      "--detail-field", "href", "--id", "ID", "--text", "conclusion", "--no-progress")
        assert code == 0, capsys.readouterr().err
        starts = [e.t for e in srv.requests()]
    assert len(starts) == 5  # robots.txt, one short page, three details
    gaps = assert_spacing(starts, 1.0)
    print(f"default spacing: {len(starts)} requests, gaps {[round(g, 3) for g in gaps]} s")
    assert max(gaps) < 1.5


@pytest.mark.parametrize("style,path,args", [
    ("offset", "/v2/cases", ["--pagination", "offset", "--per-page", "10", "--items", "items"]),
    ("cursor", "/v3/cases", ["--pagination", "cursor", "--items", "data", "--next", "meta.next_cursor"]),
    ("link", "/v4/cases", ["--pagination", "link"]),
    ("next-link", "/v5/cases", ["--pagination", "cursor", "--items", "results", "--next", "next"]),
])
def test_pagination_styles_get_every_item_once(tmp_path: Path, capsys, style: str, path: str, args: list[str]) -> None:
    cases = make_cases(23)
    with OyezServer(cases, sealed=None) as srv:
        out = tmp_path / f"{style}.jsonl"
        code = ingest(srv.base_url + path, out, *args, "--id", "ID", "--title", "name", "--text", "name",
                      "--rate", "0", "--no-progress")
        assert code == 0, capsys.readouterr().err
        pages = [e.path for e in srv.requests(prefix="/v")]
    assert [d["id"] for d in read_jsonl(out)] == [str(srv.case_id(i)) for i in range(23)]
    prov = json.loads((tmp_path / f"{style}.jsonl.provenance.json").read_text())
    assert prov["counts"]["duplicates_dropped"] == 0
    expected_pages = {"offset": 3, "cursor": 5, "link": 6, "next-link": 6}[style]
    assert len(pages) == len(set(pages)) == expected_pages == prov["counts"]["pages"]
    if style == "cursor":
        assert pages[1] == "/v3/cases?cursor=c5"
    if style == "link":
        assert pages[:2] == ["/v4/cases", "/v4/cases?page=2"]


@pytest.mark.slow  # waits by design
def test_concurrency_limit_is_observed(tmp_path: Path, capsys) -> None:
    with OyezServer(make_cases(12), sealed=None, detail_delay=0.25) as srv:
        code = ingest(srv.base_url + "/cases", tmp_path / "c.jsonl", "--per-page", "20", "--start-page", "0",
                      "--detail-field", "href", "--id", "ID", "--text", "conclusion", "--rate", "0",
                      "--concurrency", "3", "--no-progress")
        assert code == 0, capsys.readouterr().err
        assert srv.max_in_flight == 3
    assert [d["id"] for d in read_jsonl(tmp_path / "c.jsonl")] == srv.expected_ids()


@pytest.mark.slow  # waits by design
def test_rerun_makes_no_request_refresh_revalidates_with_conditional_requests(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES[:12]) as srv:
        url, out = srv.base_url + "/cases", tmp_path / "c.jsonl"
        assert ingest(url, out, *OYEZ_ARGS, "--rate", "0") == 0
        first = out.read_bytes()
        n0 = len(srv.log)
        # a plain re-run: assembled from the resume state, not one request
        assert ingest(url, out, *OYEZ_ARGS, "--rate", "0") == 0
        assert len(srv.log) == n0 and out.read_bytes() == first
        # another field mapping: re-assembled from stored responses, still no request
        other = tmp_path / "titles.jsonl"
        assert ingest(url, other, *[a if a != "conclusion" else "question" for a in OYEZ_ARGS], "--rate", "0",
                      "--state", str(tmp_path / "c.jsonl.state.sqlite")) == 0
        assert len(srv.log) == n0
        assert read_jsonl(other)[0]["text"].endswith(CASES[0]["question"])
        # --refresh: every stored response revalidated with If-None-Match, answered 304, same corpus
        assert ingest(url, out, *OYEZ_ARGS, "--rate", "0", "--refresh") == 0
        again = srv.log[n0:]
        captured = capsys.readouterr()
    assert out.read_bytes() == first
    fetched = [e for e in again if e.route != "/robots.txt"]
    assert fetched and all(e.if_none_match for e in fetched) and {e.status for e in fetched} == {304}
    prov = json.loads((tmp_path / "c.jsonl.provenance.json").read_text())
    pages = [e for e in fetched if e.route == "/cases"]
    assert len(pages) == 2 and prov["counts"]["pages_not_modified"] == 2
    assert prov["counts"]["not_modified"] == len(fetched) - 2 == 11 and prov["counts"]["details_fetched"] == 0
    assert "details: 0 fetched, 11 not modified" in captured.out


@pytest.mark.slow  # waits by design
def test_failed_items_are_counted_and_retried_on_request(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES[:6], sealed=None) as srv:
        srv.faults = {srv.detail_path(2): ["500"] * 4}
        url, out = srv.base_url + "/cases", tmp_path / "c.jsonl"
        args = [*OYEZ_ARGS, "--rate", "0", "--retries", "3", "--backoff-max", "0.05"]
        assert ingest(url, out, *args) == 0
        err = capsys.readouterr().err
        assert f"{len(CASES[:6]) - 1} documents" not in err
        prov = json.loads((tmp_path / "c.jsonl.provenance.json").read_text())
        assert prov["counts"]["failures"] == 1 and prov["failures"][0]["url"].endswith(srv.detail_path(2))
        assert "HTTP 500" in prov["failures"][0]["error"] and "1 items failed" in err
        assert [d["id"] for d in read_jsonl(out)] == [str(srv.case_id(i)) for i in (0, 1, 3, 4, 5)]
        n0 = len(srv.log)
        assert ingest(url, out, *args, "--retry-failed") == 0
        retried = srv.log[n0:]
    assert [e.route for e in retried if e.route.startswith("/cases/")] == [srv.detail_path(2)]
    assert [d["id"] for d in read_jsonl(out)] == [str(srv.case_id(i)) for i in range(6)]


@pytest.mark.slow  # waits by design
def test_transport_failures_of_single_items_are_counted_not_fatal(tmp_path: Path, capsys) -> None:
    import time

    with OyezServer(CASES[:6], sealed=None) as srv:
        srv.faults = {srv.detail_path(1): ["loop"] * 30, srv.detail_path(2): ["badgzip"],
                      srv.detail_path(4): ["drip"]}
        url, out = srv.base_url + "/cases", tmp_path / "c.jsonl"
        start = time.monotonic()
        assert ingest(url, out, *OYEZ_ARGS, "--rate", "0", "--retries", "0", "--timeout", "1") == 0
        took = time.monotonic() - start
        err = capsys.readouterr().err
        hits = [e.path for e in srv.log]
    prov = json.loads((tmp_path / "c.jsonl.provenance.json").read_text())
    assert prov["counts"]["failures"] == 3 and "3 items failed" in err
    failed = {f["url"].rsplit("/", 1)[-1]: f["error"] for f in prov["failures"]}
    assert "redirect loop" in failed[srv.detail_path(1).rsplit("/", 1)[-1]]
    assert "Content-Encoding" in failed[srv.detail_path(2).rsplit("/", 1)[-1]]
    assert "timed out after 1 s" in failed[srv.detail_path(4).rsplit("/", 1)[-1]]
    assert [d["id"] for d in read_jsonl(out)] == [str(srv.case_id(i)) for i in (0, 3, 5)]
    # server-side counts: the loop's first request and 20 redirects, one request for each other fault
    assert hits.count(srv.detail_path(1)) == 21
    assert hits.count(srv.detail_path(2)) == 1 and hits.count(srv.detail_path(4)) == 1
    assert took < 10  # the dripping detail ended at its 1 s deadline, not after its whole body


@pytest.mark.slow  # waits by design
def test_robots_crawl_delay_widens_the_spacing(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES[:2], sealed=None, robots="User-agent: bakeoff\nCrawl-delay: 1\n") as srv:
        assert ingest(srv.base_url + "/cases", tmp_path / "c.jsonl", "--per-page", "10", "--start-page", "0",
                      "--detail-field", "href", "--id", "ID", "--text", "conclusion", "--rate", "100",
                      "--no-progress") == 0
        starts = [e.t for e in srv.requests()]
    assert_spacing(starts, 1.0)  # robots.txt (left out) came before the delay was known
    prov = json.loads((tmp_path / "c.jsonl.provenance.json").read_text())
    assert prov["robots"]["files"][0]["crawl_delay"] == 1.0


def test_ignore_robots_fetches_the_disallowed_item(tmp_path: Path) -> None:
    with OyezServer(CASES[:6]) as srv:
        assert ingest(srv.base_url + "/cases", tmp_path / "c.jsonl", *OYEZ_ARGS, "--rate", "0",
                      "--ignore-robots") == 0
        routes = [e.route for e in srv.requests()]
    assert "/robots.txt" not in routes and srv.detail_path(srv.sealed) in routes
    assert len(read_jsonl(tmp_path / "c.jsonl")) == 6


@pytest.mark.slow  # waits by design
def test_missing_ids_are_counted_and_all_missing_is_one_line_error(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES[:8], sealed=None, no_id=(2, 5)) as srv:
        out = tmp_path / "c.jsonl"
        assert ingest(srv.base_url + "/cases", out, *OYEZ_ARGS, "--rate", "0") == 0
        err = capsys.readouterr().err
        assert [d["id"] for d in read_jsonl(out)] == srv.expected_ids()
        prov = json.loads((tmp_path / "c.jsonl.provenance.json").read_text())
        assert prov["counts"]["missing_id"] == 2 and "2 items have no id ('ID' matched nothing); skipped" in err
        assert prov["missing_id_examples"] == [srv.base_url + srv.detail_path(i) for i in (2, 5)]
        bad = tmp_path / "bad.jsonl"
        code = ingest(srv.base_url + "/cases", bad, *[a if a != "ID" else "Id" for a in OYEZ_ARGS], "--rate", "0",
                      "--state", str(tmp_path / "bad.state"))
        err = capsys.readouterr().err
    assert code == 2 and not bad.exists() and not (tmp_path / "bad.jsonl.provenance.json").exists()
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "--id 'Id' matched nothing on any of the 8 items" in line
    assert "keys: ID, name, href" in line


def test_expression_matching_nothing_is_an_error_naming_it(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES[:4], sealed=None) as srv:
        out = tmp_path / "c.jsonl"
        args = [a if a != "conclusion" else "decisions[0].conclusion" for a in OYEZ_ARGS]
        code = ingest(srv.base_url + "/cases", out, *args, "--rate", "0")
        err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert err[-1].startswith("error: ") and "--text 'decisions[0].conclusion' matched nothing on any of the 4" in err[-1]


def test_html_instead_of_json_is_one_clear_line_and_nothing_written(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES[:2]) as srv:
        out = tmp_path / "c.jsonl"
        code = ingest(srv.base_url + "/html/cases", out, "--id", "ID", "--rate", "0", "--retries", "1",
                      "--backoff-max", "0.01", "--no-progress")
        err = capsys.readouterr().err.strip().splitlines()
        html_requests = [e for e in srv.requests(prefix="/html/")]
    assert code == 2 and not out.exists() and not (tmp_path / "c.jsonl.provenance.json").exists()
    assert len(err) == 1 and err[0].startswith(f"error: {srv.base_url}/html/cases")
    assert "expected JSON, the server answered text/html" in err[0] and "Sign in" in err[0]
    assert len(html_requests) == 3  # the first answer, then the client's 1 + 1 retry


def test_listing_object_without_items_says_which_lists_exist(tmp_path: Path, capsys) -> None:
    with OyezServer(make_cases(3), sealed=None) as srv:
        code = ingest(srv.base_url + "/v3/cases", tmp_path / "c.jsonl", "--pagination", "cursor", "--next",
                      "meta.next_cursor", "--id", "ID", "--rate", "0", "--no-progress")
        err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "the listing page is a JSON object (keys: data, meta); its list fields: data; pass --items" in err[-1]


def test_bad_options_are_one_line_config_errors(tmp_path: Path, capsys) -> None:
    url = "http://127.0.0.1:9/cases"  # never contacted: options are checked first
    assert ingest(url, tmp_path / "c.jsonl", "--text", "a[") == 2
    assert "--text 'a[': not a JMESPath expression" in capsys.readouterr().err
    assert ingest(url, tmp_path / "c.csv") == 2
    assert "use a .jsonl or .parquet file name" in capsys.readouterr().err
    assert ingest(url, tmp_path / "c.jsonl", "--field", "text=name") == 2
    assert "'text' is reserved" in capsys.readouterr().err
    assert ingest(url, tmp_path / "c.jsonl", "--pagination", "cursor") == 2
    assert "needs --next" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_state_of_another_crawl_is_refused(tmp_path: Path, capsys) -> None:
    with OyezServer(CASES[:3], sealed=None) as srv:
        out = tmp_path / "c.jsonl"
        assert ingest(srv.base_url + "/cases", out, *OYEZ_ARGS, "--rate", "0") == 0
        capsys.readouterr()
        assert ingest(srv.base_url + "/cases", out, *OYEZ_ARGS, "--rate", "0", "--per-page", "5") == 2
        err = capsys.readouterr().err
        assert "belongs to an ingest with other parameters (differs in: pagination)" in err
        assert ingest(srv.base_url + "/cases", out, *OYEZ_ARGS, "--rate", "0", "--per-page", "5", "--restart") == 0


def test_api_key_is_sent_but_never_stored(tmp_path: Path, monkeypatch) -> None:
    key = "sk-ingest-secret-0123456789"
    monkeypatch.setenv("OYEZ_TOKEN", key)
    with OyezServer(CASES[:3], sealed=None) as srv:
        assert ingest(srv.base_url + "/cases", tmp_path / "c.jsonl", *OYEZ_ARGS, "--rate", "0",
                      "--api-key-env", "OYEZ_TOKEN") == 0
    for f in tmp_path.iterdir():
        assert key.encode() not in f.read_bytes() and b"sk-ingest" not in f.read_bytes(), f
    prov = json.loads((tmp_path / "c.jsonl.provenance.json").read_text())
    assert prov["parameters"]["manners"]["api_key_env"] == "OYEZ_TOKEN"


def test_parquet_output_reads_back_with_the_default_loader(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from bakeoff.data.loaders import read_records

    with OyezServer(CASES[:8]) as srv:
        assert ingest(srv.base_url + "/cases", tmp_path / "c.parquet", *OYEZ_ARGS, "--rate", "0") == 0
        assert ingest(srv.base_url + "/cases", tmp_path / "c.jsonl", *OYEZ_ARGS, "--rate", "0",
                      "--state", str(tmp_path / "c.parquet.state.sqlite")) == 0
    a, b = read_records(tmp_path / "c.parquet"), read_records(tmp_path / "c.jsonl")
    assert a.fingerprint() == b.fingerprint() and len(a) == 7
    prov = json.loads((tmp_path / "c.parquet.provenance.json").read_text())
    assert prov["corpus_fingerprint"] == json.loads((tmp_path / "c.jsonl.provenance.json").read_text())[
        "corpus_fingerprint"]
    assert a["50000"].metadata == {"winner": "Ernesto A. Miranda", "decision": "majority opinion"}


def test_template_detail_urls(tmp_path: Path) -> None:
    with OyezServer(CASES[:5], sealed=None) as srv:
        tpl = srv.base_url + "/cases/{term}/{docket_number}"
        args = [a for a in OYEZ_ARGS]
        i = args.index("--detail-field")
        args[i:i + 2] = ["--detail-template", tpl]
        assert ingest(srv.base_url + "/cases", tmp_path / "c.jsonl", *args, "--rate", "0") == 0
        routes = {urllib.parse.unquote(e.route) for e in srv.requests(prefix="/cases/")}
    assert routes == {urllib.parse.unquote(srv.detail_path(i)) for i in range(5)}
    assert len(read_jsonl(tmp_path / "c.jsonl")) == 5
    assert os.path.exists(tmp_path / "c.jsonl.state.sqlite")
