"""A terminal or pipe whose encoding has no Japanese (a Latin-1 locale; PYTHONIOENCODING):
the command still does its work and shows what it can -- the rest as ``\\uXXXX`` escapes, so a
JSON answer stays the same JSON -- with one line saying so, never a traceback after a change
was saved.  Through the entry point: the process's own stdout encoding is what is tested."""
from __future__ import annotations

import json

from cli_run import run_inproc, run_karuta


def test_output_a_latin1_terminal_cannot_show_is_escaped_and_said(tmp_path):
    res = run_karuta("kimariji", "--read", "21", "--json", env={"PYTHONIOENCODING": "latin-1"},
                     data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("karuta: "), res.stderr
    assert "iso8859-1" in lines[0] and "UTF-8" in lines[0]
    assert "\\u" in res.stdout
    same = run_inproc("kimariji", "--read", "21", "--json", data_dir=tmp_path / "data")
    assert json.loads(res.stdout) == json.loads(same.stdout)


def test_a_utf8_terminal_is_not_told_anything(tmp_path):
    res = run_karuta("kimariji", "--read", "21", env={"PYTHONIOENCODING": "utf-8"},
                     data_dir=tmp_path / "data")
    assert res.returncode == 0 and res.stderr == "", res.stderr
