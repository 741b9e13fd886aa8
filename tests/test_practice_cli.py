"""``karuta practice`` headless: matches, logs, resume, bad input.

Every bad input ends as one line ``karuta: ...`` on stderr, exit status 1, and the log on disk
is left exactly as it was.  ``--bot-vs-bot`` plays no sound and opens no window: the cases run
the command in this process (``cli_run.run_marked``), those marked ``entry_point`` through
the installed command (one headless match and one one-line error: a process each, the
commands that read their files in this process).
"""
from __future__ import annotations

import json

import pytest
from cli_run import one_line_error, run_inproc, run_marked

TONE = ("--voice", "tone")


def karuta(*args, timeout=120):
    return run_marked(*args, timeout=timeout)


@pytest.mark.entry_point
def test_bot_vs_bot_json_is_what_match_replay_prints(tmp_path):
    log = tmp_path / "m.jsonl"
    r = karuta("practice", "--bot-vs-bot", "2,4", "--seed", "7", "--log", str(log), "--json",
               *TONE)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["winner"] in ("A", "B") and out["rules"] == "kyogi"
    assert out[out["winner"]]["count"] == 0
    replay = run_inproc("match", "replay", str(log), "--json")
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout) == out
    table = run_inproc("match", "replay", str(log))
    assert f"{out['winner']} wins" in table.stdout


def test_the_same_seed_plays_the_same_match(tmp_path):
    a = karuta("practice", "--bot-vs-bot", "3,3", "--seed", "11", "--log", str(tmp_path / "a"),
               "--json", *TONE)
    b = karuta("practice", "--bot-vs-bot", "3,3", "--seed", "11", "--log", str(tmp_path / "b"),
               "--json", *TONE)
    assert a.stdout == b.stdout
    assert (tmp_path / "a").read_text() == (tmp_path / "b").read_text()


def test_goshiki_and_a_short_kyogi_game(tmp_path):
    r = karuta("practice", "--rules", "goshiki", "--color", "pink", "--bot-vs-bot", "1,5",
               "--seed", "3", "--json", *TONE)
    out = json.loads(r.stdout)
    assert out["rules"] == "goshiki" and out["color"] == "pink" and out["reads"] >= 17
    r = karuta("practice", "--cards", "8", "--bot-vs-bot", "5,1", "--seed", "3",
               "--log", str(tmp_path / "s.jsonl"), *TONE)
    assert r.returncode == 0, r.stderr
    assert "kyogi" in r.stdout and "wins" in r.stdout
    head = json.loads((tmp_path / "s.jsonl").read_text().splitlines()[0])
    assert len(head["A"]) == len(head["B"]) == 8 and head["cards"] == 8


def test_resume_continues_a_cut_log_to_the_same_end(tmp_path):
    whole = tmp_path / "whole.jsonl"
    r = karuta("practice", "--bot-vs-bot", "4,2", "--seed", "21", "--log", str(whole), "--json",
               *TONE)
    lines = whole.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:12]))  # as if the program died after read 11
    r2 = karuta("practice", "--log", str(cut), "--resume", "--json", *TONE)
    assert r2.returncode == 0, r2.stderr
    assert r2.stdout == r.stdout
    assert cut.read_text() == whole.read_text()


@pytest.mark.parametrize("args, words", [
    (("--vs", "bot:9"), ["levels are 1-5"]),
    (("--vs", "robot"), ["unknown opponent"]),
    (("--vs", "bot"), ["bot:1 to bot:5"]),
    (("--bot-vs-bot", "2,0"), ["levels are 1-5"]),
    (("--bot-vs-bot", "2"), ["two levels"]),
    (("--bot-vs-bot", "2,x"), ["levels are 1-5"]),
    (("--bot-vs-bot", "2,3", "--cards", "0"), ["out of range"]),
    (("--bot-vs-bot", "2,3", "--cards", "51"), ["out of range"]),
    (("--bot-vs-bot", "2,3", "--cards", "ten"), ["--cards"]),
    (("--bot-vs-bot", "2,3", "--rules", "goshiki", "--cards", "5"),
     ["--cards needs --rules kyogi: goshiki has no --cards"]),
    (("--bot-vs-bot", "2,3", "--color", "blue"), ["--color needs --rules goshiki"]),
    (("--bot-vs-bot", "2,3", "--rules", "beginner"), ["--rules"]),
    (("--bot-vs-bot", "2,3", "--simultaneous", "-5"), ["--simultaneous"]),
    (("--json",), ["--json needs --bot-vs-bot"]),
    (("--resume",), ["--resume needs --log"]),
    (("--bot-vs-bot", "2,3", "--vs", "human"), ["with --bot-vs-bot, leave out --vs"]),
    (("--bot-vs-bot", "2,3", "--memorize", "5"), ["with --bot-vs-bot, leave out --memorize"]),
    (("--bogus",), ["--bogus"]),
])
def test_bad_options_are_one_line(args, words):
    one_line_error(karuta("practice", *args, *TONE), *words)


def _unchanged(path, r, *words):
    before = path.read_bytes()
    one_line_error(r, *words)
    assert path.read_bytes() == before


def test_resume_refuses_a_log_that_is_not_a_practice_log(tmp_path):
    keep = tmp_path / "keep.jsonl"
    keep.write_text('{"rules": "kyogi", "A": %s, "B": %s}\n' % (list(range(1, 26)),
                                                               list(range(26, 51))))
    before = keep.read_bytes()
    r = karuta("practice", "--log", str(keep), "--resume", "--json", *TONE)
    one_line_error(r, "not a practice log")
    assert keep.read_bytes() == before


def test_resume_refuses_a_log_that_does_not_match_its_seed(tmp_path):
    log = tmp_path / "m.jsonl"
    karuta("practice", "--bot-vs-bot", "2,4", "--seed", "5", "--log", str(log), "--json", *TONE)
    lines = log.read_text().splitlines(keepends=True)
    head = json.loads(lines[0])
    head["seed"] = 6  # another order: read 1 is not the logged poem
    log.write_text(json.dumps(head, ensure_ascii=False) + "\n" + "".join(lines[1:5]))
    before = log.read_bytes()
    r = karuta("practice", "--log", str(log), "--resume", "--json", *TONE)
    one_line_error(r, "not this match's log")
    assert log.read_bytes() == before


@pytest.mark.parametrize("text, words", [
    ("not json\n", ["line 1", "not JSON"]),
    ("", ["empty log"]),
    ('{"rules": "kyogi", "A": [1], "B": [2], "cards": 1, "practice": {}, "seed": 1}\n{"read": 1, "took": "Z"}\n',
     ["line 2"]),
    ('{"rules": "kyogi", "A": [1], "B": [2], "cards": 1, "seed": 1, '
     '"practice": {"seats": {"A": "bot:9", "B": "human"}}}\n', ["seats"]),
    ('{"rules": "kyogi", "A": [1], "B": [2], "cards": 1, "seed": 1, '
     '"practice": {"seats": {"A": "bot:2", "B": "bot:3"}, "reading": {"tempo": 3}}}\n',
     ["reading settings"]),
    ('{"rules": "kyogi", "A": [1], "B": [2], "cards": 1, '
     '"practice": {"seats": {"A": "bot:2", "B": "bot:3"}}}\n', ["seed"]),
    # the board's layout (where each card lay) must hold the deal's cards
    ('{"rules": "kyogi", "A": [1], "B": [2], "cards": 1, "seed": 1, '
     '"practice": {"seats": {"A": "bot:2", "B": "bot:3"}, "layout": {"A": [[[], []], '
     '[[], []], [[5], []]], "B": [[[], []], [[], []], [[2], []]]}}}\n',
     ["line 1", "layout", "other cards"]),
    ('{"rules": "kyogi", "A": [1], "B": [2], "cards": 1, "seed": 1, '
     '"practice": {"seats": {"A": "bot:2", "B": "bot:3"}, "layout": {"A": "here"}}}\n',
     ["line 1", "layout"]),
])
def test_resume_refuses_bad_logs(tmp_path, text, words):
    log = tmp_path / "bad.jsonl"
    log.write_text(text)
    r = karuta("practice", "--log", str(log), "--resume", *TONE)
    one_line_error(r, *words)
    assert log.read_text() == text


def test_resume_of_a_missing_file_is_one_line(tmp_path):
    one_line_error(karuta("practice", "--log", str(tmp_path / "none.jsonl"), "--resume", *TONE),
                   "no such file")


def test_resume_refuses_new_deal_options(tmp_path):
    log = tmp_path / "m.jsonl"
    karuta("practice", "--bot-vs-bot", "2,4", "--seed", "5", "--log", str(log), "--json", *TONE)
    _unchanged(log, karuta("practice", "--log", str(log), "--resume", "--seed", "3", *TONE),
               "leave out")


def test_no_joka_starts_with_the_first_card_and_the_log_keeps_it(tmp_path):
    logs = {}
    for flag in ("--joka", "--no-joka"):
        logs[flag] = tmp_path / f"{flag}.jsonl"
        r = karuta("practice", "--bot-vs-bot", "2,4", "--seed", "7", "--log", str(logs[flag]),
                   "--json", flag, *TONE)
        assert r.returncode == 0, r.stderr
        replay = karuta("match", "replay", str(logs[flag]), "--json")
        assert json.loads(replay.stdout) == json.loads(r.stdout)
    (head, first, *_), (nhead, nfirst, *_) = (
        [json.loads(x) for x in logs[f].read_text().splitlines()] for f in ("--joka", "--no-joka"))
    assert head["practice"]["reading"]["joka"] is True
    assert nhead["practice"]["reading"]["joka"] is False
    # the same order, but without the jo-ka the first 上の句 is the reading's first sound
    assert first["read"] == nfirst["read"]
    assert nfirst["timing"]["kami_ms"] < 1000 < first["timing"]["kami_ms"]
    # a resumed match takes the reading from its log: the option is refused there
    _unchanged(logs["--no-joka"], karuta("practice", "--log", str(logs["--no-joka"]), "--resume",
                                          "--joka", *TONE), "leave out")


@pytest.mark.entry_point
def test_a_log_that_cannot_be_written_is_one_line(tmp_path):
    one_line_error(karuta("practice", "--bot-vs-bot", "2,3", "--log",
                          str(tmp_path / "no" / "such" / "m.jsonl"), *TONE), "cannot write")


def test_without_json_the_report_names_the_winner_and_the_seed():
    r = karuta("practice", "--bot-vs-bot", "5,1", "--cards", "4", "--seed", "12", *TONE)
    assert r.returncode == 0 and r.stderr == ""
    assert "A wins" in r.stdout and "seed 12" in r.stdout.splitlines()[-1]


def test_the_built_in_voice_times_a_headless_match(tmp_path):
    """No --voice: the synthesized voice's real mora timeline (layouts only, no audio)."""
    log = tmp_path / "m.jsonl"
    r = karuta("practice", "--bot-vs-bot", "3,3", "--seed", "2", "--log", str(log), "--json")
    assert r.returncode == 0, r.stderr
    head, *reads = [json.loads(x) for x in log.read_text().splitlines()]
    assert head["practice"]["voice"] == "synth"
    takes = [t for r_ in reads for t in r_["timing"]["touches"] if t["verdict"] == "take"]
    assert len(takes) >= 25
    # level-3 bots react ~0.4 s after the decisive onset (median) at their level, ~0.15-0.6 s
    # as their form varies from match to match (reader.practice.bot.match_skill), measured on
    # the synthesized voice's clock (a wrong onset would be off by a second or more)
    reactions = sorted(t["reaction_ms"] for t in takes)
    assert 100 < reactions[len(reactions) // 2] < 700


def test_a_match_alone_cannot_be_resumed_with_an_opponent(tmp_path):
    """A goshiki match alone (B dealt nothing) resumed with bots at both seats: one line, the
    log untouched; resumed as it was, it plays on alone and replays to the same result."""
    from audio.voice import ToneVoice
    from reader.practice import headless
    from reader.practice.match import Seat

    log = tmp_path / "alone.jsonl"
    seats = {"A": Seat("bot", 3), "B": Seat("none")}
    m = headless.new_match("goshiki", seats, 7, ToneVoice())
    m.close_read()
    headless.save(m, log)
    _unchanged(log, karuta("practice", "--log", str(log), "--resume", "--bot-vs-bot", "2,3",
                           *TONE), "match alone")
    r = karuta("practice", "--log", str(log), "--resume", "--json", *TONE)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rules"] == "goshiki" and out["winner"] == "A" and out["B"]["taken"] == 0
    assert set(out["solo"]) == {"taken", "missed", "faults"}
    assert json.loads(karuta("match", "replay", str(log), "--json").stdout) == out
