"""Lazy package faces (PEP 562): a package's public names are imported on first use.

A package ``__init__`` lists where each public name lives and gets a module
``__getattr__`` and ``__dir__`` from :func:`lazy_exports`::

    __all__ = ["Corpus", "load_beir"]
    __getattr__, __dir__ = lazy_exports(__name__, {"Corpus": ".model", "load_beir": ".loaders"})

``from bakeoff.data import Corpus`` then imports ``bakeoff.data.model`` only
(not the loaders); ``import bakeoff.metrics`` imports no arm, model or training
module. A name resolved once is stored in the package namespace, so later
lookups are plain attribute reads. Type checkers see the names through an
``if TYPE_CHECKING:`` block of real imports in the same ``__init__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``; ``exports`` maps a public name to the module that
    defines it, relative (``".model"``) or absolute; ``".stats:comparison"`` exports ``comparison`` under
    the given name."""

    def resolve(name: str, target: str) -> Any:
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module, package), attr or name)

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = resolve(name, target)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
