"""The demo corpus: deterministic, safe, a few thousand stdlib docstrings."""

from __future__ import annotations

from bakeoff.stdlib_corpus import SAFE_MODULES, extract, stdlib_corpus


def test_stdlib_corpus_is_deterministic_and_safe() -> None:
    a = stdlib_corpus()
    b = stdlib_corpus()
    assert a.fingerprint() == b.fingerprint()
    assert 2000 < len(a) < 10000
    assert list(a.ids) == sorted(a.ids) and a.ids == a.titles
    roots = {i.split(".")[0] for i in a.ids}
    assert not roots & {"this", "antigravity", "idlelib", "tkinter", "turtle", "test", "unittest"}
    assert not any(part.startswith("_") for i in a.ids for part in i.split(".")[1:])
    assert "json.dumps" in a and "Serialize" in a["json.dumps"].text
    assert a["json.dumps"].text.startswith("dumps(obj")
    assert a["json.dumps"].metadata["module"] == "json" and a["json.dumps"].metadata["kind"] == "function"
    assert all(m in SAFE_MODULES for m in {meta["module"] for meta in a.metadata})


def test_only_objects_defined_in_the_module_are_taken() -> None:
    docs = extract(("json",))
    assert "json.JSONDecodeError" in docs            # defined in json.decoder, a json submodule
    assert not any(k.startswith("json.codecs") for k in docs)
