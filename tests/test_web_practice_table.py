"""``karuta practice --web``'s table (``reader.web.board.WebBoard``) with no browser: a page
simulated as the real one behaves (it plays the plan on its own timeline -- the same rule as
``timeline.js`` -- reports the frame it hears every 50 ms, touches with the frame heard, goes
on from a kyogi wait when told ``go``), every message through the protocol's checks.  A whole
match runs through it and logs what one machine logs."""
from __future__ import annotations

import json
import re

from reader.practice import headless, online
from reader.practice.match import Seat
from reader.web import boardproto
from reader.web.board import WebBoard

from test_online import QUICK, VOICE
from test_table import Player

#: the one-machine match the page's player plays as: A touches as bot 3 would; B is bot 1
AS_BOTS = {"A": Seat("bot", 3), "B": Seat("bot", 1)}
DEVICE = "ab" * 16
SEATS = {"A": Seat("human"), "B": Seat("bot", 1)}


def one_machine(seats, touches, rules="kyogi", **deal):
    """The same match on one machine with a perfect clock: the session ticked every 4 ms on
    a timeline that goes on from each kyogi wait the moment it is let go, the players' touches
    ``(read, player, card, frame)`` given when their frame is heard."""
    from reader.practice.session import PracticeSession

    m = headless.new_match(rules, seats, 7, VOICE, reading=QUICK, **(deal or ({"cards": 3} if rules == "kyogi" else {})))
    let_go = []
    s = PracticeSession(m, release=lambda: let_go.append(True))
    s.start_reading()
    tl = online.Timeline(m.plan)
    tl.anchor(0.0, 0)
    todo = list(touches)
    t = 0.0
    while not s.over and t < 3600:
        t += 0.004
        heard = tl.heard(t)
        owed = m.owed_send()
        if owed is not None and seats[owed.sender].kind == "human":
            s.send_default()  # (the player sends the highlighted card, as the page's does)
        for i, (read, player, card, frame) in enumerate(todo):
            if read == m.index and frame <= heard:
                s.tick(t, float(frame), tl.waiting_on(t), tl.finished(t))
                s.touch(player, card, frame)
                todo.pop(i)
                break
        s.tick(t, heard, tl.waiting_on(t), tl.finished(t))
        if let_go:
            let_go.clear()
            end = tl.wait_end(t)
            if end is not None:
                tl.anchor(t, end)
    assert s.over and not todo
    return m


class Page:
    """The page: its own timeline and clock (= the host's here), the messages it is sent."""

    def __init__(self, board: WebBoard):
        self.board = board
        self.tl = None
        self.got: list[dict] = []
        self.now = 0.0
        self.touches: list[tuple] = []  # (read, player, card, frame) sent

    def send(self, msg: dict) -> None:
        # (through the wire's checks both ways, as the transport does)
        msg = boardproto.decode(json.dumps(msg))
        for out in self.board.receive(msg, self.now, 1, "10.0.0.2"):
            out = json.loads(boardproto.encode(out))
            self.got.append(out)
            if out["t"] == "welcome":
                self.tl = online.Timeline(self.board.m.plan)
            elif out["t"] == "go":
                end = out["frame"]
                at = max(self.now + 0.3, self.tl.instant_of(end) or self.now)
                self.tl.anchor(at, end)

    # what the player at the page calls (test_table.Player's table)
    @property
    def m(self):
        return self.board.m

    @property
    def phase(self):
        return self.board.phase

    def touch(self, player, card, t):
        frame = round(self.tl.heard(t))
        self.touches.append((self.board.m.index, player, card, frame))
        self.send({"t": "touch", "card": card, "frame": frame, "stamp": "ok", "player": player})

    def send_default(self, player):
        self.send({"t": "send"})


def test_a_whole_match_runs_through_the_web_table_and_logs_what_one_machine_logs(tmp_path):
    m = headless.new_match("kyogi", SEATS, 7, VOICE, cards=3, reading=QUICK)
    log = tmp_path / "m.jsonl"
    board = WebBoard(m, VOICE, "314159", log_file=log, echo=lambda line: None)
    page = Page(board)
    page.send({"t": "hello", "v": 1, "code": "314159", "device": DEVICE})
    assert page.got[0]["t"] == "welcome" and page.got[1]["t"] == "view"
    page.send({"t": "start"})
    page.tl.anchor(0.5, 0)
    player = Player("A", lambda: page, lambda f: page.tl.instant_of(f), AS_BOTS)
    while not board.over and page.now < 3600:
        page.now += 0.01
        player(page.now)
        if round(page.now * 100) % 5 == 0:
            f = page.tl.heard(page.now)
            if f is not None:
                page.send({"t": "at", "frame": round(f)})
    assert board.over
    ref = one_machine(SEATS, page.touches)
    assert m.log_records() == ref.log_records()
    touched = [t for r in m.log_records()[1:] for t in r["timing"]["touches"]]
    assert {(t["player"], t["verdict"]) for t in touched} == {("A", "take"), ("B", "fault")}
    # the log on disk is the match's, and the end screen says its result
    assert log.read_text(encoding="utf-8") == m.log_text()
    over = [g for g in page.got if g["t"] == "over"]
    assert len(over) == 1 and over[0]["lines"][0] == headless_result(m)
    views = [g["view"] for g in page.got if g["t"] == "view"]
    assert views[-1]["phase"] == "over"
    assert sum(1 for g in page.got if g["t"] == "go") >= len(m.closed) - 1


def headless_result(m) -> str:
    from reader.practice.session import result_lines

    return result_lines(m, ("A",))[0]


def test_a_touch_before_the_hello_or_with_a_wrong_code_is_refused_in_one_line():
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("bot", 1)}, 7, VOICE,
                           cards=3, reading=QUICK)
    board = WebBoard(m, VOICE, "314159", echo=lambda line: None)
    out = board.receive({"t": "touch", "card": 5, "frame": 100, "stamp": "ok"}, 0.0, 1, "x")
    assert out == [{"t": "error", "text": "say hello with the code first"}] and board.hangup
    out = board.receive({"t": "hello", "v": 1, "code": "000000", "device": DEVICE}, 0.0, 1, "x")
    assert out[0]["t"] == "error" and "wrong code" in out[0]["text"]
    assert not m.closed and board.phase != "reading"


def _started(seats=SEATS, seed=7, rules="kyogi", **deal):
    m = headless.new_match(rules, seats, seed, VOICE, reading=QUICK, **(deal or ({"cards": 3} if rules == "kyogi" else {})))
    board = WebBoard(m, VOICE, "314159", echo=lambda line: None)
    page = Page(board)
    page.send({"t": "hello", "v": 1, "code": "314159", "device": DEVICE})
    page.send({"t": "start"})
    page.tl.anchor(0.5, 0)
    return m, board, page


def test_a_touch_arriving_after_an_earlier_bot_touch_loses_to_it():
    """Frames decide, not arrival: the bot's take of the card at frame F wins over the page's
    touch at F + 20 ms, though the page's touch came when the page had said it heard only
    F - 10 ms (the bot's touch not delivered yet).  (The match settles a take by frames 0.4 s
    after it, so this holds with or without the board moving the session on to the touch's
    frame first: checked; the step only delivers the bot's touch first.)"""
    m, board, page = _started({"A": Seat("human"), "B": Seat("bot", 5)})
    found = None
    while found is None and page.now < 600:
        page.now += 0.01
        f = page.tl.heard(page.now)
        cur = m.current()
        if cur is not None and board.session._bots:
            takes = [(p, c, fb) for p, c, fb in board.session._bots
                     if p == "B" and c == cur.poem and fb - 480 > (board.frame or 0)]
            if takes:
                found = takes[0]
                break
        if f is not None and round(page.now * 100) % 5 == 0:
            page.send({"t": "at", "frame": round(f)})
    assert found is not None, "bot 5 takes some card in this match"
    _, card, fb = found
    read = m.index
    page.send({"t": "at", "frame": fb - 480})
    page.send({"t": "touch", "card": card, "frame": fb + 960, "stamp": "ok"})
    while m.index == read and page.now < 600:
        page.now += 0.05
        page.send({"t": "at", "frame": round(page.tl.heard(page.now))})
    assert m.closed[read].event.took == "B"


def test_a_page_that_says_it_heard_past_a_kyogi_wait_is_held_at_the_waits_end():
    """The page stands at the end of each kyogi wait until the laptop says ``go``: a frame
    past it (a page that lies, or runs on) is taken as the wait's end."""
    m, board, page = _started()
    page.send({"t": "at", "frame": m.plan.frames})
    first_wait = next(s for s in m.plan.segments if s.wait)
    assert board.frame == first_wait.end


def test_the_web_options_are_refused_in_one_line_where_they_do_not_go(tmp_path):
    """``--web`` with online play, a resumed log or window options, ``--address`` without
    ``--web``, and ``--web`` against nobody: one ``karuta:`` line each, exit 1,
    nothing written."""
    from cli_run import run_inproc

    cases = [
        (("--web", "--host"), "with --web, leave out --host"),
        (("--web", "--resume"), "with --web, leave out --resume"),
        (("--address", "127.0.0.1"), "--address needs --web"),
        (("--web", "--vs", "none", "--port", "0"), "--web plays a player at the page against a bot"),
    ]
    log = tmp_path / "m.jsonl"
    for args, said in cases:
        r = run_inproc("practice", *args, "--voice", "tone", "--log", str(log),
                       data_dir=tmp_path / "data")
        assert r.returncode == 1 and r.stderr.startswith(f"karuta: {said}"), (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and not log.exists()


def test_two_players_at_one_tablet_play_a_whole_match_through_it():
    """``--vs human --web``: both seats at the page (each touch says whose half it started in);
    they touch as bot 3 (A) and bot 2 (B) would, each sends the highlighted card when owing
    one: the log is the one-machine match's, both players took or faulted, and the end lines
    name them by their sides."""
    seats = {"A": Seat("human"), "B": Seat("human")}
    as_bots = {"A": Seat("bot", 3), "B": Seat("bot", 2)}
    m, board, page = _started(seats)
    assert board.here == ("A", "B")
    players = [Player(p, lambda: page, lambda f: page.tl.instant_of(f), as_bots)
               for p in ("A", "B")]
    while not board.over and page.now < 3600:
        page.now += 0.01
        for pl in players:
            pl(page.now)
        f = page.tl.heard(page.now)
        if f is not None and round(page.now * 100) % 5 == 0:
            page.send({"t": "at", "frame": round(f)})
    assert board.over
    assert m.log_records() == one_machine(seats, page.touches).log_records()
    assert {p for _, p, _, _ in page.touches} == {"A", "B"}
    over = next(g for g in page.got if g["t"] == "over")
    assert "near side" in over["lines"][0] or "far side" in over["lines"][0], over


def test_a_goshiki_match_runs_through_the_web_table_too():
    """Goshiki (seed 7, the player as bot 3 would, against bot 1): the same page, the same
    table; the log is the one-machine match's and the end lines give the cards taken."""
    m, board, page = _started(rules="goshiki")
    player = Player("A", lambda: page, lambda f: page.tl.instant_of(f), AS_BOTS)
    while not board.over and page.now < 3600:
        page.now += 0.01
        player(page.now)
        f = page.tl.heard(page.now)
        if f is not None and round(page.now * 100) % 5 == 0:
            page.send({"t": "at", "frame": round(f)})
    assert board.over and len(m.closed) == 17
    assert m.log_records() == one_machine(SEATS, page.touches, "goshiki").log_records()
    touched = [t for r in m.log_records()[1:] for t in r["timing"]["touches"]]
    assert "A" in {t["player"] for t in touched if t["verdict"] == "take"}  # (bot 1 took none)
    view = [g["view"] for g in page.got if g["t"] == "view"][-1]
    assert view["board"]["territories"] == {} and len(view["board"]["hands"]["A"]) == 10
    over = next(g for g in page.got if g["t"] == "over")
    assert re.match(r"you (won|lost|drew) \d+-\d+", over["lines"][0]), over
