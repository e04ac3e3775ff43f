"""Prompts and answer schemas for synthetic ground truth.

The default local model (Gemma 3 270M) is a *base* model, so every prompt is
few-shot: worked examples as earlier chat turns, then the real task. The
examples come first so a llama.cpp server can reuse their KV cache between
requests. Every string field has a ``max_length`` (→ JSON-schema ``maxLength``),
otherwise grammar-constrained generation can run to ``max_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["describe_schema", "cluster_schema", "describe_messages", "describe_completion", "cluster_messages",
           "cluster_completion", "DESCRIBE_SHOT_QUERIES", "CLUSTER_SHOT_QUESTIONS", "DESCRIBE_INSTRUCTION",
           "CLUSTER_INSTRUCTION", "PromptControl", "PRESETS", "QUERY_STYLES", "PROMPT_LANGS", "shot_queries"]

QueryStyle = Literal["question", "keywords", "typos"]
PromptLang = Literal["en", "es"]
QUERY_STYLES: tuple[str, ...] = ("question", "keywords", "typos")
PROMPT_LANGS: tuple[str, ...] = ("en", "es")

#: Named sets of constraints (``--preset``). ``seed000``: the constraints of the first hand-run
#: generation (seed 000) — a searcher who does not know which document answers, few questions
#: naming a case or person, plain words.
PRESETS: Mapping[str, Mapping[str, str]] = {
    "seed000": {
        "en": ("Pretend you do not know which document answers the question: ask about the need, not about the "
               "document. At most two or three questions in a set may name a specific case or person. "
               "Use no jargon and no statute or section numbers."),
        "es": ("Finge que no sabes qué documento responde a la pregunta: pregunta por la necesidad, no por el "
               "documento. Como mucho dos o tres preguntas de un conjunto pueden nombrar un caso o una persona "
               "concretos. No uses jerga ni números de leyes o artículos."),
    },
}

_STYLE_INSTRUCTION: Mapping[str, Mapping[str, str]] = {
    "en": {
        "question": ("Write the question a layman would ask that this document answers. Describe what it is "
                     "about in everyday words. Do not copy the document's distinctive or technical terms."),
        "keywords": ("Write the short keyword query (2 to 5 words) a layman would type to find this document. "
                     "Use everyday words, not the document's distinctive or technical terms."),
        "typos": ("Write the question a hurried layman would type to find this document, in everyday words, "
                  "with the typos and missing punctuation of fast typing."),
    },
    "es": {
        "question": ("Escribe la pregunta que haría una persona no experta y que este documento responde. "
                     "Describe de qué trata con palabras corrientes. No copies los términos técnicos o "
                     "distintivos del documento."),
        "keywords": ("Escribe la búsqueda corta por palabras clave (de 2 a 5 palabras) que una persona no experta "
                     "teclearía para encontrar este documento. Usa palabras corrientes, no los términos técnicos "
                     "del documento."),
        "typos": ("Escribe la pregunta que una persona no experta con prisa teclearía para encontrar este "
                  "documento, con palabras corrientes y con las erratas y la falta de puntuación de quien "
                  "escribe rápido."),
    },
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

_SHOT_DOCS: Mapping[str, tuple[str, ...]] = {
    "en": (
        "Aspirin irreversibly inhibits cyclooxygenase-1, reducing thromboxane A2 synthesis in platelets "
        "and lowering the risk of myocardial infarction.",
        "shutil.copytree(src, dst): Recursively copy an entire directory tree rooted at src to a directory "
        "named dst and return the destination directory.",
        "Regular physical exercise improves insulin sensitivity in adults with type 2 diabetes.",
        "str.upper(): Return a copy of the string with all the cased characters converted to uppercase.",
    ),
    "es": (
        "La aspirina inhibe de forma irreversible la ciclooxigenasa-1, reduce la síntesis de tromboxano A2 en "
        "las plaquetas y disminuye el riesgo de infarto de miocardio.",
        "shutil.copytree(src, dst): Copia recursivamente todo el árbol de directorios con raíz en src a un "
        "directorio llamado dst y devuelve el directorio de destino.",
        "El ejercicio físico regular mejora la sensibilidad a la insulina en adultos con diabetes de tipo 2.",
        "str.upper(): Devuelve una copia de la cadena con todos los caracteres convertidos a mayúsculas.",
    ),
}
_SHOT_QUERIES: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "en": {
        "question": ("why does a common painkiller help prevent heart attacks",
                     "how do I duplicate a whole folder with everything inside it",
                     "does working out help people with high blood sugar",
                     "how can I make text all capital letters"),
        "keywords": ("painkiller heart attack prevention", "duplicate folder with contents",
                     "exercise high blood sugar", "text to capital letters"),
        "typos": ("why does a comon painkiller help prevnt heart atacks",
                  "how do i duplicate a hole folder with evrything inside",
                  "does working out help ppl with high blood suger",
                  "how to make text all captial letters"),
    },
    "es": {
        "question": ("por qué un analgésico común ayuda a prevenir los infartos",
                     "cómo duplico una carpeta entera con todo lo que tiene dentro",
                     "hacer deporte ayuda a la gente con el azúcar alto",
                     "cómo pongo un texto todo en mayúsculas"),
        "keywords": ("analgésico prevenir infarto", "duplicar carpeta con contenido", "deporte azúcar alto",
                     "texto a mayúsculas"),
        "typos": ("por que un analgesico comun ayuda a prevenir los infartos",
                  "como duplico una carpeta entera con todo lo q tiene dentro",
                  "hacer deporte ayuda a la gente con el azucar alto",
                  "como pongo un texto todo en mayusculas"),
    },
}
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
    :data:`PRESETS` (``seed000``). Chat prompts carry all of it in the instruction; completion
    prompts (base models) in the header line before the examples. ``examples``: the few-shot
    ``(document, query)`` pairs of the describe prompt, replacing the built-in ones (two medical and
    two Python documents) for a corpus of one genre; a query copying one of them is rejected.
    """

    style: QueryStyle = "question"
    lang: PromptLang = "en"
    persona: str | None = None
    instruction: str | None = None
    preset: str | None = None
    examples: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        from ..errors import ConfigError

        if self.examples is not None and (not self.examples or any(
                len(e) != 2 or not all(isinstance(x, str) and x.strip() for x in e) for e in self.examples)):
            raise ConfigError("prompt examples must be a non-empty list of (document, query) pairs of non-empty text")

        if self.style not in QUERY_STYLES:
            raise ConfigError(f"query style must be one of {', '.join(QUERY_STYLES)}, got {self.style!r}")
        if self.lang not in PROMPT_LANGS:
            raise ConfigError(f"prompt language must be one of {', '.join(PROMPT_LANGS)}, got {self.lang!r}")
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
        return f"{text} {extra}" if extra else text

    def shots(self) -> tuple[tuple[str, str], ...]:
        if self.examples is not None:
            return tuple((d, q) for d, q in self.examples)
        return tuple(zip(_SHOT_DOCS[self.lang], _SHOT_QUERIES[self.lang][self.style], strict=True))


def shot_queries(control: PromptControl | None = None) -> frozenset[str]:
    """The example answers of ``control``'s prompt; a generated query copying one is rejected."""
    return frozenset(q for _, q in (control or PromptControl()).shots())


_DESCRIBE_SHOTS: tuple[tuple[str, str], ...] = PromptControl().shots()
#: The example answers of the default prompt; a generated query equal to one of them is rejected as a copy.
DESCRIBE_SHOT_QUERIES: frozenset[str] = shot_queries()

_CLUSTER_SHOT_DOCS: tuple[tuple[str, str], ...] = (
    ("D1", "Vitamin D deficiency is associated with weaker bones and more fractures in older adults."),
    ("D2", "Regular walking lowers blood pressure in middle-aged people."),
    ("D3", "Calcium and vitamin D supplements reduce hip fractures in nursing home residents."),
)
_CLUSTER_SHOT_ANSWER: dict[str, Any] = {"questions": [{
    "question": "do supplements help old people avoid broken bones",
    "judgments": [
        {"id": "D3", "relevant": True, "rank": 1, "reason": "supplements cut hip fractures"},
        {"id": "D1", "relevant": True, "rank": 2, "reason": "low vitamin D, more fractures"},
        {"id": "D2", "relevant": False, "rank": 3, "reason": "about blood pressure"},
    ]}]}
#: A second worked example for completion prompts (base models copy a lone example).
_CLUSTER_SHOT_DOCS_2: tuple[tuple[str, str], ...] = (
    ("D1", "os.remove(path): Remove (delete) the file path. If path is a directory, an OSError is raised."),
    ("D2", "shutil.rmtree(path): Delete an entire directory tree; path must point to a directory."),
    ("D3", "time.sleep(secs): Suspend execution of the calling thread for the given number of seconds."),
    ("D4", "os.rmdir(path): Remove (delete) the directory path. If the directory does not exist or is not empty, "
           "an OSError is raised."),
)
_CLUSTER_SHOT_ANSWER_2: dict[str, Any] = {"question": "how can I get rid of a folder and all the files in it",
                                          "answers": ["D2", "D4"]}
#: The example questions; a generated question copying one is dropped (counted as a repair).
CLUSTER_SHOT_QUESTIONS: frozenset[str] = frozenset(
    [q["question"] for q in _CLUSTER_SHOT_ANSWER["questions"]] + [_CLUSTER_SHOT_ANSWER_2["question"]])


def cluster_question_schema(*, max_docs: int = 16) -> type[Any]:
    """``{"question": str (<= 200 chars), "answers": [label, ...]}`` — one question of a completion
    prompt and the labels of the documents that answer it, best first."""
    from pydantic import BaseModel, Field

    class ClusterCompletion(BaseModel):
        question: str = Field(max_length=200)
        answers: list[str] = Field(max_length=max_docs)

    return ClusterCompletion


def describe_schema() -> type[Any]:
    """``{"query": str (<= 160 chars)}``."""
    from pydantic import BaseModel, Field

    class Description(BaseModel):
        query: str = Field(max_length=160)

    return Description


def cluster_schema(*, max_questions: int = 3, max_docs: int = 16) -> type[Any]:
    """``{"questions": [{"question", "judgments": [{"id", "relevant", "rank", "reason"}]}]}``.

    Deliberately permissive about ids and ranks: duplicates, unknown ids and
    omissions are *repaired and counted* (see :mod:`bakeoff.truth.repair`), not rejected.
    """
    from pydantic import BaseModel, Field

    class Judgment(BaseModel):
        id: str = Field(max_length=8)
        relevant: bool
        rank: int
        reason: str = Field(max_length=80)

    class ClusterQuestion(BaseModel):
        question: str = Field(max_length=200)
        judgments: list[Judgment] = Field(max_length=max_docs)

    class ClusterAnswer(BaseModel):
        questions: list[ClusterQuestion] = Field(max_length=max_questions)

    return ClusterAnswer


def _user_describe(text: str, control: PromptControl) -> str:
    doc, _, answer = _LABELS[control.lang]
    return f"{doc}:\n{text}\n\n{control.describe_instruction()}\n{answer}: {{\"query\": \"...\"}}"


def describe_messages(text: str, control: PromptControl | None = None) -> tuple[dict[str, str], ...]:
    """Few-shot chat turns asking for a query of ``control``'s style for ``text``."""
    c = control or PromptControl()
    msgs: list[dict[str, str]] = []
    for doc, query in c.shots():
        msgs.append({"role": "user", "content": _user_describe(doc, c)})
        msgs.append({"role": "assistant", "content": json.dumps({"query": query}, ensure_ascii=False)})
    msgs.append({"role": "user", "content": _user_describe(text, c)})
    return tuple(msgs)


def describe_completion(text: str, control: PromptControl | None = None) -> tuple[str, str]:
    """``(prompt, prefill)`` for a few-shot *completion*: a search log of documents and the
    JSON-encoded query for each, ending with ``text`` and an opened ``{"query": "``. The header
    names the persona (default: a non-expert) and carries the preset and the user's instruction."""
    c = control or PromptControl()
    doc_label, searched, _ = _LABELS[c.lang]
    header = _HEADER[c.lang].format(who=c.persona or _WHO_DEFAULT[c.lang])
    extra = c.extra()
    if extra:
        header = header.rstrip("\n") + " " + extra + "\n\n"
    parts = [header]
    for doc, query in c.shots():
        parts.append(f"{doc_label}: {doc}\n{searched}: {json.dumps({'query': query}, ensure_ascii=False)}\n\n")
    parts.append(f"{doc_label}: {text}\n{searched}: ")
    return "".join(parts), '{"query": "'


def _user_cluster(docs: Sequence[tuple[str, str]], n: int, control: PromptControl) -> str:
    listing = "\n".join(f"[{label}] {text}" for label, text in docs)
    task = (CLUSTER_INSTRUCTION if control.lang == "en" else _CLUSTER_INSTRUCTION_ES).format(n=n)
    if control.persona:
        task += (f" The user is {control.persona}." if control.lang == "en" else f" El usuario es {control.persona}.")
    extra = control.extra()
    if extra:
        task += " " + extra
    return f"{_DOCS_LABEL[control.lang]}:\n{listing}\n\n{task}\n{_LABELS[control.lang][2]}."


_CLUSTER_HEADER: Mapping[str, str] = {
    "en": ("Search log: a group of documents, then a question {who} asked that some of them answer, and the "
           "documents that answer it, best first.\n\n"),
    "es": ("Registro de búsquedas: un grupo de documentos, una pregunta que hizo {who} y que algunos responden, "
           "y los documentos que la responden, del mejor al peor.\n\n"),
}
_ASKED: Mapping[str, str] = {"en": "Asked", "es": "Pregunta"}
_DOCS_LABEL: Mapping[str, str] = {"en": "Documents", "es": "Documentos"}


def cluster_completion(docs: Sequence[tuple[str, str]], control: PromptControl | None = None) -> tuple[str, str]:
    """``(prompt, prefill)`` for base models: two worked groups (documents, then
    ``{"question": ..., "answers": [labels]}``), then ``docs`` and an opened ``{"question": "``.
    One question per request (ask again with another seed for more)."""
    c = control or PromptControl()
    header = _CLUSTER_HEADER[c.lang].format(who=c.persona or _WHO_DEFAULT[c.lang])
    extra = c.extra()
    if extra:
        header = header.rstrip("\n") + " " + extra + "\n\n"
    first = {"question": _CLUSTER_SHOT_ANSWER["questions"][0]["question"], "answers": ["D3", "D1"]}
    parts = [header]
    for shot_docs, answer in ((_CLUSTER_SHOT_DOCS_2, _CLUSTER_SHOT_ANSWER_2), (_CLUSTER_SHOT_DOCS, first)):
        listing = "\n".join(f"[{label}] {text}" for label, text in shot_docs)
        parts.append(f"{_DOCS_LABEL[c.lang]}:\n{listing}\n{_ASKED[c.lang]}: {json.dumps(answer, ensure_ascii=False)}\n\n")
    listing = "\n".join(f"[{label}] {text}" for label, text in docs)
    parts.append(f"{_DOCS_LABEL[c.lang]}:\n{listing}\n{_ASKED[c.lang]}: ")
    return "".join(parts), '{"question": "'


def cluster_messages(docs: Sequence[tuple[str, str]], *, n_questions: int,
                     control: PromptControl | None = None) -> tuple[dict[str, str], ...]:
    """Few-shot chat turns asking for ``n_questions`` questions judged over ``docs`` (label, text)."""
    c = control or PromptControl()
    return (
        {"role": "user", "content": _user_cluster(_CLUSTER_SHOT_DOCS, 1, c)},
        {"role": "assistant", "content": json.dumps(_CLUSTER_SHOT_ANSWER)},
        {"role": "user", "content": _user_cluster(docs, n_questions, c)},
    )
