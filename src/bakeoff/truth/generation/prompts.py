"""Prompts and answer schemas for synthetic ground truth.

No prompt carries hand-written examples: a corpus of any genre gets the same prompts, and
examples, when there are any, come from the user (``--examples FILE``) or from the corpus itself
(describe mode's bootstrapping: a round's best kept queries become the next round's examples,
InPars/Promptagator-style; see :mod:`bakeoff.truth.generation.describe`).

Two forms, by what the model is:

* **chat** (instruction-tuned models): a system message with the task, the rule that the
  document's *content* must answer the query (naming its title is no answer) and the JSON shape;
  examples as earlier user/assistant turns; the document as the last user turn.
* **completion** (base models such as Gemma 3 270M): a "search log" whose header states the task,
  then the examples, then the document and an opened ``{"query": "`` for the model to finish.

Examples come before the document so a llama.cpp server can reuse their KV cache between
requests. Every string field has a ``max_length`` (→ JSON-schema ``maxLength``), otherwise
grammar-constrained generation can run to ``max_tokens``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..filters.thresholds import MAX_QUERY_CHARS, MAX_QUESTION_CHARS

__all__ = [
    "CLUSTER_INSTRUCTION",
    "DESCRIBE_INSTRUCTION",
    "PRESETS",
    "PRESET_ALIASES",
    "PROMPT_LANGS",
    "QUERY_STYLES",
    "RETRY_FIX",
    "STEER",
    "PromptControl",
    "cluster_completion",
    "cluster_messages",
    "cluster_schema",
    "describe_completion",
    "describe_messages",
    "describe_schema",
    "describe_system",
    "read_examples",
    "shot_queries",
]

QueryStyle = Literal["question", "keywords", "typos"]
PromptLang = Literal["en", "es"]
QUERY_STYLES: tuple[str, ...] = ("question", "keywords", "typos")
PROMPT_LANGS: tuple[str, ...] = ("en", "es")

#: Named sets of constraints (``--preset``). ``need-not-document``: ask as a searcher who does not
#: know which document answers — about the need, few questions naming a case or a person, plain
#: words, no statute numbers.
PRESETS: Mapping[str, Mapping[str, str]] = {
    "need-not-document": {
        "en": ("Pretend you do not know which document answers the question: ask about the need, not about the "
               "document. At most two or three questions in a set may name a specific case or person. "
               "Use no jargon and no statute or section numbers."),
        "es": ("Finge que no sabes qué documento responde a la pregunta: pregunta por la necesidad, no por el "
               "documento. Como mucho dos o tres preguntas de un conjunto pueden nombrar un caso o una persona "
               "concretos. No uses jerga ni números de leyes o artículos."),
    },
}

#: Old preset names still accepted.
PRESET_ALIASES: Mapping[str, str] = {"seed000": "need-not-document"}

_STYLE_INSTRUCTION: Mapping[str, Mapping[str, str]] = {
    "en": {
        "question": ("Someone needs the information in this document but has not seen it. In one plain sentence, "
                     "say what they want to find out, in everyday words, without the document's technical terms."),
        "keywords": ("Write the short keyword query (2 to 5 words) a person would type into a search box to "
                     "find this document."),
        "typos": ("Write the question a hurried person would type to find this document, with the typos and "
                  "missing punctuation of fast typing."),
    },
    "es": {
        "question": ("Alguien necesita la información de este documento pero no lo ha visto. En una frase sencilla, "
                     "di qué quiere averiguar, con palabras corrientes, sin los términos técnicos del documento."),
        "keywords": ("Escribe la búsqueda corta por palabras clave (de 2 a 5 palabras) que una persona teclearía "
                     "en un buscador para encontrar este documento."),
        "typos": ("Escribe la pregunta que una persona con prisa teclearía para encontrar este documento, con "
                  "las erratas y la falta de puntuación de quien escribe rápido."),
    },
}

#: The completion form's (base models') instruction for the question style: a search log is continued, not
#: obeyed, so it keeps the searcher's framing of the log's header.
_LOG_QUESTION: Mapping[str, str] = {
    "en": ("Write one question that this document answers, as a person searching for it would type it, in their "
           "own words."),
    "es": ("Escribe una pregunta que este documento responde, como la teclearía con sus propias palabras una "
           "persona que lo busca."),
}

#: Kept for callers of the old name: the default (English, natural question) instruction.
DESCRIBE_INSTRUCTION = _STYLE_INSTRUCTION["en"]["question"]

CLUSTER_INSTRUCTION = (
    "Write {n} questions a user might ask. For every question judge EVERY document by its id: "
    "relevant or not, a distinct rank (1 = most useful) and a short reason."
)
_CLUSTER_INSTRUCTION_ES = (
    "Escribe {n} preguntas que podría hacer un usuario. Para cada pregunta juzga CADA documento por su id: "
    "relevante o no, un rango distinto (1 = el más útil) y una razón breve."
)

_HEADER: Mapping[str, str] = {
    "en": "Search log: each document, then what {who} typed into the search box to find it.\n\n",
    "es": "Registro de búsquedas: cada documento y lo que {who} escribió en el buscador para encontrarlo.\n\n",
}
_WHO_DEFAULT: Mapping[str, str] = {"en": "a non-expert", "es": "una persona no experta"}
_LABELS: Mapping[str, tuple[str, str, str]] = {
    "en": ("Document", "Searched for", "Answer as JSON"),
    "es": ("Documento", "Búsqueda", "Responde en JSON"),
}


@dataclass(frozen=True)
class PromptControl:
    """What the describe prompt asks for (all recorded in provenance).

    ``style``: ``question`` (a natural question), ``keywords`` (a short keyword query) or ``typos``
    (a question with typing errors); ``lang``: language of the prompt and its examples (``en``,
    ``es``); ``persona``: who searches (e.g. ``"a tenant with a dispute over a deposit"``);
    ``instruction``: free text added to the task; ``preset``: a named constraint set of
    :data:`PRESETS` (old names of :data:`PRESET_ALIASES` are mapped). Chat prompts carry all of it
    in the system message; completion prompts (base models) in the header line. ``examples``: the
    ``(document, query)`` pairs shown before the document (none by default: the prompt is
    zero-shot); a query copying one of them is rejected.
    """

    style: QueryStyle = "question"
    lang: PromptLang = "en"
    persona: str | None = None
    instruction: str | None = None
    preset: str | None = None
    examples: tuple[tuple[str, str], ...] | None = None
    #: Real queries of the collection shown as style only (``--queries-like``; drawn per request by
    #: :mod:`bakeoff.truth.generation.queries_like`), for other documents: their form and length, not their content.
    style_queries: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        from ...errors import ConfigError

        if self.examples is not None and (not self.examples or any(
                len(e) != 2 or not all(isinstance(x, str) and x.strip() for x in e) for e in self.examples)):
            raise ConfigError("prompt examples must be a non-empty list of (document, query) pairs of non-empty text")

        if self.style not in QUERY_STYLES:
            raise ConfigError(f"query style must be one of {', '.join(QUERY_STYLES)}, got {self.style!r}")
        if self.lang not in PROMPT_LANGS:
            raise ConfigError(f"prompt language must be one of {', '.join(PROMPT_LANGS)}, got {self.lang!r}")
        if self.preset is not None and self.preset in PRESET_ALIASES:
            object.__setattr__(self, "preset", PRESET_ALIASES[self.preset])
        if self.preset is not None and self.preset not in PRESETS:
            raise ConfigError(f"unknown prompt preset {self.preset!r}; known: {', '.join(PRESETS)}")

    def extra(self) -> str:
        """The preset's constraints and the user's instruction, as one text (may be empty)."""
        parts = []
        if self.preset:
            parts.append(PRESETS[self.preset][self.lang])
        if self.instruction:
            parts.append(self.instruction.strip())
        return " ".join(parts)

    def describe_instruction(self) -> str:
        text = _STYLE_INSTRUCTION[self.lang][self.style]
        if self.persona:
            text += (f" The searcher is {self.persona}." if self.lang == "en" else f" Quien busca es {self.persona}.")
        extra = self.extra()
        text = f"{text} {extra}" if extra else text
        if self.style_queries:
            text += "\n" + _style_block(self.style_queries, self.lang)
        return text

    def shots(self) -> tuple[tuple[str, str], ...]:
        return tuple((d, q) for d, q in self.examples or ())


def _style_block(queries: Sequence[str], lang: str) -> str:
    shown = "\n".join(f"- {q[:300]}" for q in queries)
    if lang == "es":
        return ("Así buscan las personas en esta colección (búsquedas de OTROS documentos: imita su forma y su "
                f"longitud, no su tema):\n{shown}")
    return ("This is how people search this collection (queries for OTHER documents: match their form and length, "
            f"not their topic):\n{shown}")


def shot_queries(control: PromptControl | None = None) -> frozenset[str]:
    """The example answers of ``control``'s prompt; a generated query copying one is rejected."""
    return frozenset(q for _, q in (control or PromptControl()).shots())


def read_examples(path: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """``(document, query)`` examples from a JSONL file of ``{"document": ..., "query": ...}`` lines
    (blank lines skipped). A bad line is a :class:`~bakeoff.errors.ConfigError` naming the file,
    the line and the field."""
    from ...errors import ConfigError

    out = []
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read examples: {e}") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p}:{i}: not JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{p}:{i}: expected an object with fields document and query")
        for key in ("document", "query"):
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise ConfigError(f"{p}:{i}: field {key!r} must be non-empty text")
        out.append((" ".join(row["document"].split()), " ".join(row["query"].split())))
    if not out:
        raise ConfigError(f"{p}: no examples (expected JSONL lines with fields document and query)")
    return tuple(out)


#: Kept for callers of the old name: cluster prompts carry no examples, so there is nothing to copy.
CLUSTER_SHOT_QUESTIONS: frozenset[str] = frozenset()


def cluster_question_schema(*, max_docs: int = 16) -> type[Any]:
    """``{"question": str (<= 200 chars), "answers": [label, ...]}`` — one question of a completion
    prompt and the labels of the documents that answer it, best first."""
    from pydantic import BaseModel, Field

    class ClusterCompletion(BaseModel):
        question: str = Field(max_length=MAX_QUESTION_CHARS)
        answers: list[str] = Field(max_length=max_docs)

    return ClusterCompletion


def describe_schema() -> type[Any]:
    """``{"query": str (<= 160 chars)}``."""
    from pydantic import BaseModel, Field

    class Description(BaseModel):
        query: str = Field(max_length=MAX_QUERY_CHARS)

    return Description


def cluster_schema(*, max_questions: int = 3, max_docs: int = 16) -> type[Any]:
    """``{"questions": [{"question", "judgments": [{"id", "relevant", "rank", "reason"}]}]}``.

    Deliberately permissive about ids and ranks: duplicates, unknown ids and
    omissions are *repaired and counted* (see :mod:`bakeoff.truth.generation.repair`), not rejected.
    """
    from pydantic import BaseModel, Field

    class Judgment(BaseModel):
        id: str = Field(max_length=8)
        relevant: bool
        rank: int
        reason: str = Field(max_length=80)

    class ClusterQuestion(BaseModel):
        question: str = Field(max_length=MAX_QUESTION_CHARS)
        judgments: list[Judgment] = Field(max_length=max_docs)

    class ClusterAnswer(BaseModel):
        questions: list[ClusterQuestion] = Field(max_length=max_questions)

    return ClusterAnswer


_RULE: Mapping[str, str] = {
    "en": ("The document's content must answer the query: a query that only names the document or its title "
           "is not answered by it. The query must make sense to someone who has not seen the document (no "
           "'this study' or 'the authors')."),
    "es": ("El contenido del documento debe responder a la búsqueda: una búsqueda que solo nombra el documento "
           "o su título no queda respondida por él. La búsqueda debe entenderse sin haber visto el documento "
           "(nada de 'este estudio' ni 'los autores')."),
}


#: Added to a regeneration when the kept queries already fill the leak bin of the document's last query
#: (``--leak-mode target``): ``lower`` asks for fewer of the document's words, ``higher`` for more.
STEER: Mapping[str, Mapping[str, str]] = {
    "en": {"lower": "Use your own words: do not reuse the document's distinctive terms.",
           "higher": "Use the document's own key terms."},
    "es": {"lower": "Usa tus propias palabras: no repitas los términos distintivos del documento.",
           "higher": "Usa los términos clave del propio documento."},
}


#: Added to a document's next request when its last query was rejected for copying the document, a pasted
#: sentence (``copies_passage``) or its title (``copies_title``), or for running into the length cap
#: (``truncated``). The filters' reasons, said to the model.
RETRY_FIX: Mapping[str, Mapping[str, str]] = {
    "en": {"copies_passage": "Do not copy a sentence of the document: say the need briefly, in your own words.",
           "copies_title": "Do not repeat the document's title: ask about something its text explains.",
           "truncated": "Keep the query short: say the need in one sentence."},
    "es": {"copies_passage": "No copies una frase del documento: di la necesidad en pocas palabras, con las tuyas.",
           "copies_title": "No repitas el título del documento: pregunta por algo que su texto explica.",
           "truncated": "Escribe una consulta corta: di la necesidad en una frase."},
}


def describe_system(control: PromptControl | None = None) -> str:
    """The system message of the chat form: task, the answering rule and the JSON shape. The question style's
    task is framed as a searcher's need ("someone needs the information in this document but has not seen it");
    it carries no separate answering rule: with the rule, the bundled 0.5B model wrote titles ("The X of Y") for
    about half of a library-science collection, with the need framing for about one in eight."""
    c = control or PromptControl()
    _, _, answer = _LABELS[c.lang]
    rule = "" if c.style == "question" else f" {_RULE[c.lang]}"
    return f"{c.describe_instruction()}{rule}\n{answer}: {{\"query\": \"...\"}}"


def _user_describe(text: str, control: PromptControl) -> str:
    return f"{_LABELS[control.lang][0]}:\n{text}"


def describe_messages(text: str, control: PromptControl | None = None) -> tuple[dict[str, str], ...]:
    """Chat turns asking for a query of ``control``'s style for ``text``: the system message, the
    examples (if any) as user/assistant turns, the document."""
    c = control or PromptControl()
    msgs: list[dict[str, str]] = [{"role": "system", "content": describe_system(c)}]
    for doc, query in c.shots():
        msgs.append({"role": "user", "content": _user_describe(doc, c)})
        msgs.append({"role": "assistant", "content": json.dumps({"query": query}, ensure_ascii=False)})
    msgs.append({"role": "user", "content": _user_describe(text, c)})
    return tuple(msgs)


def describe_completion(text: str, control: PromptControl | None = None) -> tuple[str, str]:
    """``(prompt, prefill)`` for a *completion*: a search log whose header names the searcher
    (default: a non-expert), the style's instruction and the constraints,
    then the examples (if any) with their JSON-encoded queries, then ``text`` and an opened
    ``{"query": "``. A base model continues a log rather than follow instructions (the answering rule
    of the chat form made the embedded 270M model's queries fit their documents less often), so the
    rule is left to the filters."""
    c = control or PromptControl()
    doc_label, searched, _ = _LABELS[c.lang]
    header = _HEADER[c.lang].format(who=c.persona or _WHO_DEFAULT[c.lang]).rstrip("\n")
    header += " " + (_LOG_QUESTION[c.lang] if c.style == "question" else _STYLE_INSTRUCTION[c.lang][c.style])
    extra = c.extra()
    if extra:
        header += " " + extra
    parts = [header + "\n\n"]
    for doc, query in c.shots():
        parts.append(f"{doc_label}: {doc}\n{searched}: {json.dumps({'query': query}, ensure_ascii=False)}\n\n")
    parts.append(f"{doc_label}: {text}\n{searched}: ")
    return "".join(parts), '{"query": "'


_CLUSTER_HEADER: Mapping[str, str] = {
    "en": ("Search log: a group of documents, then a question {who} asked that some of them answer, and the "
           "documents that answer it, best first.\n\n"),
    "es": ("Registro de búsquedas: un grupo de documentos, una pregunta que hizo {who} y que algunos responden, "
           "y los documentos que la responden, del mejor al peor.\n\n"),
}
_ASKED: Mapping[str, str] = {"en": "Asked", "es": "Pregunta"}
_DOCS_LABEL: Mapping[str, str] = {"en": "Documents", "es": "Documentos"}


def cluster_completion(docs: Sequence[tuple[str, str]], control: PromptControl | None = None) -> tuple[str, str]:
    """``(prompt, prefill)`` for base models: the header (task and constraints), ``docs`` and an opened
    ``{"question": "`` to be finished as ``{"question": ..., "answers": [labels, best first]}``.
    One question per request (ask again with another seed for more)."""
    c = control or PromptControl()
    header = _CLUSTER_HEADER[c.lang].format(who=c.persona or _WHO_DEFAULT[c.lang]).rstrip("\n")
    extra = c.extra()
    if extra:
        header += " " + extra
    listing = "\n".join(f"[{label}] {text}" for label, text in docs)
    return f"{header}\n\n{_DOCS_LABEL[c.lang]}:\n{listing}\n{_ASKED[c.lang]}: ", '{"question": "'


def cluster_messages(docs: Sequence[tuple[str, str]], *, n_questions: int,
                     control: PromptControl | None = None) -> tuple[dict[str, str], ...]:
    """Chat turns asking for ``n_questions`` questions judged over ``docs`` (label, text): a system
    message with the task and the JSON shape, the documents as the user turn."""
    c = control or PromptControl()
    shape = json.dumps({"questions": [{"question": "...", "judgments": [
        {"id": "D1", "relevant": True, "rank": 1, "reason": "..."}]}]})
    system = (CLUSTER_INSTRUCTION if c.lang == "en" else _CLUSTER_INSTRUCTION_ES).format(n=n_questions)
    if c.persona:
        system += (f" The user is {c.persona}." if c.lang == "en" else f" El usuario es {c.persona}.")
    extra = c.extra()
    if extra:
        system += " " + extra
    system += f" {_RULE[c.lang]}\n{_LABELS[c.lang][2]}: {shape}"
    listing = "\n".join(f"[{label}] {text}" for label, text in docs)
    return ({"role": "system", "content": system},
            {"role": "user", "content": f"{_DOCS_LABEL[c.lang]}:\n{listing}"})
