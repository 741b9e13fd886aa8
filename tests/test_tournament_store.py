"""The tournament store closes every SQLite connection it opens, whatever the command and
however it ends (issue 23): a whole day, with refused entries, driven many times through the
``karuta tournament`` commands in this process.

Every connection made while the commands run is kept alive by the test (so one left open
cannot be closed behind our back when Python frees it), and afterwards each must be closed
and no file descriptor of this process may point at the tournament file or its WAL.
"""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from reader.base.errors import KarutaError
from reader.cli.tournament import tournament

PLAYERS = "名前,組,ブロック\n" + "".join(f"選手{i:02d},{i % 3}組,\n" for i in range(9))


def open_fds(db: Path) -> list[str]:
    """This process's file descriptors on the tournament file (or its -wal/-shm)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(db)):
            out.append(target)
    return out


@pytest.fixture
def kept(monkeypatch):
    """Every sqlite3 connection made meanwhile, held so that it cannot be freed (closed)."""
    made: list[sqlite3.Connection] = []
    real = sqlite3.connect

    def connect(*a, **kw):
        conn = real(*a, **kw)
        made.append(conn)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    return made


def closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def test_every_command_closes_its_connection(tmp_path, kept):
    db = tmp_path / "t.sqlite"
    players = tmp_path / "p.csv"
    players.write_text(PLAYERS, encoding="utf-8")
    runner = CliRunner()

    def run(*args, ok=True, input=None):
        r = runner.invoke(tournament, [*map(str, args), "-f", str(db)], input=input)
        assert (r.exit_code == 0) == ok, (args, r.exit_code, r.output, r.exception)
        # a refusal is a KarutaError (``karuta``'s main makes it one line, exit 1)
        assert r.exception is None or isinstance(r.exception, (SystemExit, KarutaError)), \
            r.exception
        return r

    run("new", "--players", players, "--rounds", 3, "--seed", 4, "--third-place")
    run("new", "--resume")
    run("add", "遅刻者")
    for rnd in range(1, 4):
        run("pair")
        run("pair", ok=False)  # results missing: refused
        run("result", 99, 9, 8, ok=False)  # no such table
        for tb in json.loads(run("tables", "--json").output)["tables"]:
            counts = [9, 8, 0][:len(tb["players"])]
            run("result", tb["table"], 20, 20, *([0] if len(counts) == 3 else []), ok=False)
            run("result", tb["table"], *counts)
        run("undo")
        run("desk", input=f"{tb['table']} {' '.join(map(str, counts))}\nm\ns\nq\n")
        run("status")
        run("standings", "--json")
        run("players")
    run("withdraw", "遅刻者")
    run("withdraw", "遅刻者", ok=False)  # already withdrawn
    run("pair")
    run("unpair")
    run("pair")
    run("sheets")
    run("page")
    run("export", "--csv", tmp_path / "all.csv", "--out", tmp_path / "all.json")
    run("status", "--json")
    # a file that is not a tournament is refused and left closed too
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE x(y)")
    con.commit()
    con.close()
    r = runner.invoke(tournament, ["status", "-f", str(other)])
    assert r.exit_code == 1
    assert len(kept) > 60  # the commands above did open the file, many times
    left = [c for c in kept if not closed(c)]
    assert not left, f"{len(left)} of {len(kept)} connections left open"
    assert open_fds(db) == [] and open_fds(other) == []


def test_tie_break_cards_from_a_results_csv(tmp_path):
    """Issue 24: a knock-out result typed into a spreadsheet gives the tie-break cards read in
    that match in a tiebreak (読み足し) column; without it, more cards than were read is
    refused and nothing is entered."""
    from reader.tournament.errors import TournamentError
    from reader.tournament.players import PlayerRow
    from reader.tournament.store import Settings, Tournament

    rows = [PlayerRow(f"p{i}", "", "A") for i in range(3)]
    with Tournament.create(tmp_path / "t.sqlite", rows, Settings(rounds=1, seed=5)) as t:
        t.enter(1, [9, 5, 2], round_no=t.pair().no)
        final = t.pair().tables[0]  # a block of 3: the top two play the final
        a, b = final.names
        sheet = tmp_path / "final.csv"
        sheet.write_text(f"卓,名前,枚数\n1,{a},10\n1,{b},8\n", encoding="utf-8")
        with pytest.raises(TournamentError, match="only 17 are read"):
            t.enter_csv(sheet)
        assert t.table_at(final.round, 1).counts is None
        sheet.write_text(f"卓,名前,枚数,読み足し\n1,{a},10,1\n1,{b},8,1\n", encoding="utf-8")
        assert t.enter_csv(sheet)[0].counts == (10, 8)
