"""A tiny JSONPath subset for reading hit lists out of service responses.

Grammar (everything else is a :class:`SelectorError`)::

    selector := "$" step*
    step     := "." NAME            # object member (NAME: letters, digits, _ and -)
              | "[" INT "]"         # array element (negative counts from the end)
              | "[" QUOTED "]"      # object member, 'single' or "double" quoted
              | "[*]" | ".*"        # every element of an array (or value of an object)

``select("$.hits[*].id", {"hits": [{"id": "a"}, {"id": "b"}]}) == ["a", "b"]``.
A missing member or index is an error (naming the step), not an empty list;
an empty array under ``[*]`` gives ``[]``. The result is always a list.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["SelectorError", "parse_selector", "select"]

_STEP = re.compile(r"""\.(?P<name>[A-Za-z_][\w\-]*)|\.\*|\[\*\]|\[(?P<idx>-?\d+)\]|\[(?P<q>'[^']*'|"[^"]*")\]""")


class SelectorError(ValueError):
    """A selector that does not parse, or a document that does not have the selected path."""


def parse_selector(selector: str) -> tuple[tuple[str, Any], ...]:
    """Steps of ``selector``: ``("key", name)``, ``("index", int)`` or ``("all", None)``."""
    s = selector.strip()
    if not s.startswith("$"):
        raise SelectorError(f"selector {selector!r} must start with '$'")
    steps: list[tuple[str, Any]] = []
    pos = 1
    while pos < len(s):
        m = _STEP.match(s, pos)
        if m is None:
            raise SelectorError(f"selector {selector!r}: cannot parse at {s[pos:]!r}")
        if m.group("name") is not None:
            steps.append(("key", m.group("name")))
        elif m.group("idx") is not None:
            steps.append(("index", int(m.group("idx"))))
        elif m.group("q") is not None:
            steps.append(("key", m.group("q")[1:-1]))
        else:
            steps.append(("all", None))
        pos = m.end()
    return tuple(steps)


def select(selector: str, document: Any) -> list[Any]:
    """Values of ``document`` at ``selector`` (see module docstring)."""
    nodes: list[Any] = [document]
    where = "$"
    for kind, arg in parse_selector(selector):
        out: list[Any] = []
        for node in nodes:
            if kind == "key":
                if not isinstance(node, dict) or arg not in node:
                    raise SelectorError(f"no member {arg!r} at {where}")
                out.append(node[arg])
            elif kind == "index":
                if not isinstance(node, list) or not -len(node) <= arg < len(node):
                    raise SelectorError(f"no element [{arg}] at {where}")
                out.append(node[arg])
            else:
                if isinstance(node, list):
                    out.extend(node)
                elif isinstance(node, dict):
                    out.extend(node.values())
                else:
                    raise SelectorError(f"[*] needs an array at {where}")
        nodes = out
        where += f".{arg}" if kind == "key" else (f"[{arg}]" if kind == "index" else "[*]")
    return nodes
