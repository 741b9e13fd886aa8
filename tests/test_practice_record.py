"""A practice match's results go into the stats database: ``karuta stats`` shows them and the
memory drill's FSRS cards learn from them (a real SQLite file, the real ``karuta stats``)."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone

from audio.voice import ToneVoice
from cli_run import karuta_argv
from reader.memory.deck import MemoryDeck
from reader.practice import headless, record
from reader.practice.match import Seat
from reader.drills.stats import StatsDB

VOICE = ToneVoice()
MS = 48
TS = datetime(2026, 5, 1, 12, 0, tzinfo=timezone.utc)


def next_read(m, want):
    while (cur := m.current()) is not None:
        if want(cur):
            return cur
        m.close_read()
    raise AssertionError("no such read")


def test_a_take_and_a_fault_become_taps_and_memory_reviews(tmp_path):
    db = StatsDB(tmp_path / "stats.sqlite3")
    sid = db.start_session("practice", TS, {"rules": "kyogi"})
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("bot", 1)}, 8, VOICE)
    taken = next_read(m, lambda c: c.where == "A")
    m.touch("A", taken.poem, taken.decisive + 420 * MS)
    closed = m.close_read()
    assert record.record_read(db, sid, m, closed, TS) == 1

    kara = next_read(m, lambda c: c.where is None)
    m.touch("A", m.board["B"][0], kara.decisive + 90 * MS)
    closed = m.close_read()  # the bot sends at once
    assert record.record_read(db, sid, m, closed, TS) == 1

    quiet = next_read(m, lambda c: c.where == "B")
    closed = m.close_read()  # A never touched: nothing to learn
    assert record.record_read(db, sid, m, closed, TS) == 0

    taps = db.taps()
    assert [(t.poem, t.correct, t.fault) for t in taps] == [(taken.poem, True, False),
                                                            (kara.poem, False, True)]
    assert taps[0].reaction_ms == 420.0 and taps[1].anticipation
    reviews = db.reviews()
    assert [(r.poem, r.correct) for r in reviews] == [(taken.poem, True), (kara.poem, False)]
    deck = MemoryDeck.from_json(db.memory_cards())
    assert deck.introduced(taken.poem) and deck.introduced(kara.poem)
    assert not deck.introduced(quiet.poem)
    db.close()


def test_karuta_stats_shows_what_a_match_recorded(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    db = StatsDB(data / "stats.sqlite3")
    sid = db.start_session("practice", TS)
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("human")}, 9, VOICE)
    cur = next_read(m, lambda c: c.where == "B")
    m.touch("A", cur.poem, cur.decisive + 300 * MS)
    closed = m.close_read()
    assert closed.owed is not None  # A took from the other side: A sends, picking on the board
    done = m.send("A", m.suggest_send("A"))
    record.record_read(db, sid, m, done, TS)
    db.close()
    import os

    env = dict(os.environ, KARUTA_DATA_DIR=str(data))
    r = subprocess.run([*karuta_argv(), "stats", "--json"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {row["poem"]: row for row in json.loads(r.stdout)}
    row = rows[cur.poem]
    assert row["taps"] == 1 and row["correct"] == 1 and row["median_reaction_ms"] == 300.0
    assert row["reviews"] == 1 and row["memory_state"] != "new"
