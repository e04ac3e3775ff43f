"""The ``bakeoff`` command line (typer). Each command lives in its own module with a
``register(app)`` function; :data:`COMMAND_MODULES` lists them."""

from __future__ import annotations

import importlib
import logging
import sys

import typer

from ..errors import BakeoffError

__all__ = ["COMMAND_MODULES", "build_app", "main"]

#: Command modules under ``bakeoff.cli``; each defines ``register(app: typer.Typer)``.
COMMAND_MODULES: tuple[str, ...] = ("run", "eval", "report", "compare", "mine", "generate", "demo", "finetune", "label",
                                   "ingest", "assess", "tune")


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="bakeoff",
        help="Which retriever should my corpus use? Compare retrieval arms with numbers.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(app)
    return app


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}".replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app; a :class:`BakeoffError` prints one line and exits 2."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    log = logging.getLogger("bakeoff")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        build_app()(args=argv, prog_name="bakeoff", standalone_mode=True)
    except BakeoffError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        log.removeHandler(handler)
    return 0
