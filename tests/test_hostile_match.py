"""The wrong command on a log (a careless user): ``match keep --resume`` given a practice log.
Its reads carry timings (``karuta practice``'s reactions) that match keep does not keep: a
resumed keeper would rewrite the log without them at its first save, even on a bare ``q``.
Promised: one line naming the right command, the log byte for byte as it was."""
from __future__ import annotations

from cli_run import one_line_error, run_inproc


def test_match_keep_does_not_resume_a_practice_log(tmp_path):
    log = tmp_path / "p.jsonl"
    res = run_inproc("practice", "--bot-vs-bot", "2,4", "--seed", "7", "--cards", "2",
                     "--log", log, data_dir=tmp_path / "data")
    assert res.returncode == 0, res.stderr
    before = log.read_bytes()
    assert b'"timing"' in before
    res = run_inproc("match", "keep", "--log", log, "--resume", input="q\n",
                     data_dir=tmp_path / "data")
    one_line_error(res, "practice log", "karuta practice --log")
    assert log.read_bytes() == before
