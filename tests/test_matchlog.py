"""Match logs: round trip through the state machines, replay output, bad logs refused.

``karuta match replay`` runs in this process (``cli_run.run_marked``); the tests marked
``entry_point`` run the installed command, as a user's shell does."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import run_marked
from hypothesis import given, settings, strategies as st

from poems import COLORS
from reader.match import log as matchlog
from reader.base.errors import LogError
from reader.match.rules import goshiki, kyogi

from test_rules_goshiki import random_match as random_goshiki
from test_rules_kyogi import play as random_kyogi

A_CARDS = list(range(1, 26))
B_CARDS = list(range(26, 51))
KYOGI_HEAD = {"rules": "kyogi", "A": A_CARDS, "B": B_CARDS}
BLUE = list(COLORS["blue"])
GOSHIKI_HEAD = {"rules": "goshiki", "color": "blue", "A": BLUE[:10], "B": BLUE[10:]}


def write(path: Path, *objs) -> Path:
    path.write_text("".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs))
    return path


def karuta(*args):
    return run_marked(*args)


# --- round trip -------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.randoms(use_true_random=True))
def test_kyogi_round_trip(seed, rng):
    m = random_kyogi(seed, rng)
    loaded = matchlog.loads(matchlog.dumps(m))
    assert loaded.rules == "kyogi"
    assert loaded.match.state == m.state
    assert matchlog.summary(loaded.match) == matchlog.summary(m)
    assert matchlog.summary(loaded.match)["winner"] == m.outcome().winner


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.randoms(use_true_random=True))
def test_goshiki_round_trip(seed, rng):
    m = random_goshiki(seed, rng)
    loaded = matchlog.loads(matchlog.dumps(m))
    assert loaded.rules == "goshiki"
    assert loaded.match.state == m.state
    assert matchlog.summary(loaded.match) == matchlog.summary(m)


def test_partial_log_replays_to_a_running_match():
    m = kyogi.KyogiMatch(kyogi.new_state(A_CARDS, B_CARDS))
    m.push(kyogi.Read(30, "A", {"A": ["opp"]}, send=(7,)))
    text = matchlog.dumps(m, {"seed": 4})
    lines = [json.loads(x) for x in text.splitlines()]
    assert lines[0] == {**KYOGI_HEAD, "seed": 4}
    assert lines[1] == {"read": 30, "took": "A", "touched": {"A": ["opp"], "B": []}, "send": [7]}
    loaded = matchlog.loads(text)
    assert loaded.extra == {"seed": 4}
    assert 7 in loaded.match.state.cards("B")
    assert matchlog.summary(loaded.match)["winner"] is None


def test_save_is_complete_and_leaves_no_temp_file(tmp_path):
    m = goshiki.GoshikiMatch.from_seed(3)
    m.push(goshiki.Read(m.state.deal[0][0], "A"))
    path = tmp_path / "m.jsonl"
    matchlog.save(path, m)
    m.pop()
    matchlog.save(path, m)     # an undo shortens the file
    assert [p.name for p in tmp_path.iterdir()] == ["m.jsonl"]
    assert len(path.read_text().splitlines()) == 1
    assert matchlog.load(path).match.state == m.state


# --- replay output ----------------------------------------------------------------------------

def kyogi_won_log(tmp_path) -> Path:
    """A takes all 25 own cards, with a few karafuda and one of B's taken by B."""
    lines = [KYOGI_HEAD, {"read": 77, "took": None}, {"read": 30, "took": "B",
                                                      "touched": {"B": ["own"]}}]
    lines += [{"read": n, "took": "A", "touched": {"A": ["own"]}} for n in A_CARDS]
    return write(tmp_path / "k.jsonl", *lines)


@pytest.mark.entry_point
def test_replay_json_kyogi(tmp_path):
    r = karuta("match", "replay", str(kyogi_won_log(tmp_path)), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["winner"] == "A"
    assert out["A"] == {"count": 0, "cards": []}
    assert out["B"]["count"] == 24 and 30 not in out["B"]["cards"]


def test_replay_json_goshiki_with_ba(tmp_path):
    log = write(tmp_path / "g.jsonl", GOSHIKI_HEAD,
                {"read": 3, "took": "A"}, {"read": 5, "took": "B", "faults": ["A"]},
                {"read": 6, "took": None, "faults": ["A"]})
    r = karuta("match", "replay", str(log), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["A"] == {"taken": 0, "cards": []}
    assert out["B"] == {"taken": 1, "cards": [5]}
    assert out["ba"] == 1
    assert out["winner"] is None


def test_replay_json_goshiki_draw(tmp_path):
    reads = [{"read": n, "took": "AB"[i % 2]} for i, n in enumerate(BLUE[:16])]
    log = write(tmp_path / "g.jsonl", GOSHIKI_HEAD, *reads, {"read": BLUE[16], "took": None})
    out = json.loads(karuta("match", "replay", str(log), "--json").stdout)
    assert out["winner"] == "draw"
    assert out["A"]["taken"] == out["B"]["taken"] == 8


def test_replay_goshiki_extensions_three_players_reads_finals(tmp_path):
    head = {"rules": "goshiki", "A": BLUE[:7], "B": BLUE[7:14], "C": BLUE[14:], "reads": 3,
            "finals": True}
    log = write(tmp_path / "g3.jsonl", head, {"read": 3, "took": "C"}, {"read": 5, "took": "B"},
                {"read": 6, "took": "A"})
    out = json.loads(karuta("match", "replay", str(log), "--json").stdout)
    assert out["winner"] is None       # all tied after 3 reads: the finals read on
    with log.open("a") as f:
        f.write(json.dumps({"read": 12, "took": "C"}) + "\n")
    out = json.loads(karuta("match", "replay", str(log), "--json").stdout)
    assert out["C"]["taken"] == 2
    assert out["winner"] is None       # C leads, A and B tie for 2nd: read on
    with log.open("a") as f:
        f.write(json.dumps({"read": 14, "took": "B"}) + "\n")
    out = json.loads(karuta("match", "replay", str(log), "--json").stdout)
    assert out["winner"] == ["B", "C"] and out["draw"] == []


def test_replay_text_has_a_summary_and_a_row_per_read(tmp_path):
    r = karuta("match", "replay", str(kyogi_won_log(tmp_path)))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "A wins" in lines[0] and "27 reads" in lines[0]
    assert any(line.split()[:2] == ["27", "25"] for line in lines)   # read 27, poem 25
    assert any("karafuda" in line and line.split()[1] == "77" for line in lines)


def test_blank_lines_are_ignored(tmp_path):
    log = tmp_path / "b.jsonl"
    log.write_text(json.dumps(KYOGI_HEAD) + "\n\n" + json.dumps({"read": 3, "took": "A",
                   "touched": {"A": ["own"]}}) + "\n\n")
    assert matchlog.load(log).match.state.count("A") == 24


# --- bad logs ---------------------------------------------------------------------------------

BAD = {
    "read_twice": ([KYOGI_HEAD, {"read": 77, "took": None}, {"read": 77, "took": None}],
                   3, "already read"),
    "outside_range": ([KYOGI_HEAD, {"read": 101, "took": None}], 2, "outside 1-100"),
    "header_outside_range": ([{**KYOGI_HEAD, "A": A_CARDS[:-1] + [0]}], 1, "outside 1-100"),
    "take_karafuda": ([KYOGI_HEAD, {"read": 77, "took": "A", "touched": {"A": ["own"]}}],
                      2, "karafuda"),
    "unknown_player_took": ([KYOGI_HEAD, {"read": 3, "took": "C"}], 2, "unknown player"),
    "unknown_player_touched": ([KYOGI_HEAD, {"read": 77, "took": None, "touched": {"C": ["own"]}}],
                               2, "unknown player"),
    "unknown_player_faults": ([GOSHIKI_HEAD, {"read": 3, "took": "A", "faults": ["Z"]}],
                              2, "unknown player"),
    "sit_out_take": ([GOSHIKI_HEAD, {"read": 3, "took": "B", "faults": ["A"]},
                      {"read": 5, "took": "A"}], 3, "sit out"),
    "not_json": ([KYOGI_HEAD, '{"read": 3, "took": "A"'], 2, "not JSON"),
    "not_json_header": (["rules: kyogi"], 1, "not JSON"),
    "goshiki_other_colour": ([GOSHIKI_HEAD, {"read": 1, "took": "A"}], 2, "not on the board"),
    "missing_took": ([KYOGI_HEAD, {"read": 3}], 2, "missing \"took\""),
    "unknown_key": ([KYOGI_HEAD, {"read": 3, "took": "A", "tuched": {}}], 2, "unknown key"),
    "bad_rules": ([{**KYOGI_HEAD, "rules": "chess"}], 1, "kyogi"),
    "after_the_end": ([KYOGI_HEAD] + [{"read": n, "took": "A", "touched": {"A": ["own"]}}
                                      for n in A_CARDS] + [{"read": 77, "took": None}],
                      27, "over"),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.entry_point)
                                  if n == "not_json" else n for n in sorted(BAD)])
def test_bad_log_is_refused_with_one_line(tmp_path, name):
    objs, lineno, why = BAD[name]
    log = write(tmp_path / "bad.jsonl", *objs)
    r = karuta("match", "replay", str(log))
    assert r.returncode == 1
    assert r.stdout == ""
    err = r.stderr.strip().splitlines()
    assert len(err) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert f"line {lineno}:" in err[0]
    assert why in err[0]
    assert err[0].startswith("karuta: ")


def test_bad_log_raises_log_error_in_the_library():
    with pytest.raises(LogError, match=r"^x line 2: "):
        matchlog.loads(json.dumps(KYOGI_HEAD) + "\n[1, 2]\n", "x")


@pytest.mark.parametrize("content, why", [
    ("", "empty"), pytest.param(None, "no such file", marks=pytest.mark.entry_point)])
def test_empty_or_missing_log(tmp_path, content, why):
    log = tmp_path / "e.jsonl"
    if content is not None:
        log.write_text(content)
    r = karuta("match", "replay", str(log))
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and why in r.stderr


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 120) | st.floats(allow_nan=False)
    | st.sampled_from(["A", "B", "C", "both", "own", "opp", "kyogi", "goshiki", "blue"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["read", "took", "touched", "send", "faults", "lost",
                                       "A", "B", "rules"]), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([KYOGI_HEAD, GOSHIKI_HEAD]), st.lists(json_values, max_size=4))
def test_any_json_line_is_replayed_or_refused_with_a_log_error(head, lines):
    text = "\n".join([json.dumps(head)] + [json.dumps(x) for x in lines])
    try:
        matchlog.loads(text, "f")
    except LogError as e:
        msg = str(e)
        assert msg.startswith("f line ") and "\n" not in msg


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["rules", "A", "B", "C", "color", "reads", "finals",
                                        "seed"]), json_values, max_size=6),
       st.sampled_from(["kyogi", "goshiki"]))
def test_any_header_is_accepted_or_refused_with_a_log_error(head, rules):
    head = {"rules": rules, **head} if "rules" not in head else head
    try:
        matchlog.loads(json.dumps(head), "f")
    except LogError as e:
        assert str(e).startswith("f line 1: ") and "\n" not in str(e)
