"""A damaged stats database (issue 12, item 3): the damaged file is kept, what SQLite can
still read is copied into the new one, and the user is told what was recovered.  Rows of
the wrong type (a damaged page can read back that way) do not become tracebacks.

The commands run in this process (``cli_run.run_marked``); those marked ``entry_point`` run
the installed command as a user's shell does."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest
from cli_run import run_inproc, run_marked

from reader.drills.stats import StatsDB

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=timezone.utc)


def fill(path, taps=3000):
    with StatsDB(path) as db:
        sid = db.start_session("speed", T0)
        for i in range(taps):
            db.record_tap(sid, 1 + i % 100, T0 + timedelta(seconds=i), kimariji="む",
                          reaction_ms=100.0 + i % 37, from_kami_ms=400.0 + i, correct=True)
    # fold the WAL into the main file, so the damage below hits the data pages
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def damage_page(path, page: int, page_size=4096):
    with open(path, "r+b") as f:
        f.seek(page * page_size)
        f.write(bytes((i * 7 + 3) % 256 for i in range(page_size)))


def sha1(p) -> str:
    return hashlib.sha1(open(p, "rb").read()).hexdigest()


def test_one_bad_page_costs_only_its_rows(tmp_path):
    path = tmp_path / "stats.sqlite3"
    fill(path)
    pages = os.path.getsize(path) // 4096
    damage_page(path, pages // 2)
    damaged_hash = sha1(path)
    with StatsDB(path) as db:
        assert db.notice and "was damaged" in db.notice and "kept as stats.sqlite3.corrupt-1" in db.notice
        assert "taps" in db.notice and "1 session" in db.notice, db.notice
        taps = db.taps()
        assert 2500 <= len(taps) < 3000, len(taps)  # one page of ~3000 rows lost, not all
        assert all(t.reaction_ms == 100.0 + (t.id - 1) % 37 for t in taps), "recovered rows are exact"
        assert f"{len(taps)} taps" in db.notice
        assert db.per_poem()[0].taps > 0
    kept = tmp_path / "stats.sqlite3.corrupt-1"
    assert kept.exists() and sha1(kept) == damaged_hash, "the damaged file is kept as it was"


def test_garbage_file_recovers_nothing_and_says_so(tmp_path):
    path = tmp_path / "stats.sqlite3"
    path.write_bytes(b"not a database at all" * 500)
    with StatsDB(path) as db:
        assert "nothing in it could be read" in db.notice
        assert db.taps() == []
    assert (tmp_path / "stats.sqlite3.corrupt-1").read_bytes() == b"not a database at all" * 500


def test_rows_of_the_wrong_type_are_left_out_not_tracebacks(tmp_path):
    path = tmp_path / "stats.sqlite3"
    fill(path, taps=10)
    con = sqlite3.connect(path)
    con.execute("UPDATE taps SET reaction_ms = 'fast' WHERE id = 3")
    con.execute("INSERT INTO memory (poem, state, due, stability, card, updated) "
                "VALUES (5, 'review', 'x', 1.0, '{not json', 'x')")
    con.commit()
    con.close()
    with StatsDB(path) as db:
        rows = db.per_poem(only_with_data=True)
        assert {r.poem for r in rows} >= set(range(1, 11))
        assert db.memory_cards() == {}
        assert [t.id for t in db.taps()] == [1, 2, 4, 5, 6, 7, 8, 9, 10]  # row 3 left out
    r = run_marked("stats", "--json", data_dir=tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.entry_point
def test_karuta_stats_says_what_was_recovered(tmp_path):
    path = tmp_path / "stats.sqlite3"
    fill(path, taps=2000)
    damage_page(path, os.path.getsize(path) // 4096 - 2)
    r = run_marked("stats", data_dir=tmp_path)
    assert r.returncode == 1, r.stderr  # damaged: said, and the exit status says it too
    line = r.stderr.strip()
    assert line.count("\n") == 0 and line.startswith("karuta: the stats database") and \
        "taps" in line and "corrupt-1" in line, line
    assert " no kimariji" in r.stdout  # what could be read is shown
    r = run_marked("stats", data_dir=tmp_path)  # the new database: read as any other
    assert r.returncode == 0 and not r.stderr and " no kimariji" in r.stdout


def _with_a_table_dropped(path, table: str) -> str:
    """A stats database of 50 taps with ``table`` dropped; returns the damaged file's sha1."""
    fill(path, taps=50)
    con = sqlite3.connect(path)
    con.execute(f"DROP TABLE {table}")
    con.commit()
    con.close()
    return sha1(path)


def test_a_table_missing_from_the_database_is_kept_and_salvaged_not_a_traceback(tmp_path):
    """Issue 22: ``karuta stats`` on a database whose ``reviews`` table is gone: the file is
    kept as corrupt-1, the taps that are there come across, one line says so."""
    damaged = _with_a_table_dropped(tmp_path / "stats.sqlite3", "reviews")
    r = run_marked("stats", "--json", data_dir=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    line = r.stderr.strip()
    assert line.count("\n") == 0 and "table reviews is missing" in line and "50 taps" in line
    assert sum(p["taps"] for p in json.loads(r.stdout)) == 50
    assert sha1(tmp_path / "stats.sqlite3.corrupt-1") == damaged


def test_a_missing_answers_table_is_said_not_read_as_no_answers_yet(tmp_path):
    """Issue 33: the ``taps`` table gone read as "no answers recorded yet" (exit 0).  The
    damage is one line and exit 1, naming what is gone and what could be read; the file is
    kept; a later ``karuta stats`` still points at the damaged copy beside the new one."""
    damaged = _with_a_table_dropped(tmp_path / "stats.sqlite3", "taps")
    r = run_marked("stats", data_dir=tmp_path)
    assert r.returncode == 1 and "no answers recorded yet" not in r.stdout, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("karuta: the stats database"), r.stderr
    assert "its table taps is missing" in lines[0] and "1 session, no answers" in lines[0]
    assert sha1(tmp_path / "stats.sqlite3.corrupt-1") == damaged
    r = run_marked("stats", data_dir=tmp_path)
    assert r.returncode == 0 and "no answers recorded yet" in r.stdout
    assert "a damaged database is kept beside it: stats.sqlite3.corrupt-1" in r.stdout


def test_a_database_locked_by_another_program_is_one_line_and_kept(tmp_path, monkeypatch):
    """Issue 22: another program holds the database exclusively (the test holds it): after
    the busy timeout, one line; the file is not moved aside or changed."""
    path = tmp_path / "stats.sqlite3"
    fill(path, taps=20)
    from reader.drills import stats

    stats_wait = 0.5  # in this process, the wait for the file cut from 5 s
    monkeypatch.setattr(stats, "BUSY_TIMEOUT_S", stats_wait)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("PRAGMA locking_mode = EXCLUSIVE")
    other.execute("BEGIN EXCLUSIVE")
    try:
        r = run_inproc("stats", data_dir=tmp_path)
    finally:
        other.execute("ROLLBACK")
        other.close()
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and "in use by another program" in lines[0], \
        r.stderr
    assert f"{stats_wait:g} s" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir() if "corrupt" in p.name) == []
    with StatsDB(path) as db:
        assert len(db.taps()) == 20


def test_calibrate_show_with_fields_of_another_type(tmp_path):
    """Issue 22: a calibration file whose ``history`` and ``spread_ms`` are of another type
    is shown (? for what cannot be), not a traceback; the offset still applies."""
    (tmp_path / "calibration.json").write_text(json.dumps({"version": 1, "devices": {
        "sounddevice:pulse": {"offset_ms": 12.5, "spread_ms": "wide", "taps": [1],
                              "history": [1, "x", {"offset_ms": "a"}, {"offset_ms": 3.0},
                                          {"offset_ms": 5.0, "spread_ms": {}}]},
        "pygame:default": {"offset_ms": -4.0, "history": "none", "date": 7}}}))
    r = run_marked("calibrate", "--show", env={"KARUTA_CONFIG_DIR": str(tmp_path)})
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert "sounddevice:pulse: +12.5 ms  (? taps, spread ?" in r.stdout, r.stdout
    assert "history: 2 calibrations, offsets +3.0 to +5.0 ms" in r.stdout
    assert "pygame:default: -4.0 ms" in r.stdout
    from reader.drills.calibrate import CalibrationStore

    assert CalibrationStore(tmp_path / "calibration.json").offset_ms("sounddevice:pulse") == 12.5


@pytest.mark.parametrize("what", [pytest.param("folder", marks=pytest.mark.entry_point),
                                  "dangling link"])
def test_a_stats_database_that_is_a_folder_or_a_dangling_link_is_said_so(tmp_path, what):
    """Not SQLite's "unable to open database file": what the path is, and nothing made."""
    from cli_run import one_line_error

    db = tmp_path / "stats.sqlite3"
    if what == "folder":
        db.mkdir()
        words = ("is a folder, not a database",)
    else:
        db.symlink_to(tmp_path / "disk" / "stats.db")
        words = ("is a link to", "which does not exist")
    for argv in (("stats",), ("drill", "memory", "--count", "1")):
        one_line_error(run_marked(*argv, data_dir=tmp_path, input=""), str(db), *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats.sqlite3"]
