"""No command writes over a file karuta keeps (issue 22, case 2 and 3).

Every option or argument that names a file a command WRITES (``--out``, ``--csv``,
``--plot``, ``--plan-out``, a new ``--log``, a new save) is given, in turn, each of the
app's own state files — a tournament, the stats database, a match log, a practice log, a
club session, a table save, the calibration file, SQLite's journal of the tournament — and
a database of another program.  Promised: exit 1, one line ``karuta: ...`` naming the file,
and every file byte for byte as it was (``reader.base.statefiles.check_output``, called by
each command before it changes anything).

``OUTPUTS`` and ``INPUTS`` together must name every path option of every command (click's
own list): a new option that writes a file is tested without anyone writing a case.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import click
import pytest
from cli_run import run_inproc, run_karuta

from faults_table import BASES, _without, inproc, made_once  # noqa: F401 (fixture)

#: (command path, option or <argument>) -> the argv that writes FILE there (after "karuta")
OUTPUTS: dict[tuple[tuple[str, ...], str], list[str]] = {
    (("read",), "--plan-out"): BASES[("read",)] + ["--plan-out", "FILE"],
    (("render",), "--out"): _without(BASES[("render",)], "--out") + ["--out", "FILE"],
    (("render",), "--plan-out"): BASES[("render",)] + ["--plan-out", "FILE"],
    (("match", "keep"), "--log"): _without(BASES[("match", "keep")], "--log") + ["--log", "FILE"],
    (("drill", "speed"), "--log"): BASES[("drill", "speed")] + ["--log", "FILE"],
    (("drill", "speed"), "--plan-out"): BASES[("drill", "speed")] + ["--plan-out", "FILE"],
    (("stats",), "--out"): ["stats", "--export", "csv", "--out", "FILE"],
    (("stats",), "--plot"): ["stats", "--plot", "FILE.png"],
    (("tournament", "export"), "--csv"): ["tournament", "export", "-f", "{tmp}/t.sqlite",
                                          "--csv", "FILE"],
    (("tournament", "export"), "--out"): ["tournament", "export", "-f", "{tmp}/t.sqlite",
                                          "--out", "FILE"],
    (("tournament", "new"), "--file"): ["tournament", "new", "-f", "FILE", "--players",
                                        "{tmp}/players.csv", "--seed", "1"],
    (("table", "genkan", "new"), "<save>"): ["table", "genkan", "new", "FILE", "--seed", "1",
                                             "--player", "小町:4"],
    (("table", "cards", "new"), "<save>"): ["table", "cards", "new", "FILE", "--seed", "1",
                                            "--player", "tenjo:♠"],
    (("table", "genkan", "play"), "--save"): _without(BASES[("table", "genkan", "play")],
                                                      "--save") + ["--save", "FILE"],
    (("table", "cards", "play"), "--save"): _without(BASES[("table", "cards", "play")],
                                                     "--save") + ["--save", "FILE"],
    (("table", "genkan", "recite"), "--out"): BASES[("table", "genkan", "recite")]
    + ["--out", "FILE"],
    (("practice",), "--log"): BASES[("practice",)] + ["--log", "FILE"],
}
#: path options that only read (or name a state file to go on with), and folders
INPUTS = {
    (("read",), "--session"): "the session to go on with (a state file itself)",
    (("match", "keep"), "--deal"): "read", (("match", "replay"), "<file>"): "read",
    (("voice", "add"), "<path>"): "a folder read",
    (("tournament", "new"), "--players"): "read", (("tournament", "pair"), "--tables"): "read",
    (("tournament", "result"), "--log"): "read", (("tournament", "result"), "--csv"): "read",
    (("tournament", "pair"), "--out"): "a folder (test_faults_tournament.py: pages)",
    (("tournament", "sheets"), "--out"): "a folder (test_faults_tournament.py: pages)",
    **{(("table", s, c), "<save>"): "the save to go on with" for s in ("genkan", "cards")
       for c in ("do", "log", "show")},
    (("table", "genkan", "recite"), "<save>"): "the save to go on with",
}
for _c in ("add", "desk", "export", "page", "pair", "players", "read", "result", "sheets",
           "standings", "status", "tables", "undo", "unpair", "withdraw"):
    INPUTS[(("tournament", _c), "--file")] = "the tournament (test_faults_tournament.py)"

#: the state files given as outputs: name -> what the one line calls it
STATE_FILES = {
    "t.sqlite": "a karuta tournament file",
    "data/stats.sqlite3": "a karuta stats database",
    "m.jsonl": "a match log",
    "p.jsonl": "a practice log",
    "data/sessions/last.json": "a club reading session",
    "g.json": "a table save",
    "g.json.log.txt": "a table save's log",
    "config/calibration.json": "the calibration file",
    "t.sqlite-wal": "the SQLite journal of a karuta tournament file",
    "other.db": "an SQLite database",
}


def _path_params():
    from reader.cli import cli

    ctx = click.Context(cli)
    out = set()

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for n in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, n), path + (n,))
            return
        for p in cmd.params:
            if isinstance(p.type, click.Path):
                name = max(p.opts, key=len) if isinstance(p, click.Option) else f"<{p.name}>"
                out.add((path, name))

    walk(cli, ())
    return out


def test_every_path_option_is_known_as_an_output_or_an_input():
    params = _path_params()
    unknown = params - set(OUTPUTS) - set(INPUTS)
    assert not unknown, f"say whether these write a file (OUTPUTS) or not (INPUTS): {unknown}"
    assert not (set(OUTPUTS) | set(INPUTS)) - params, "a case for an option that is gone"


def _state_files(root: Path) -> sqlite3.Connection:
    """Beside faults_table's t.sqlite and g.json: the other files karuta keeps; and t.sqlite
    in WAL mode with a live -wal (as while a desk has it open): the connection that keeps it
    so, for the caller to close."""
    made_once(root, _kept_files)
    con = sqlite3.connect(root / "t.sqlite")
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("UPDATE players SET grp = grp")
    con.commit()
    return con


def _kept_files(root: Path) -> None:
    from reader.drills.stats import StatsDB

    with StatsDB(root / "data" / "stats.sqlite3") as db:
        sid = db.start_session("speed", datetime(2026, 1, 1, tzinfo=timezone.utc))
        db.record_tap(sid, 1, datetime(2026, 1, 1, tzinfo=timezone.utc), kimariji="む",
                      reaction_ms=300.0, from_kami_ms=900.0, correct=True)
    deal = {"rules": "kyogi", "A": list(range(1, 26)), "B": list(range(26, 51))}
    (root / "m.jsonl").write_text(json.dumps(deal) + '\n{"read": 1, "took": "A"}\n')
    (root / "p.jsonl").write_text(json.dumps(dict(deal, practice={"seats": {}})) + "\n")
    (root / "data" / "sessions").mkdir(parents=True, exist_ok=True)
    (root / "data" / "sessions" / "last.json").write_text(
        '{"kind": "karuta-club-session", "version": 2}')
    (root / "config").mkdir(exist_ok=True)
    (root / "config" / "calibration.json").write_text(
        '{"devices": {"x": {"offset_ms": 3.0}}, "version": 1}')
    other = sqlite3.connect(root / "other.db")
    other.execute("CREATE TABLE notes(t TEXT)")
    other.execute("INSERT INTO notes VALUES ('mine')")
    other.commit()
    other.close()


def _all_bytes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


#: a new log, save or tournament over one of its own kind: "exists: ... --resume"
SAME_KIND = {(("match", "keep"), "m.jsonl"), (("tournament", "new"), "t.sqlite"),
             (("practice",), "p.jsonl"),
             *((("table", s, c), "g.json") for s in ("genkan", "cards") for c in ("new", "play"))}

CASES = [(f"{' '.join(k[0])} {k[1]} = {name}", k, name)
         for k in OUTPUTS for name in STATE_FILES]


@pytest.mark.parametrize("case_id,key,name", CASES, ids=[c[0] for c in CASES])
def test_an_output_over_a_state_file_is_refused_and_nothing_changes(inproc, case_id, key, name):
    root = inproc.root
    con = _state_files(root)
    try:
        target = root / name
        if key == (("stats",), "--plot"):  # --plot takes a FILE.png: a link named so
            (root / "link.png").symlink_to(target)
            target = root / "link.png"
        argv = [str(target) if a in ("FILE", "FILE.png") else a for a in OUTPUTS[key]]
        before = _all_bytes(root)
        rc, out, err = inproc(argv)
        after = _all_bytes(root)
    finally:
        con.close()
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("karuta: "), (rc, out, err)
    assert str(target) in lines[0], lines[0]
    if (key[0], name) not in SAME_KIND:
        assert STATE_FILES[name] in lines[0] and "would replace it" in lines[0], lines[0]
    assert after == before, f"{case_id}: a file changed: " + ", ".join(
        k for k in set(before) | set(after) if before.get(k) != after.get(k))


def test_stats_export_over_the_stats_database_keeps_the_history(tmp_path):
    """Case 3 through the installed command: the database is not truncated, the next
    ``karuta stats`` still shows the history."""
    from reader.drills.stats import StatsDB

    data = tmp_path / "data"
    db = data / "stats.sqlite3"
    with StatsDB(db) as s:
        sid = s.start_session("speed", datetime(2026, 1, 1, tzinfo=timezone.utc))
        s.record_tap(sid, 7, datetime(2026, 1, 1, tzinfo=timezone.utc), kimariji="あまの",
                     reaction_ms=250.0, from_kami_ms=900.0, correct=True)
    before = db.read_bytes()
    r = run_karuta("stats", "--export", "csv", "--out", str(db), data_dir=data)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "a karuta stats database" in r.stderr and "Traceback" not in r.stderr
    assert db.read_bytes() == before
    r = run_karuta("stats", "--json", data_dir=data)
    assert r.returncode == 0, r.stderr
    assert [p["poem"] for p in json.loads(r.stdout)] == [7], "the history is still there"


def _tournament(tmp_path, players_name="p.csv") -> tuple[Path, Path]:
    """(the organiser's players CSV, a tournament made from it by the command, in this
    process: what is tested is the next command)."""
    players = tmp_path / players_name
    players.write_text("名前,組,ブロック\n山田,1,A\n佐藤,2,A\n", encoding="utf-8")
    t = tmp_path / "t.sqlite"
    assert run_inproc("tournament", "new", "-f", str(t), "--players", str(players),
                      "--seed", "1").returncode == 0
    return players, t


def test_tournament_export_over_the_tournament_keeps_it(tmp_path):
    """Case 2 through the installed command: refused, no "wrote", the tournament goes on."""
    _, t = _tournament(tmp_path)
    before = t.read_bytes()
    r = run_karuta("tournament", "export", "-f", str(t), "--out", str(t))
    assert r.returncode == 1 and "wrote" not in r.stdout + r.stderr, (r.stdout, r.stderr)
    assert r.stderr.startswith("karuta: ") and r.stderr.count("\n") == 1
    assert t.read_bytes() == before
    assert run_karuta("tournament", "status", "-f", str(t)).returncode == 0


# ---------------------------------------------------------------------------- a user's file
def _has_replace(path: tuple[str, ...]) -> bool:
    """Whether ``karuta PATH`` has ``--replace`` (a new log, save or tournament never
    replaces a file that is there, so those have none)."""
    from reader.cli import cli

    cmd = cli
    for name in path:
        cmd = cmd.get_command(click.Context(cmd), name)
    return any(p.name == "replace" for p in cmd.params)


#: outputs with --replace whose base writes them quickly (read and drill speed stop at the
#: sound device first)
REPLACEABLE = {
    (("render",), "--out"), (("render",), "--plan-out"), (("stats",), "--out"),
    (("stats",), "--plot"), (("tournament", "export"), "--csv"),
    (("tournament", "export"), "--out"), (("table", "genkan", "recite"), "--out"),
}
#: a user's own file under each name (a player list, a picture, a recording of their own)
USERS_FILE = "名前,組,ブロック\n山田,1,A\n佐藤,2,A\n".encode()


def _user_file(root: Path, key) -> Path:
    suffix = {"--plot": ".png", "--plan-out": ".json"}.get(key[1], ".wav" if key[0] in (
        ("render",), ("table", "genkan", "recite")) else ".csv")
    f = root / f"mine{suffix}"
    f.write_bytes(USERS_FILE)
    return f


USER_CASES = [(f"{' '.join(k[0])} {k[1]}", k) for k in OUTPUTS]


@pytest.mark.parametrize("case_id,key", USER_CASES, ids=[c[0] for c in USER_CASES])
def test_an_output_over_a_file_the_user_made_is_refused(inproc, case_id, key):
    """The organiser's players.csv given to ``export --csv`` by mistake: one line naming it
    (and ``--replace`` where the command has it), exit 1, every file as it was."""
    root = inproc.root
    mine = _user_file(root, key)
    argv = [str(mine) if a in ("FILE", "FILE.png") else a for a in OUTPUTS[key]]
    before = _all_bytes(root)
    rc, out, err = inproc(argv)
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("karuta: "), (rc, out, err)
    assert str(mine) in lines[0] and "exists" in lines[0], lines[0]
    # a new log is never written over a file (drill speed's --replace is for its plan)
    assert ("--replace" in lines[0]) == (_has_replace(key[0]) and key[1] != "--log"), lines[0]
    assert _all_bytes(root) == before
    assert mine.read_bytes() == USERS_FILE


def test_the_quick_cases_have_replace():
    assert all(_has_replace(k[0]) for k in REPLACEABLE)
    assert _has_replace(("read",)) and _has_replace(("drill", "speed"))


@pytest.mark.parametrize("key", sorted(REPLACEABLE), ids=lambda k: f"{' '.join(k[0])} {k[1]}")
def test_replace_writes_over_the_users_file_and_karutas_own_output_is_replaced(inproc, key):
    """With ``--replace`` the file is written; a second run over what karuta wrote (an earlier
    export, plot, render, plan) needs no ``--replace``: it can be made again."""
    root = inproc.root
    mine = _user_file(root, key)
    argv = [str(mine) if a in ("FILE", "FILE.png") else a for a in OUTPUTS[key]]
    if key[0] == ("stats",):
        _state_files(root).close()  # some history to export and plot
    rc, out, err = inproc(argv + ["--replace"])
    assert rc == 0, (out, err)
    first = mine.read_bytes()
    assert first != USERS_FILE and len(first) > 20
    from reader.base.statefiles import output_kind

    assert output_kind(mine), f"karuta's own {mine.name} is not recognised as its own"
    rc, out, err = inproc(argv)  # again, over karuta's own file: no --replace needed
    assert rc == 0, (out, err)


def test_an_empty_file_is_no_users_work(inproc):
    """A file made empty beforehand (``touch``, ``mktemp``) holds nothing to lose."""
    root = inproc.root
    (root / "empty.csv").touch()
    rc, out, err = inproc(["tournament", "export", "-f", str(root / "t.sqlite"),
                           "--csv", str(root / "empty.csv")])
    assert rc == 0, err
    assert (root / "empty.csv").read_text(encoding="utf-8-sig").startswith("round,")


def test_a_link_to_the_users_file_is_refused_too(inproc):
    root = inproc.root
    mine = root / "players-real.csv"
    mine.write_bytes(USERS_FILE)
    (root / "link.csv").symlink_to(mine)
    rc, out, err = inproc(["tournament", "export", "-f", str(root / "t.sqlite"),
                           "--csv", str(root / "link.csv")])
    assert rc == 1 and "--replace" in err and mine.read_bytes() == USERS_FILE, err


def test_export_over_the_organisers_players_csv_through_the_command(tmp_path):
    """The case as noticed, through the installed ``karuta``: the players' CSV stays (the
    line names --replace); the export each round to results.csv needs no flag."""
    players, t = _tournament(tmp_path, "players.csv")
    before = players.read_bytes()
    for opt in ("--csv", "--out"):
        r = run_karuta("tournament", "export", "-f", str(t), opt, str(players))
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert "karuta did not write it" in r.stderr and "--replace" in r.stderr, r.stderr
        assert players.read_bytes() == before
    results = tmp_path / "results.csv"
    for _ in range(2):
        r = run_karuta("tournament", "export", "-f", str(t), "--csv", str(results))
        assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("case_id,key", USER_CASES, ids=[c[0] for c in USER_CASES])
def test_an_output_that_is_a_pipe_is_refused_and_stays_a_pipe(inproc, case_id, key):
    """A FIFO (or a device: /dev/null as root) named as an output: the atomic rename would put
    a regular file in its place.  One line, and the pipe is still a pipe."""
    import os
    import stat

    root = inproc.root
    fifo = root / ("pipe.png" if key[1] == "--plot" else "pipe")
    os.mkfifo(fifo)
    argv = [str(fifo) if a in ("FILE", "FILE.png") else a for a in OUTPUTS[key]]
    rc, out, err = inproc(argv + (["--replace"] if _has_replace(key[0]) else []))
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("karuta: "), (rc, out, err)
    assert str(fifo) in lines[0], lines[0]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the pipe was replaced by a file"


def test_a_new_club_session_over_a_users_file_is_refused_not_moved(inproc):
    """``read --live --session notes.json``: a new session moves the last session aside as
    previous.json; a file that is no session is the user's and stays where it is."""
    root = inproc.root
    notes = root / "notes.json"
    notes.write_text('{"my": "notes"}')
    rc, out, err = inproc(["read", "--live", "--voice", "tone", "--device", "x",
                           "--session", str(notes)])
    assert rc == 1 and err.count("\n") == 1 and "karuta did not write it" in err, err
    assert notes.read_text() == '{"my": "notes"}' and not (root / "previous.json").exists()
