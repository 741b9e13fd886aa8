"""A player's name and group are what the desk, the sheets and the projector show: bounded in
length and free of control characters, or one line naming where they came from (the CSV row,
or ``add``); nothing is stored from a refused file or entry."""
from __future__ import annotations

import json

from cli_run import one_line_error, run_inproc

from reader.tournament.players import NAME_MAX


def _new(tmp_path, rows: list[str]):
    (tmp_path / "p.csv").write_text("name,group\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return run_inproc("tournament", "new", "--players", tmp_path / "p.csv",
                      "--file", tmp_path / "day.karuta", data_dir=tmp_path / "data")


def test_a_name_as_long_as_allowed_is_kept_whole(tmp_path):
    longest = "山" * NAME_MAX
    r = _new(tmp_path, [f"{longest},東", "佐藤,東", "鈴木,西", "田中,西"])
    assert r.returncode == 0, r.stderr
    r = run_inproc("tournament", "players", "--json", "--file", tmp_path / "day.karuta")
    assert longest in {p["name"] for p in json.loads(r.stdout)["players"]}


def test_a_name_too_long_in_the_csv_is_one_line_naming_its_row(tmp_path):
    r = _new(tmp_path, ["佐藤,東", "山" * (NAME_MAX + 1) + ",東", "鈴木,西"])
    one_line_error(r, "p.csv row 3", f"{NAME_MAX + 1} characters", f"at most {NAME_MAX}")
    assert not (tmp_path / "day.karuta").exists()


def test_a_group_too_long_or_a_control_character_is_refused(tmp_path):
    r = _new(tmp_path, ["佐藤," + "東" * 200, "鈴木,西"])
    one_line_error(r, "row 2", "group")
    r = _new(tmp_path, ["佐藤,東", "鈴\u202e木,西"])  # a bidi override: the sheets would lie
    one_line_error(r, "row 3", "control character")
    assert not (tmp_path / "day.karuta").exists()


def test_add_on_the_day_is_bounded_too_and_stores_nothing_refused(tmp_path):
    assert _new(tmp_path, ["佐藤,東", "鈴木,西", "田中,西"]).returncode == 0
    day = tmp_path / "day.karuta"
    before = run_inproc("tournament", "players", "--json", "--file", day).stdout
    one_line_error(run_inproc("tournament", "add", "x" * 1000, "--file", day), "add", "name")
    one_line_error(run_inproc("tournament", "add", "新人\x1b[2J", "--file", day),
                   "control character")
    assert run_inproc("tournament", "players", "--json", "--file", day).stdout == before
    assert run_inproc("tournament", "add", "新人", "--file", day).returncode == 0
