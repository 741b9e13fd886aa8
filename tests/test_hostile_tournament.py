"""A tournament file edited by hand between two commands (a careless organiser with an SQLite
browser): a setting the day's checks rest on, out of its range, is one line naming the file
and the setting, and the file is left as it is -- not a result checked against -1 cards read."""
from __future__ import annotations

import hashlib
import sqlite3

import pytest
from cli_run import one_line_error, run_inproc

from faults_table import made_once

PLAYERS = "name,group\n" + "".join(f"P{i},G{i % 3}\n" for i in range(6))


def _paired(root):
    (root / "p.csv").write_text(PLAYERS)
    for argv in (["new", "--players", root / "p.csv", "--seed", "1"], ["pair"]):
        res = run_inproc("tournament", *argv, "-f", root / "t.sqlite", data_dir=root / "data")
        assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("key,value", [("reads", "-1"), ("reads", "0"), ("reads", "21"),
                                       ("reads", "true"), ("reads", '"17"'),
                                       ("color_policy", '"bogus"')])
@pytest.mark.parametrize("command", [["status"], ["result", "1", "9", "7"]])
def test_a_setting_out_of_range_is_said_and_the_file_kept(tmp_path, key, value, command):
    made_once(tmp_path, _paired)
    t = tmp_path / "t.sqlite"
    con = sqlite3.connect(t)
    con.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    con.commit()
    con.close()
    before = hashlib.sha1(t.read_bytes()).hexdigest()
    res = run_inproc("tournament", *command, "-f", t, data_dir=tmp_path / "data")
    one_line_error(res, str(t), "damaged", key)
    assert hashlib.sha1(t.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("title", ["x" * 1001, "a\x1b[31mred", "\u202eevil", "two\nlines"])
def test_a_title_the_file_could_not_hold_is_refused_before_it_is_made(tmp_path, title):
    (tmp_path / "p.csv").write_text(PLAYERS)
    t = tmp_path / "t.sqlite"
    res = run_inproc("tournament", "new", "-f", t, "--players", tmp_path / "p.csv",
                     "--title", title, data_dir=tmp_path / "data")
    one_line_error(res, "title")
    assert not t.exists()


def test_the_longest_title_is_read_back(tmp_path):
    (tmp_path / "p.csv").write_text(PLAYERS)
    t = tmp_path / "t.sqlite"
    res = run_inproc("tournament", "new", "-f", t, "--players", tmp_path / "p.csv",
                     "--title", "x" * 1000, data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stderr
    res = run_inproc("tournament", "status", "-f", t, data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stderr
