"""StatsDB on real SQLite files: schema, WAL, commits, summaries, CSV, corrupt files."""
from __future__ import annotations

import csv
import io
import os
import sqlite3
from datetime import datetime, timedelta, timezone

import pytest

from reader.base.errors import KarutaError
from reader.drills.stats import DB_NAME, SCHEMA_VERSION, StatsDB, default_db_path

T0 = datetime(2025, 4, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def db(tmp_path):
    with StatsDB(tmp_path / DB_NAME) as d:
        yield d


def _tap(db, sid, poem, ms, *, correct=True, anticipation=False, fault=False, i=0):
    return db.record_tap(sid, poem, T0 + timedelta(seconds=i), kimariji="む", reaction_ms=ms,
                         from_kami_ms=None if ms is None else ms + 400, correct=correct,
                         anticipation=anticipation, fault=fault)


def test_default_path_follows_karuta_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KARUTA_DATA_DIR", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / DB_NAME
    with StatsDB() as d:
        assert d.path == tmp_path / "data" / DB_NAME
    assert (tmp_path / "data" / DB_NAME).is_file()


def test_new_database_is_wal_and_versioned(db):
    raw = sqlite3.connect(db.path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "taps", "reviews", "memory"} <= tables
    raw.close()
    assert db.notice is None


def test_reopen_keeps_data(tmp_path):
    path = tmp_path / DB_NAME
    with StatsDB(path) as d:
        sid = d.start_session("speed", T0, {"seed": 1})
        _tap(d, sid, 87, 250.0)
    with StatsDB(path) as d:
        assert d.notice is None
        assert [t.poem for t in d.taps()] == [87]
        assert d.sessions()[0][:2] == (sid, "speed")


def test_each_tap_is_committed_at_once(db):
    """Another connection (another process) sees the tap as soon as record_tap returns."""
    sid = db.start_session("speed", T0)
    other = sqlite3.connect(db.path)
    for i in range(3):
        _tap(db, sid, 18, 300.0 + i, i=i)
        assert other.execute("SELECT count(*) FROM taps").fetchone()[0] == i + 1
    other.close()


def test_timestamps_must_be_aware(db):
    sid = db.start_session("speed", T0)
    with pytest.raises(ValueError):
        db.record_tap(sid, 1, datetime(2025, 1, 1), kimariji="あきの", reaction_ms=1.0,
                      from_kami_ms=1.0, correct=True)
    with pytest.raises(ValueError):
        db.record_tap(sid, 101, T0, kimariji="x", reaction_ms=1.0, from_kami_ms=1.0, correct=True)


def test_timestamps_stored_in_utc(db):
    sid = db.start_session("speed", T0)
    jst = timezone(timedelta(hours=9))
    _ = db.record_tap(sid, 1, datetime(2025, 4, 1, 18, 0, tzinfo=jst), kimariji="あきの",
                      reaction_ms=1.0, from_kami_ms=2.0, correct=True)
    assert db.taps()[0].ts == T0


def test_per_poem_summary(db):
    sid = db.start_session("speed", T0)
    for i, ms in enumerate([300.0, 200.0, 500.0]):
        _tap(db, sid, 87, ms, i=i)
    _tap(db, sid, 87, -50.0, anticipation=True, i=5)     # a guess: counted, not a reaction
    _tap(db, sid, 87, 100.0, correct=False, fault=True, i=6)
    db.record_review(sid, 87, T0, mode="kami", correct=True, response_ms=1200.0, rating=4, chosen=87,
                     state="review", due=T0 + timedelta(days=8), stability=8.3, card_json="{}")
    rows = {r.poem: r for r in db.per_poem()}
    assert len(rows) == 100
    r = rows[87]
    assert (r.taps, r.correct, r.anticipations, r.faults) == (5, 4, 1, 1)
    assert r.median_reaction_ms == 300.0 and r.best_reaction_ms == 200.0
    assert (r.reviews, r.reviews_correct, r.memory_state, r.stability) == (1, 1, "review", 8.3)
    assert r.due.startswith("2025-04-09T09:00")
    assert r.kimariji == "む" and r.color
    assert rows[1].memory_state == "new" and rows[1].median_reaction_ms is None
    assert [r.poem for r in db.per_poem(only_with_data=True)] == [87]


def test_review_updates_the_memory_card(db):
    sid = db.start_session("memory", T0)
    for i, state in enumerate(["learning", "review"]):
        db.record_review(sid, 5, T0 + timedelta(minutes=i), mode="kimariji", correct=True,
                         response_ms=900.0, rating=3, chosen=5, state=state,
                         due=T0 + timedelta(days=i), stability=1.0 + i, card_json=f'{{"n": {i}}}')
    assert db.memory_cards() == {5: '{"n": 1}'}
    assert len(db.reviews(5)) == 2 and db.reviews(6) == []
    assert db.per_poem(only_with_data=True)[0].memory_state == "review"


def test_csv_export(db):
    sid = db.start_session("speed", T0)
    _tap(db, sid, 44, 420.0)
    buf = io.StringIO()
    assert db.export_csv(buf) == 100
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert len(rows) == 100
    r = rows[43]
    assert r["poem"] == "44" and r["kimariji"] == "あふこ" and r["median_reaction_ms"] == "420.0"
    assert r["due"] == "" and r["memory_state"] == "new"
    buf = io.StringIO()
    assert db.export_csv(buf, only_with_data=True) == 1


# -- corrupt and foreign files -----------------------------------------------------------------

def test_garbage_file_is_moved_aside(tmp_path):
    path = tmp_path / DB_NAME
    path.write_bytes(os.urandom(3000))
    with StatsDB(path) as d:
        assert d.notice and "\n" not in d.notice
        assert "corrupt-1" in d.notice and str(path) in d.notice
        assert (tmp_path / f"{DB_NAME}.corrupt-1").is_file()
        sid = d.start_session("speed", T0)
        _tap(d, sid, 3, 250.0)
    path.write_bytes(b"not a database at all" * 100)
    with StatsDB(path) as d:
        assert "corrupt-2" in d.notice
        assert d.taps() == []
    assert (tmp_path / f"{DB_NAME}.corrupt-1").read_bytes()[:16] != b"SQLite format 3\x00"


def test_truncated_database_is_moved_aside(tmp_path):
    path = tmp_path / DB_NAME
    with StatsDB(path) as d:
        sid = d.start_session("speed", T0)
        for i in range(1500):
            _tap(d, sid, 1 + i % 100, float(i), i=i)
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    size = path.stat().st_size
    assert size > 20000
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    with StatsDB(path) as d:
        assert d.notice and "kept as" in d.notice
        # issue 12: what is still readable is recovered (the first half's rows), not hidden
        assert 0 < len(d.taps()) < 1500
    assert (tmp_path / f"{DB_NAME}.corrupt-1").stat().st_size == size // 2


def test_someone_elses_sqlite_file_is_moved_aside(tmp_path):
    path = tmp_path / DB_NAME
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE other (x)")
    raw.commit()
    raw.close()
    with StatsDB(path) as d:
        assert d.notice and "not a karuta stats database" in d.notice


def test_newer_schema_is_refused_not_moved(tmp_path):
    path = tmp_path / DB_NAME
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(KarutaError, match="newer karuta"):
        StatsDB(path)
    assert path.exists() and not (tmp_path / f"{DB_NAME}.corrupt-1").exists()


def test_unwritable_folder_is_a_karuta_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(KarutaError, match="data folder"):
        StatsDB(blocker / "sub" / DB_NAME)
