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
Set ``BAKEOFF_LLAMA_REPACK=1`` to turn repacking on.
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


def main() -> None:
    if os.environ.get("BAKEOFF_LLAMA_REPACK") != "1":
        _patch_defaults()
    from llama_cpp.server.__main__ import main as server_main

    server_main()


if __name__ == "__main__":
    main()
