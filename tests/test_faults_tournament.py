"""The tournament file under faults (issue 22): two desks at once, another program's
database, a result undone in an earlier round, damaged files, a file held by another
karuta, pages that cannot be written, a read-only folder.  Each through the installed
``karuta`` command on a real SQLite file.

Promised: one line ``karuta: ...`` (exit 1) naming the file or the round and table, nothing
changed that was not said to be saved; a change that WAS stored is said as stored.
Concurrency is made certain, not left to luck: the test itself holds the file's write lock
(as another desk in the middle of an entry) while the command runs.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from cli_run import karuta_argv, karuta_env, run_inproc, run_marked


def karuta(*args, input_=None, timeout=60):
    """In this process, or a process of its own in the tests marked ``entry_point`` (another
    karuta holding the file is another process)."""
    return run_marked(*map(str, args), input=input_ if input_ is not None else "",
                      timeout=timeout)


def one_line(res, *words) -> str:
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("karuta: "), res.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def sha1(p: Path) -> str:
    return hashlib.sha1(p.read_bytes()).hexdigest()


@pytest.fixture
def day(tmp_path) -> Path:
    """A tournament of four players in one block, round 1 paired (tables 1 and 2)."""
    players = tmp_path / "p.csv"
    players.write_text("名前,組,ブロック\n山田,1,A\n佐藤,2,A\n鈴木,3,A\n田中,4,A\n",
                       encoding="utf-8")
    t = tmp_path / "t.sqlite"  # (made in this process: what is tested is the next command)
    assert run_inproc("tournament", "new", "-f", str(t), "--players", str(players),
                      "--seed", "1").returncode == 0
    assert run_inproc("tournament", "pair", "-f", str(t)).returncode == 0
    return t


def entries(t: Path) -> list[tuple]:
    con = sqlite3.connect(t)
    try:
        return con.execute("SELECT round, table_no, counts, undone FROM entries "
                           "ORDER BY id").fetchall()
    finally:
        con.close()


# ------------------------------------------------------------------ case 5: two desks
@pytest.mark.entry_point
def test_two_results_for_one_table_at_once_the_second_is_refused(day):
    """Another desk holds the write lock while it enters 5-4 for table 1; this command,
    started meanwhile, enters 8-6 for the same table.  It must wait, then see 5-4 and refuse
    (not replace it without --correct, not print 5-4 as its own)."""
    free = day.with_name("free.sqlite")
    shutil.copyfile(day, free)
    other = sqlite3.connect(day, isolation_level=None, timeout=10)
    other.execute("BEGIN IMMEDIATE")

    def result(t, table, a, b):
        return subprocess.Popen(karuta_argv("tournament", "result", table, a, b, "-f", str(t)),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=karuta_env(), stdin=subprocess.DEVNULL)

    p = result(day, "1", "8", "6")
    # the same entry into a copy nobody holds, started with it: it opens the file, enters
    # and stores its result in some time T on this machine as busy as it is now; after 2 T
    # the command has certainly opened the file and reached its entry
    start = time.monotonic()
    control = result(free, "1", "8", "6")
    assert control.communicate(timeout=60)[1] == "" and control.returncode == 0
    time.sleep(time.monotonic() - start)
    assert p.poll() is None, "the command did not wait for the other desk"
    other.execute("INSERT INTO entries(round, table_no, counts, faults, source) "
                  "VALUES (1, 1, '5,4', '', 'sheet')")
    other.execute("COMMIT")
    other.close()
    out, err = p.communicate(timeout=60)
    res = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    one_line(res, "table 1 already has a result (5-4)", "--correct")
    assert "8" not in out and "5" not in out
    assert [(r, t, c) for r, t, c, u in entries(day) if not u] == [(1, 1, "5,4")]


def test_a_file_held_past_the_busy_timeout_is_one_line_and_nothing_changes(day, monkeypatch):
    """In this process, with the wait for the file cut from 10 s to 0.5 s (SQLite's locks
    hold between two connections of one process as between two processes; another karuta
    waiting as a process of its own: the test above)."""
    from reader.tournament import integrity

    monkeypatch.setattr(integrity, "BUSY_TIMEOUT_S", 0.5)
    other = sqlite3.connect(day, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        res = karuta("tournament", "result", "1", "9", "7", "-f", day)
    finally:
        other.execute("ROLLBACK")
        other.close()
    one_line(res, str(day), "in use by another karuta", "after 0.5 s", "nothing was changed")
    assert entries(day) == []
    assert karuta("tournament", "result", "1", "9", "7", "-f", day).returncode == 0


# ------------------------------------------------------------------ case 7
def test_another_programs_database_is_refused_with_its_bytes_unchanged(tmp_path):
    db = tmp_path / "notes.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes(t TEXT)")
    con.execute("INSERT INTO notes VALUES ('mine')")
    con.commit()
    con.close()
    before = sha1(db)
    for cmd in ("status", "standings", "pair", "desk"):
        one_line(karuta("tournament", cmd, "-f", db), "not a karuta tournament file")
        assert sha1(db) == before, f"{cmd} changed the file (journal mode switched?)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.sqlite"]


# ------------------------------------------------------------------ case 8
def test_a_result_undone_in_an_earlier_round_stops_the_next_pairing(day):
    for table in (1, 2):
        assert karuta("tournament", "result", table, 9, 7, "-f", day).returncode == 0
    assert karuta("tournament", "pair", "-f", day).returncode == 0  # round 2
    assert karuta("tournament", "undo", "--table", 1, "--round", 1, "-f", day).returncode == 0
    for table in (1, 2):
        assert karuta("tournament", "result", table, 9, 7, "-f", day).returncode == 0
    one_line(karuta("tournament", "pair", "-f", day), "round 1", "table 1")
    st = json.loads(karuta("tournament", "status", "--json", "-f", day).stdout)
    assert st["round"] == 2 and st["missing"] == []
    assert st["missing_all"] == [{"round": 1, "table": 1}]
    text = karuta("tournament", "status", "-f", day).stdout
    assert "round 1: no result for table 1" in text
    desk = json.loads(karuta("tournament", "desk", "--json", "-f", day, input_="m\n")
                      .stdout.splitlines()[-1])
    assert desk["missing_all"] == [{"round": 1, "table": 1}]
    assert karuta("tournament", "result", 1, 8, 6, "--round", 1, "-f", day).returncode == 0
    assert karuta("tournament", "pair", "-f", day).returncode == 0  # now round 3


# ------------------------------------------------------------------ damaged files
DAMAGE = {
    "rounds as text": ("UPDATE meta SET value = '\"six\"' WHERE key = 'rounds'", "rounds"),
    "colors missing": ("DELETE FROM meta WHERE key = 'colors'", "colors"),
    "counts not numbers": ("UPDATE entries SET counts = 'a,b'", "'a,b'"),
    "a seat's unknown player": ("UPDATE seats SET player = 999 WHERE table_no = 1 AND seat = 0",
                                "player 999"),
    "a missing table": ("DELETE FROM tables WHERE no = 2", "no table 2"),
    "a missing SQL table": ("DROP TABLE lots", "lots"),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_a_damaged_tournament_file_is_one_line_naming_it(day, name):
    assert karuta("tournament", "result", 1, 9, 7, "-f", day).returncode == 0
    sql, word = DAMAGE[name]
    con = sqlite3.connect(day)
    con.execute("PRAGMA foreign_keys = OFF")
    con.execute(sql)
    con.commit()
    con.close()
    before = sha1(day)
    for cmd in ("status", "standings", "tables", "pair", "export", "page"):
        one_line(karuta("tournament", cmd, "-f", day), str(day), "damaged", word)
    one_line(karuta("tournament", "result", 2, 9, 7, "-f", day), "damaged")
    assert sha1(day) == before


def test_desk_a_table_number_too_large_for_sqlite_is_one_line(day):
    res = karuta("tournament", "desk", "-f", day, input_="u 99999999999999999999\n"
                 "99999999999999999999 9 7\n1 9 7\n")
    assert "Traceback" not in res.stderr, res.stderr
    errs = [x for x in res.stderr.splitlines() if x.startswith("karuta: ")]
    assert len(errs) == 2 and all("tables are numbered" in e for e in errs), res.stderr
    assert [(r, t, c) for r, t, c, u in entries(day)] == [(1, 1, "9,7")]


# ------------------------------------------------------------------ pages
def test_a_pages_folder_that_is_a_file(day):
    pages = day.with_name("t-pages")
    shutil.rmtree(pages)
    pages.write_text("my notes")
    one_line(karuta("tournament", "sheets", "-f", day), "t-pages", "not a folder")
    one_line(karuta("tournament", "page", "-f", day), "t-pages", "not a folder")
    # a result is stored even so, and said to be: exit 0, the page's trouble one warning
    res = karuta("tournament", "result", 1, 9, 7, "-f", day)
    assert res.returncode == 0 and "round 1 table 1" in res.stdout, res.stderr
    assert "the change is saved" in res.stderr and "Traceback" not in res.stderr
    assert pages.read_text() == "my notes"
    # pairing is refused before anything is stored: its pages could not be written
    assert karuta("tournament", "result", 2, 9, 7, "-f", day).returncode == 0
    one_line(karuta("tournament", "pair", "-f", day), "t-pages")
    assert json.loads(karuta("tournament", "status", "--json", "-f", day).stdout)["round"] == 1


def test_pages_that_fail_after_the_pairing_say_the_round_is_stored(day):
    for table in (1, 2):
        assert karuta("tournament", "result", table, 9, 7, "-f", day).returncode == 0
    (day.with_name("t-pages") / "round2-sheets.html").mkdir()  # written after the pairing
    res = karuta("tournament", "pair", "-f", day)
    line = one_line(res, "round 2 is paired and saved", "karuta tournament sheets")
    assert "round 2" in res.stdout, "the pairing is printed: it is stored"
    assert json.loads(karuta("tournament", "status", "--json", "-f", day).stdout)["round"] == 2
    assert line


def test_export_csv_and_out_the_same_file(day, tmp_path):
    one_line(karuta("tournament", "export", "-f", day, "--csv", tmp_path / "a",
                    "--out", tmp_path / "a"), "same file")


# ------------------------------------------------------------------ read-only folder
RO = r"""
set -e
mount --bind "$1" "$1" || exit 97
mount -o remount,ro,bind "$1" || exit 97
shift
"$@"
"""


def _in_read_only(folder: Path, *argv) -> subprocess.CompletedProcess:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed: cannot make a read-only mount")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", RO, "sh",
                        str(folder), *karuta_argv(*map(str, argv))], capture_output=True,
                       text=True, env=karuta_env(), timeout=120, stdin=subprocess.DEVNULL)
    if r.returncode == 97 or "unshare failed" in r.stderr or "Operation not permitted" in r.stderr:
        pytest.skip(f"mounting is not allowed here: {r.stderr.strip()[:200]}")
    return r


def test_a_valid_tournament_in_a_read_only_folder_is_said_so(day, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copy(day, ro / "t.sqlite")
    # (looking at it works there: test_faults_readonly.py)
    line = one_line(_in_read_only(ro, "tournament", "add", "新人", "-f", ro / "t.sqlite"),
                    "read-only")
    assert "not a karuta tournament file" not in line


def test_a_read_only_pages_folder_refuses_the_pairing_before_storing_it(day, tmp_path):
    for table in (1, 2):
        assert karuta("tournament", "result", table, 9, 7, "-f", day).returncode == 0
    pages = tmp_path / "print"
    pages.mkdir()
    one_line(_in_read_only(pages, "tournament", "pair", "-f", day, "--out", pages),
             "cannot write the pages", "print")
    assert json.loads(karuta("tournament", "status", "--json", "-f", day).stdout)["round"] == 1
