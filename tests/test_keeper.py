"""``karuta match keep`` end to end: scripted input, undo, saving, kill and --resume, Ctrl-C."""
from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import karuta_argv, run_karuta
from click.testing import CliRunner

from poems import COLORS
from reader.match import keeper
from reader.match import log as matchlog
from reader.cli.match import match
from reader.match.rules import goshiki, kyogi

SEED = 7
DEAL = kyogi.deal(random.Random(SEED))
A, B = DEAL.cards("A"), DEAL.cards("B")
KARA = sorted(DEAL.karafuda)


def keep(tmp_path, args, lines, log="m.jsonl"):
    runner = CliRunner()
    result = runner.invoke(match, ["keep", "--log", str(tmp_path / log), *args],
                           input="".join(x + "\n" for x in lines), catch_exceptions=False)
    return result


def log_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def karuta(*args, **kw):
    return run_karuta(*args, **kw)


def wait_for_lines(path: Path, n: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists() and len(path.read_text().splitlines()) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} did not reach {n} lines")


# --- scripted matches -------------------------------------------------------------------------

def test_kyogi_reads_undo_and_the_log(tmp_path):
    r = keep(tmp_path, ["--rules", "kyogi", "--seed", str(SEED)], [
        f"{A[0]} a",              # A takes own
        f"{B[0]} b ao",           # セミダブ: B takes own, A touched own
        f"{KARA[0]} ao bp",       # 共お手
        "u",                      # ...undone
        f"{KARA[0]} ao",          # 片お手 instead
        "q",
    ])
    assert r.exit_code == 0, r.output
    assert "セミダブ" in r.output and "undone" in r.output and "片お手" in r.output
    assert "A 26 · B 22 cards left" in r.output
    lines = log_lines(tmp_path / "m.jsonl")
    assert lines[0] == {"rules": "kyogi", "A": list(A), "B": list(B), "seed": SEED}
    assert [x["read"] for x in lines[1:]] == [A[0], B[0], KARA[0]]
    # the cards actually sent are logged (B's lowest), so the log does not lean on the default
    assert lines[2]["send"] == [B[1]] and lines[3]["send"] == [B[2]]
    assert "send" not in lines[1]
    assert lines[2]["touched"] == {"A": ["own"], "B": ["own"]}   # the taking touch added
    out = matchlog.summary(matchlog.load(tmp_path / "m.jsonl").match)
    assert (out["A"]["count"], out["B"]["count"]) == (26, 22)


def test_sends_can_be_named(tmp_path):
    card = A[-1]
    r = keep(tmp_path, ["--rules", "kyogi", "--seed", str(SEED)], [f"{B[3]} a s{card}"])
    assert r.exit_code == 0, r.output
    assert f"A sends {card} to B" in r.output
    assert log_lines(tmp_path / "m.jsonl")[1]["send"] == [card]


def test_mistyped_entries_are_shown_and_the_match_goes_on(tmp_path):
    r = keep(tmp_path, ["--rules", "kyogi", "--seed", str(SEED)], [
        "hello", f"{A[1]} x", f"{KARA[0]} a", f"{A[0]} a", f"{A[0]} a", "101", "u", "u", "?"])
    assert r.exit_code == 0, r.output
    assert "! start with the poem number" in r.output
    assert "! what is 'x'" in r.output
    assert f"! poem {KARA[0]} is karafuda" in r.output
    assert f"! poem {A[0]} was already read" in r.output
    assert "! poem 101 is outside 1-100" in r.output
    assert "! nothing to undo" in r.output
    assert "u undo" in r.output
    assert log_lines(tmp_path / "m.jsonl")[1:] == []


def test_a_whole_kyogi_match_to_the_end(tmp_path):
    r = keep(tmp_path, ["--rules", "kyogi", "--seed", str(SEED)], [f"{n} a" for n in A])
    assert r.exit_code == 0, r.output
    assert "match over" in r.output
    out = matchlog.summary(matchlog.load(tmp_path / "m.jsonl").match)
    assert out["winner"] == "A" and out["A"]["count"] == 0


def test_a_whole_goshiki_match(tmp_path):
    st = goshiki.deal(random.Random(SEED), "pink")
    cards = list(COLORS["pink"])
    entries = [f"{cards[0]} b fa",      # A faults with nothing taken: sits out the next read
               f"{cards[1]} a",         # refused
               f"{cards[1]} b",
               f"{cards[2]} a fa"]      # take and fault on one read: refused
    r = keep(tmp_path, ["--rules", "goshiki", "--seed", str(SEED), "--color", "pink"], entries)
    assert "A sits out the next read" in r.output
    assert "! A must sit out this read" in r.output
    assert "! A cannot both take and fault" in r.output
    entries = [f"{cards[2]} a",         # A takes one
               f"{cards[3]} b la"]      # A touched the right card, then a wrong one: B takes it
    entries += [f"{c} a" for c in cards[4:17]]
    r = keep(tmp_path, ["--resume"], entries)
    assert r.exit_code == 0, r.output
    assert "A faulted after the right card" in r.output
    assert f"A puts {cards[2]} into the ba" in r.output
    assert f"A gets {cards[2]} from the ba" in r.output
    assert "match over" in r.output
    loaded = matchlog.load(tmp_path / "m.jsonl")
    assert loaded.match.initial == st
    out = matchlog.summary(loaded.match)
    assert out["reads"] == 17 and out["winner"] == "A"
    # A: 1 taken, lost to the ba, then 13 reads + the ba card; B: reads 1, 2 and 4
    assert (out["A"]["taken"], out["B"]["taken"], out["ba"]) == (14, 3, 0)
    assert log_lines(tmp_path / "m.jsonl")[4] == {"read": cards[3], "took": "B",
                                                  "faults": ["A"], "lost": "A"}


def test_deal_file_is_used(tmp_path):
    deal = tmp_path / "deal.json"
    a, b = list(range(1, 26)), list(range(26, 51))
    deal.write_text(json.dumps({"A": a, "B": b}))
    r = keep(tmp_path, ["--rules", "kyogi", "--deal", str(deal)], ["60 ao"])
    assert r.exit_code == 0, r.output
    lines = log_lines(tmp_path / "m.jsonl")
    assert lines[0] == {"rules": "kyogi", "A": a, "B": b}
    assert matchlog.load(tmp_path / "m.jsonl").match.state.count("A") == 26


def test_announcer_hook_supplies_the_poem(tmp_path):
    class Reader:
        def __init__(self):
            self.order = list(KARA)
            self.calls = 0

        def next_poem(self, state):
            self.calls += 1
            return self.order[len(state.results)]

    loaded = matchlog.LoadedLog("kyogi", kyogi.KyogiMatch(DEAL))
    reader = Reader()
    inputs = iter(["ao\n", "?\n", "zz\n", "-\n", ""])
    out = []
    k = keeper.Keeper(loaded, tmp_path / "h.jsonl", readline=lambda: next(inputs),
                      echo=lambda s="", nl=True: out.append(s), announcer=reader)
    k.run()
    assert [ev.poem for ev in loaded.match.events] == KARA[:2]
    assert reader.calls == 3          # reads 1, 2 and the prompt for 3; not per typo or help
    assert any(f"(poem {KARA[0]})" in s for s in out)


@pytest.mark.parametrize("line, expect", [
    ("37 a", kyogi.Read(37, "A")),
    ("37 = ao", kyogi.Read(37, "both", {"A": ["own"]})),
    ("5 a:own b:opp bo", kyogi.Read(5, None, {"A": ["own"], "B": ["opp", "own"]})),
    ("12 b s3,4", kyogi.Read(12, "B", send=(3, 4))),
    ("12 b s 3 4", kyogi.Read(12, "B", send=(3, 4))),
])
def test_kyogi_entry_grammar(line, expect):
    got = keeper.parse_entry("kyogi", line)
    assert (got.poem, got.took, got.send) == (expect.poem, expect.took, expect.send)
    assert {p: set(s) for p, s in got.touched} == {p: set(s) for p, s in expect.touched}


@pytest.mark.parametrize("line, took, faults, lost", [
    ("61 a", "A", (), None), ("61 b fa", "B", ("A",), None), ("61 fab", None, ("A", "B"), None),
    ("61 c lb", "C", ("B",), "B"), ("61 -", None, (), None),
])
def test_goshiki_entry_grammar(line, took, faults, lost):
    got = keeper.parse_entry("goshiki", line)
    assert (got.poem, got.took, got.faults, got.lost) == (61, took, faults, lost)


# --- crash, Ctrl-C and --resume (a real process) ----------------------------------------------

def test_killed_mid_match_loses_nothing_and_resume_continues(tmp_path):
    log = tmp_path / "m.jsonl"
    p = subprocess.Popen(karuta_argv("match", "keep", "--rules",
                          "kyogi", "--seed", str(SEED), "--log", str(log)),
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        for i, n in enumerate(A[:10]):
            p.stdin.write(f"{n} a\n")
            p.stdin.flush()
            wait_for_lines(log, i + 2)
    finally:
        p.kill()
        p.wait()
    assert len(log_lines(log)) == 11
    # no temp file left (the log's hidden .m.jsonl.lock stays, as a table save's does)
    assert not [f for f in tmp_path.iterdir() if f.name not in ("m.jsonl", ".m.jsonl.lock")]
    r = karuta("match", "keep", "--log", str(log), "--resume",
               input="".join(f"{n} a\n" for n in A[10:]))
    assert r.returncode == 0, r.stderr
    assert "match over" in r.stdout
    out = json.loads(karuta("match", "replay", str(log), "--json").stdout)
    assert out["winner"] == "A" and out["B"]["count"] == 25


def test_ctrl_c_saves_and_says_how_to_resume(tmp_path):
    log = tmp_path / "m.jsonl"
    p = subprocess.Popen(karuta_argv("match", "keep", "--rules",
                          "goshiki", "--seed", "1", "--log", str(log)),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    card = goshiki.deal(random.Random(1)).deal[0][0]
    p.stdin.write(f"{card} a\n")
    p.stdin.flush()
    wait_for_lines(log, 2)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 130
    assert "--resume" in err and "Traceback" not in err
    assert log_lines(log)[1] == {"read": card, "took": "A", "faults": []}


@pytest.mark.parametrize("args, why", [
    (["--resume"], "--resume needs --log"),
    (["--seed", "1", "--deal", "x.json", "--rules", "kyogi"], "not both"),
    ([], "--rules"),
    (["--resume", "--log", "missing.jsonl"], "no such file"),
])
def test_bad_keep_options_are_one_line(tmp_path, args, why):
    (tmp_path / "x.json").write_text("{}")
    r = karuta("match", "keep", *args, cwd=tmp_path, input="")
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and why in r.stderr, r.stderr


def test_an_existing_log_is_not_overwritten(tmp_path):
    log = tmp_path / "m.jsonl"
    log.write_text(json.dumps({"rules": "kyogi", "A": list(A), "B": list(B)}) + "\n")
    before = log.read_text()
    r = karuta("match", "keep", "--rules", "kyogi", "--seed", "2", "--log", str(log), input="")
    assert r.returncode == 1 and "--resume" in r.stderr
    assert log.read_text() == before


def test_resume_of_a_bad_log_names_the_line(tmp_path):
    log = tmp_path / "m.jsonl"
    log.write_text(json.dumps({"rules": "kyogi", "A": list(A), "B": list(B)}) + "\nnope\n")
    r = karuta("match", "keep", "--log", str(log), "--resume", input="")
    assert r.returncode == 1 and "line 2: not JSON" in r.stderr


def test_on_a_terminal_the_screen_shows_counts_reads_and_the_last_reads(tmp_path):
    """Run under a pseudo-terminal, as a referee would: full-screen redraw after each read."""
    import os
    import pty
    import select

    log = tmp_path / "m.jsonl"
    master, slave = pty.openpty()
    p = subprocess.Popen(karuta_argv("match", "keep", "--rules",
                          "kyogi", "--seed", str(SEED), "--log", str(log), "--last", "2"),
                         stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                         env={**os.environ, "TERM": "xterm"})
    os.close(slave)
    seen = b""

    def read_until(token: bytes, timeout=10.0):
        nonlocal seen
        end = time.monotonic() + timeout
        while token not in seen and time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        assert token in seen, seen[-2000:].decode(errors="replace")

    try:
        for i, entry in enumerate([f"{A[0]} a", f"{B[0]} a", f"{KARA[0]} bo"]):
            read_until(f"read {i + 1} — poem".encode())
            seen = b""
            os.write(master, (entry + "\n").encode())
        read_until(b"read 4 \xe2\x80\x94 poem")
        screen = seen.decode(errors="replace")
        assert "kyogi, 3 reads: in progress" in screen
        assert "A: 22 cards" in screen and "B: 26 cards" in screen
        # the last two reads only
        rows = [ln.split() for ln in screen.splitlines()
                if ln[:1].isdigit() and len(ln.split()) >= 8]   # table rows, not typed echo
        assert [r[1] for r in rows] == [str(B[0]), str(KARA[0])]
        assert "片お手" in screen
        os.write(master, b"q\n")
        assert p.wait(timeout=10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    assert len(log_lines(log)) == 4
