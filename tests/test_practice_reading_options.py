"""``karuta practice --ma/--yoin/--speed/--take``: a practice match's reading is set as a reading's
is (every pause configurable), written into the log so ``--resume``, ``match replay`` and a
joining machine read the same plan; a bad value is one line before anything is written."""
from __future__ import annotations

import json

from cli_run import one_line_error, run_inproc


def _header(log):
    return json.loads(log.read_text(encoding="utf-8").splitlines()[0])


def test_the_reading_options_shape_the_match_and_its_log(tmp_path):
    quick, usual = tmp_path / "quick.jsonl", tmp_path / "usual.jsonl"
    base = ("practice", "--bot-vs-bot", "3,3", "--seed", "5", "--voice", "tone", "--cards", "5")
    r = run_inproc(*base, "--ma", "0.5", "--yoin", "0.5", "--speed", "2", "--take", "1",
                   "--log", quick, data_dir=tmp_path / "data")
    assert r.returncode == 0, r.stderr
    assert run_inproc(*base, "--log", usual, data_dir=tmp_path / "data").returncode == 0
    reading = _header(quick)["practice"]["reading"]
    assert (reading["ma_ms"], reading["yoin_ms"], reading["speed"], reading["take_ms"]) == (
        500, 500, 2.0, 1000)
    assert (_header(usual)["practice"]["reading"]["ma_ms"],
            _header(usual)["practice"]["reading"]["take_ms"]) == (1000, 3000)

    def kami_times(log):
        return [json.loads(x)["timing"]["kami_ms"] for x in log.read_text().splitlines()[1:]
                if json.loads(x).get("timing")]

    q, u = kami_times(quick), kami_times(usual)
    # the same reads, each a shorter cycle: the 間 halved, the 余韻 a sixth, twice the pace,
    # a third of the take
    assert len(q) >= 3 and len(u) >= 3
    assert max(b - a for a, b in zip(q, q[1:])) < min(b - a for a, b in zip(u, u[1:]))
    replay = run_inproc("match", "replay", quick, "--json")
    assert replay.returncode == 0, replay.stderr


def test_bad_values_and_settings_the_log_or_host_fixes_are_one_line(tmp_path):
    log = tmp_path / "m.jsonl"
    for opt, value, words in (("--ma", "-1", "ma"), ("--speed", "9", "speed"),
                              ("--yoin", "nan", "yoin"), ("--take", "-1", "take")):
        one_line_error(run_inproc("practice", "--bot-vs-bot", "2,2", opt, value, "--log", log,
                                  data_dir=tmp_path / "data"), words)
        assert not log.exists()
    assert run_inproc("practice", "--bot-vs-bot", "2,2", "--seed", "1", "--voice", "tone",
                      "--cards", "3", "--log", log, data_dir=tmp_path / "data").returncode == 0
    before = log.read_bytes()
    one_line_error(run_inproc("practice", "--bot-vs-bot", "2,2", "--log", log, "--resume",
                              "--speed", "2", data_dir=tmp_path / "data"), "--resume", "--speed")
    assert log.read_bytes() == before
    one_line_error(run_inproc("practice", "--bot-vs-bot", "2,2", "--log", log, "--resume",
                              "--take", "1", data_dir=tmp_path / "data"), "--resume", "--take")
    assert log.read_bytes() == before
    for opt in ("--ma", "--take"):
        one_line_error(run_inproc("practice", "--join", "127.0.0.1:1", "--code", "123456",
                                  opt, "0.5", data_dir=tmp_path / "data"), "host sets", opt)


def test_a_refusal_names_exactly_the_settings_given(tmp_path):
    """Joining or resuming takes the match's settings from the host or the log: the one line
    names the options the user typed, and only those (one list serves both refusals)."""
    join = ("practice", "--join", "127.0.0.1:1", "--code", "123456")
    r = run_inproc(*join, "--seed", "4", "--no-joka", "--memorize", "1",
                   data_dir=tmp_path / "data")
    one_line_error(r, "host sets", "--seed, --joka/--no-joka and --memorize")
    assert "--rules" not in r.stderr and "--take" not in r.stderr
    one_line_error(run_inproc(*join, "--resume", data_dir=tmp_path / "data"), "leave out --resume")
    log = tmp_path / "m.jsonl"
    assert run_inproc("practice", "--bot-vs-bot", "2,2", "--seed", "1", "--voice", "tone",
                      "--cards", "3", "--log", log, data_dir=tmp_path / "data").returncode == 0
    before = log.read_bytes()
    r = run_inproc("practice", "--bot-vs-bot", "2,2", "--log", log, "--resume", "--cards", "4",
                   "--ma", "0.5", data_dir=tmp_path / "data")
    one_line_error(r, "leave out --cards and --ma")
    assert "--seed" not in r.stderr and log.read_bytes() == before
