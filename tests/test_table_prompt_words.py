"""At the table prompt a refusal is said in the prompt's own words: ``recite out=FILE
replace``, not the command line's ``--out`` / ``--replace``; the user's file stays."""
from __future__ import annotations

from cli_run import run_inproc
from test_cli_table import _composed


def test_recite_over_a_users_file_at_the_prompt_names_the_prompts_words(tmp_path):
    save, _ = _composed(tmp_path)
    mine = tmp_path / "notes.wav"
    mine.write_bytes(b"my own recording, not karuta's")
    r = run_inproc("table", "genkan", "play", "--save", save, "--resume", "--voice", "tone",
                   input=f"recite out={mine}\nq\n", data_dir=tmp_path / "data")
    said = r.stdout + r.stderr
    line = next(ln for ln in said.splitlines() if str(mine) in ln)
    assert f"out={mine}" in line and "add the word replace" in line, line
    assert "--out" not in line and "--replace" not in line, line
    assert mine.read_bytes() == b"my own recording, not karuta's"
    r = run_inproc("table", "genkan", "play", "--save", save, "--resume", "--voice", "tone",
                   input=f"recite out={mine} replace\nq\n", data_dir=tmp_path / "data")
    assert f"recited poem #1 to {mine}" in r.stdout, r.stdout + r.stderr
