"""An export the user edited is the user's work: karuta makes its own exports and plans again
over themselves without ``--replace`` only while they are as it wrote them.  An organiser who
opens results.csv in a spreadsheet, corrects a name and saves keeps the header karuta wrote;
the next ``export --csv results.csv`` must not throw the correction away."""
from __future__ import annotations

import json

from cli_run import one_line_error, run_inproc

PLAYERS = "name,group\n山田,東\n佐藤,東\n鈴木,西\n田中,西\n"


def _day(tmp_path):
    (tmp_path / "p.csv").write_text(PLAYERS, encoding="utf-8")
    day = tmp_path / "day.karuta"
    for argv in (("new", "--players", tmp_path / "p.csv"), ("pair",), ("result", "1", "9", "7")):
        r = run_inproc("tournament", *argv, "--file", day, data_dir=tmp_path / "data")
        assert r.returncode == 0, r.stderr
    return day


def test_an_edited_csv_export_is_not_replaced_without_replace(tmp_path):
    day, data = _day(tmp_path), tmp_path / "data"
    results = tmp_path / "results.csv"
    export = ("tournament", "export", "--file", day, "--csv", results)
    assert run_inproc(*export, data_dir=data).returncode == 0
    first = results.read_text(encoding="utf-8")
    assert run_inproc(*export, data_dir=data).returncode == 0, "its own export, unchanged"
    edited = first.replace("山田", "山田太郎", 1)
    assert edited != first and edited.startswith(first.splitlines()[0])  # header kept
    results.write_text(edited, encoding="utf-8")
    one_line_error(run_inproc(*export, data_dir=data), "results.csv", "not as karuta wrote it",
                   "--replace")
    assert results.read_text(encoding="utf-8") == edited
    assert run_inproc(*export, "--replace", data_dir=data).returncode == 0
    assert results.read_text(encoding="utf-8") == first


def test_an_export_karuta_wrote_with_another_data_folder_asks_for_replace(tmp_path):
    day = _day(tmp_path)
    out = tmp_path / "all.json"
    export = ("tournament", "export", "--file", day, "--out", out)
    assert run_inproc(*export, data_dir=tmp_path / "data").returncode == 0
    made = out.read_bytes()
    one_line_error(run_inproc(*export, data_dir=tmp_path / "other"), "--replace")
    assert out.read_bytes() == made


def test_an_edited_reading_plan_is_kept(tmp_path):
    data, plan = tmp_path / "data", tmp_path / "plan.json"
    render = ("render", "--voice", "tone", "--cards", "1", "--seed", "3", "--out",
              tmp_path / "r.wav", "--plan-out", plan)
    assert run_inproc(*render, data_dir=data).returncode == 0, "first"
    assert run_inproc(*render, data_dir=data).returncode == 0, "again over its own"
    p = json.loads(plan.read_text())
    p["note"] = "read this one slowly"
    plan.write_text(json.dumps(p))
    one_line_error(run_inproc(*render, data_dir=data), "plan.json", "not as karuta wrote it")
    assert json.loads(plan.read_text())["note"] == "read this one slowly"
