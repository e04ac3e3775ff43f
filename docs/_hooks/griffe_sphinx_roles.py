"""Griffe extension for the API pages: the package's docstrings are written in reStructuredText style, which
mkdocstrings renders as Markdown. Sphinx roles (``:class:`~bakeoff.data.model.Run```) become code spans
(``Run``; the full path without ``~``), and a paragraph ending in ``::`` before a literal block ends in ``:``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|type):`(~?)([^`]+)`")
_LITERAL = re.compile(r"::(\n\s*\n)")


def rewrite(text: str) -> str:
    """The docstring ``text`` with its Sphinx roles as code spans and ``::`` literal-block markers as ``:``."""

    def role(match: re.Match[str]) -> str:
        short, target = match.group(1), match.group(2).strip()
        if "<" in target and target.endswith(">"):  # :func:`title <target>`
            return f"`{target.split('<', 1)[0].strip()}`"
        return f"`{target.rsplit('.', 1)[-1] if short else target}`"

    return _LITERAL.sub(r":\1", _ROLE.sub(role, text))


class SphinxRoles(griffe.Extension):
    """Rewrite every docstring as it is loaded (see :func:`rewrite`)."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
