"""``python -m bakeoff.truth.llama_server ARGS``: ``python -m llama_cpp.server ARGS`` with
llama.cpp's *extra buffer types* (CPU weight repacking, AMX kernels) switched off.

Why: with llama-cpp-python 0.3.36 built on a CPU advertising AVX-512 + AMX, the
first ``llama_decode`` with repacked Q4_K weights crashed the process with SIGSEGV;
``use_extra_bufts=False`` (llama.cpp's ``--no-repack``) is the documented switch that
avoids those kernels. Re-tested on 0.3.36 on an AVX-512 CPU *without* AMX (AMD EPYC,
avx512_bf16/vnni): no crash, but no faster either (17.6 s vs 18.6 s for 20 describe
requests on one thread) and *different* tokens (1 of 20 generations equal): repacked
kernels are another numeric path, so repacking stays off (outputs stay those of every
earlier run and cache entry; the cache identity says ``+norepack``).
llama-cpp-python exposes no server flag for it, so this launcher changes the
model-parameter defaults before handing over to the real server ``main``.
Set ``BAKEOFF_LLAMA_REPACK=1`` to turn repacking on. ``BAKEOFF_LLAMA_SNAPSHOTS=N`` (> 0) keeps the
KV cache of the last N prompts and restores it for a prompt asked again
(:mod:`bakeoff.truth.llama_snapshots`; same answers). A request carrying
:func:`bakeoff.truth.json_stop.marker` ends once its JSON answer is complete (:mod:`bakeoff.truth.json_stop`).

With ``BAKEOFF_LLAMA_SLOTS=N`` (N > 1) the process serves N slots of one context instead, each at
``/slot/<s>/v1`` and each answering like a one-slot server, their one-token decodes batched
(:mod:`bakeoff.truth.llama_slots`); the same arguments are read by llama-cpp-python's own parser and the
model is built by its own loader.

The server ends itself when the process that started it is gone: a watcher thread
compares ``os.getppid()`` with the parent it was started by (``BAKEOFF_PARENT_PID``,
set by :class:`~bakeoff.truth.local_llm.LocalLLMServer`) once a second, so a killed
``bakeoff demo`` or ``generate`` never leaves a model server behind.
"""

from __future__ import annotations

import os


def _patch_defaults() -> None:
    import llama_cpp.llama_cpp as low  # the module ``llama_cpp.Llama`` reads its defaults from

    original = low.llama_model_default_params

    def no_extra_bufts():  # type: ignore[no-untyped-def]
        params = original()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = no_extra_bufts


def _exit_with_parent(parent: int, *, every_s: float = 1.0) -> None:
    """Start a daemon thread that ends this process (``os._exit(0)``) once ``parent`` is no longer
    its parent (the parent died and the process was re-parented)."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every_s)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    parent = os.environ.get("BAKEOFF_PARENT_PID", "")
    if parent.isdigit():
        _exit_with_parent(int(parent))
    if os.environ.get("BAKEOFF_LLAMA_REPACK") != "1":
        _patch_defaults()
    from . import json_stop
    from .llama_snapshots import install, limit_from_env

    json_stop.install()
    limit = limit_from_env()
    if limit > 0:
        install(limit)
    slots = slots_from_env()
    if slots > 1:
        _serve_slots(slots)
        return
    from llama_cpp.server.__main__ import main as server_main

    server_main()


def slots_from_env() -> int:
    """``$BAKEOFF_LLAMA_SLOTS`` as a positive integer (default 1: llama-cpp-python's one-slot server)."""
    raw = os.environ.get("BAKEOFF_LLAMA_SLOTS", "1").strip() or "1"
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1


def _serve_slots(count: int) -> None:
    """llama-cpp-python's server arguments, model loader and request types; ``count`` slots of one context."""
    import argparse

    import uvicorn
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.model import LlamaProxy
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    from .llama_slots import Slots, build_app

    parser = argparse.ArgumentParser(description="bakeoff's llama.cpp slot server")
    add_args_from_model(parser, Settings)
    args = parser.parse_args()
    server = parse_model_from_args(ServerSettings, args)
    model = parse_model_from_args(ModelSettings, args)

    def make(n_ctx: int):  # type: ignore[no-untyped-def]
        return LlamaProxy.load_llama_from_model_settings(model.model_copy(update={"n_ctx": n_ctx}))

    slots = Slots(make, count=count, n_ctx=model.n_ctx)
    uvicorn.run(build_app(slots, model_alias=model.model_alias or model.model), host=server.host, port=server.port,
                log_level="warning")


if __name__ == "__main__":
    main()
