"""What only reads works on a read-only folder or disk: ``karuta stats`` and the tournament's
viewing commands show what is there (a backup, a write-protected stick, a shared folder);
what would change a file is one line, and nothing there changes.

Each test runs on a small tmpfs in a private mount namespace (``test_faults_disk.small_disk``),
remounted read-only once the files are made, so root's disregard for file modes does not hide
the fault.  Skipped, with the reason, where mounting is not allowed.
"""
from __future__ import annotations

import json

from test_faults_disk import one_line, small_disk

#: a stats database with two answers, made by the app's own writer
MAKE_STATS = r'''$PY - <<'EOF'
from datetime import datetime, timezone
from reader.drills.stats import StatsDB
now = datetime(2026, 12, 3, 6, 0, tzinfo=timezone.utc)
with StatsDB() as db:
    s = db.start_session("speed", now)
    db.record_tap(s, 5, now, kimariji="おく", reaction_ms=312.0, from_kami_ms=900.0, correct=True)
    db.record_tap(s, 87, now, kimariji="む", reaction_ms=250.0, from_kami_ms=400.0, correct=True)
EOF
'''
RO = 'mount -o remount,ro "$D" || exit 98; '
RW = 'r=$?; mount -o remount,rw "$D"; (exit $r)'


def _stats_rows(out: str) -> dict[int, float]:
    return {r["poem"]: r["median_reaction_ms"] for r in json.loads(out)}


def test_stats_on_a_read_only_disk_shows_what_is_there_and_changes_nothing(tmp_path):
    rc, out, err, files = small_disk(
        tmp_path, 1024, MAKE_STATS + '$K stats --json > "$OUT/writable.json" && ' + RO
        + '$K stats --json; ' + RW)
    assert rc == 0, err
    assert err == ""
    shown = _stats_rows(out)
    assert shown == {5: 312.0, 87: 250.0}
    assert shown == _stats_rows((tmp_path / "out" / "writable.json").read_text())
    assert sorted(files) == ["data/stats.sqlite3"], "nothing is made beside it"


def test_stats_with_answers_still_in_the_wal_on_a_read_only_disk_is_one_line(tmp_path):
    """A writer killed before its WAL was copied back: the newest answers are in the -wal
    file, which an immutable reader would skip.  Said, not shown short."""
    keep_wal = MAKE_STATS.replace(
        'with StatsDB() as db:',
        'import os, shutil\ndb = StatsDB()\nif True:').replace(
        'correct=True)\nEOF',
        'correct=True)\nd = os.environ["KARUTA_DATA_DIR"]\nos.makedirs(d + "/../held")\n'
        'for s in ("", "-wal"): shutil.copy(d + "/stats.sqlite3" + s, d + "/../held/")\n'
        'os._exit(0)\nEOF')
    rc, out, err, files = small_disk(
        tmp_path, 1024, keep_wal + 'rm -rf "$D/data" && mv "$D/held" "$D/data" && ' + RO
        + '$K stats; ' + RW)
    one_line(rc, err, "stats.sqlite3-wal", "writable")
    assert files["data/stats.sqlite3-wal"], "the WAL is left as it was"


def test_no_stats_yet_on_a_read_only_disk_makes_nothing(tmp_path):
    rc, out, err, files = small_disk(tmp_path, 256, 'mkdir -p "$D/data" && ' + RO + '$K stats; '
                                     + RW)
    assert rc == 0, err
    assert "no answers recorded yet" in out
    assert not files


def test_a_damaged_stats_file_on_a_read_only_disk_is_left_as_it_is(tmp_path):
    damage = ('$PY -c "import os; p=os.environ[\'KARUTA_DATA_DIR\']+\'/stats.sqlite3\'; '
              'b=bytearray(open(p,\'rb\').read()); b[4096:8192]=bytes(range(256))*16; '
              'open(p,\'wb\').write(b)" && cp "$D/data/stats.sqlite3" "$OUT/damaged" && ')
    rc, out, err, files = small_disk(tmp_path, 1024, MAKE_STATS + damage + RO + '$K stats; ' + RW)
    one_line(rc, err, "damaged", "left as it is")
    assert files["data/stats.sqlite3"] == (tmp_path / "out" / "damaged").read_bytes()
    assert sorted(files) == ["data/stats.sqlite3"]


def test_a_stats_file_missing_a_table_on_a_read_only_disk_shows_what_it_holds(tmp_path):
    """Issue 33: a damaged database's rows are not hidden: on a read-only disk (nothing can be
    kept aside or started there) the answers still in it are shown, then the one line says it
    is damaged and was left as it is (exit 1)."""
    drop = ('$PY -c "import os, sqlite3; c=sqlite3.connect(os.environ[\'KARUTA_DATA_DIR\']'
            '+\'/stats.sqlite3\'); c.execute(\'DROP TABLE reviews\'); c.commit()" && '
            'cp "$D/data/stats.sqlite3" "$OUT/damaged" && ')
    rc, out, err, files = small_disk(tmp_path, 1024, MAKE_STATS + drop + RO + '$K stats --json; '
                                     + RW)
    one_line(rc, err, "damaged (its table reviews is missing)", "left as it is", "2 taps")
    assert _stats_rows(out) == {5: 312.0, 87: 250.0}
    assert files["data/stats.sqlite3"] == (tmp_path / "out" / "damaged").read_bytes()
    assert sorted(files) == ["data/stats.sqlite3"]


PLAYERS = "name,group\n山田,東\n佐藤,東\n鈴木,西\n田中,西\n"
DAY = ('$K tournament new --players "$D/p.csv" --file "$D/day.karuta" >/dev/null && '
       '$K tournament pair --file "$D/day.karuta" >/dev/null && '
       '$K tournament result 1 9 7 --file "$D/day.karuta" >/dev/null && '
       'for c in status standings export; do '
       '$K tournament $c --json --file "$D/day.karuta" > "$OUT/rw-$c.json" || exit 90; done && '
       'cp "$D/day.karuta" "$OUT/day.before" && ')


def test_a_tournament_on_a_read_only_disk_can_be_looked_at_but_not_changed(tmp_path):
    look = ('for c in status standings export; do '
            '$K tournament $c --json --file "$D/day.karuta" > "$OUT/ro-$c.json" || exit 91; done; '
            '$K tournament result 2 8 6 --file "$D/day.karuta"; ')
    rc, out, err, files = small_disk(tmp_path, 2048, DAY + RO + look + RW, {"p.csv": PLAYERS})
    one_line(rc, err, "day.karuta", "read-only")
    o = tmp_path / "out"
    for c in ("status", "standings", "export"):
        seen = json.loads((o / f"ro-{c}.json").read_text())
        assert seen == json.loads((o / f"rw-{c}.json").read_text()), c
    standings = json.loads((o / "ro-standings.json").read_text())["standings"]
    assert sorted(r["cards"] for rows in standings.values() for r in rows)[-2:] == [7, 9]
    assert files["day.karuta"] == (o / "day.before").read_bytes()
    assert not [f for f in files if f.endswith(("-wal", "-shm", ".new"))]
