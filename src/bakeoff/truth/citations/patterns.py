"""Citation patterns: regexes with named groups that map mentions to target units.

A :class:`PatternSet` knows the cited law (its name and aliases, its decree
numbers), how an article number becomes a unit id (``target_id``, e.g.
``"art-{num}"``), and an ordered list of :class:`CitationPattern`. Each
pattern's regex must have a named group ``nums`` (the article numbers: one,
a list or a range); ``law`` (the law mention) and ``vdate`` (an explicit
"as it stood on" date) are optional. A pattern's ``kind`` is

* ``target`` — a citation of the cited law: becomes a positive, is masked;
* ``other`` — a citation of another law: stays visible in the query;
* ``bare`` — an article mention without a law: masked only when its number
  is one the source cites (a giveaway), never a positive.

Patterns are tried in order; a match overlapping an earlier match is ignored,
so target patterns come first, then other-law patterns, then bare mentions.

Regex templates may use placeholders, expanded before compiling:
``{LAW}`` (alternation of the law's names, aliases and decree numbers), ``{ART}`` (the word "article"),
``{NUM}``, ``{NUMS}`` (one / several article numbers), ``{QUAL}`` (inciso,
número, letra ... between number and law), ``{VDATE}`` (optional "texto
vigente al <fecha>" clause with group ``vdate``). Matching ignores case,
except aliases of at most three letters (``LT``), matched as written.

Pattern files are TOML::

    extends = "es"                 # builtin set to include (es | en), optional
    law = ["Ley de Tránsito", "Ley N° 20.118", "LT"]
    decree = ["DFL N° 3"]          # decree numbers of the law (masked too)
    target_id = "art-{num}"        # article number -> unit id
    placeholder = "[CITA OMITIDA]"
    [[pattern]]                    # your own, tried before the builtin ones
    name = "..."; kind = "target"; regex = '...'

A malformed pattern (no regex, unknown kind, does not compile, no ``nums``
group) is skipped with a one-line message in :attr:`PatternSet.problems`;
only a file with no usable pattern at all is an error.
"""

from __future__ import annotations

import datetime as _dt
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from ...errors import InputError
from ...validation import Schema, toml_key_line, validate

__all__ = [
    "BUILTIN",
    "KINDS",
    "CitationPattern",
    "PatternSet",
    "builtin_patterns",
    "load_patterns",
    "parse_text_date",
]

KINDS = ("target", "other", "bare")

_MONTHS = {
    "enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7, "agosto": 8,
    "septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12,
    "january": 1, "february": 2, "march": 3, "april": 4, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
}


def parse_text_date(text: str) -> _dt.date | None:
    """Parse ``15 de marzo de 2016``, ``15 March 2016``, ``March 15, 2016``,
    ``15/03/2016`` (day first) or ``2016-03-15``; ``None`` when not a date."""
    t = " ".join(text.lower().replace(",", " ").split())
    try:
        if m := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", t):
            return _dt.date(int(m[1]), int(m[2]), int(m[3]))
        if m := re.fullmatch(r"(\d{1,2})[/-](\d{1,2})[/-](\d{4})", t):
            return _dt.date(int(m[3]), int(m[2]), int(m[1]))
        if m := re.fullmatch(r"(\d{1,2})(?:\s+de)?\s+([a-záéíóú]+)(?:\s+del?)?\s+(\d{4})", t):
            return _dt.date(int(m[3]), _MONTHS[m[2]], int(m[1])) if m[2] in _MONTHS else None
        if m := re.fullmatch(r"([a-z]+)\s+(\d{1,2})\s+(\d{4})", t):
            return _dt.date(int(m[3]), _MONTHS[m[1]], int(m[2])) if m[1] in _MONTHS else None
    except ValueError:
        return None
    return None


@dataclass(frozen=True)
class CitationPattern:
    """One compiled pattern (``template`` is the regex before placeholder expansion)."""

    name: str
    kind: str
    regex: re.Pattern[str]
    template: str


@dataclass(frozen=True)
class _Lang:
    art: str
    num: str
    nums_sep: str
    range_words: tuple[str, ...]
    qual: str
    vdate: str
    patterns: tuple[tuple[str, str, str], ...]  # (name, kind, template)


_ES_NUM = r"\d{1,4}(?:\s*[°º])?(?:\s+(?:bis|ter|qu[aá]ter|quinquies)\b)?"
_ES_DATE = (r"\d{1,2}\s+de\s+[a-záéíóú]+\s+del?\s+\d{4}|\d{1,2}[/-]\d{1,2}[/-]\d{4}|\d{4}-\d{2}-\d{2}")
_ES = _Lang(
    art=r"(?:art[ií]culos?|arts?\.)",
    num=_ES_NUM,
    nums_sep=r"(?:\s*,\s*(?:y\s+|e\s+)?|\s+(?:y|e|o|a|al|hasta)\s+|\s*[-–]\s*)",
    range_words=("a", "al", "hasta", "-", "–"),
    qual=r"(?:\s*,?\s*(?:incisos?|n[°º]|n[uú]meros?|numerales?|letras?|literales?)\s+[\w°º]+(?:\s+(?:y|e)\s+[\w°º]+)?)*",
    vdate=(r"(?:\s*,?\s*(?:en\s+(?:su|el)\s+(?:texto|redacci[oó]n|versi[oó]n)\s+)?vigente\s+(?:al|el)\s+"
           r"(?P<vdate>" + _ES_DATE + r"))?"),
    patterns=(
        ("es_articulo_de_ley", "target",
         (r"\b{ART}\s*(?P<nums>{NUMS}){QUAL}\s*,?\s*(?:(?:de\s+la|del|de)\s+"
          r"(?:(?:citada|referida|mencionada|señalada)\s+)?)?(?P<law>{LAW}){VDATE}")),
        ("es_ley_su_articulo", "target",
         r"(?P<law>{LAW})\s*,?\s*(?:en\s+)?sus\s*{ART}\s*(?P<nums>{NUMS}){VDATE}"),
        ("es_ley_su_articulo_sg", "target",
         r"(?P<law>{LAW})\s*,?\s*(?:en\s+)?su\s*{ART}\s*(?P<nums>{NUMS}){VDATE}"),
        ("es_articulo_otra_ley", "other",
         (r"\b{ART}\s*(?P<nums>{NUMS}){QUAL}\s*,?\s*(?:de\s+la|del)\s+(?P<law>(?:Ley|C[oó]digo|Constituci[oó]n|"
          r"Decreto|Reglamento|Convenci[oó]n|Auto\s+Acordado)\b(?:\s+(?:N[°º.]*\s*)?\d[\d.]*|(?:\s+(?:(?:de|del|la|"
          r"el|y|sobre|los|las)\s+)*(?-i:[A-ZÁÉÍÓÚ])[\wáéíóúñ]*){0,8}))")),
        ("es_articulo_suelto", "bare", r"\b{ART}\s*(?P<nums>{NUMS})"),
    ),
)

_EN_NUM = r"\d{1,4}[A-Z]?(?:\(\w{1,4}\))*"
_EN_DATE = r"\d{1,2}\s+[A-Za-z]+\s+\d{4}|[A-Za-z]+\s+\d{1,2},\s+\d{4}|\d{4}-\d{2}-\d{2}"
_EN = _Lang(
    art=r"(?:sections?|secs?\.|§§?)",
    num=_EN_NUM,
    nums_sep=r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|to|through)\s+|\s*[-–]\s*)",
    range_words=("to", "through", "-", "–"),
    qual=r"",
    vdate=r"(?:\s*,?\s*as\s+(?:it\s+stood|in\s+force)\s+on\s+(?P<vdate>" + _EN_DATE + r"))?",
    patterns=(
        ("en_section_of_act", "target",
         r"{ART}\s*(?P<nums>{NUMS})\s*,?\s*(?:of\s+(?:the\s+)?)?(?P<law>{LAW}){VDATE}"),
        ("en_act_section", "target", r"(?P<law>{LAW})\s*,?\s*(?:ss?\.|{ART})\s*(?P<nums>{NUMS}){VDATE}"),
        ("en_section_other_act", "other",
         (r"{ART}\s*(?P<nums>{NUMS})\s*,?\s*of\s+the\s+(?P<law>(?:(?-i:[A-Z])[\w']*\s+){0,6}"
          r"(?-i:Act|Code|Regulations?|Constitution)(?:\s+\d{4})?)")),
        ("en_paragraph_sign", "target", r"§§?\s*(?P<nums>{NUMS}){VDATE}"),
        ("en_section_bare", "bare", r"\b(?:sections?|secs?\.)\s*(?P<nums>{NUMS})"),
    ),
)

BUILTIN: Mapping[str, _Lang] = {"es": _ES, "en": _EN}


def _alias_regex(alias: str) -> str:
    parts = [re.escape(w) for w in alias.split()]
    body = r"\s+".join(parts).replace(r"N°", r"N\s*[°º.]*").replace(r"N\.°", r"N\s*[°º.]*")
    body = body.replace(r"\°", r"[°º]")
    if len(alias) <= 3 and alias.isupper():
        body = f"(?-i:{body})"
    return rf"(?<!\w){body}(?!\w)"


@dataclass(frozen=True)
class PatternSet:
    """Everything the finder needs; see the module docstring."""

    name: str
    language: str
    law: tuple[str, ...]
    decree: tuple[str, ...]
    target_id: str
    placeholder: str
    patterns: tuple[CitationPattern, ...]
    num_regex: re.Pattern[str]
    range_words: tuple[str, ...]
    problems: tuple[str, ...] = ()
    giveaways: tuple[re.Pattern[str], ...] = field(default=())

    def unit_of(self, num: str) -> str:
        """Unit id of a normalised article number (``target_id`` with ``{num}``)."""
        return self.target_id.replace("{num}", num)


def _expand(template: str, lang: _Lang, law: Sequence[str]) -> str:
    law_alt = "(?:" + "|".join(_alias_regex(a) for a in sorted(law, key=len, reverse=True)) + ")"
    nums = f"{lang.num}(?:{lang.nums_sep}{lang.num})*"
    for key, value in (("{LAW}", law_alt), ("{ART}", lang.art), ("{NUMS}", nums), ("{NUM}", lang.num),
                       ("{QUAL}", lang.qual), ("{VDATE}", lang.vdate)):
        template = template.replace(key, value)
    return template


def _compile(name: str, kind: str, template: str, lang: _Lang, law: Sequence[str], where: str,
             problems: list[str]) -> CitationPattern | None:
    if kind not in KINDS:
        problems.append(f"{where}: pattern {name!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}; skipped")
        return None
    try:
        rx = re.compile(_expand(template, lang, law), re.IGNORECASE)
    except re.error as exc:
        problems.append(f"{where}: pattern {name!r}: regex does not compile ({exc}); skipped")
        return None
    if "nums" not in rx.groupindex:
        problems.append(f"{where}: pattern {name!r}: regex has no named group 'nums'; skipped")
        return None
    return CitationPattern(name, kind, rx, template)


def builtin_patterns(language: str, *, law: Sequence[str], decree: Sequence[str] = (),
                     target_id: str = "art-{num}", placeholder: str = "[CITA OMITIDA]",
                     extra: Sequence[Mapping[str, Any]] = (), where: str = "patterns") -> PatternSet:
    """A builtin pattern set (``es`` or ``en``) for the law named ``law[0]`` (aliases after it).

    ``extra`` patterns (dicts with ``name``, ``kind``, ``regex``) are tried first.
    """
    if language not in BUILTIN:
        raise InputError(f"unknown builtin pattern set {language!r} (have: {', '.join(BUILTIN)})",
                         path=where, field="extends")
    law = tuple(a.strip() for a in law if a and a.strip())
    if not law:
        raise InputError("give the cited law's name (and aliases) as law = [...]", path=where, field="law")
    if "{num}" not in target_id:
        raise InputError(f"target_id must contain {{num}}, got {target_id!r}", path=where, field="target_id")
    lang = BUILTIN[language]
    names = (*law, *(d.strip() for d in decree if d and d.strip()))  # a decree number cites the law too
    problems: list[str] = []
    compiled: list[CitationPattern] = []
    for i, p in enumerate(extra, start=1):
        name = str(p.get("name") or f"pattern{i}")
        if not p.get("regex"):
            problems.append(f"{where}: pattern {name!r}: missing 'regex'; skipped")
            continue
        cp = _compile(name, str(p.get("kind", "target")), str(p["regex"]), lang, names, where, problems)
        if cp is not None:
            compiled.append(cp)
    for name, kind, template in lang.patterns:
        cp = _compile(name, kind, template, lang, names, where, problems)
        assert cp is not None, problems
        compiled.append(cp)
    giveaways = tuple(re.compile(_alias_regex(a), re.IGNORECASE) for a in (*law, *decree) if a.strip())
    return PatternSet(
        name=f"{language}:{law[0]}", language=language, law=law, decree=tuple(decree), target_id=target_id,
        placeholder=placeholder, patterns=tuple(compiled), num_regex=re.compile(lang.num, re.IGNORECASE),
        range_words=lang.range_words, problems=tuple(problems), giveaways=giveaways,
    )


def load_patterns(path: str | Path) -> PatternSet:
    """Read a TOML pattern file (see the module docstring)."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except UnicodeDecodeError:
        raise InputError("not valid UTF-8", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", path=path) from None
    text = path.read_text(encoding="utf-8")
    doc: PatternFile = validate(PatternFile, raw, where=str(path), line_of=lambda key: toml_key_line(text, key), error=InputError)
    law = [doc.law] if isinstance(doc.law, str) else list(doc.law)
    decree = [doc.decree] if isinstance(doc.decree, str) else list(doc.decree)
    tables = doc.pattern if doc.patterns is None else [*doc.pattern, *doc.patterns]
    extra = [t.model_dump(exclude_none=True) for t in tables]
    return builtin_patterns(doc.extends, law=law, decree=decree, target_id=doc.target_id,
                            placeholder=doc.placeholder, extra=extra, where=str(path))


class PatternTable(Schema):
    """One ``[[pattern]]`` table (a bad ``kind`` or ``regex`` skips the pattern, see the module docstring)."""

    name: str | None = None
    kind: str = "target"
    regex: str | None = None


class PatternFile(Schema):
    """A pattern file's keys (see the module docstring); anything else is an error."""

    extends: str = "es"
    law: str | list[str] = Field(default_factory=list)
    decree: str | list[str] = Field(default_factory=list)
    target_id: str = "art-{num}"
    placeholder: str = "[CITA OMITIDA]"
    pattern: list[PatternTable] = Field(default_factory=list)
    patterns: list[PatternTable] | None = None
