"""The ``bakeoff`` command line (typer). Each command lives in its own module with a
``register(app)`` function; :data:`COMMAND_MODULES` lists them."""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import sys
import traceback
import typing
from collections.abc import Iterator

import typer

from ..errors import BakeoffError, describe_os_error

__all__ = ["COMMAND_MODULES", "build_app", "main"]

#: Command modules under ``bakeoff.cli``; each defines ``register(app: typer.Typer)``.
COMMAND_MODULES: tuple[str, ...] = ("run", "eval", "report", "compare", "mine", "generate", "demo", "finetune", "label",
                                   "ingest", "assess", "tune", "calibrate")


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


@functools.cache
def _command() -> typer.core.TyperGroup:
    """The app as a command object, built once per process (building it parses every command's
    signature; tests call :func:`main` hundreds of times)."""
    from ._common import plain_help

    return plain_help(typer.main.get_command(build_app()))


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{record.levelname.lower()}: {record.getMessage()}".split())


def write_line(text: str) -> None:
    from ..progress import write_line as write  # imported when used: building the app stays light

    write(text)


def close_bars() -> None:
    from ..progress import close_bars as close

    close()


class _BarSafeHandler(logging.StreamHandler):
    """Log lines on stderr on a line of their own, never on a progress bar's line."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            write_line(self.format(record))
        except Exception:  # logging must never raise  # noqa: BLE001
            self.handleError(record)


#: Printed after the traceback of an unexpected exception (a bug, not a user error).
BUG_REPORT = ("bakeoff: this is a bug in bakeoff, not a problem with your input; please report it with the "
              "command line and the traceback above")


def _fail(message: str) -> int:
    """Clear progress bars, print ``error: MESSAGE`` as one line on stderr; exit code 2."""
    close_bars()
    write_line("error: " + " ".join(str(message).split()))
    return 2


class _NamedStdout:
    """``sys.stdout`` whose failed writes name it ``<stdout>`` (a full disk behind a redirection), as
    every file bakeoff writes is named (:mod:`bakeoff._io`); everything else is the stream's own."""

    def __init__(self, stream: typing.TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from .._io import naming

        with naming("<stdout>"):
            return self._stream.write(text)

    def flush(self) -> None:
        from .._io import naming

        with naming("<stdout>"):
            self._stream.flush()

    def __getattr__(self, name: str) -> typing.Any:
        return getattr(self._stream, name)


def _usage_message(exc: typer.TyperException) -> str:
    """A usage error (typer's vendored click exceptions carry the command context) as one line."""
    ctx = getattr(exc, "ctx", None)
    where = f"{ctx.command_path}: " if ctx is not None else ""
    tip = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    got = ""
    cause = exc.__cause__
    if hasattr(cause, "errors"):  # typer coerces option values with pydantic: quote the bad value
        try:
            got = f" (got {cause.errors()[0]['input']!r})"  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001
            got = ""
    return where + exc.format_message() + got + tip


def main(argv: list[str] | None = None) -> int:
    """Entry point and the one error boundary of the command line.

    * expected failures — :class:`BakeoffError` (bad input, configuration, missing extras, servers
      that fail or answer nonsense), usage errors, ``OSError`` (disk full, permissions, a folder
      where a file is due, symlink loops ...), inputs nested too deeply to parse — print ONE line
      ``error: ...`` on stderr after clearing any progress bar, and exit 2;
    * an interrupt exits 130; SIGTERM exits 143 after the same clean-up as an error (``finally`` blocks
      run: staging folders removed, local servers stopped);
    * stdout closed by its reader (``bakeoff run ... | head``) exits 141 quietly: the status of a program
      killed by SIGPIPE (128 + 13), as the shell reports it for ``cat``, ``yes`` or ``grep`` cut short by
      ``head``, so ``set -o pipefail`` sees a cut output the same way; stdout is pointed at ``/dev/null``
      first (the Python documentation's "Note on SIGPIPE"), so the interpreter's final flush cannot fail;
    * anything else is a bug: the traceback, then a line asking for a report, exit 1.

    With ``--no-progress``, or when stderr is not a terminal, the libraries' bars are off too
    (:func:`bakeoff.progress.library_bars_off`).
    """
    args = sys.argv[1:] if argv is None else argv
    with _terminate_as_exit():
        rv = _main_bars(args, argv)
    if rv == TERMINATED and argv is None:
        # the program itself was terminated and has cleaned up; worker threads still blocked on a request
        # in flight would hold the interpreter's exit until their timeout, so leave without joining them
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(TERMINATED)
    return rv


#: Exit status after SIGTERM (128 + 15, as a shell reports it).
TERMINATED = 143
#: Exit status when the reader of stdout went away (128 + SIGPIPE's 13, as a shell reports it).
STDOUT_CLOSED = 141


def _stdout_closed(argv: list[str] | None) -> int:
    """The reader of stdout is gone: no message (there is no one to read it), stdout pointed at
    ``/dev/null`` in a program of its own (``argv`` is ``None``) so that no later flush fails, exit 141."""
    close_bars()
    if argv is None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
            os.close(devnull)
        except (OSError, ValueError):
            pass
    return STDOUT_CLOSED


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that ``finally`` blocks run (staging folders removed, local
    servers stopped, databases closed) before the command exits with 143."""


@contextlib.contextmanager
def _terminate_as_exit() -> Iterator[None]:
    """Within: SIGTERM raises :class:`_Terminated` (only where its handler is the default one and in the
    main thread; a caller's own handler is left alone)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def terminated(signum: int, frame: object) -> None:
        raise _Terminated

    signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _main_bars(args: list[str], argv: list[str] | None) -> int:
    asked = "--no-progress" in args
    bars_off = asked or not bool(getattr(sys.stderr, "isatty", lambda: False)())
    from ..progress import library_bars_off  # imported when used: building the app stays light

    with library_bars_off(force=asked) if bars_off else contextlib.nullcontext(), \
            contextlib.redirect_stdout(_NamedStdout(sys.stdout)):
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    handler = _BarSafeHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    log = logging.getLogger("bakeoff")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        rv = _command().main(args=argv, prog_name="bakeoff", standalone_mode=False)
        return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
    except BakeoffError as exc:
        return _fail(str(exc))
    except typer.TyperException as exc:  # usage errors (bad option, bad value, missing argument)
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `bakeoff` / `bakeoff label`: the help
            exc.show()  # type: ignore[attr-defined]
            return int(getattr(exc, "exit_code", 2))
        return _fail(_usage_message(exc))
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        close_bars()
        write_line("aborted")
        return 1
    except KeyboardInterrupt:
        close_bars()
        write_line("interrupted")
        return 130
    except _Terminated:
        close_bars()
        write_line("terminated")
        return TERMINATED
    except BrokenPipeError as exc:
        if exc.filename not in (None, "<stdout>"):  # a pipe of our own (a subprocess arm): an error like any other
            return _fail(describe_os_error(exc))
        return _stdout_closed(argv)
    except OSError as exc:
        return _fail(describe_os_error(exc))
    except RecursionError:
        return _fail("an input is nested too deeply to read (e.g. JSON nested thousands of levels)")
    except SystemExit as exc:
        if isinstance(exc.__context__, BrokenPipeError):  # rich's Console exits 1 when stdout is closed under it
            return _stdout_closed(argv)
        return int(exc.code or 0) if isinstance(exc.code, int) or exc.code is None else 1
    except Exception as exc:  # noqa: BLE001
        from .._io import sqlite_os_error

        storage = sqlite_os_error(exc)  # a database's full disk, wherever it was opened
        if storage is not None:
            return _fail(describe_os_error(storage))
        close_bars()
        traceback.print_exc()
        write_line(BUG_REPORT)
        return 1
    finally:
        log.removeHandler(handler)
