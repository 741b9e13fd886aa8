"""Everything a practice match writes replays to the same outcome (issue 10, part 6 and 8).

Property test over seeded bot-vs-bot matches: the log ``PracticeMatch.log_records`` writes is
a valid match log; ``reader.match.log`` replays it to the same counts, cards, winner and reason;
its optional ``timing`` fields agree with what the rules recorded.
"""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from audio.voice import ToneVoice
from reader.match import log as matchlog
from reader.practice import headless
from reader.practice.match import Seat

VOICE = ToneVoice()

levels = st.integers(min_value=1, max_value=5)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6), a=levels, b=levels,
       rules=st.sampled_from(["kyogi", "kyogi", "goshiki"]),
       cards=st.one_of(st.none(), st.integers(min_value=1, max_value=50)))
def test_a_practice_log_replays_to_the_same_outcome(seed, a, b, rules, cards):
    m = headless.new_match(rules, {"A": Seat("bot", a), "B": Seat("bot", b)}, seed, VOICE,
                           cards=cards if rules == "kyogi" else None)
    headless.play(m)
    assert m.outcome() is not None
    text = m.log_text()
    loaded = matchlog.loads(text)
    assert matchlog.summary(loaded.match) == matchlog.summary(m.match)
    assert loaded.match.state.outcome() == m.outcome()

    lines = [json.loads(x) for x in text.splitlines()]
    assert lines[0]["practice"]["seats"] == {"A": f"bot:{a}", "B": f"bot:{b}"}
    for line, result in zip(lines[1:], m.state.results):
        timing = line["timing"]
        takes = [t for t in timing["touches"] if t["verdict"] == "take"]
        faults = {t["player"] for t in timing["touches"] if t["verdict"] == "fault"}
        assert line["read"] == result.poem
        if rules == "kyogi":
            if result.took in ("A", "B"):
                assert takes[0]["player"] == result.took
            if result.took is None:
                assert not takes
            assert faults == {p for p in "AB" if result.fault_count(p)}
        else:
            assert faults == set(result.faults)
            if result.took is not None:
                assert result.took in {t["player"] for t in takes}
        for t in timing["touches"]:
            assert abs(t["reaction_ms"] - (t["ms"] - timing["decisive_ms"])) < 0.2


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6), a=levels, b=levels,
       cut=st.integers(min_value=0, max_value=30))
def test_a_match_resumed_from_its_log_plays_on_as_the_whole_match(seed, a, b, cut, tmp_path_factory):
    seats = {"A": Seat("bot", a), "B": Seat("bot", b)}
    whole = headless.play(headless.new_match("kyogi", seats, seed, VOICE))
    text = whole.log_text().splitlines(keepends=True)
    path = tmp_path_factory.mktemp("resume") / "m.jsonl"
    path.write_text("".join(text[: 1 + min(cut, len(text) - 2)]))
    m = headless.resume(path, VOICE)
    headless.play(m)
    assert m.log_text() == whole.log_text()


touch_lists = st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 200),
                                 st.integers(-1500, 9000)), max_size=6)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), rules=st.sampled_from(["kyogi", "goshiki"]),
       reads=st.lists(touch_lists, min_size=1, max_size=60), pick=st.randoms(use_true_random=True))
def test_any_touches_make_legal_reads_that_replay(seed, rules, reads, pick):
    """Two humans touching anything at any time: every read the match closes is one the rules
    accept (never an IllegalEvent), sends can be chosen freely, and the log replays."""
    m = headless.new_match(rules, {"A": Seat("human"), "B": Seat("human")}, seed, VOICE)
    for touches in reads:
        cur = m.current()
        if cur is None:
            break
        on_board = sorted(c for cs in m.board.values() for c in cs) + [cur.poem]
        for player, k, ms in touches:
            card = on_board[k % len(on_board)]
            j = m.touch(player, card, max(0, cur.decisive + ms * 48))
            assert j.verdict in ("take", "fault", "miss", "dead", "early", "late", "out")
        closed = m.close_read()
        if closed.owed is not None:
            mine = [c for c in m.board[closed.owed.sender] if c != closed.poem]
            m.send(closed.owed.sender, pick.sample(mine, closed.owed.count))
    loaded = matchlog.loads(m.log_text())
    assert matchlog.summary(loaded.match) == matchlog.summary(m.match)


def test_the_log_is_on_disk_after_every_read(tmp_path):
    path = tmp_path / "m.jsonl"
    m = headless.new_match("kyogi", {"A": Seat("bot", 2), "B": Seat("bot", 3)}, 4, VOICE)
    headless.save(m, path)
    seen = []

    def after(match, closed):
        headless.save(match, path)
        lines = path.read_text().splitlines()
        seen.append(len(lines))
        assert json.loads(lines[-1])["read"] == closed.poem

    headless.play(m, on_read=after)
    assert seen == list(range(2, len(m.match) + 2))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6), level=levels,
       cards=st.one_of(st.none(), st.integers(min_value=1, max_value=50)),
       stop=st.integers(min_value=0, max_value=60))
def test_a_match_alone_replays_and_resumes_to_the_same_outcome(tmp_path_factory, seed, level,
                                                               cards, stop):
    """Alone (B's seat empty: all the cards A's): the log replays to the same result, and a
    match resumed from its log after ``stop`` reads plays on to the same log."""
    seats = {"A": Seat("bot", level), "B": Seat("none")}
    m = headless.play(headless.new_match("kyogi", seats, seed, VOICE, cards=cards))
    n = cards or 25
    assert m.state.solo and len(m.deal.hands["A"]) == n and m.deal.hands["B"] == ()
    taken, missed, faults = m.state.solo_score()
    assert taken + missed == n and m.outcome().winner == "A"
    loaded = matchlog.loads(m.log_text())
    assert matchlog.summary(loaded.match) == matchlog.summary(m.match)
    assert matchlog.summary(loaded.match)["solo"] == {"taken": taken, "missed": missed,
                                                      "faults": faults}
    resumed = _saved_after(headless.new_match("kyogi", seats, seed, VOICE, cards=cards), stop,
                           tmp_path_factory.mktemp("solo") / "m.jsonl")
    assert headless.play(resumed).log_text() == m.log_text()


def _saved_after(part, stop: int, log):
    """``part`` played by its bots for ``stop`` reads, saved to ``log`` and resumed from it."""
    while part.current() is not None and part.index < stop:
        for p, card, frame in part.bot_touches():
            part.touch(p, card, frame)
        part.close_read(part.current().closes)
    headless.save(part, log)
    return headless.resume(log, VOICE)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10**6), level=levels,
       stop=st.integers(min_value=0, max_value=17))
def test_a_goshiki_match_alone_replays_and_resumes_to_the_same_outcome(tmp_path_factory, seed,
                                                                       level, stop):
    """Goshiki alone: A's 10, the colour's other 10 karafuda; the log replays to the same result
    (with its ``solo`` object) and a match resumed after ``stop`` reads plays on to the same log."""
    seats = {"A": Seat("bot", level), "B": Seat("none")}
    m = headless.play(headless.new_match("goshiki", seats, seed, VOICE))
    assert m.state.solo and len(m.deal.hands["A"]) == 10 and m.deal.hands["B"] == ()
    taken, missed, faults = m.state.solo_score()
    mine_read = sum(1 for n in m.state.read_poems if n in m.deal.hands["A"])
    assert taken + missed == mine_read and m.state.count("A") == taken
    assert m.outcome().winner == "A" and m.state.ba == ()
    loaded = matchlog.loads(m.log_text())
    assert matchlog.summary(loaded.match) == matchlog.summary(m.match)
    assert matchlog.summary(loaded.match)["solo"] == {"taken": taken, "missed": missed,
                                                      "faults": faults}
    resumed = _saved_after(headless.new_match("goshiki", seats, seed, VOICE), stop,
                           tmp_path_factory.mktemp("gsolo") / "m.jsonl")
    assert headless.play(resumed).log_text() == m.log_text()
