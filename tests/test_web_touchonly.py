"""The touch-only mode's clock on the board's table (``reader.web.touchonly``): the page's
ping is answered with the laptop's receipt and reply times, as the two-laptop match answers
(its own messages, checked by the board's protocol), and only on a welcomed link; fed to the
sync rule the page runs (``online.ClockSync``: tests/test_web_clocksync.py shows the page's
gives the same), those answers put a touch on the laptop's clock within the bound it states."""
from __future__ import annotations

import random

from reader.practice import headless, online
from reader.practice.match import Seat
from reader.web import boardproto
from reader.web.board import WebBoard

from test_online import QUICK, VOICE

DEVICE = "cd" * 16


class Later:
    """The laptop's clock as the board reads it to stamp its reply: ``turn`` s after the
    message's receipt (set per message)."""

    def __init__(self):
        self.at = 0.0

    def seconds(self) -> float:
        return self.at


def welcomed(clock) -> WebBoard:
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("bot", 1)}, 7, VOICE,
                           cards=3, reading=QUICK)
    board = WebBoard(m, VOICE, "314159", echo=lambda line: None, clock=clock)
    assert board.receive({"t": "hello", "v": boardproto.VERSION, "code": "314159", "device": DEVICE}, 0.0, 1,
                         "x")[0]["t"] == "welcome"
    return board


def test_a_ping_before_the_hello_is_refused_and_after_it_answered_with_the_laptops_times():
    clock = Later()
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("bot", 1)}, 7, VOICE,
                           cards=3, reading=QUICK)
    board = WebBoard(m, VOICE, "314159", echo=lambda line: None, clock=clock)
    out = board.receive(boardproto.decode('{"t":"ping","id":1,"a":12.5}'), 3.0, 1, "x")
    assert out == [{"t": "error", "text": "say hello with the code first"}] and board.hangup
    board = welcomed(clock)
    clock.at = 3.0004
    out = board.receive(boardproto.decode('{"t":"ping","id":7,"a":12.5}'), 3.0, 1, "x")
    assert [boardproto.decode(boardproto.encode(o)) for o in out] == [
        {"t": "pong", "id": 7, "a": 12.5, "b": 3.0, "c": 3.0004}]
    assert board.phase != "reading" and not m.closed  # (nothing else moved)


def test_the_pongs_put_a_touch_on_the_laptops_clock_within_the_stated_bound():
    """A page 40.123 s ahead of the laptop, over a link 80 ± 20 ms each way, pinging every
    100 ms for 10 s: its touch's instant on the laptop's clock is within half the sync's
    width of the truth -- a bound of half the quickest trips out and back (60 + 60 ms
    here: a LAN's are 1-2 ms) -- and, the least delays being the same both ways (NTP's
    assumption), within 2 ms of it."""
    clock, rng, ahead = Later(), random.Random(3), 40.123
    board = welcomed(clock)
    sync = online.ClockSync()
    for i in range(100):
        a = 100.0 + i * 0.1  # (the page's clock)
        got = a - ahead + 0.08 + rng.uniform(-0.02, 0.02)
        clock.at = got + rng.uniform(0, 0.002)
        (pong,) = board.receive({"t": "ping", "id": i, "a": a}, got, 1, "x")
        back = clock.at + 0.08 + rng.uniform(-0.02, 0.02)
        sync.add(pong["a"], pong["b"], pong["c"], back + ahead)
    stamp = 110.5  # a touch, on the page's clock
    laptop = stamp + sync.offset
    assert abs(laptop - (stamp - ahead)) <= sync.width / 2 + 1e-9
    assert 0.055 < sync.width / 2 < 0.0625
    assert abs(laptop - (stamp - ahead)) < 0.002
