"""Bot-vs-bot matches replay exactly as before the practice session was pulled out of the
board window (issue 23).

``tests/data/practice_golden.json.gz`` holds what the code of commit 962ad8e (before
``reader.practice.session`` existed) wrote for a fixed set of matches: kyogi (full and short
deals) and goshiki (every colour), bots of every level against each other and a bot alone
(``--vs none``), through the API (``headless.new_match`` + ``headless.play``) and through the
command (``karuta practice --bot-vs-bot A,B --seed S --log F [--json]``, the tone voice and
the built-in synthesiser).  It was made by running this file as a script at that commit
(``python tests/test_practice_golden.py``): the old code cannot be run again here, so its
outputs are stored, not recomputed.

What must be the same: every read's event (who took, who touched which side, faults, sends),
the ``karuta match replay --json`` summary, the command's printed report, and the whole log
for goshiki.  What changed on purpose, and only that: a kyogi read now closes once the take
has settled (``session.SETTLE_S`` after the take plus the simultaneous window), as it always
did in the window; the headless player used to keep the read open to the next 上の句, so the
old logs also list the loser's ``dead`` touches that came after that.  The check drops exactly
those from the old kyogi logs and then wants the new log byte for byte.  And the reading's
defaults changed on purpose with the human reader's timing (issue 21): the jo-ka's pause before
its 下の句 (``joka_gap_ms``, 1.5 s, a new setting) and kyogi's pause between its two 下の句
(``gap_ms`` 0.6 -> 0.9 s); the check writes those into the old logs' headers
(``_todays_reading``) and moves every plan time in them by the one amount the jo-ka's length
changed — every read after the jo-ka, its touches and their times, must be as before.  The
built-in voice itself reads at the reader's pace since then (0.315 s a mora, not 0.3), so for
the two commands that use it the plan times inside each read moved too: there the reads, the
touches' owners and verdicts and the printed report must be as before, not the times.  The
printed report's kimariji column names each card's kimariji as it was when it was read, among
the cards in play (issue 34: it named the 100-card one, わたのはらこ where a goshiki board
shows わ): ``_todays_kimariji`` writes that into the old report, after checking that laying
the old table out again gives the old text.
"""
from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "practice_golden.json.gz"

#: (rules, A level, B level or None for an empty seat, seed, cards, color)
API_CASES = [
    *[("kyogi", a, b, seed, None, None)
      for seed, (a, b) in enumerate([(1, 5), (3, 3), (5, 2), (4, 4), (2, 1), (5, 5)], start=1)],
    ("kyogi", 3, 4, 11, 5, None), ("kyogi", 5, 1, 12, 12, None), ("kyogi", 2, 2, 13, 50, None),
    ("kyogi", 3, None, 14, None, None), ("kyogi", 5, None, 15, 8, None),
    *[("goshiki", a, b, 20 + i, None, color) for i, (color, (a, b)) in enumerate(
        zip(["blue", "pink", "yellow", "green", "orange"], [(1, 5), (3, 3), (5, 2), (4, 4), (2, 5)]))],
    ("goshiki", 4, None, 30, None, "pink"), ("goshiki", 3, 2, 31, None, None),
]

#: command lines (after ``karuta practice``); ``{log}`` is the log file
CLI_CASES = [
    ["--bot-vs-bot", "2,4", "--seed", "7", "--voice", "tone", "--log", "{log}"],
    ["--bot-vs-bot", "5,3", "--seed", "8", "--voice", "tone", "--log", "{log}", "--json"],
    ["--bot-vs-bot", "1,5", "--seed", "9", "--cards", "6", "--log", "{log}", "--json"],
    ["--bot-vs-bot", "4,4", "--seed", "10", "--rules", "goshiki", "--voice", "tone",
     "--log", "{log}"],
    ["--bot-vs-bot", "3,3", "--seed", "11", "--rules", "goshiki", "--color", "green",
     "--log", "{log}", "--json"],
]


def api_case(rules, a, b, seed, cards, color) -> dict:
    """One match through the API: its log text and replay summary."""
    from audio.voice import ToneVoice
    from reader.match import log as matchlog
    from reader.practice import headless
    from reader.practice.match import Seat

    seats = {"A": Seat("bot", a), "B": Seat("bot", b) if b is not None else Seat("none")}
    m = headless.new_match(rules, seats, seed, ToneVoice(), cards=cards, color=color)
    headless.play(m)
    return {"log": m.log_text(), "summary": matchlog.summary(m.match)}


def cli_case(args, tmp: Path) -> dict:
    """One match through ``karuta practice`` (``reader.cli.main`` in this process, as
    ``run_inproc`` runs it, so that ``_old_form`` holds there too): its log text and what it
    printed.  No user's configuration: the default voice is the built-in synthesiser."""
    from cli_run import run_inproc

    log = tmp / "golden.jsonl"
    if log.exists():
        log.unlink()
    env = {"KARUTA_CONFIG_DIR": str(tmp / "cfg"), "KARUTA_DATA_DIR": str(tmp / "data")}
    r = run_inproc("practice", *[x.format(log=log) for x in args], env=env)
    assert r.returncode == 0, r.stderr
    return {"log": log.read_text(encoding="utf-8"), "stdout": r.stdout}


def _old_form(lv, rng):
    """A bot's form as the golden data's code drew it: its level plus a normal spread of 1.4
    levels, within 0.4-6 (level 1 at most 2.2), with no bound around its level.  The form is
    now kept within one level of the bot's number on purpose (issue 34); the check plays with
    the old draw (the same numbers from the same stream) so that everything else must still
    be as before."""
    from reader.practice import bot

    top = bot.TOP_SKILL_1 if lv.anchor == "kami_end" else bot.TOP_SKILL
    return min(top, max(bot.LOW_SKILL, lv.level + rng.gauss(0.0, 1.4)))


@pytest.fixture(autouse=True)
def old_form(monkeypatch):
    from reader.practice import bot

    monkeypatch.setattr(bot, "match_skill", _old_form)


def _key(case) -> str:
    return json.dumps(case)


def _without_late_dead(old_log: str) -> str:
    """The old kyogi log less the touches the session no longer sees: ``dead`` ones at or
    after the take's settling (take + simultaneous window + ``SETTLE_S``)."""
    from reader.practice.session import SETTLE_S

    lines = [json.loads(x) for x in old_log.splitlines()]
    header = lines[0]
    if header["rules"] != "kyogi":
        return old_log
    window = header["practice"]["simultaneous_ms"]
    out = [lines[0]]
    for line in lines[1:]:
        timing = line.get("timing")
        if timing:
            takes = [t["ms"] for t in timing["touches"] if t["verdict"] == "take"]
            if takes:
                # (ms are rounded to 0.1 in the log; the session closes on frames)
                closes = min(takes) + window + SETTLE_S * 1000
                timing = {**timing, "touches": [
                    t for t in timing["touches"]
                    if not (t["verdict"] == "dead" and t["ms"] >= closes - 0.05)]}
                line = {**line, "timing": timing}
        out.append(line)
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out)


#: the reading settings whose defaults changed after the golden data was made (issue 21)
READING_NOW = {"kyogi": {"gap_ms": 900, "joka_gap_ms": 1500},
               "goshiki": {"joka_gap_ms": 1500}}


def _todays_reading(old_log: str, new_log: str) -> str:
    """The old log with its header's reading settings as today's defaults write them (the keys
    in today's order: ``joka_gap_ms`` after ``gap_ms``) and every plan time (``kami_ms``,
    ``decisive_ms``, a touch's ``ms``) moved by one amount: how much later the first 上の句
    after the jo-ka starts in ``new_log`` (one number for the whole match)."""
    def first_kami(log):
        return next(json.loads(x)["timing"]["kami_ms"] for x in log.splitlines()[1:]
                    if json.loads(x).get("timing"))

    shift = first_kami(new_log) - first_kami(old_log)

    def moved(line: str) -> str:
        r = json.loads(line)
        t = r.get("timing")
        if not t:
            return line
        t = {**t, "kami_ms": round(t["kami_ms"] + shift, 1),
             "decisive_ms": round(t["decisive_ms"] + shift, 1) if t.get("decisive_ms")
             is not None else t.get("decisive_ms"),
             "touches": [{**x, "ms": round(x["ms"] + shift, 1)} for x in t["touches"]]}
        return json.dumps({**r, "timing": t}, ensure_ascii=False)

    first, _, rest = old_log.partition("\n")
    rest = "".join(moved(x) + "\n" for x in rest.splitlines())
    header = json.loads(first)
    reading = header["practice"]["reading"]
    changed = READING_NOW[header["rules"]]
    new = {}
    for k, v in reading.items():
        new[k] = changed.get(k, v)
        if k == "gap_ms":
            new["joka_gap_ms"] = changed["joka_gap_ms"]
    header["practice"]["reading"] = new
    return json.dumps(header, ensure_ascii=False) + "\n" + rest


def _todays_kimariji(old_stdout: str) -> str:
    """The old printed report with its table's kimariji column as today's: each card's
    kimariji when it was read (kyogi: among the 100; goshiki: among the colour's 20, from the
    report's first line), the other cells as they were, laid out again (columns by display
    width).  The old table, laid out again unchanged, must be the old text."""
    import re

    from poems import COLORS
    from poems.kimariji import kimariji_of
    from reader.ui.term import table

    head, sep, tab = old_stdout.partition("\n\nread ")
    if not sep:
        return old_stdout
    tab = "read " + tab
    lines = tab.split("\n")
    n = next((i for i, ln in enumerate(lines) if i and not ln[:1].isdigit()), len(lines))
    rows = [re.split(r" {2,}", ln.rstrip()) for ln in lines[:n]]
    width = len(rows[0])
    rows = [r + [""] * (width - len(r)) for r in rows]
    assert table(rows) == lines[:n]  # (the layout alone is as before)
    color = re.match(r"goshiki \((\w+)\)", head)
    universe = COLORS[color.group(1)] if color else range(1, 101)
    read: list[int] = []
    for r in rows[1:]:
        r[2] = kimariji_of(int(r[1]), universe, read).card
        read.append(int(r[1]))
    return head + sep[:2] + "\n".join(table(rows) + lines[n:])


def _events(log: str) -> list[dict]:
    return [{k: v for k, v in json.loads(x).items() if k != "timing"}
            for x in log.splitlines()]


@pytest.fixture(scope="module")
def golden():
    return json.loads(gzip.decompress(DATA.read_bytes()).decode("utf-8"))


@pytest.mark.parametrize("case", API_CASES, ids=lambda c: "-".join(map(str, c)))
def test_an_api_bot_match_replays_as_before(golden, case):
    old = dict(golden["api"][_key(case)])
    new = api_case(*case)
    old["log"] = _todays_reading(old["log"], new["log"])
    assert new["summary"] == old["summary"]
    assert _events(new["log"]) == _events(old["log"])
    assert new["log"] == _without_late_dead(old["log"])


@pytest.mark.parametrize("args", CLI_CASES, ids=lambda a: " ".join(a[:2] + a[3:4]))
def test_a_bot_vs_bot_command_prints_and_logs_as_before(golden, args, tmp_path):
    old = dict(golden["cli"][_key(args)])
    new = cli_case(args, tmp_path)
    old["log"] = _todays_reading(old["log"], new["log"])
    assert new["stdout"] == _todays_kimariji(old["stdout"])
    assert _events(new["log"]) == _events(old["log"])
    if "tone" in args:  # (the built-in voice's pace changed: its times with it)
        assert new["log"] == _without_late_dead(old["log"])


def test_the_golden_data_is_what_its_cases_name(golden):
    # a case added here without regenerating the data would be skipped silently otherwise
    assert set(golden["api"]) == {_key(c) for c in API_CASES}
    assert set(golden["cli"]) == {_key(a) for a in CLI_CASES}
    assert golden["made_at"] == "962ad8e"
    old = [json.loads(v["log"].splitlines()[0]) for v in golden["api"].values()]
    assert {h["rules"] for h in old} == {"kyogi", "goshiki"}


def _generate() -> None:  # pragma: no cover - run once, at commit 962ad8e
    import tempfile

    made = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], capture_output=True,
                          text=True, cwd=HERE, check=True).stdout.strip()
    data = {"made_at": made, "api": {}, "cli": {}}
    for case in API_CASES:
        data["api"][_key(case)] = api_case(*case)
    with tempfile.TemporaryDirectory() as tmp:
        for args in CLI_CASES:
            data["cli"][_key(args)] = cli_case(args, Path(tmp))
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_bytes(gzip.compress(json.dumps(data, ensure_ascii=False, sort_keys=True)
                                   .encode("utf-8"), mtime=0))
    print(f"{DATA}: {len(data['api'])} API and {len(data['cli'])} command matches from {made}")


if __name__ == "__main__":
    _generate()
