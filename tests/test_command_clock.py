"""A command's dates come from the one clock ``reader.cli.main`` is given (``command_clock``), so
a test can fix them: the projector page's time, a match log's default name, a calibration's
date.  In process (``main(ARGS, clock=...)``): milliseconds a case."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from fakes import FakeClock

WALL = datetime(2031, 5, 6, 7, 8, 9, tzinfo=timezone.utc)


@pytest.fixture
def karuta(tmp_path, monkeypatch, capsys):
    """``karuta ARGS`` in this process on a ``FakeClock`` at ``WALL`` (local time: UTC), in
    ``tmp_path`` with its own data folders; returns (exit status, stdout, stderr)."""
    from reader.cli import main

    monkeypatch.chdir(tmp_path)
    for kind in ("DATA", "CONFIG", "CACHE"):
        monkeypatch.setenv(f"KARUTA_{kind}_DIR", str(tmp_path / kind.lower()))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()

    def run(*args, stdin: str = ""):
        monkeypatch.setattr("sys.stdin", __import__("io").StringIO(stdin))
        try:
            main([str(a) for a in args], clock=FakeClock(wall=WALL))
            rc = 0
        except SystemExit as e:
            rc = e.code or 0
        out, err = capsys.readouterr()
        return rc, out, err

    yield run
    monkeypatch.undo()
    time.tzset()


def test_the_projector_page_shows_the_commands_time(karuta, tmp_path):
    (tmp_path / "p.csv").write_text("name,group\nAoi,\nBen,\nChika,\nDai,\n", encoding="utf-8")
    rc, out, err = karuta("tournament", "new", "-f", "t.sqlite", "--players", "p.csv",
                          "--seed", 1)
    assert rc == 0, err
    assert "更新 07:08:09" in (tmp_path / "t-pages" / "standings.html").read_text("utf-8")


def test_a_match_logs_default_name_is_the_commands_date(karuta, tmp_path):
    rc, out, err = karuta("match", "keep", "--rules", "kyogi", "--seed", 1)
    assert "log match-kyogi-20310506-070809.jsonl" in out, (out, err)
    assert (tmp_path / "match-kyogi-20310506-070809.jsonl").exists()


def test_a_calibration_is_dated_by_the_clock_it_is_given(tmp_path):
    from reader.drills.calibrate import CalibrationResult, CalibrationStore

    store = CalibrationStore(tmp_path / "calibration.json", clock=FakeClock(wall=WALL))
    store.save("pulse", CalibrationResult(offset_ms=12.5, taps=20, dropped=0, spread_ms=0.3))
    assert store.get("pulse")["date"] == "2031-05-06T07:08:09+00:00"
