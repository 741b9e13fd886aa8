"""``karuta practice --web``'s table (``reader.web.board.WebBoard``) with no browser: a page
simulated as the real one behaves (it plays the plan on its own timeline -- the same rule as
``timeline.js`` -- reports the frame it hears every 50 ms, touches with the frame heard, goes
on from a kyogi wait when told ``go``), every message through the protocol's checks.  A whole
match runs through it and logs what one machine logs."""
from __future__ import annotations

import json
import re

import pytest

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


def one_machine(seats, touches, rules="kyogi", m=None, **deal):
    """The same match on one machine with a perfect clock: the session ticked every 4 ms on
    a timeline that goes on from each kyogi wait the moment it is let go, the players' touches
    ``(read, player, card, frame)`` given when their frame is heard.  ``m``: the match (not
    begun) to play; default seed 7's."""
    from reader.practice.session import PracticeSession

    if m is None:
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


def noted(records: list[dict], here=("A",)) -> list[dict]:
    """A web match's log records without what the page adds to each of its touches (the
    device's ``calibration_ms``, the player's ``name``, a gap in its sound ``gap_ms``): the
    one-machine match's then.  Every
    touch of a player at the page (``here``) has its ``calibration_ms`` (null: not
    calibrated); a bot's has none."""
    out = []
    for r in records:
        timing = r.get("timing")
        if timing and timing.get("touches"):
            touches = []
            for t in timing["touches"]:
                assert ("calibration_ms" in t) == (t["player"] in here), t
                touches.append({k: v for k, v in t.items()
                                if k not in ("calibration_ms", "name", "gap_ms")})
            r = {**r, "timing": {**timing, "touches": touches}}
        out.append(r)
    return out


class Page:
    """The page: its own timeline and clock (= the host's here, ``lag`` s behind it: the
    instant it hears what a page with no lag hears now is ``lag`` later), the messages it is
    sent.  ``others``: the other pages of the board (the messages ``pending`` gives for
    them are theirs)."""

    def __init__(self, board: WebBoard, link: int = 1, others=(), lag: float = 0.0):
        self.board = board
        self.link = link
        self.others = list(others)
        self.lag = lag
        self.tl = None
        self.got: list[dict] = []
        self.now = 0.0
        self.touches: list[tuple] = []  # (read, player, card, frame) sent
        self.ids = 0
        self.token = None
        self.you = None

    def hello(self, device: str = DEVICE, **more) -> None:
        self.send({"t": "hello", "v": boardproto.VERSION, "code": "314159", "device": device,
                   **({"seat": self.token} if self.token else {}), **more})

    def send(self, msg: dict, link: int | None = None) -> list[dict]:
        """``msg`` sent (an input numbered as the page numbers it, unless it has its id);
        what came back to this page."""
        if msg["t"] in ("touch", "pick", "send") and "id" not in msg:
            self.ids += 1
            msg = {**msg, "id": self.ids}
        # (through the wire's checks both ways, as the transport does)
        msg = boardproto.decode(json.dumps(msg))
        got = self.board.receive(msg, self.now, self.link if link is None else link,
                                 "10.0.0.2")
        self.take(got)
        pending = self.board.pending()
        for page in [self, *self.others]:
            page.take(pending.pop(page.link, []))
        assert not pending, pending
        return got

    def take(self, msgs) -> None:
        for out in msgs:
            out = json.loads(boardproto.encode(out))
            self.got.append(out)
            if out["t"] == "welcome":
                if self.tl is None:  # (a page that joins again plays on: its own timeline)
                    self.tl = online.Timeline(self.board.m.plan)
                self.token, self.you = out["token"], out["you"]
            elif out["t"] == "go" and out.get("first"):
                self.tl.anchor(self.now + self.lag + 0.5, out["frame"])
            elif out["t"] == "go":
                end = out["frame"]
                at = max(self.now + self.lag + 0.3, self.tl.instant_of(end) or self.now)
                self.tl.anchor(at, end)

    def tell_heard(self) -> None:
        """Every 50 ms (as the page's tick): the frame it hears now, told (``at``)."""
        if round(self.now * 100) % 5 == 0:
            f = self.tl.heard(self.now)
            if f is not None:
                self.send({"t": "at", "frame": round(f)})

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
    page.hello()
    assert page.got[0]["t"] == "welcome" and page.got[1]["t"] == "view"
    page.send({"t": "start"})
    player = Player("A", lambda: page, lambda f: page.tl.instant_of(f), AS_BOTS)
    while not board.over and page.now < 3600:
        page.now += 0.01
        player(page.now)
        page.tell_heard()
    assert board.over
    ref = one_machine(SEATS, page.touches)
    assert noted(m.log_records()) == ref.log_records()
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
    out = board.receive({"t": "touch", "id": 1, "card": 5, "frame": 100, "stamp": "ok"},
                        0.0, 1, "x")
    assert out == [{"t": "error", "text": "say hello with the code first"}] and board.hangup
    out = board.receive({"t": "hello", "v": 2, "code": "000000", "device": DEVICE}, 0.0, 1, "x")
    assert out[0]["t"] == "error" and "wrong code" in out[0]["text"]
    assert not m.closed and board.phase != "reading"


def _started(seats=SEATS, seed=7, rules="kyogi", **deal):
    m = headless.new_match(rules, seats, seed, VOICE, reading=QUICK, **(deal or ({"cards": 3} if rules == "kyogi" else {})))
    board = WebBoard(m, VOICE, "314159", echo=lambda line: None)
    page = Page(board)
    page.hello()
    page.send({"t": "start"})
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
        (("--web", "--fullscreen"), "with --web, leave out --fullscreen"),
        (("--address", "127.0.0.1"), "--address needs --web"),
        (("--web", "--vs", "none", "--port", "0"), "--web plays a player at the page against a bot"),
        (("--vs", "device"), "--vs device needs --web"),
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
    assert noted(m.log_records(), ("A", "B")) == one_machine(seats, page.touches).log_records()
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
    assert noted(m.log_records()) == one_machine(SEATS, page.touches, "goshiki").log_records()
    touched = [t for r in m.log_records()[1:] for t in r["timing"]["touches"]]
    assert "A" in {t["player"] for t in touched if t["verdict"] == "take"}  # (bot 1 took none)
    view = [g["view"] for g in page.got if g["t"] == "view"][-1]
    assert view["board"]["territories"] == {} and len(view["board"]["hands"]["A"]) == 10
    over = next(g for g in page.got if g["t"] == "over")
    assert re.match(r"you (won|lost|drew) \d+-\d+", over["lines"][0]), over


# ---------------------------------------------------------------- a device for each player
HUMANS = {"A": Seat("human"), "B": Seat("human")}
DEVICE_B = "cd" * 16


def _two_devices(seed=7, lag=0.07, watchers=8, echo=None, rules="kyogi"):
    """``--vs device``: A's page (link 1) and B's (link 2, its reading ``lag`` s behind A's),
    both joined and started."""
    m = headless.new_match(rules, HUMANS, seed, VOICE, reading=QUICK,
                           **({"cards": 3} if rules == "kyogi" else {}))
    board = WebBoard(m, VOICE, "314159", devices=True, watchers=watchers,
                     echo=echo or (lambda line: None))
    a = Page(board, 1)
    b = Page(board, 2, lag=lag)
    a.others, b.others = [b], [a]
    a.hello()
    b.hello(DEVICE_B)
    assert (a.you, b.you) == ("A", "B") and a.token != b.token
    a.send({"t": "start"})
    assert a.tl.anchors == [] and board.phase != "reading"  # (B has not pressed Start)
    assert any("waiting for B's device" in g.get("text", "") for g in a.got), a.got
    b.send({"t": "start"})
    assert a.tl.anchors and b.tl.anchors and board.phase == "reading"
    # both told one instant on the laptop's clock to start at (each page plays the first
    # frame then, as it measured that clock): not each on its go's arrival
    go_a, go_b = ([g for g in p.got if g["t"] == "go"] for p in (a, b))
    assert len(go_a) == len(go_b) == 1 and go_a[0]["at"] == go_b[0]["at"] > 0
    return m, board, a, b


def _run(board, pages, players=(), until=None, limit=3600):
    while not board.over and pages[0].now < limit and not (until and until()):
        for p in pages:
            p.now += 0.01
        for pl in players:
            pl(pages[0].now)
        for p in pages:
            f = p.tl.heard(p.now) if p.tl is not None else None
            if f is not None and round(p.now * 100) % 5 == 0 and p.you != "gone":
                p.send({"t": "at", "frame": round(f)})


def test_a_device_for_each_player_plays_a_whole_match_and_logs_what_one_machine_logs():
    """``--vs device``: A's page and B's (its reading 70 ms behind A's), each touching as bot
    3 (A) and bot 2 (B) would on its own timeline, each sending the highlighted card from its
    own page: the log is the one-machine match's for the same touches; each page sees its own
    side near and its own result."""
    m, board, a, b = _two_devices()
    pa = Player("A", lambda: a, lambda f: a.tl.instant_of(f), {"A": Seat("bot", 3),
                                                                "B": Seat("bot", 2)})
    pb = Player("B", lambda: b, lambda f: b.tl.instant_of(f), {"A": Seat("bot", 3),
                                                                "B": Seat("bot", 2)})
    refused = []

    def other_sends(now):  # (the page of the player who does not owe tries the send first)
        owed = m.owed_send()
        if owed is not None and not refused:
            page = b if owed.sender == "A" else a
            refused.append((owed.sender, page.send({"t": "send"})[1]))
            assert m.owed_send() == owed

    _run(board, [a, b], [other_sends, pa, pb])
    assert board.over
    who, said = refused[0]
    assert said == {"t": "warn", "text": f"{who} owes the send: it is made on {who}'s device"}
    touches = a.touches + b.touches
    assert {p for _, p, _, _ in a.touches} == {"A"} and {p for _, p, _, _ in b.touches} == {"B"}
    assert noted(m.log_records(), ("A", "B")) == one_machine(HUMANS, touches).log_records()
    judged = [t for r in m.log_records()[1:] for t in r["timing"]["touches"]]
    assert {t["player"] for t in judged} == {"A", "B"}
    for page, me in ((a, "A"), (b, "B")):
        views = [g["view"] for g in page.got if g["t"] == "view"]
        assert views[-1]["viewer"] == me
        assert [s["player"] for s in views[-1]["seats"] if s["you"]] == [me]
        over = [g for g in page.got if g["t"] == "over"]
        assert len(over) == 1 and re.match(r"you (won|lost) by \d+", over[0]["lines"][0]), over
    gos = [g for g in a.got if g["t"] == "go"]
    assert gos == [g for g in b.got if g["t"] == "go"] and len(gos) >= 2
    # one schedule: each go after a wait at the instant the reading told before reaches its
    # frame, or later (never earlier: a page is not cut short), so a page that ran late before
    # a wait plays on with the other from its end
    for g0, g1 in zip(gos, gos[1:]):
        assert g1["at"] >= g0["at"] + (g1["frame"] - g0["frame"]) / m.plan.sample_rate - 1e-6


def test_the_later_device_holds_the_read_and_a_page_touches_for_its_own_seat_only():
    """The session hears what both devices heard: with B's reading 0.8 s behind, no read
    closes before B has heard its end; B's page cannot touch for A."""
    m, board, a, b = _two_devices(lag=0.8)
    first_wait = next(s for s in m.plan.segments if s.wait)
    _run(board, [a, b], until=lambda: (a.tl.heard(a.now) or 0) >= first_wait.end)
    assert b.tl.heard(b.now) < first_wait.end - 0.6 * m.plan.sample_rate
    assert board.frame <= b.tl.heard(b.now) and not m.closed
    out = b.send({"t": "touch", "card": 5, "frame": 100, "stamp": "ok", "player": "A"})
    assert out[0]["t"] == "ack" and "this is B's device" in out[1]["text"]
    assert not any(t.player == "A" for t in m._touches)


def test_watchers_see_the_board_and_their_touches_are_refused_in_a_line():
    """A third page with the code, the seats taken: it watches (its view, the reading's
    go); its touch is refused in a line on its page, its frames move nothing; past the
    watchers' number, a page is refused in one line."""
    m, board, a, b = _two_devices(watchers=1)
    w = Page(board, 3, others=[a, b])
    a.others.append(w)
    b.others.append(w)
    w.hello("ef" * 16)
    assert w.you == "watch" and w.got[1]["t"] == "view"
    w.send({"t": "start"})
    go = w.got[-1]
    assert {k: go[k] for k in ("t", "frame", "first")} == {"t": "go", "frame": 0, "first": True}
    assert go["at"] > 0  # (the instant on the laptop's clock it is to be played at)
    before = board.frame
    w.send({"t": "at", "frame": 100_000})
    assert board.frame == before
    card = m.current().poem if m.current() else 1
    out = w.send({"t": "touch", "card": card, "frame": 500, "stamp": "ok"})
    assert out[0] == {"t": "ack", "id": 1}
    assert out[1] == {"t": "warn", "text": "you are watching: a watcher's touch is not taken"}
    assert m._touches == []
    w2 = Page(board, 4)
    w2.hello("01" * 16)
    assert w2.got[-1]["t"] == "error" and "watchers" in w2.got[-1]["text"]


def test_a_seat_comes_back_with_its_token_and_the_match_holds_until_it_does():
    """B's device loses its link mid-read: A's page and the terminal are told, the match
    holds (A's page runs to the end of the plan, nothing closes past B's frame); a page with
    the code but not B's token only watches; B's page with its token gets seat B back, and
    the match goes on."""
    said = []
    m, board, a, b = _two_devices(echo=said.append)
    _run(board, [a, b], until=lambda: len(m.closed) >= 1 and m.current() is not None)
    index, held = m.index, board.frame
    board.drop(2)
    b.you = "gone"  # (B's page says nothing now)
    for _ in range(400):  # A's page plays on for 4 s, standing at each wait's end
        a.now += 0.01
        b.now += 0.01
        f = a.tl.heard(a.now)
        if round(a.now * 100) % 5 == 0:
            a.send({"t": "at", "frame": round(f)})
        board.tick(a.now)
        a.take(board.pending().pop(1, []))
    assert m.index == index and board.frame == held
    line = "B's device stopped reporting (its link was lost): the match waits for it"
    assert line in said, said[5:]
    assert {"t": "warn", "text": line} in a.got
    thief = Page(board, 5, others=[a, b])
    a.others.append(thief)
    b.others.append(thief)
    thief.hello("99" * 16)
    assert thief.you == "watch"
    b.link = 6
    b.hello(DEVICE_B)  # (with its token)
    assert b.you == "B" and "B's device is back" in said
    _run(board, [a, b, thief], until=lambda: m.index > index + 1)
    assert m.index > index + 1  # (the match goes on, read after read)


def test_a_touch_sent_again_after_a_rejoin_is_judged_once():
    """A touch whose ack was lost with the link (sent into a dying link, the page joined
    again with its token and sent it again, same id): acknowledged, judged once."""
    m, board, page = _started()
    first = next(s for s in m.plan.segments if s.kind == "kami" and isinstance(s.poem, int))
    while (page.tl.heard(page.now) or 0) < first.start + 4800:
        page.now += 0.01
        if page.tl.heard(page.now) is not None:
            page.send({"t": "at", "frame": round(page.tl.heard(page.now))})
    touch = {"t": "touch", "id": 1, "card": first.poem, "frame": first.start + 4800,
             "stamp": "ok"}
    page.send(touch)
    board.drop(1)
    page.link = 2
    page.hello()
    assert page.you == "A"
    out = page.send(touch)
    assert out[0] == {"t": "ack", "id": 1} and len(out) <= 2
    assert len([t for t in m._touches if t.player == "A"]) == 1


def test_a_device_silent_on_an_open_link_is_said_on_the_other_page():
    """B's page stops telling its frames (its link still open: a phone that froze): after
    2 s the terminal and A's page say so, the match holds at B's frame; B's next message
    says it is back."""
    said = []
    m, board, a, b = _two_devices(echo=said.append)
    _run(board, [a, b], until=lambda: a.now > 2.0)
    held = board.frame
    for _ in range(250):  # 2.5 s: A reports, B says nothing
        a.now += 0.01
        b.now += 0.01
        if round(a.now * 100) % 5 == 0:
            a.send({"t": "at", "frame": round(a.tl.heard(a.now))})
        board.tick(a.now)
        a.take(board.pending().pop(1, []))
    line = "B's device stopped reporting (nothing heard from it for 2 s): the match waits for it"
    assert said.count(line) == 1 and {"t": "warn", "text": line} in a.got
    assert board.frame == held
    b.send({"t": "at", "frame": round(b.tl.heard(b.now))})
    assert said[-1] == "B's device is back" and {"t": "warn", "text": said[-1]} in a.got


def test_a_seat_joined_again_on_a_new_link_has_its_old_link_closed():
    """A page that joins again while its old link still looks open (a half-dead link is
    often noticed late; or a second tab of the same browser, with the same token): the seat
    moves to the new link, the old one is to be closed with a line saying why (a page told
    an error does not join again by itself: no two tabs taking the seat in turns), and a
    message still coming on it is refused."""
    m, board, page = _started()
    page.link = 2
    page.hello()
    assert page.you == "A" and board.closing == [(1, {
        "t": "error", "text": "this seat joined again from another page: this one is closed"})]
    out = board.receive({"t": "start"}, 0.0, 1, "10.0.0.2")
    assert out == [{"t": "error", "text": "say hello with the code first"}]


def test_a_goshiki_match_on_two_devices_logs_what_one_machine_logs():
    """Goshiki with a device each (B's reading 70 ms behind): each page draws its own ten
    near, the log is the one-machine match's for the same touches."""
    m, board, a, b = _two_devices(rules="goshiki")
    as_bots = {"A": Seat("bot", 3), "B": Seat("bot", 2)}
    players = [Player(p, lambda pg=pg: pg, lambda f, pg=pg: pg.tl.instant_of(f), as_bots)
               for p, pg in (("A", a), ("B", b))]
    _run(board, [a, b], players)
    assert board.over and len(m.closed) >= 17
    assert noted(m.log_records(), ("A", "B")) == one_machine(HUMANS, a.touches + b.touches, "goshiki").log_records()
    for page, me in ((a, "A"), (b, "B")):
        view = [g["view"] for g in page.got if g["t"] == "view"][-1]
        assert view["viewer"] == me and len(view["board"]["hands"][me]) == 10


def test_a_seat_whose_device_never_comes_back_is_taken_over_with_the_code():
    """B's device goes mid-read and never comes back: the match holds.  Before
    ``TAKEOVER_S`` a page with the code asking for seat B is refused in a line (a live seat is
    never taken), as is one with a wrong code (counted by the lock); a page with neither the
    code nor B's token gets nothing.  Once B has been gone ``TAKEOVER_S`` the watchers are told
    the seat is vacant; a watcher's page takes it over with the code, gets a new token, starts,
    and the reading goes on from the pending read (the 間 before its 上の句), read after read;
    B's old token, if it ever returns, only watches, with a line saying why."""
    from reader.web.board import TAKEOVER_S

    said = []
    m, board, a, b = _two_devices(echo=said.append)
    w = Page(board, 3, others=[a, b])
    a.others.append(w)
    b.others.append(w)
    w.hello("ef" * 16)
    assert w.you == "watch"
    _run(board, [a, b], until=lambda: len(m.closed) >= 1 and m.current() is not None)
    index, held, old = m.index, board.frame, b.token
    pending = m.current().poem
    board.drop(2)
    b.you = "gone"
    gone_at = b.now

    def wait(seconds):  # A's page plays on (standing at the wait's end), B says nothing
        end = a.now + seconds
        while a.now < end:
            a.now = b.now = w.now = round(a.now + 0.05, 2)
            a.send({"t": "at", "frame": round(a.tl.heard(a.now))})
            board.tick(a.now)
            out = board.pending()
            for p in (a, w):
                p.take(out.pop(p.link, []))

    wait(TAKEOVER_S - 5)
    assert m.index == index and board.frame == held
    thief = Page(board, 5, others=[a, w])
    thief.now = a.now
    thief.hello("99" * 16, take="B")
    assert thief.you is None and thief.got[-1]["t"] == "error"
    assert thief.got[-1]["text"].startswith("seat B is still played (its device was heard 55 s "
                                            "ago): a seat is taken over only once its device "
                                            f"has been gone {TAKEOVER_S:.0f} s"), thief.got
    assert not [g for g in w.got if g["t"] == "vacant"]
    w.hello("ef" * 16, take="B")  # (a watcher asking too early is told so, and watches on)
    assert w.got[-1]["t"] == "warn" and w.got[-1]["text"].startswith("seat B is still played")
    assert w.you == "watch" and not board.hangup
    tries = board.gate.tried
    thief.send({"t": "hello", "v": boardproto.VERSION, "code": "271828", "device": "99" * 16,
                "take": "B"})
    assert thief.got[-1]["t"] == "error" and "wrong code" in thief.got[-1]["text"]
    assert board.gate.tried == tries + 1 and board.hangup
    wait(6)
    assert a.now - gone_at >= TAKEOVER_S
    assert {"t": "vacant", "seats": ["B"]} in w.got
    assert any("seat B: its device has been gone 60 s" in s for s in said), said
    w.token = None  # (the page asks with the code alone)
    w.hello("ef" * 16, take="B")
    assert w.you == "B" and w.token not in (None, old)
    line = next((s for s in said if re.fullmatch(r"seat B was taken over by a device from "
                                                 r"10\.0\.0\.2 \(its device was gone 6\d s\)", s)),
                None)
    assert line is not None, said[5:]
    assert {"t": "warn", "text": line} in a.got
    assert [p.role for p in board.pages] == ["A", "B"]  # (its watcher's place given up)
    assert m.index == index and m.current().poem == pending
    kami = next(s for s in m.plan.segments if s.kind == "kami" and s.poem == pending)
    w.send({"t": "start"})
    go = [g for g in w.got if g["t"] == "go"][-1]
    assert go["first"] and go["frame"] < kami.start  # (the pending read, from its 間)
    _run(board, [a, w], until=lambda: m.index > index + 1)
    assert m.index > index + 1  # (the match goes on, read after read)
    b.link, b.token, b.you = 7, old, None
    b.others = [a, w]
    b.hello(DEVICE_B)  # (B's old device comes back with its old token)
    assert b.you == "watch"
    assert {"t": "warn", "text": "seat B was taken over by another device while this one was "
                                 "gone (over 60 s): you are watching"} in b.got


def test_a_page_that_starts_mid_read_goes_on_from_the_schedules_frame_or_the_next_read():
    """The reading's first go is at laptop instant t0 from frame 0: a page that starts later
    (reloaded, or a watcher) is told the frame the schedule reaches at its own go's instant,
    0.8 s on -- part-way into the first 上の句 before its decisive onset: played from there;
    past that onset: silent (``quiet``) up to the kyogi wait's end, its reading going on from
    the next read; in the wait: standing just before its end.  Its first go while t0 is still
    ahead is that very go."""
    from fakes import FakeClock

    clock = FakeClock(t=100.0)
    m = headless.new_match("kyogi", SEATS, 28, VOICE, cards=3,  # (decisive 1.5 s in)
                           reading={**QUICK, "speed": 1.0})
    board = WebBoard(m, VOICE, "314159", echo=lambda line: None, clock=clock)
    page = Page(board)
    page.hello()
    page.send({"t": "start"})
    first = [g for g in page.got if g["t"] == "go"][-1]
    assert (first["frame"], first["at"]) == (0, 100.8)
    kami = next(s for s in m.plan.segments if s.kind == "kami")
    wait = next(s for s in m.plan.segments if s.wait)
    rate = m.plan.sample_rate

    def late_go(t):
        clock.t = t
        w = Page(board, link=10 + len(board.pages))
        w.hello(("%02x" % len(board.pages)) * 16)
        w.send({"t": "start"})
        return [g for g in w.got if g["t"] == "go"][-1]

    assert late_go(100.1) == first  # (the go told is still ahead)
    before = kami.decisive - rate // 2  # (read 0.8 s from now: 0.5 s before the onset)
    go = late_go(100.8 + before / rate - 0.8)
    assert go == {"t": "go", "frame": before, "at": pytest.approx(100.8 + before / rate),
                  "first": True}
    past = kami.decisive + 480
    go = late_go(100.8 + past / rate - 0.8)
    assert (go["frame"], go["quiet"]) == (past, wait.end)
    go = late_go(100.8 + (wait.end + rate) / rate - 0.8)
    assert (go["frame"], go["quiet"]) == (wait.end - 1, wait.end)
