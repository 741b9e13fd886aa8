#!/usr/bin/env python3
"""What the reliability checks cost (issue 12): reading state files through the schemas,
salvaging a damaged stats database, verifying a pack's clips.

    python scripts/bench_faults.py [--taps 100000]

Prints, on this machine (timings are noisy on a shared machine):
  - load a 100-card club session through reader.base.statefiles vs a bare json.loads (ms, ratio);
  - salvage a stats database of --taps taps with one damaged page: wall time, rows recovered,
    peak memory of this process;
  - decode_json's depth scan on a 1 MB document (ms);
  - opening a tournament of --players players (6 rounds, every result in) with the whole-file
    check (reader.tournament.integrity) against a bare open, and the output check
    (reader.base.statefiles.check_output) on a tournament file and on a new name (issue 22).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path


def best_of(fn, n=20) -> float:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--taps", type=int, default=100_000)
    ap.add_argument("--players", type=int, default=512)
    a = ap.parse_args()
    from reader.base.statefiles import decode_json, load_json
    from reader.drills.stats import StatsDB

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # a finished 100-card session
        log = [{"card": k + 1, "poem": 1 + k, "kimariji": "あきの", "kimariji_sound": "あきの",
                "karafuda": False, "again": False, "time": "2026-01-01T10:00:00+09:00"}
               for k in range(100)]
        sess = {"kind": "karuta-club-session", "version": 1,
                "options": {"rules": "kyogi", "seed": 1, "cards": None, "poems_spec": None,
                            "colors": [], "karafuda": None, "ma": None, "yoin": None,
                            "take": None, "gap": None, "speed": None, "joka": None,
                            "last_shimo": None, "voice_spec": None},
                "seed": 1, "rules": "kyogi", "voice": "synth", "order": list(range(1, 101)),
                "total": 100, "position": 100, "finished": True, "memorize_min": 15.0,
                "auto": False, "log": log, "started": "x", "updated": "y"}
        p = tmp / "last.json"
        p.write_text(json.dumps(sess, ensure_ascii=False, indent=1))
        load_json(p, "session", "session")  # warm (jsonschema import)
        t_checked = best_of(lambda: load_json(p, "session", "session"))
        t_bare = best_of(lambda: json.loads(p.read_text(encoding="utf-8")))
        print(f"100-card session ({p.stat().st_size // 1024} KiB): through statefiles "
              f"{t_checked * 1000:.2f} ms, bare json.loads {t_bare * 1000:.2f} ms "
              f"({t_checked / t_bare:.1f}x)")

        big = json.dumps([{"a": [1, 2, {"b": "x" * 20}]}] * 20000)
        t_scan = best_of(lambda: decode_json(big), 5)
        t_plain = best_of(lambda: json.loads(big), 5)
        print(f"decode_json on {len(big) // 1024} KiB: {t_scan * 1000:.1f} ms "
              f"(json.loads alone {t_plain * 1000:.1f} ms)")

        db = tmp / "stats.sqlite3"
        t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
        con = sqlite3.connect(db)
        with StatsDB(db) as s:
            sid = s.start_session("speed", t0)
        con.executemany(
            "INSERT INTO taps (session, poem, ts, kimariji, reaction_ms, from_kami_ms, correct)"
            " VALUES (?, ?, ?, ?, ?, ?, 1)",
            [(sid, 1 + i % 100, (t0 + timedelta(seconds=i)).isoformat(), "む", 100.0 + i % 37,
              400.0 + i) for i in range(a.taps)])
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        size = db.stat().st_size
        with open(db, "r+b") as f:  # one page in the middle
            f.seek((size // 4096 // 2) * 4096)
            f.write(os.urandom(4096))
        t = time.perf_counter()
        with StatsDB(db) as s:
            n = len(s.taps())
            note = s.notice
        wall = time.perf_counter() - t
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"salvage: {a.taps} taps ({size / 2**20:.1f} MiB), one damaged page: {wall:.2f} s, "
              f"{n} taps recovered ({n / a.taps:.1%}); peak RSS {peak:.0f} MiB")
        print(f"  notice: {note}")
        tournament(tmp, a.players)


def tournament(tmp: Path, n: int) -> None:
    from reader.base.statefiles import check_output
    from reader.tournament.players import PlayerRow
    from reader.tournament.store import Settings, Tournament

    path = tmp / "day.sqlite"
    rows = [PlayerRow(name=f"選手{i}", group=f"{i % 12}組", block="") for i in range(n)]
    t = Tournament.create(path, rows, Settings(rounds=6, seed=1), blocks=max(1, n // 32))
    for _ in range(6):
        rnd = t.pair()
        for tb in rnd.tables:
            t.enter(tb.no, [9, 8] if len(tb.seats) == 2 else [6, 6, 5], round_no=rnd.no)
    t.close()
    n_rows = sum(sqlite3.connect(path).execute(f"SELECT count(*) FROM {x}").fetchone()[0]
                 for x in ("players", "tables", "seats", "entries"))

    def bare():
        con = sqlite3.connect(path)
        con.execute("SELECT key, value FROM meta").fetchall()
        con.close()

    def checked():
        Tournament.open(path).close()

    from reader.tournament import integrity

    con = sqlite3.connect(path)
    t_check = best_of(lambda: integrity.check(con, path), 10)
    con.close()
    t_checked = best_of(checked, 10)
    t_bare = best_of(bare, 10)
    print(f"tournament of {n} players, 6 rounds ({n_rows} rows): Tournament.open "
          f"{t_checked * 1000:.1f} ms, of which the whole-file check {t_check * 1000:.1f} ms; "
          f"a bare sqlite3 open and meta read {t_bare * 1000:.2f} ms")
    t_state = best_of(lambda: _refused(check_output, path), 50)
    t_new = best_of(lambda: check_output(tmp / "new.csv", "--out"), 50)
    print(f"check_output: on the tournament file {t_state * 1e6:.0f} us (refused), "
          f"on a new name {t_new * 1e6:.0f} us")


def _refused(check, path) -> None:
    from reader.base.errors import OutputError

    try:
        check(path, "--out")
    except OutputError:
        return
    raise AssertionError("not refused")


if __name__ == "__main__":
    main()
