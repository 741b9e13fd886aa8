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
