"""The practice session: a match's live rules without a window, sound or clock (issue 23).

Each test drives ``PracticeSession`` as the window does — ``tick(now, heard, waiting_on,
finished)`` with the frame heard, ``touch`` for a click, ``pick`` / ``send_default`` for a
send — on a real plan (the tone voice's exact mora onsets), and checks what a player would
see: when a read closes, what the status line and panels say, what is framed or dimmed,
what the log and the end table get.  Milliseconds each; the real window's tests
(tests/test_practice_window.py) keep a few whole games end to end.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from audio.voice import ToneVoice
from reader.practice import headless, report
from reader.practice.match import Seat
from reader.practice.session import (SETTLE_S, PracticeSession, morae_heard, result_lines,
                                     ruled_in)

VOICE = ToneVoice()
RATE = 48000


def _session(rules="kyogi", b="none", seed=38, a="human", **kw):
    """(match, session, events): the session already reading (arranging and memorising are
    tested apart)."""
    m = headless.new_match(rules, {"A": headless.parse_seat(a), "B": headless.parse_seat(b)},
                           seed, VOICE, cards=kw.pop("cards", 1) if rules == "kyogi" else None,
                           **kw)
    events = []
    released = []
    s = PracticeSession(m, on_event=lambda n, d: events.append((n, d)),
                        release=lambda: released.append(m.index))
    s.released = released
    s.start_reading()
    return m, s, events


def _tick(s, frame, **kw):
    s.tick(frame / RATE, frame, **kw)


def names(events):
    return [n for n, _ in events]


# ---------------------------------------------------------------------------- closing a read
def test_a_kyogi_take_closes_its_read_once_it_has_settled():
    m, s, events = _session(seed=38)  # alone, one card: read 1 is yours
    cur = m.current()
    assert cur.where == "A"
    _tick(s, cur.start)
    at = cur.decisive + 12000
    j = s.touch("A", cur.poem, at)
    assert j.verdict == "take" and s.marks == {cur.poem: "take"}
    settled = at + round(m.settings.simultaneous_ms * RATE / 1000) + round(SETTLE_S * RATE)
    _tick(s, settled - 1)
    assert "closed" not in names(events)  # the gold frame shows; a late touch is still judged
    _tick(s, settled)
    assert names(events)[-3:] == ["closed", "done", "phase"] and s.over
    assert m.closed[0].event.took == "A"
    assert s.status.startswith(f"read 1: {cur.poem} ") and s.status.endswith("A took it")
    assert report.end_lines(m)[0] == "alone: 1 taken, 0 missed, 0 faults (1 reads)"


def test_a_kyogi_read_nobody_takes_closes_at_the_end_of_its_wait_then_the_reading_goes_on():
    m, s, events = _session(seed=200, b="bot:1", cards=2)  # the bot does not touch read 1
    cur = m.current()
    assert m.bot_touches() == []
    wait = next(seg for i, seg in enumerate(m.plan.segments)
                if seg.wait and m.plan.segments[i - 1] is cur.kami)
    _tick(s, wait.start, waiting_on=cur.poem)
    _tick(s, wait.end - 1, waiting_on=cur.poem)
    assert m.index == 0 and s.released == []  # still waiting for a take
    _tick(s, wait.end, waiting_on=cur.poem)
    assert m.index == 1 and m.closed[0].event.took is None
    assert s.status.endswith("nobody took it") or s.status.endswith("空札 (karafuda)")
    _tick(s, wait.end + 400, waiting_on=cur.poem)  # the reading still stands at that wait
    assert s.released  # so it is let go on


def test_a_goshiki_read_stays_open_until_the_next_kami_is_heard():
    m, s, events = _session("goshiki", b="none", seed=8, color="blue")
    cur = m.current()
    _tick(s, cur.start)
    mine = m.board["A"]
    j = s.touch("A", cur.poem if cur.poem in mine else mine[0], cur.decisive)
    assert j.verdict in ("take", "fault")
    _tick(s, cur.closes - 1)
    assert m.index == 0  # a wrong touch after a take still counts: the read stays open
    _tick(s, cur.closes)
    assert m.index == 1 and m.closed[0].touches == (j,)
    while not s.over:  # and so on, read by read, to the end of the match (17 reads)
        _tick(s, m.current().closes)
    assert len(m.closed) == 17


# ---------------------------------------------------------------------------- bots, sends
def test_bots_touch_when_the_heard_frame_reaches_theirs():
    # the first seed whose first read the level-5 bot touches
    seed = next(n for n in range(100) if headless.new_match(
        "kyogi", {"A": Seat("human"), "B": Seat("bot", 5)}, n, VOICE, cards=4).bot_touches())
    m, s, events = _session(b="bot:5", seed=seed, cards=4)
    cur = m.current()
    bots = m.bot_touches()
    p, card, f = bots[0]
    _tick(s, f - 1)
    assert "touch" not in names(events)
    _tick(s, f)
    touch = [d for n, d in events if n == "touch"][0]
    assert (touch.player, touch.card, touch.frame) == (p, card, f)
    assert cur.index == m.current().index or m.closed


def test_a_send_is_picked_on_the_board_or_the_highlighted_one_taken():
    for how in ("pick", "enter"):
        m, s, events = _session(seed=200, b="bot:1", cards=2)
        cur = m.current()
        assert cur.where == "B"  # B's card: a take from across, A owes a send
        _tick(s, cur.start)
        s.touch("A", cur.poem, cur.decisive + 4800)
        _tick(s, cur.decisive + 48000)
        owed = m.owed_send()
        assert owed is not None and owed.sender == "A" and s.status.startswith("you owe 1 card")
        default = m.suggest_send("A", 1)
        assert s.marks == {default[0]: "send"}
        other = next(c for c in m.board["A"] if c != default[0])
        assert s.touch("A", m.board["B"][0], cur.decisive + 60000) is None  # not A's: nothing
        assert m.owed_send() is not None
        if how == "pick":
            s.touch("A", other, None)
            sent = [other]
        else:
            s.send_default()
            sent = list(default)
        assert m.owed_send() is None and list(m.closed[0].event.send) == sent
        assert s.status.endswith(f"sent {sent[0]}")
        assert names(events).count("done") == 1


# ---------------------------------------------------------------------------- phases, hints
def test_the_memorisation_counts_down_on_the_clock_it_is_given():
    m = headless.new_match("goshiki", {"A": Seat("human"), "B": Seat("bot", 2)}, 3, VOICE)
    phases = []
    s = PracticeSession(m, memorize_s=30.0, on_event=lambda n, d: phases.append(d)
                        if n == "phase" else None)
    s.tick(5.0, None)
    assert s.phase == "arrange" and s.status.startswith("drag your cards")
    s.start_memorize(1000.0)
    s.tick(1000.5, None)
    assert s.status == "暗記 memorisation 0:29 · s: skip"
    s.tick(1029.9, None)
    assert s.phase == "memorize"
    s.tick(1030.0, None)
    assert phases == ["memorize", "reading"]


def test_hints_dim_the_cards_the_morae_heard_rule_out():
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("bot", 1)}, 4, VOICE)
    s = PracticeSession(m, hints=True)
    s.start_reading()
    cur = m.current()
    on = [c for cs in m.board.values() for c in cs]
    _tick(s, cur.start - 1)
    assert s.dim == frozenset()
    for k, f in enumerate(cur.morae[:3], start=1):
        _tick(s, f)
        assert s.dim == frozenset(on) - ruled_in(on, cur.poem, k)
    assert len(s.dim) > len(on) // 2


def test_narrowing_keeps_only_the_cards_that_still_fit_the_sounds_heard():
    board = [87, 18, 57, 3, 4, 72, 31, 64]  # む す め あし たご おと あさぼらけあ/う
    assert ruled_in(board, 87, 0) == frozenset(board)  # nothing heard: nothing dims
    assert ruled_in(board, 87, 1) == {87}              # む: a 1字決まり
    assert ruled_in(board, 31, 1) == {3, 31, 64}       # あ...
    assert ruled_in(board, 31, 5) == {31, 64}          # あさぼらけ: still two
    assert ruled_in(board, 31, 6) == {31}
    assert ruled_in(board, 44, 2) == set()             # おお (あふこ, a karafuda): none fit
    assert ruled_in([72], 44, 1) == {72}               # お: おと could still be it
    assert morae_heard((100, 200, 300), 100, 99) == 0
    assert morae_heard((100, 200, 300), 100, 100) == 1
    assert morae_heard((100, 200, 300), 100, 250.5) == 2


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_narrowing_ends_on_the_read_card_at_its_kimariji(seed):
    # among unread cards the kimariji is the shortest unique opening: once all its sounds are
    # heard, the read card is the only one of the board still lit, and never before it dims
    import random

    from poems.kimariji import kimariji

    rng = random.Random(seed)
    read = rng.sample(range(1, 101), rng.randrange(0, 60))
    unread = [n for n in range(1, 101) if n not in read]
    board = rng.sample(unread, min(len(unread), 50))
    poem = rng.choice(board)
    k = kimariji(range(1, 101), read)[poem].length
    for i in range(k):
        assert poem in ruled_in(board, poem, i)
    assert ruled_in(board, poem, k) == {poem}


# ---------------------------------------------------------------------------- kyogi touches
def _log_reads(m, tmp_path):
    """The match's log as the window saves it (header, reads) and ``karuta match replay``'s
    verdict of it."""
    import json

    from cli_run import run_inproc

    log = tmp_path / "m.jsonl"
    log.write_text(m.log_text(), encoding="utf-8")
    lines = [json.loads(x) for x in m.log_text().splitlines() if x.strip()]
    r = run_inproc("match", "replay", str(log), "--json")
    assert r.returncode == 0, r.stderr
    return lines, json.loads(r.stdout)


def _play_on(s, heard, done):
    """Tick at each frame where something is due (as ``--bot-vs-bot`` does) until ``done()``."""
    while not done():
        heard = s.next_due(heard, lambda f: f / RATE)
        assert heard is not None, "nothing more is due"
        _tick(s, heard)


def test_a_touch_on_the_other_sides_card_during_a_karafuda_is_a_fault_paid_by_a_send(tmp_path):
    m, s, events = _session(seed=47, b="bot:1")  # a bot that does not touch on read 1
    a_card, b_card = m.deal.hands["A"][0], m.deal.hands["B"][0]
    cur = m.current()
    assert cur.where is None and m.order[1] == a_card and m.bot_touches() == []  # a karafuda
    _tick(s, cur.start)
    j = s.touch("A", b_card, cur.decisive + round(0.6 * RATE))
    assert j.verdict == "fault" and s.marks == {b_card: "fault"}
    _play_on(s, cur.decisive + round(0.6 * RATE), lambda: m.closed)
    lines, replay = _log_reads(m, tmp_path)
    read = lines[1]
    assert read["read"] == cur.poem and read["took"] is None
    assert read["touched"]["A"] == ["opp"] and read["timing"]["touches"][0]["verdict"] == "fault"
    assert read["send"] == [b_card]  # 片お手: B sends A its only card, reaches 0 and wins
    assert s.over and replay["winner"] == "B"


def test_two_players_at_one_board_a_touch_on_your_own_card_is_your_take(tmp_path):
    m, s, events = _session(seed=133, b="human")
    cur = m.current()
    assert cur.where == "B" and s.humans == ("A", "B")
    _tick(s, cur.start)
    assert s.touch("B", cur.poem, cur.decisive + round(0.6 * RATE)).verdict == "take"
    _play_on(s, cur.decisive + round(0.6 * RATE), lambda: s.over)
    lines, replay = _log_reads(m, tmp_path)
    assert lines[0]["practice"]["seats"] == {"A": "human", "B": "human"}
    assert lines[1]["took"] == "B" and lines[1]["touched"] == {"A": [], "B": ["own"]}
    assert replay["winner"] == "B"


# ---------------------------------------------------------------------------- goshiki alone
def test_goshiki_alone_a_touch_on_a_karafuda_is_a_fault_the_panel_and_end_table_count():
    m, s, events = _session("goshiki", b="none", seed=8, color="blue")
    assert s.panels() == {"near": "alone\n10 left\n0 taken\n0 missed\n0 faults"}
    while (cur := m.current()).where is not None:  # to the first karafuda
        _tick(s, cur.closes)
    cur = m.current()
    _tick(s, cur.start)
    j = s.touch("A", m.board["A"][0], cur.decisive + 4800)
    assert j.verdict == "fault" and s.marks == {j.card: "fault"}
    told = []
    s.on_event = lambda n, d: told.append(s.status) if n == "done" else None
    _tick(s, cur.closes)
    assert m.state.ba == ()  # alone: nothing goes to the ba
    assert "1 fault\n" in s.panels()["near"] + "\n"
    assert told[0].endswith("空札 (karafuda)")  # what the read was, once it is over
    assert "fault" not in s.status  # (the next read's line: no word of the last one's touch)
    taken, missed, faults = m.state.solo_score()
    assert report.end_lines(m)[0].startswith(f"alone: 0 taken, {missed} missed, 1 fault")
    assert report.end_rows(m)[0] == ("card", "kimariji", "took", "A react", "faults")


def test_the_end_lines_tell_the_bots_form_and_keep_their_shape_when_quit_early():
    """Once the match is over (or quit) the end table tells how well the bot played this
    match (its form varies: reader.practice.bot.match_skill); the table's header stays the
    fourth line (the command prints the lines from there) even for a match left unfinished."""
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("bot", 3)}, 6, VOICE, cards=3)
    lines = report.end_lines(m)
    assert lines[0] == "not finished (0 reads)"
    assert lines[1].endswith(f"bot 3 played like a {m.skill['B']:.1f}") and "A 3, B 3" in lines[1]
    assert lines[2] == "" and lines[3].startswith("card")
    s = PracticeSession(m)
    s.start_reading()
    heard = 0
    while not s.over:  # the bot alone takes (or not); a send A owes: the highlighted one
        s.tick(heard / RATE, heard, finished=heard >= m.plan.frames)
        s.send_default()
        heard += 480
    lines = report.end_lines(m)
    assert lines[0] == f"winner: {m.outcome().winner}" and lines[3].startswith("card")
    rows = report.end_rows(m)
    assert len(rows) == len(lines) - 3  # one table: the screen's rows are the printed lines


# ---------------------------------------------------------------------------- one rule
#: the fastest pace, short pauses: a read is a few seconds, not ten or more, and the bots
#: touch, fault and take in it as at the rules' pace (the match's steps are a quarter)
QUICK = {"speed": 4.0, "ma_ms": 200, "yoin_ms": 200, "take_ms": 1000}


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), a=st.integers(1, 5), b=st.integers(1, 5),
       rules=st.sampled_from(["kyogi", "goshiki"]), step=st.integers(240, 9600))
def test_how_often_the_session_is_ticked_does_not_change_the_match(seed, a, b, rules, step):
    """The window ticks every few ms, ``--bot-vs-bot`` at each frame where something is due:
    the same bots make the same log either way (reads close on the rule's frames, not on
    when a tick comes).  Ticks from every 5 ms (a fast window) to every 200 ms.  (Short kyogi
    deals, and no 1 ms ticks: walking a match's minutes of reading a millisecond at a time
    took most of a minute on a busy machine, and says no more than 5 ms does.)"""
    seats = {"A": Seat("bot", a), "B": Seat("bot", b)}
    cards = 3 if rules == "kyogi" else None
    ref = headless.play(headless.new_match(rules, seats, seed, VOICE, cards=cards,
                                           reading=QUICK))
    m = headless.new_match(rules, seats, seed, VOICE, cards=cards, reading=QUICK)
    s = PracticeSession(m)
    s.start_reading()
    heard = 0
    while not s.over:
        s.tick(heard / RATE, heard, finished=heard >= m.plan.frames)
        heard += step
    assert m.log_text() == ref.log_text()


# ---------------------------------------------------------------------------- the end, told
def _to_the_end(s):
    """Tick the session at each due frame until the match is over: every status line shown."""
    seen, heard = [], 0
    _tick(s, 0)
    while not s.over:
        seen.append(s.status)
        heard = s.next_due(heard, lambda f: f / RATE)
        assert heard is not None, "nothing more is due"
        _tick(s, heard)
    return seen + [s.status]


def test_the_end_is_said_to_the_person_and_goshiki_counts_its_17_reads():
    """"winner: B" becomes "you lost 0-14" (goshiki: cards taken, yours first) or "you lost by
    2" (kyogi: the cards left on your side), two players at one board are named by their
    sides, the bot's line says the level it played at; a goshiki match of 17 reads counts
    "read 4/17" (not "/20") and no goshiki screen speaks of a jo-ka (goshiki has none)."""
    m, s, _ = _session("goshiki", b="bot:5", seed=7)
    seen = _to_the_end(s)
    assert len(m.closed) == 17 and "read 4/17" in " ".join(seen)
    assert not any("/20" in x for x in seen)
    a, b = m.state.count("A"), m.state.count("B")
    head, second = result_lines(m, ("A",))
    assert b > a and head == f"you lost {a}-{b}"
    assert result_lines(m, ("B",))[0] == f"you won {b}-{a}"  # (from the other seat)
    level = m.skill["B"]
    assert second == f"taken: you {a}, bot 5 {b} · bot 5 played at level {level:.1f} this match"
    assert abs(level - 5) <= 1
    assert not any("jo-ka" in x for x in seen + [head, second])

    m, s, _ = _session("kyogi", b="bot:5", seed=11, cards=3)
    _to_the_end(s)
    left = m.state.count("A")
    assert m.outcome().winner == "B" and left > 0
    assert result_lines(m, ("A",))[0] == f"you lost by {left}"
    assert result_lines(m, ("B",))[0] == f"you won by {left}"
    assert result_lines(m, ("A", "B"))[0] == f"B (far side) won by {left}"
    assert result_lines(m, ("A", "B"))[1].startswith(
        f"left on the board: A (near side) {left}, B (far side) 0")
