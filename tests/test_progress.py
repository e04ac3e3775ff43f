"""Progress off a terminal: tqdm's meter as plain lines, throttled; nothing for a quick step."""

from __future__ import annotations

import pytest

from bakeoff.progress import LineBar, progress_bar


def test_off_terminal_a_long_step_writes_plain_meter_lines(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_PROGRESS_INTERVAL", "0")
    bar = progress_bar(total=4, desc="generate", unit="doc")
    assert isinstance(bar, LineBar)  # capsys's stderr is not a terminal
    bar.set_postfix_str("12.5 tok/s")
    for _ in range(4):
        bar.update(1)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4  # one per update; the closing line would repeat the last
    assert "\r" not in "".join(lines)
    assert lines[0].startswith("generate:  25%") and "1/4" in lines[0] and "12.5 tok/s" in lines[0]
    assert "4/4" in lines[-1]


def test_the_closing_line_does_not_repeat_the_last_one(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_PROGRESS_INTERVAL", "0")
    bar = progress_bar(total=87, desc="encode queries", unit="text")
    bar.update(87)  # one batch, reported once
    bar.close()
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_off_terminal_a_quick_step_writes_nothing(capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_PROGRESS_INTERVAL", "3600")
    assert list(progress_bar(range(3), desc="q")) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_disabled_bar_is_silent(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAKEOFF_PROGRESS_INTERVAL", "0")
    bar = progress_bar(total=2, desc="x", enabled=False)
    bar.update(2)
    bar.close()
    assert capsys.readouterr().err == ""


def test_a_malformed_interval_is_one_line_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from bakeoff.errors import ConfigError

    monkeypatch.setenv("BAKEOFF_PROGRESS_INTERVAL", "fast")  # it fell back to 30 s without a word
    with pytest.raises(ConfigError, match="^BAKEOFF_PROGRESS_INTERVAL must be a number of seconds, got 'fast'$"):
        progress_bar(total=2, desc="x")
