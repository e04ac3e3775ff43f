"""A fixed six-example completion prompt for the KV-cache tests (slots, snapshots, JSON stop): they need
prompts of known, realistic length (a few hundred tokens of shared header), not the product's prompt."""

from __future__ import annotations

from bakeoff.truth.prompts import PromptControl

EXAMPLES: tuple[tuple[str, str], ...] = (
    ("numpy.argsort argsort(a, axis=-1, kind=None, order=None) Returns the indices that would sort an array.",
     "how do I get the indices that would sort an array"),
    (("dateutil.parser.parse parse(timestr, default=None, ignoretz=False) Parse a string in one of the supported "
      "formats into a datetime object."),
     "how to turn a date written as text into a datetime"),
    (("click.confirm confirm(text, default=False, abort=False) Prompts for confirmation (yes/no question). If the "
      "user aborts the input by sending an interrupt signal this function will catch it."),
     "how can I ask the user a yes or no question in the terminal"),
    ("requests.get get(url, params=None, **kwargs) Sends a GET request. Returns a Response object.",
     "how to download a web page from a url"),
    (("psutil.cpu_percent cpu_percent(interval=None, percpu=False) Return a float representing the current "
      "system-wide CPU utilization as a percentage."),
     "how can I check how busy the processor is"),
    (("PIL.Image.Image.rotate rotate(self, angle, resample=0, expand=0) Returns a rotated copy of this image. "
      "angle is in degrees counter clockwise."),
     "how do I rotate a picture by 90 degrees"),
)

FIXED_PROMPT = PromptControl(examples=EXAMPLES)


def fixed_completion(text: str) -> tuple[str, str]:
    """``(prompt, prefill)``: the search-log completion prompt with :data:`EXAMPLES`, in a fixed format of
    its own (header line, examples, document), so the token counts these tests rely on do not move when
    the product's prompt changes."""
    import json

    parts = ["Search log: each document, then what a non-expert typed into the search box to find it.\n\n"]
    for doc, query in EXAMPLES:
        parts.append(f"Document: {doc}\nSearched for: {json.dumps({'query': query})}\n\n")
    parts.append(f"Document: {text}\nSearched for: ")
    return "".join(parts), '{"query": "'


#: The four generic examples of the first describe prompt, for the replica test that found its docstring by
#: scanning generations of exactly this prompt.
FOUR_SHOTS: tuple[tuple[str, str], ...] = (
    ("Aspirin irreversibly inhibits cyclooxygenase-1, reducing thromboxane A2 synthesis in platelets "
     "and lowering the risk of myocardial infarction.", "why does a common painkiller help prevent heart attacks"),
    ("shutil.copytree(src, dst): Recursively copy an entire directory tree rooted at src to a directory "
     "named dst and return the destination directory.", "how do I duplicate a whole folder with everything inside it"),
    ("Regular physical exercise improves insulin sensitivity in adults with type 2 diabetes.",
     "does working out help people with high blood sugar"),
    ("str.upper(): Return a copy of the string with all the cased characters converted to uppercase.",
     "how can I make text all capital letters"),
)


def four_shot_completion(text: str) -> tuple[str, str]:
    """``(prompt, prefill)`` of that first prompt: header, the four examples, the document."""
    import json

    parts = ["Search log: each document, then what a non-expert typed into the search box to find it.\n\n"]
    for doc, query in FOUR_SHOTS:
        parts.append(f"Document: {doc}\nSearched for: {json.dumps({'query': query})}\n\n")
    parts.append(f"Document: {text}\nSearched for: ")
    return "".join(parts), '{"query": "'
