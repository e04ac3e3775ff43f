"""Citation-mined queries: find citations, cut windows, mask giveaways, drop copies, audit.

One query per source (ruling, paper, ticket) that cites the target law:

1. **Find** mentions with a :class:`~bakeoff.truth.citations.patterns.PatternSet`
   (``target`` citations become positives; ``other``-law citations stay
   visible; ``bare`` article mentions are masked when they repeat a cited number).
2. **Resolve** each cited number to a unit (``target_id``) and to the version
   in force on the citation's date: the ``vdate`` of the mention ("en su texto
   vigente al 10 de enero de 2017") or else the source's date. Unknown units
   and units with no version in force are counted and reported, not positives.
3. **Window**: ``[start - window, end + window)`` around each resolved
   citation (default ±1,200 characters), each edge snapped *outwards* to a
   paragraph boundary (paragraphs are separated by blank lines), windows
   that overlap or touch merged.
4. **Drop** paragraphs that copy the targets: a paragraph is dropped when at
   least ``verbatim_threshold`` (30 %) of its word ``ngram``-grams (8-grams of
   lower-cased ``\\w+`` tokens) occur in some target version. Paragraphs with
   fewer than ``ngram`` words have ratio 0.
5. **Mask** giveaways only: the ``nums`` and ``law`` groups of target
   citations, every other occurrence of the law's names/aliases and decree
   numbers, and bare article mentions repeating a cited number become the
   placeholder (``[CITA OMITIDA]``). Other laws' citations are untouched.
6. **Cap** the query at ``cap`` characters (4,000): paragraphs farthest (in
   paragraphs) from a citation paragraph go first, the later one on ties;
   citation paragraphs stay; if those alone exceed the cap the text is cut at
   the last space before it.

The query text is the kept paragraphs joined by a blank line. The unmasked
*control* query is the same paragraphs without masking (measures how much
masking matters). Everything is recorded per source in an audit dict.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...data.versions import Versions
from ...errors import ConfigError
from .patterns import PatternSet, parse_text_date
from .sources import Source

__all__ = [
    "Mention",
    "MineOptions",
    "MinedQuery",
    "NgramIndex",
    "find_mentions",
    "mine_source",
    "paragraphs",
    "parse_numbers",
    "snap_windows",
]

_WORD = re.compile(r"\w+")
_PARA_SEP = re.compile(r"\n[ \t]*\n\s*")


@dataclass(frozen=True)
class Mention:
    """One pattern match. Offsets are into the source text; ``numbers`` are normalised."""

    kind: str
    pattern: str
    start: int
    end: int
    nums_span: tuple[int, int]
    law_span: tuple[int, int] | None
    numbers: tuple[str, ...]
    vdate: _dt.date | None = None
    vdate_text: str = ""
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class MineOptions:
    """Knobs of query construction (defaults as in the module docstring)."""

    window: int = 1200
    cap: int = 4000
    verbatim_threshold: float = 0.30
    ngram: int = 8
    max_range: int = 100

    def __post_init__(self) -> None:
        if self.window < 0 or self.cap < 1 or self.ngram < 1 or self.max_range < 1:
            raise ConfigError("citation mining: window >= 0, cap >= 1, ngram >= 1 and max_range >= 1 are required")
        if not 0.0 < self.verbatim_threshold <= 1.0:
            raise ConfigError(f"verbatim threshold must be in (0, 1], got {self.verbatim_threshold}")


def _norm_num(token: str) -> str:
    """``12 bis`` -> ``12bis``, ``1°`` -> ``1``, ``12(1)(a)`` -> ``12``, ``12A`` -> ``12a``."""
    t = re.sub(r"\(.*$", "", token)
    return re.sub(r"[\s°º]", "", t).lower()


def parse_numbers(text: str, pset: PatternSet, *, max_range: int = 100) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Numbers of a ``nums`` group: lists (``12, 13 y 15``) and ranges (``12 a 15``,
    ``12-15``, ``12 to 15``) expanded. Returns (numbers in order without repeats, problems)."""
    toks = list(pset.num_regex.finditer(text))
    out: list[str] = []
    problems: list[str] = []
    for i, m in enumerate(toks):
        num = _norm_num(m.group(0))
        if i > 0:
            sep = text[toks[i - 1].end():m.start()].strip().lower()
            prev = _norm_num(toks[i - 1].group(0))
            if sep in pset.range_words:
                if prev.isdigit() and num.isdigit() and 0 < int(num) - int(prev) <= max_range:
                    out.extend(str(n) for n in range(int(prev) + 1, int(num)))
                else:
                    problems.append(f"range {text[toks[i - 1].start():m.end()]!r} not expanded")
        out.append(num)
    return tuple(dict.fromkeys(out)), tuple(problems)


def find_mentions(text: str, pset: PatternSet, *, max_range: int = 100) -> list[Mention]:
    """All mentions in ``text``, patterns in order, a match overlapping an earlier one ignored.
    Sorted by start offset."""
    claimed: list[tuple[int, int]] = []
    out: list[Mention] = []
    for p in pset.patterns:
        for m in p.regex.finditer(text):
            s, e = m.span()
            if s == e or any(s < ce and cs < e for cs, ce in claimed):
                continue
            claimed.append((s, e))
            nums, probs = parse_numbers(m.group("nums"), pset, max_range=max_range)
            law_span = m.span("law") if "law" in p.regex.groupindex and m.group("law") else None
            vdate, vtext = None, ""
            problems = list(probs)
            if "vdate" in p.regex.groupindex and m.group("vdate"):
                vtext = m.group("vdate")
                vdate = parse_text_date(vtext)
                if vdate is None:
                    problems.append(f"version date {vtext!r} not understood; the source's date is used")
            out.append(Mention(p.kind, p.name, s, e, m.span("nums"), law_span, nums, vdate, vtext, tuple(problems)))
    out.sort(key=lambda x: (x.start, x.end))
    return out


def paragraphs(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each paragraph: maximal runs separated by blank lines,
    without surrounding whitespace; empty paragraphs are omitted."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in [*_PARA_SEP.finditer(text), None]:
        end = m.start() if m is not None else len(text)
        chunk = text[pos:end]
        if chunk.strip():
            lead = len(chunk) - len(chunk.lstrip())
            out.append((pos + lead, pos + len(chunk.rstrip())))
        if m is not None:
            pos = m.end()
    return out


def snap_windows(spans: Iterable[tuple[int, int]], paras: Sequence[tuple[int, int]], *, window: int,
                 n: int) -> list[tuple[int, int]]:
    """Paragraph-index ranges ``[first, last]`` covered by ``±window`` around each span,
    snapped outwards to whole paragraphs, merged when overlapping or adjacent."""
    ranges: list[tuple[int, int]] = []
    for s, e in spans:
        lo, hi = max(0, s - window), min(n, e + window)
        idx = [i for i, (ps, pe) in enumerate(paras) if ps < hi and lo < pe]
        if not idx:
            continue
        ranges.append((idx[0], idx[-1]))
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for a, b in ranges:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


class NgramIndex:
    """Word n-grams of the target texts, for the verbatim-copy test."""

    def __init__(self, texts: Iterable[str], *, n: int = 8) -> None:
        self.n = n
        self.grams: set[tuple[str, ...]] = set()
        for t in texts:
            self.grams.update(self._grams(t))

    def _grams(self, text: str) -> list[tuple[str, ...]]:
        w = _WORD.findall(text.lower())
        return [tuple(w[i:i + self.n]) for i in range(len(w) - self.n + 1)]

    def ratio(self, text: str) -> float:
        """Share of ``text``'s n-grams (with repeats) found in the targets; 0 without n-grams."""
        g = self._grams(text)
        return sum(1 for x in g if x in self.grams) / len(g) if g else 0.0


@dataclass
class MinedQuery:
    """The outcome for one source: a query (or ``None``), its positives, its audit."""

    source_id: str
    text: str | None
    unmasked: str | None
    positives: list[str]
    metadata: dict[str, Any]
    audit: dict[str, Any]
    counts: dict[str, int] = field(default_factory=dict)


def _union(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, list[str]]]:
    out: list[tuple[int, int, list[str]]] = []
    for s, e, why in sorted(spans):
        if out and s < out[-1][1]:
            ls, le, reasons = out[-1]
            out[-1] = (ls, max(le, e), reasons + ([why] if why not in reasons else []))
        else:
            out.append((s, e, [why]))
    return out


def _render(text: str, start: int, end: int, masks: list[tuple[int, int, list[str]]], placeholder: str) -> str:
    parts, pos = [], start
    for s, e, _ in masks:
        if e <= start or s >= end:
            continue
        parts.append(text[pos:max(pos, s)])
        parts.append(placeholder)
        pos = max(pos, e)
    parts.append(text[pos:end])
    return "".join(parts)


def _cut(text: str, cap: int) -> str:
    if len(text) <= cap:
        return text
    cut = text.rfind(" ", 0, cap + 1)
    return text[: cut if cut > 0 else cap].rstrip()


@dataclass
class _SourceLog:
    """One source's counts, problems and audit record while it is mined."""

    source: Source
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    audit: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        s = self.source
        self.audit.update({"query_id": s.id, "where": s.where, "url": s.url,
                           "date": s.date.isoformat() if s.date else None})

    def bump(self, key: str, by: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + by

    def done(self, status: str) -> MinedQuery:
        """The outcome of a source that gives no query, for ``status``."""
        self.audit["status"] = status
        self.audit["problems"] = self.problems
        return MinedQuery(self.source.id, None, None, [], {}, self.audit, self.counts)


@dataclass
class _Resolved:
    """What a source's target citations resolve to: the audit record of each citation, the positives (version
    ids, in citation order), the as-of dates, every cited number, and the spans of citations with a positive."""

    cites: list[dict[str, Any]] = field(default_factory=list)
    positives: dict[str, None] = field(default_factory=dict)
    as_of: dict[str, None] = field(default_factory=dict)
    cited_numbers: set[str] = field(default_factory=set)
    spans: list[tuple[int, int]] = field(default_factory=list)


def mine_source(source: Source, *, pset: PatternSet, versions: Versions, units: set[str], index: NgramIndex,
                options: MineOptions | None = None) -> MinedQuery:
    """Build the query, positives and audit of one source (see the module docstring)."""
    options = options or MineOptions()
    text = source.text
    log = _SourceLog(source)
    if source.date is None:
        log.bump("no_date")
        log.problems.append(source.date_problem or f"{source.where}: no date")
        return log.done("no_date")
    mentions = find_mentions(text, pset, max_range=options.max_range)
    targets = [m for m in mentions if m.kind == "target"]
    if not targets:
        log.bump("no_citation")
        return log.done("no_citation")
    res = _resolve(targets, source, log, pset=pset, versions=versions, units=units)
    log.audit["citations"] = res.cites
    if not res.positives:
        log.bump("no_known_target")
        return log.done("no_known_target")
    paras = paragraphs(text)
    kept, cite_paras = _window(text, paras, res.spans, log, index=index, options=options)
    masks = _union(_mask_spans(text, mentions, targets, res.cited_numbers, pset))

    def render(i: int, masked: bool) -> str:
        ps, pe = paras[i]
        return _render(text, ps, pe, masks, pset.placeholder) if masked else text[ps:pe]

    log.audit["removed_for_cap"] = _cap(kept, cite_paras, paras, lambda i: render(i, True), cap=options.cap)
    log.audit["kept_paragraphs"] = [[paras[i][0], paras[i][1]] for i in kept]
    log.audit["masked"] = [{"start": s, "end": e, "text": text[s:e], "reason": "+".join(w)} for s, e, w in masks
                           if any(paras[i][0] <= s < paras[i][1] for i in kept)]
    log.bump("masked_strings", len(log.audit["masked"]))
    if not kept:
        log.bump("empty_after_drop")
        log.problems.append(f"{source.where}: every paragraph around the citations copies the targets; no query")
        return log.done("empty_after_drop")
    q = "\n\n".join(render(i, True) for i in kept)
    u = "\n\n".join(render(i, False) for i in kept)
    log.audit["truncated"] = len(q) > options.cap
    q, u = _cut(q, options.cap), _cut(u, options.cap)
    log.audit["status"] = "ok"
    log.audit["problems"] = log.problems
    log.audit["positives"] = list(res.positives)
    # the positives live in the qrels and the audit only: query metadata must not carry the answer
    meta = {"date": source.date.isoformat(), "as_of": sorted(res.as_of), "url": source.url,
            "n_targets": len(res.positives)}
    return MinedQuery(source.id, q, u, list(res.positives), meta, log.audit, log.counts)


def _resolve(targets: list[Mention], source: Source, log: _SourceLog, *, pset: PatternSet, versions: Versions,
             units: set[str]) -> _Resolved:
    """Resolve each cited number to a unit and to the version in force on the citation's date (its ``vdate``,
    else the source's); unknown units and units with no version in force are counted and told, not positives."""
    text, res = source.text, _Resolved()
    for m in targets:
        res.cited_numbers.update(m.numbers)
        day = m.vdate or source.date
        assert day is not None
        rec: dict[str, Any] = {"start": m.start, "end": m.end, "text": text[m.start:m.end], "pattern": m.pattern,
                               "numbers": list(m.numbers), "as_of": day.isoformat(), "targets": []}
        for p in m.problems:
            log.problems.append(f"{source.where}: offset {m.start}: {p}")
            log.bump("pattern_problems")
        for num in m.numbers:
            unit = pset.unit_of(num)
            if unit not in units:
                log.bump("unknown_article")
                log.problems.append(f"{source.where}: offset {m.start}: cites article {num!r} but no target unit "
                                    f"{unit!r} exists; not a positive")
                continue
            vid = versions.in_force(unit, day)
            if vid is None:
                log.bump("not_in_force")
                log.problems.append(f"{source.where}: offset {m.start}: {unit!r} has no version in force on {day}; "
                                    "not a positive (add 'vigente al <fecha>' to date the citation)")
                continue
            rec["targets"].append(vid)
            res.positives.setdefault(vid)
            res.as_of.setdefault(day.isoformat())
        if rec["targets"]:
            res.spans.append((m.start, m.end))
        res.cites.append(rec)
    return res


def _window(text: str, paras: list[tuple[int, int]], spans: list[tuple[int, int]], log: _SourceLog, *,
            index: NgramIndex, options: MineOptions) -> tuple[list[int], set[int]]:
    """The paragraphs of the windows around the resolved citations, less those that copy a target
    (n-gram ratio >= ``verbatim_threshold``, dropped and audited); and the paragraphs holding a citation."""
    ranges = snap_windows(spans, paras, window=options.window, n=len(text))
    log.audit["windows"] = [[paras[a][0], paras[b][1]] for a, b in ranges]
    in_window = [i for a, b in ranges for i in range(a, b + 1)]
    cite_paras = {i for i in in_window for s, _ in spans if paras[i][0] <= s < paras[i][1]}
    dropped, kept = [], []
    for i in in_window:
        ps, pe = paras[i]
        r = index.ratio(text[ps:pe])
        if r >= options.verbatim_threshold:
            dropped.append({"start": ps, "end": pe, "ratio": round(r, 6)})
        else:
            kept.append(i)
    log.audit["dropped"] = dropped
    log.bump("dropped_paragraphs", len(dropped))
    return kept, cite_paras


def _mask_spans(text: str, mentions: list[Mention], targets: list[Mention], cited_numbers: set[str],
                pset: PatternSet) -> list[tuple[int, int, str]]:
    """The spans to mask, each with its reason: cited numbers and law names of the target citations, the law's
    giveaways outside other-law citations, and bare mentions of a cited number."""
    spans: list[tuple[int, int, str]] = []
    for m in targets:
        spans.append((*m.nums_span, "cited_number"))
        if m.law_span:
            spans.append((*m.law_span, "law_name"))
    protected = [(m.start, m.end) for m in mentions if m.kind == "other"]
    for rx in pset.giveaways:
        for g in rx.finditer(text):
            if not any(s <= g.start() < e for s, e in protected):
                spans.append((g.start(), g.end(), "law_or_decree"))
    for m in mentions:
        if m.kind == "bare" and cited_numbers.intersection(m.numbers):
            spans.append((*m.nums_span, "bare_cited_number"))
    return spans


def _cap(kept: list[int], cite_paras: set[int], paras: list[tuple[int, int]], masked: Callable[[int], str], *,
         cap: int) -> list[list[int]]:
    """Remove from ``kept`` (in place) the paragraphs farthest from a citation until the masked query fits
    ``cap`` characters (citing paragraphs stay); the removed paragraphs' spans."""
    removed: list[list[int]] = []
    while kept and sum(len(masked(i)) for i in kept) + 2 * (len(kept) - 1) > cap:
        cands = [i for i in kept if i not in cite_paras]
        if not cands:
            break
        far = max(cands, key=lambda i: (min(abs(i - c) for c in cite_paras) if cite_paras else 0, i))
        kept.remove(far)
        removed.append([paras[far][0], paras[far][1]])
    return removed
