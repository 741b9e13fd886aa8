"""``karuta tournament`` end to end through the command's ``main`` (in this process, the
tests marked ``entry_point`` through the installed command, a process a call):
a whole day on a real SQLite file, CSV imports in UTF-8 / BOM / Shift_JIS, results by seat,
by name, from a `karuta match keep` goshiki log and from a CSV, corrections and undo, the
semi-finals and final, exports, ``--json`` on every command, ``--resume`` after a kill, and
bad input as one line with nothing changed.
"""
from __future__ import annotations

import csv
import io
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import karuta_argv, run_karuta, run_marked  # noqa: F401
from waits import wait_until

from reader.match import log as matchlog
from reader.match.rules import goshiki

REPO = Path(__file__).resolve().parent.parent

PLAYERS = [("山田 太郎", "1組"), ("佐藤 花子", "1組"), ("鈴木 一郎", "2組"), ("田中 次郎", "2組"),
           ("高橋 三郎", "3組"), ("伊藤 さくら", "3組"), ("渡辺 健", "4組"), ("中村 葵", "4組"),
           ("小林 陽", "1組"), ("加藤 海", "2組"), ("吉田 空", "3組"), ("山本 光", "4組"),
           ("松本 凛", "1組")]


def karuta(*args, env=None, timeout=60, cwd=None, input_=None):
    return run_marked(*map(str, args), env=env, timeout=timeout, cwd=cwd,
                      input=input_ if input_ is not None else "")


def ok(res):
    assert res.returncode == 0, res.stderr
    assert not res.stderr.strip() or "Traceback" not in res.stderr
    return res


def js(*args, **kw):
    res = ok(karuta(*args, "--json", **kw))
    return json.loads(res.stdout)


def one_line_error(res, *words):
    assert res.returncode == 1, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("karuta: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def write_csv(path: Path, rows, encoding="utf-8", header=("名前", "組", "ブロック")):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(header)
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode(encoding))
    return path


def snapshot(db: Path) -> str:
    """Everything in the tournament file, as text (to check that nothing changed)."""
    con = sqlite3.connect(db)
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


@pytest.fixture
def day(tmp_path):
    """A tournament of 13 players in 2 blocks (7 + 6: one three-player table), 3 rounds."""
    csv_path = write_csv(tmp_path / "players.csv", [(n, g, "") for n, g in PLAYERS])
    db = tmp_path / "t.sqlite"
    ok(karuta("tournament", "new", "-f", db, "--players", csv_path, "--blocks", 2,
              "--rounds", 3, "--seed", 11, "--third-place", "--title", "テスト大会"))
    return db


@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "cp932"])
def test_players_csv_in_every_encoding(tmp_path, encoding):
    rows = [("山田 太郎", "１組", "A"), ("ｻﾄｳ ﾊﾅｺ", "1組", "B"), ("髙橋 三郎", "2組", ""),
            ("田中 次郎", "2組", "")]
    if encoding == "cp932":
        rows[2] = ("高橋 三郎", "2組", "")  # 髙 is in cp932 too, but keep the plain kanji
    f = write_csv(tmp_path / "p.csv", rows, encoding)
    data = js("tournament", "new", "-f", tmp_path / "t.sqlite", "--players", f, "--seed", 1)
    assert data["players"] == 4 and data["blocks"] == {"A": 2, "B": 2}
    names = {p["name"]: p for p in js("tournament", "players", "-f", tmp_path / "t.sqlite")["players"]}
    assert set(names) == {"山田 太郎", "サトウ ハナコ", rows[2][0], "田中 次郎"}  # NFKC
    assert names["山田 太郎"]["group"] == "1組" and names["山田 太郎"]["block"] == "A"


def test_blocks_are_balanced_and_groups_spread(tmp_path):
    rows = [(f"選手{i:02d}", f"{i % 3 + 1}組", "") for i in range(23)]
    f = write_csv(tmp_path / "p.csv", rows)
    data = js("tournament", "new", "-f", tmp_path / "t.sqlite", "--players", f, "--blocks", 4,
              "--seed", 3)
    assert sorted(data["blocks"].values()) == [5, 6, 6, 6]
    ps = js("tournament", "players", "-f", tmp_path / "t.sqlite")["players"]
    for g in ("1組", "2組", "3組"):
        per_block = [sum(p["group"] == g and p["block"] == b for p in ps) for b in "ABCD"]
        assert max(per_block) - min(per_block) <= 1, (g, per_block)


@pytest.mark.parametrize("content,words", [
    ("組,ブロック\r\n1組,A\r\n", ["row 1", "no name column", "組, ブロック"]),
    ("name,group\r\nAya,1\r\nBen,2\r\nAya,3\r\n", ["row 4", "Aya is already on row 2"]),
    ("name,group\r\nAya,1\r\n,2\r\n", ["row 3", "no name"]),
    ("", ["empty"]),
])
def test_bad_players_csv_is_one_line_and_creates_nothing(tmp_path, content, words):
    f = tmp_path / "p.csv"
    f.write_text(content, encoding="utf-8")
    db = tmp_path / "t.sqlite"
    one_line_error(karuta("tournament", "new", "-f", db, "--players", f), *words)
    assert not db.exists() and not list(tmp_path.glob("t.sqlite*"))


@pytest.mark.entry_point
def test_not_text_and_missing_file(tmp_path):
    f = tmp_path / "p.csv"
    f.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xfd")
    one_line_error(karuta("tournament", "new", "-f", tmp_path / "t.sqlite", "--players", f),
                   "neither UTF-8 nor Shift_JIS")
    one_line_error(karuta("tournament", "new", "-f", tmp_path / "t.sqlite", "--players",
                          tmp_path / "nope.csv"), "no such file")
    one_line_error(karuta("tournament", "status", "-f", tmp_path / "none.sqlite"),
                   "no tournament there")
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database")
    one_line_error(karuta("tournament", "status", "-f", junk), "not a karuta tournament")
    assert junk.read_text() == "not a database"


def enter_round(db, rnd, rng, knockout=False):
    for tb in rnd["tables"]:
        n = len(tb["players"])
        while True:
            counts = [rng.randint(0, 8) for _ in range(n)]
            if sum(counts) <= (20 if knockout else 17) and (not knockout or len(set(counts)) == n):
                break
        # past the 17 read, the tie-break cards read in the match
        extra = max(0, sum(counts) - 17)
        ok(karuta("tournament", "result", "-f", db, tb["table"], *counts,
                  *(["--tiebreak", extra] if extra else [])))


def test_a_whole_day_through_the_command(day, tmp_path):
    db = day
    rng = random.Random(5)
    seen_pairs: dict = {}
    for r in (1, 2, 3):
        rnd = js("tournament", "pair", "-f", db)
        assert rnd["round"] == r and rnd["stage"] == "prelim"
        seats = [p for tb in rnd["tables"] for p in tb["players"]]
        assert sorted(seats) == sorted(n for n, _ in PLAYERS), "everyone plays every round"
        assert sum(len(tb["players"]) == 3 for tb in rnd["tables"]) == 1  # block of 5
        for tb in rnd["tables"]:
            for i, a in enumerate(tb["players"]):
                for b in tb["players"][i + 1:]:
                    # a block of 7 over 3 rounds: a rematch rather than a second three-player
                    # table while others have had none, but never a third meeting
                    # (schedule.worst_case(7, 3))
                    seen_pairs[frozenset((a, b))] = seen_pairs.get(frozenset((a, b)), 0) + 1
                    assert seen_pairs[frozenset((a, b))] <= 2
        # the pages of the round are written and name every player
        sheets = Path(rnd["pages"]["sheets"]).read_text()
        for n, _ in PLAYERS:
            assert n in Path(rnd["pages"]["pairings"]).read_text() and n in sheets
        # pairing again before the results are in is refused, with the tables missing
        one_line_error(karuta("tournament", "pair", "-f", db), f"round {r}", "no result yet")
        enter_round(db, rnd, rng)
    st = js("tournament", "standings", "-f", db)["standings"]
    semis = js("tournament", "pair", "-f", db)
    assert semis["stage"] == "semi" and len(semis["tables"]) == 4
    for tb in semis["tables"]:
        rows = st[tb["block"]]
        top = [r["name"] for r in rows[:4]]
        assert tb["players"] in ([top[0], top[3]], [top[1], top[2]])
    # a tie in a knock-out match is refused: read one more card
    t1 = semis["tables"][0]
    one_line_error(karuta("tournament", "result", "-f", db, t1["table"], 5, 5),
                   f"table {t1['table']}", "read one more card")
    enter_round(db, semis, rng, knockout=True)
    final = js("tournament", "pair", "-f", db)
    assert final["stage"] == "final"
    assert sorted(tb["kind"] for tb in final["tables"]) == ["final", "final", "third", "third"]
    enter_round(db, final, rng, knockout=True)
    one_line_error(karuta("tournament", "pair", "-f", db), "the tournament is over")
    status = js("tournament", "status", "-f", db)
    assert set(status["champions"]) == {"A", "B"}
    # exports: every table's result, CSV and JSON
    ok(karuta("tournament", "export", "-f", db, "--csv", tmp_path / "all.csv", "--out",
              tmp_path / "all.json"))
    data = json.loads((tmp_path / "all.json").read_text())
    rows = list(csv.DictReader((tmp_path / "all.csv").open(encoding="utf-8-sig")))
    n_seats = sum(len(tb["players"]) for r in data["rounds"] for tb in r["tables"])
    assert len(rows) == n_seats == len(PLAYERS) * 3 + 8 + 8
    for r in data["rounds"]:
        for tb in r["tables"]:
            got = [(x["name"], int(x["cards"]), x["result"]) for x in rows
                   if int(x["round"]) == r["round"] and int(x["table"]) == tb["table"]]
            assert got == list(zip(tb["players"], tb["cards"], tb["result"]))
    assert data["champions"] == status["champions"]


def test_results_by_name_faults_correct_and_undo(day):
    db = day
    rnd = js("tournament", "pair", "-f", db)
    two = next(tb for tb in rnd["tables"] if len(tb["players"]) == 2)
    trio = next(tb for tb in rnd["tables"] if len(tb["players"]) == 3)
    a, b = two["players"]
    r = js("tournament", "result", "-f", db, two["table"], f"{b}=6", f"{a}=9", "--fault", b)
    assert r["cards"] == [9, 6] and r["result"] == ["win", "loss"] and r["faults"] == [b]
    # already entered: refused without --correct, and nothing changes
    before = snapshot(db)
    one_line_error(karuta("tournament", "result", "-f", db, two["table"], 5, 5),
                   f"table {two['table']} already has a result (9-6)", "--correct")
    assert snapshot(db) == before
    r = js("tournament", "result", "-f", db, two["table"], 5, 5, "--correct")
    assert r["result"] == ["draw", "draw"]
    st = {x["name"]: x for x in js("tournament", "standings", "-f", db)["standings"][two["block"]]}
    assert st[a]["draws"] == 1 and st[a]["wins"] == 0 and st[a]["cards"] == 5
    # three players: top two win; a tie for 2nd and 3rd is a draw for both
    x, y, z = trio["players"]
    r = js("tournament", "result", "-f", db, trio["table"], 7, 4, 4)
    assert r["result"] == ["win", "draw", "draw"]
    r = js("tournament", "result", "-f", db, trio["table"], 3, 8, 5, "--correct")
    assert r["result"] == ["loss", "win", "win"]
    # undo: back to the result before the correction, and the standings follow
    u = js("tournament", "undo", "-f", db)
    assert u["undone"]["cards"] == [3, 8, 5] and u["table"]["cards"] == [7, 4, 4]
    st = {x["name"]: x for x in js("tournament", "standings", "-f", db)["standings"][trio["block"]]}
    assert (st[x]["wins"], st[y]["draws"], st[z]["draws"]) == (1, 1, 1)
    u = js("tournament", "undo", "-f", db, "--table", two["table"])
    assert u["table"]["cards"] == [9, 6]


@pytest.mark.parametrize("args,words", [
    (["99", "9", "8"], ["table 99", "no such table", "tables 1-"]),
    (["T", "21", "0"], ["21 cards", "only 17 are read"]),
    (["T", "9", "9"], ["9 + 9 = 18", "only 17 are read"]),
    (["T", "9"], ["give 2 counts, not 1"]),
    (["T", "9", "x"], ["'x' is not a number"]),
    (["T", "9", "8", "--fault", "誰か"], ["誰か did not play at this table"]),
])
def test_impossible_results_are_one_line_and_change_nothing(day, args, words):
    db = day
    rnd = js("tournament", "pair", "-f", db)
    two = next(tb for tb in rnd["tables"] if len(tb["players"]) == 2)
    args = [str(two["table"]) if a == "T" else a for a in args]
    before = snapshot(db)
    page = (db.parent / "t-pages" / "standings.html").read_text()
    one_line_error(karuta("tournament", "result", "-f", db, *args), *words)
    assert snapshot(db) == before
    assert (db.parent / "t-pages" / "standings.html").read_text() == page


def test_results_csv_all_or_nothing(day, tmp_path):
    db = day
    rnd = js("tournament", "pair", "-f", db)
    rows = []
    for tb in rnd["tables"]:
        for i, name in enumerate(tb["players"]):
            rows.append((tb["table"], name, 6 - i, "○" if i == 1 else ""))
    good = write_csv(tmp_path / "r.csv", rows, "cp932", header=("卓", "名前", "枚数", "お手つき"))
    # a player in two tables: the row is named, and nothing is entered
    moved = list(rows)
    moved[-1] = (rnd["tables"][0]["table"],) + rows[-1][1:]
    head = ("卓", "名前", "枚数", "お手つき")
    bad = write_csv(tmp_path / "bad.csv", rows + [moved[-1]], header=head)
    before = snapshot(db)
    one_line_error(karuta("tournament", "result", "-f", db, "--csv", bad),
                   f"row {len(rows) + 2}", rows[-1][1], "two tables")
    unknown = write_csv(tmp_path / "u.csv", rows[:1] + [(77,) + rows[1][1:]], header=head)
    one_line_error(karuta("tournament", "result", "-f", db, "--csv", unknown), "row 3",
                   "no table 77")
    assert snapshot(db) == before
    done = js("tournament", "result", "-f", db, "--csv", good)["tables"]
    assert len(done) == len(rnd["tables"])
    for tb in done:
        assert tb["cards"] == [6, 5, 4][:len(tb["players"])]
        assert tb["faults"] == [tb["players"][1]]
    assert js("tournament", "status", "-f", db)["missing"] == []


def test_result_from_a_match_keep_log(day, tmp_path):
    db = day
    status = js("tournament", "status", "-f", db)
    rnd = js("tournament", "pair", "-f", db)
    color = rnd["color"]
    two = next(tb for tb in rnd["tables"] if len(tb["players"]) == 2)
    m = goshiki.GoshikiMatch.from_seed(4, color=color)
    rng = random.Random(4)
    order = list(m.state.board)
    rng.shuffle(order)
    for poem in order[:17]:
        took = rng.choice(["A", "B", None])
        faults = ("B",) if took == "A" and rng.random() < 0.2 else ()
        m.push(goshiki.Read(poem, took, faults))
    log = tmp_path / "table.jsonl"
    matchlog.save(log, m)
    r = js("tournament", "result", "-f", db, two["table"], "--log", log)
    assert r["cards"] == [m.state.count("A"), m.state.count("B")]
    # the log must be of the round's colour and finished
    other = next(c for c in ("blue", "pink", "yellow", "green", "orange") if c != color)
    m2 = goshiki.GoshikiMatch.from_seed(5, color=other)
    matchlog.save(tmp_path / "wrong.jsonl", m2)
    trio = next(tb for tb in rnd["tables"] if len(tb["players"]) == 3)
    one_line_error(karuta("tournament", "result", "-f", db, trio["table"], "--log",
                          tmp_path / "wrong.jsonl"), "2 players", "has 3")
    one_line_error(karuta("tournament", "result", "-f", db, two["table"], "--log",
                          tmp_path / "wrong.jsonl", "--correct"), f"a {other} match", color)
    m3 = goshiki.GoshikiMatch.from_seed(6, color=color)
    matchlog.save(tmp_path / "open.jsonl", m3)
    one_line_error(karuta("tournament", "result", "-f", db, two["table"], "--log",
                          tmp_path / "open.jsonl", "--correct"), "not over")
    assert status["round"] == 0


def test_add_and_withdraw_on_the_day(day):
    db = day
    one_line_error(karuta("tournament", "pair", "-f", db, "--color", "紫"), "unknown colour")
    rnd = js("tournament", "pair", "-f", db, "--color", "緑")
    assert rnd["color"] == "green" and js("tournament", "status", "-f", db)["color"] == "green"
    enter_round(db, rnd, random.Random(1))
    r = js("tournament", "add", "-f", db, "遅刻 太郎", "--group", "5組")
    assert r["plays_from_round"] == 2
    one_line_error(karuta("tournament", "add", "-f", db, "遅刻　太郎"), "already a player")
    js("tournament", "withdraw", "-f", db, PLAYERS[0][0])
    rnd2 = js("tournament", "pair", "-f", db)
    seats = [p for tb in rnd2["tables"] for p in tb["players"]]
    assert "遅刻 太郎" in seats and PLAYERS[0][0] not in seats and len(seats) == len(PLAYERS)
    one_line_error(karuta("tournament", "withdraw", "-f", db, "誰か"), "no player called 誰か")


def test_every_command_speaks_json(day, tmp_path):
    db = day
    for args in (["status"], ["players"], ["pair"], ["tables"], ["standings"], ["page"],
                 ["sheets"], ["export", "--out", tmp_path / "x.json"], ["unpair"],
                 ["new", "--resume"]):
        data = js("tournament", *args, "-f", db)
        assert isinstance(data, dict), args


def _waits_on(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open and is asleep (SQLite's busy wait)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        opened = any(os.readlink(f"/proc/{pid}/fd/{fd}") == os.path.realpath(path) for fd in fds)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:  # it is between files, or gone
        return False
    return opened and state == "S"


def test_resume_after_kill_keeps_every_entry(day):
    """The entry killed is a process of the installed command; the commands around it run in
    this process (the module's entry-point tests: the desk and a missing file)."""
    db = day
    rnd = js("tournament", "pair", "-f", db)
    tb = rnd["tables"][0]
    n = len(tb["players"])
    ok(karuta("tournament", "result", "-f", db, tb["table"], *([4] * (n - 1) + [3])))
    # a command killed hard in the middle of its work (SIGKILL while it waits for the file)
    con = sqlite3.connect(db)
    con.execute("BEGIN IMMEDIATE")  # hold the write lock so the next entry has to wait
    tb2 = rnd["tables"][1]
    proc = subprocess.Popen([*karuta_argv(), "tournament", "result", "-f",
                             str(db), str(tb2["table"]), *(["2"] * len(tb2["players"]))],
                            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # killed once it has the file open and sleeps on the lock (not a fixed time: a loaded
    # machine may take longer than any to start it, and a quiet one far less)
    wait_until(lambda: _waits_on(proc.pid, db), 60, "the entry to wait for the file")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    con.rollback()
    con.close()
    data = js("tournament", "new", "--resume", "-f", db)
    assert data["round"] == 1 and tb["table"] not in data["missing"]
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # one file, WAL
    con.close()
    assert tb2["table"] in data["missing"]
    t = js("tournament", "tables", "-f", db)["tables"]
    assert t[0]["cards"] == [4] * (n - 1) + [3]
    # a new tournament on the same file is refused, and the file is kept
    before = snapshot(db)
    one_line_error(karuta("tournament", "new", "-f", db, "--players", db.parent / "players.csv"),
                   "already holds a tournament", "--resume")
    assert snapshot(db) == before


def test_unknown_option_and_round_errors(day):
    one_line_error(karuta("tournament", "pair", "-f", day, "--bogus"), "No such option")
    one_line_error(karuta("tournament", "result", "-f", day, "1", "9", "8"),
                   "no round is paired yet")
    one_line_error(karuta("tournament", "tables", "-f", day, "--round", "4"), "no round")
    one_line_error(karuta("tournament", "read", "-f", day), "no round is paired yet")


@pytest.mark.entry_point
def test_results_desk_line_by_line(day):
    """The desk: lines typed as sheets arrive; a bad line is one line and the desk goes on;
    the answers in --json are JSON lines; everything is in the file afterwards."""
    db = day
    rnd = js("tournament", "pair", "-f", db)
    two = [tb for tb in rnd["tables"] if len(tb["players"]) == 2]
    trio = next(tb for tb in rnd["tables"] if len(tb["players"]) == 3)
    a, b = two[0]["players"]
    lines = [
        f"{two[0]['table']} 9 7",
        f"{two[0]['table']} 5 5",                      # already entered: refused
        f"c {two[0]['table']} 8 8 !{b.replace(' ', '')}",  # corrected; a name without its space
        f"{two[1]['table']} {two[1]['players'][1].replace(' ', '')}=3 "
        f"{two[1]['players'][0].replace(' ', '')}=12",
        f"{trio['table']} 6 6 2",
        "99 1 2",                                      # no such table
        f"{two[2]['table']} 9 9",                      # 18 cards, but 17 are read
        "m", "u", "s", "zz", "q", "1 2 3",             # nothing after q
    ]
    res = karuta("tournament", "desk", "-f", db, "--json", input_="\n".join(lines) + "\n")
    assert res.returncode == 0, res.stderr
    out = [json.loads(x) for x in res.stdout.splitlines()]
    assert out[0]["cards"] == [9, 7] and out[0]["result"] == ["win", "loss"]
    assert "already has a result" in out[1]["error"]
    assert out[2]["cards"] == [8, 8] and out[2]["faults"] == [b]
    assert out[3]["cards"] == [12, 3]
    assert out[4]["result"] == ["win", "win", "loss"]
    assert "no such table" in out[5]["error"] and "only 17 are read" in out[6]["error"]
    assert two[2]["table"] in out[7]["missing"] and trio["table"] not in out[7]["missing"]
    assert out[8]["undone"]["table"] == trio["table"]
    assert set(out[9]) == {"A", "B"}
    assert "unknown command" in out[10]["error"]
    assert len(out) == 11
    tables = {x["table"]: x for x in js("tournament", "tables", "-f", db)["tables"]}
    assert tables[two[0]["table"]]["cards"] == [8, 8]
    assert tables[trio["table"]]["cards"] is None
    # without --json: readable lines on stdout, errors as one `karuta:` line each on stderr
    res = karuta("tournament", "desk", "-f", db, input_=f"{trio['table']} 1 2 3\n99 1 1\n")
    assert res.returncode == 0
    assert f"table {trio['table']}: " in res.stdout
    assert res.stderr.strip().splitlines() == [res.stderr.strip()] and \
        res.stderr.startswith("karuta: table 99")


def test_a_round_paired_by_hand(day, tmp_path):
    """``pair --tables FILE``: the tables as given; a player in two tables, a player left
    out, a table of one, mixed blocks: one line naming the row or table, nothing paired."""
    db = day
    ps = js("tournament", "players", "-f", db)["players"]
    blocks = {}
    for p in ps:
        blocks.setdefault(p["block"], []).append(p["name"])
    rows, no = [], 0
    for block in sorted(blocks):
        names = blocks[block]
        k = 0
        while k < len(names):
            size = 3 if len(names) - k == 3 else 2
            no += 1
            rows += [(no, n) for n in names[k:k + size]]
            k += size
    head = ("卓", "名前")
    good = write_csv(tmp_path / "tables.csv", rows, "cp932", header=head)
    before = snapshot(db)
    twice = write_csv(tmp_path / "twice.csv", rows + [(1, rows[-1][1])], header=head)
    one_line_error(karuta("tournament", "pair", "-f", db, "--tables", twice),
                   f"row {len(rows) + 2}", rows[-1][1], "two tables")
    left = write_csv(tmp_path / "left.csv", rows[:-1], header=head)
    one_line_error(karuta("tournament", "pair", "-f", db, "--tables", left),
                   f"no table for {rows[-1][1]}")
    a_name, b_name = blocks["A"][0], blocks["B"][0]
    mixed = [(1, a_name), (1, b_name)] + [(n + 1, x) for n, x in rows
                                          if x not in (a_name, b_name)]
    one_line_error(karuta("tournament", "pair", "-f", db, "--tables",
                          write_csv(tmp_path / "m.csv", mixed, header=head)),
                   "table 1 mixes blocks A and B")
    nobody = write_csv(tmp_path / "n.csv", rows + [(no + 1, "誰か")], header=head)
    one_line_error(karuta("tournament", "pair", "-f", db, "--tables", nobody),
                   f"row {len(rows) + 2}", "no player called 誰か")
    assert snapshot(db) == before
    rnd = js("tournament", "pair", "-f", db, "--tables", good)
    got = [(tb["table"], n) for tb in rnd["tables"] for n in tb["players"]]
    assert got == rows


def test_undo_of_a_round_and_add_to_a_block_that_does_not_exist(day):
    """Found by the absurd-values table (issue 12): ``undo --round N`` without ``--table``
    undid the newest entry of any round, and ``add --block X`` made a new one-player block."""
    rnd = js("tournament", "pair", "-f", day)
    tb = rnd["tables"][0]
    ok(karuta("tournament", "result", "-f", day, tb["table"], *(["9", "7", "1"][:len(tb["players"])])))
    before = snapshot(day)
    one_line_error(karuta("tournament", "undo", "-f", day, "--round", "2"), "nothing to undo")
    one_line_error(karuta("tournament", "add", "-f", day, "遅刻 太郎", "--block", "Z"), "no block Z")
    assert snapshot(day) == before
    assert js("tournament", "undo", "-f", day, "--round", "1")["undone"]["table"] == tb["table"]


@pytest.mark.parametrize("rows,args,words", [
    ([("山田 太郎", "", "")], [], ["1 player", "at least two"]),
    ([("山田 太郎", "", ""), ("佐藤 花子", "", ""), ("鈴木 一郎", "", "")], ["--blocks", 3],
     ["would have one player", "fewer --blocks"]),
    ([("山田 太郎", "", "A"), ("佐藤 花子", "", "B"), ("鈴木 一郎", "", "B")], [],
     ["block A would have one player (山田 太郎)"]),
])
def test_new_refuses_a_block_of_one(tmp_path, rows, args, words):
    """Issue 24: a day that could never be paired is refused at `new`, not at the first
    `pair`; nothing is created."""
    f = write_csv(tmp_path / "p.csv", rows)
    db = tmp_path / "t.sqlite"
    one_line_error(karuta("tournament", "new", "-f", db, "--players", f, *args), *words)
    assert not db.exists() and not list(tmp_path.glob("t.sqlite*"))


def test_totals_are_bounded_by_the_cards_read(tmp_path):
    """Issue 24: 17 cards are read (seed 004), so 9-9 at a two-player table and 7-6-6 at a
    three-player one are refused; a knock-out match adds the tie-break cards read in it (10-9
    after the 18th and 19th card: --tiebreak 2, counted per match) but not past the colour's
    20; `--reads` changes the number, and the sheets print it."""
    rows = [(n, "", "") for n, _ in PLAYERS[:5]]
    f = write_csv(tmp_path / "p.csv", rows)
    db = tmp_path / "t.sqlite"
    js("tournament", "new", "-f", db, "--players", f, "--rounds", 1, "--seed", 2)
    rnd = js("tournament", "pair", "-f", db)
    two = next(tb for tb in rnd["tables"] if len(tb["players"]) == 2)
    trio = next(tb for tb in rnd["tables"] if len(tb["players"]) == 3)
    before = snapshot(db)
    one_line_error(karuta("tournament", "result", "-f", db, two["table"], 9, 9),
                   "9 + 9 = 18", "only 17 are read")
    one_line_error(karuta("tournament", "result", "-f", db, trio["table"], 7, 6, 6),
                   "7 + 6 + 6 = 19", "only 17 are read")
    assert snapshot(db) == before
    assert "17枚読み" in Path(rnd["pages"]["sheets"]).read_text()
    ok(karuta("tournament", "result", "-f", db, two["table"], 9, 8))
    ok(karuta("tournament", "result", "-f", db, trio["table"], 7, 6, 4))
    final = js("tournament", "pair", "-f", db)  # a block of 5: the top two play the final
    tb = final["tables"][0]
    before = snapshot(db)
    # no tie-break card read in this match: 10-9 is two cards too many
    one_line_error(karuta("tournament", "result", "-f", db, tb["table"], 10, 9),
                   "10 + 9 = 19", "only 17 are read", "--tiebreak")
    one_line_error(karuta("tournament", "result", "-f", db, tb["table"], 10, 9, "--tiebreak", 1),
                   "10 + 9 = 19", "17 are read and 1 tie-break card")
    one_line_error(karuta("tournament", "result", "-f", db, tb["table"], 11, 10, "--tiebreak", 3),
                   "11 + 10 = 21", "17 are read and 3 tie-break cards")
    one_line_error(karuta("tournament", "result", "-f", db, tb["table"], 11, 10, "--tiebreak", 4),
                   "4 tie-break cards", "at most 3")
    # the desk says it the same way (+N: tie-break cards read)
    out = ok(karuta("tournament", "desk", "-f", db, "--json",
                    input_=f"{tb['table']} 10 9 +1\n")).stdout
    assert "1 tie-break card" in json.loads(out.splitlines()[-1])["error"]
    assert snapshot(db) == before
    assert js("tournament", "result", "-f", db, tb["table"], 10, 9, "--tiebreak", 2)["result"] \
        == ["win", "loss"]
    db2 = tmp_path / "u.sqlite"
    js("tournament", "new", "-f", db2, "--players", f, "--rounds", 1, "--seed", 2, "--reads", 20)
    rnd = js("tournament", "pair", "-f", db2)
    two = next(tb for tb in rnd["tables"] if len(tb["players"]) == 2)
    one_line_error(karuta("tournament", "result", "-f", db2, two["table"], 9, 9, "--tiebreak", 1),
                   "preliminary match reads no tie-break cards")
    assert js("tournament", "result", "-f", db2, two["table"], 10, 10)["result"] == ["draw", "draw"]
    assert "20枚読み" in Path(rnd["pages"]["sheets"]).read_text()
    assert js("tournament", "status", "-f", db2)["reads"] == 20
    one_line_error(karuta("tournament", "new", "-f", tmp_path / "v.sqlite", "--players", f,
                          "--reads", 21), "--reads")


def test_one_colour_all_day_unless_asked(tmp_path):
    """Issue 24: by default every preliminary round reads one colour (each table keeps its 20
    cards, seed 004); --color-each-round changes it every round; --colors with one colour is
    that colour all day."""
    f = write_csv(tmp_path / "p.csv", [(n, "", "") for n, _ in PLAYERS[:6]])
    rng = random.Random(1)
    got = {}
    for name, extra in (("one", []), ("each", ["--color-each-round"]), ("pink", ["--colors", "桃"])):
        db = tmp_path / f"{name}.sqlite"
        status = js("tournament", "new", "-f", db, "--players", f, "--rounds", 3, "--seed", 4,
                    *extra)
        assert status["color_policy"] == ("each-round" if name == "each" else "one")
        colours = []
        for _ in range(3):
            rnd = js("tournament", "pair", "-f", db)
            colours.append(rnd["color"])
            enter_round(db, rnd, rng)
        got[name] = colours
    assert len(set(got["one"])) == 1
    assert all(a != b for a, b in zip(got["each"], got["each"][1:]))
    assert got["pink"] == ["pink"] * 3
    one_line_error(karuta("tournament", "new", "-f", tmp_path / "x.sqlite", "--players", f,
                          "--colors", "青", "--color-each-round"), "--color-each-round")


# ---------------------------------------------------------------- issue 34: the desk's `p`

def test_desk_p_writes_the_pairing_list_and_sheets_as_pair_does(tmp_path):
    """Issue 34: a teacher pairing round N at the desk has the same pairing list and score
    sheets to print as `karuta tournament pair` makes, and is told where they are; the round
    is one line a table; a fault entered is echoed; a lot that decided who goes on to the
    semi-finals is said, with who drew what."""
    f = write_csv(tmp_path / "p.csv", [(n, g, "") for n, g in PLAYERS])
    dbs = {}
    for how in ("cli", "desk"):
        dbs[how] = tmp_path / how / "t.sqlite"
        dbs[how].parent.mkdir()
        ok(karuta("tournament", "new", "-f", dbs[how], "--players", f, "--blocks", 2,
                  "--rounds", 2, "--seed", 11, "--title", "テスト大会"))
    by_cli = js("tournament", "pair", "-f", dbs["cli"])
    out = ok(karuta("tournament", "desk", "-f", dbs["desk"], input_="p\n")).stdout
    desk_pages = tmp_path / "desk" / "t-pages"
    for kind in ("pairings", "sheets"):
        made = desk_pages / f"round1-{kind}.html"
        assert made.read_bytes() == Path(by_cli["pages"][kind]).read_bytes(), kind
        assert str(made) in out
    lines = out.splitlines()
    head = lines.index(next(x for x in lines if x.startswith("round 1 (preliminary)")))
    for i, tb in enumerate(by_cli["tables"], 1):  # one line a table, as `pair` prints them
        assert f"table {tb['table']:>3}" in lines[head + i]
        assert all(n in lines[head + i] for n in tb["players"])
    assert "pairing list: " + str(desk_pages / "round1-pairings.html") in lines
    assert "score sheets: " + str(desk_pages / "round1-sheets.html") in lines
    db = dbs["desk"]
    # everyone level after two rounds (every match a draw on 5 cards each): a lot decides
    # who plays the semi-finals
    for r in (1, 2):
        tables = js("tournament", "tables", "-f", db)["tables"]
        typed = [f"{tb['table']} " + " ".join(["5"] * len(tb["players"])) for tb in tables]
        faulted = tables[0]["players"][1]
        typed[0] += f" !{faulted.replace(' ', '')}"
        out = ok(karuta("tournament", "desk", "-f", db,
                        input_="\n".join(typed + ["s", "p"]) + "\n"))
        said = out.stdout.splitlines()
        # `s`: everyone level for the top four, so far, then for the lot
        for block, n in (("A", 7), ("B", 6)):
            line = next(x for x in said if x.startswith(f"{block}: "))
            assert line.count(" · ") == n - 1 and f"({n} level for 4 places" in line
            assert ("a lot decides" in line) == (r == 2), line
        assert any(f"table {tables[0]['table']}: " in x and f"faulted (お手つき): {faulted}" in x
                   for x in said), out.stdout
        assert f"pairing list: {desk_pages / f'round{r + 1}-pairings.html'}" in said
        assert (desk_pages / f"round{r + 1}-sheets.html").exists()
    lots = [x for x in said if "a lot decided" in x]
    assert len(lots) == 2 and all("who goes on" in x and "drew 1" in x and "(out)" in x
                                  for x in lots), said
    data = js("tournament", "standings", "-f", db)
    assert {x["name"] for x in data["lots"]} == {n for n, _ in PLAYERS}
    assert "[semi]" in out.stdout


def test_desk_p_says_the_round_when_its_pages_cannot_be_written(day):
    """Pairing is refused before anything is stored when the pages folder cannot be
    written (the desk goes on)."""
    import shutil

    pages_dir = day.with_name(day.stem + "-pages")
    shutil.rmtree(pages_dir)
    pages_dir.write_text("not a folder")
    before = snapshot(day)
    res = ok(karuta("tournament", "desk", "-f", day, input_="p\nm\n"))
    assert res.stderr.startswith("karuta: cannot write the pages in") and \
        len(res.stderr.strip().splitlines()) == 1
    assert "no round" in res.stdout or "round 0" in res.stdout
    assert snapshot(day) == before


def test_export_csv_opens_in_excel_as_utf8(day, tmp_path):
    """Issue 34: the exported CSV begins with UTF-8's byte order mark (what Excel on a
    Japanese PC needs to show the names), and reads back through our own CSV reader and
    Python's utf-8-sig; --no-bom writes plain UTF-8."""
    from reader.tournament import files
    from reader.tournament.players import read_text, sheet_rows

    rnd = js("tournament", "pair", "-f", day)
    enter_round(day, rnd, random.Random(3))
    ok(karuta("tournament", "export", "-f", day, "--csv", tmp_path / "all.csv"))
    raw = (tmp_path / "all.csv").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfround,")
    names = [r["name"] for r in csv.DictReader(io.StringIO(raw.decode("utf-8-sig")))]
    assert sorted(names) == sorted(n for n, _ in PLAYERS)
    rows = sheet_rows(read_text(tmp_path / "all.csv"), "all.csv", files.RESULT_COLUMNS,
                      ("table", "name", "cards"))
    assert sorted(c["name"] for _, c in rows) == sorted(names)
    # the export's own rows entered again as a correction: the same results
    res = ok(karuta("tournament", "result", "-f", day, "--csv", tmp_path / "all.csv",
                    "--correct"))
    assert "Traceback" not in res.stderr
    ok(karuta("tournament", "export", "-f", day, "--csv", tmp_path / "plain.csv", "--no-bom"))
    assert (tmp_path / "plain.csv").read_bytes() == raw[3:]
