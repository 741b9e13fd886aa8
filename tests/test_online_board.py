"""Online play's board window, in this process (SDL's dummy video driver, no sound device):
the window of each machine over a simulated link (``online.Sim``, 80 ± 20 ms each way, the
guest's clock far from the host's) — what a click sends, and what the host's judgements do
to the guest's board; and the reading's own sound process (on the session's PulseAudio).
The same with two real processes, X servers and sinks: tests/test_online_window.py."""
from __future__ import annotations

import random
import threading

import pytest

from audio_fixtures import pulse_server  # noqa: F401
from reader.practice import headless, online
from reader.practice.match import Seat

from test_online import CODE, VOICE, build, jitter

SEED = 133  # read 1 is B's (the guest's) one card


def _pair(rng_seed=3, seed=SEED):
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("human")}, seed, VOICE,
                           cards=1, reading={"joka": False})
    host, guest = online.Host(m, CODE, ready=False), online.Guest(CODE, build)
    guest.ready = False
    rng = random.Random(rng_seed)
    sim = online.Sim(host, guest, online.SimLink(jitter(rng)), online.SimLink(jitter(rng)),
                     offset=-3456.25)
    return m, host, guest, sim


def test_no_read_is_scheduled_until_both_boards_are_up():
    m, host, guest, sim = _pair()
    sim.run_until(lambda: False, limit=4.0)
    assert guest.m is not None and guest.clock.count > online.MIN_SAMPLES
    assert not host.timeline.anchors and not host.started  # (measured, but no board yet)
    guest.ready = True
    sim.run_until(lambda: False, limit=6.0)
    assert host.guest_ready and not host.timeline.anchors  # the host's own board is not up
    host.ready = True
    assert sim.run_until(lambda: host.timeline.anchors, limit=9.0)
    assert sim.run_until(lambda: guest.timeline.anchors, limit=10.0)  # told to the guest


def test_the_guests_click_is_the_frame_it_heard_and_the_hosts_judgement_moves_its_board(
        monkeypatch):
    from audio.output import NullOutput
    from reader.practice.netwindow import OnlineWindow

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    m, host, guest, sim = _pair()
    host.ready = True
    assert sim.run_until(lambda: guest.m is not None, limit=5.0)
    lock = threading.Lock()
    w = OnlineWindow(guest, guest.me, lock, NullOutput(48000), hints=True)
    w.open()
    try:
        assert guest.ready and w.table.viewer == "B"
        assert "you" in w.scene.texts["near"] and "B" in w.scene.texts["near"]
        sim.players.append(lambda h, g: w.table.drain(g))
        assert sim.run_until(lambda: host.timeline.anchors and m.current() is not None,
                             limit=15.0)
        cur = m.current()
        rate = m.plan.sample_rate
        f_b = cur.decisive + round(0.3 * rate)  # B touches its card here, A 30 ms later
        f_a = f_b + round(0.030 * rate)  # (10 ms: simultaneous by the rules)
        # the guest's click at the instant its sink plays f_b: on the guest's own clock
        # (the true offset, not the measured one: the frame sent is what was heard)
        t_b = host.timeline.instant_of(f_b) - sim.offset
        t_k = host.timeline.instant_of(cur.start) - sim.offset - 0.05  # (before its 上の句)
        assert sim.run_until(lambda: sim.gnow >= t_k, limit=40.0)
        w._tick(sim.gnow)
        assert w.view.board.dim == frozenset() == w.scene.dim  # --hints: nothing ruled out yet...
        assert sim.run_until(lambda: sim.gnow >= t_b, limit=40.0)
        w._tick(sim.gnow)  # ... past the decisive sound, as this machine hears it: the other
        other = {c for cs in m.board.values() for c in cs} - {cur.poem}
        assert w.scene.dim == frozenset(other) and other  # card dims
        w.table.touch("B", cur.poem, t_b)
        sent = list(w.table.outbox)
        assert [x["t"] for x in sent] == ["touch"] and sent[0]["card"] == cur.poem
        assert abs(sent[0]["frame"] - f_b) <= 0.001 * rate  # within 1 ms of what was heard
        host.touch(cur.poem, f_a, sim.now)  # the host's own player, 30 ms later
        assert sim.run_until(lambda: m.closed and guest.m.closed, limit=60.0)
        assert m.closed[0].event.took == "B"  # the earlier frame, not the earlier arrival
        w._tick(w.now())  # the window's turn: the host's news drawn
        assert guest.m.log_text() == m.log_text()
        assert not list(w.scene.territories["B"].cards)  # the taken card left B's side
        assert w.phase == "over"  # B's territory is empty: the end table
        assert w.painter.overlay is not None
    finally:
        import pygame

        pygame.display.quit()


def test_a_guest_that_joins_again_redraws_its_board_from_the_hosts_log(monkeypatch):
    from audio.output import NullOutput
    from reader.practice.netwindow import OnlineWindow

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    m, host, guest, sim = _pair(seed=7)  # (its first reads are karafuda: the match goes on)
    assert m.current().where is None
    host.ready = True
    assert sim.run_until(lambda: guest.m is not None, limit=5.0)
    said = []
    w = OnlineWindow(guest, guest.me, threading.Lock(), NullOutput(48000), say=said.append)
    w.open()
    try:
        first = guest.m
        assert sim.run_until(lambda: len(guest.m.closed) >= 1, limit=60.0)  # (nobody touched)
        sim.cut(5.0)
        assert sim.run_until(lambda: guest.rejoins >= 1 and len(m.closed) >= 2, limit=120.0)
        w._tick(w.now())
        assert guest.m is not first and w.m is guest.m and w.table.session.m is guest.m
        assert said and said[0].startswith("joined again: the match goes on from read")
        assert {p: sorted(w.scene.territories[p].cards) for p in "AB"} == \
            {p: sorted(c) for p, c in guest.m.board.items()}
        assert guest.m.log_text() == m.log_text()[:len(guest.m.log_text())]
    finally:
        import pygame

        pygame.display.quit()


@pytest.mark.realtime
def test_the_sound_process_plays_and_a_sound_that_ends_by_itself_is_an_error(pulse_server):
    """``SoundProcess``: the reading's sound in its own process, started on the session's
    PulseAudio; its process ending while it should play is said (``error``), as a board
    window then ends with one line."""
    import time

    from reader.practice.netsound import SoundProcess

    m, host, guest, sim = _pair()
    s = SoundProcess(m.log_text(), online.plan_digest(m.plan), "tone", lambda: host.timeline,
                     lambda: 0.0)
    s.start()
    try:
        assert s.error is None and s.device_info and s.proc.poll() is None
        s.proc.kill()
        end = time.monotonic() + 10
        while s.error is None and time.monotonic() < end:
            time.sleep(0.05)
        assert s.error is not None and "stopped" in str(s.error)
    finally:
        s.stop()
    bad = SoundProcess(m.log_text(), "0" * 16, "tone", lambda: None, lambda: None)
    with pytest.raises(Exception) as e:  # another plan: refused in one line
        bad.start()
    assert "plan differs" in str(e.value) and "\n" not in str(e.value)


def test_a_hosts_memorisation_counts_down_on_the_guests_board_then_the_reading_starts(
        monkeypatch):
    """``--host --memorize``: the first sync point comes that much later on both machines;
    the guest's board says how long is left, and the reading starts at it."""
    from audio.output import NullOutput
    from reader.practice.netwindow import OnlineWindow

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    m, host, guest, sim = _pair()
    host.memorize_s = 20.0
    host.ready = True
    assert sim.run_until(lambda: guest.m is not None, limit=5.0)
    w = OnlineWindow(guest, guest.me, threading.Lock(), NullOutput(48000))
    w.open()
    try:
        assert sim.run_until(lambda: guest.timeline.anchors, limit=15.0)
        first = host.timeline.anchors[0].at
        assert first - sim.now > 20.0  # the memorisation, then the margins
        w._tick(sim.gnow)
        status = w.scene.texts["status"]
        assert status.startswith("memorise: 2") and "both machines" in status, status
        assert sim.run_until(lambda: sim.now >= first, limit=60.0)
        w._tick(sim.gnow)
        assert "memorise" not in w.scene.texts["status"]
        assert w.table.heard(sim.gnow) is not None  # the reading is heard now
    finally:
        import pygame

        pygame.display.quit()


def test_a_judgement_on_the_guests_board_is_told_under_the_read_it_belongs_to(monkeypatch):
    # the last read's outcome line stays a while (a goshiki read closes as the next starts):
    # a judgement in the read now open must not be told as if it were that read's
    from audio.output import NullOutput
    from reader.practice.netwindow import OnlineWindow

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    m, host, guest, sim = _pair(seed=7)  # (read 1 is a karafuda: the match goes on)
    host.ready = True
    assert sim.run_until(lambda: guest.m is not None, limit=5.0)
    w = OnlineWindow(guest, guest.me, threading.Lock(), NullOutput(48000))
    w.open()
    try:
        sim.players.append(lambda h, g: w.table.drain(g))
        assert sim.run_until(lambda: guest.timeline.anchors, limit=15.0)
        w._tick(sim.gnow)  # (the reading has begun on this board)
        first = guest.m.current()
        guest.receive({"t": "closed", "read": 0, "touches": []}, sim.gnow)  # nobody took it
        w._tick(sim.gnow)
        told = w.scene.texts["status"]
        assert told.startswith(f"read 1: {first.poem} ")  # its outcome, still shown...
        cur = guest.m.current()
        guest.receive({"t": "judged", "verdict": "fault", "card": cur.poem, "player": "B",
                       "frame": cur.start}, sim.gnow)  # ... when a fault in read 2 is told
        w._tick(sim.gnow)
        assert w.scene.texts["status"] == \
            f"read {cur.index + 1}/{len(guest.m.order)} · you: fault"
        assert w.view.board.marks[cur.poem] == "fault"
    finally:
        import pygame

        pygame.display.quit()


def test_the_hosts_board_says_who_tried_a_wrong_code(monkeypatch):
    """A wrong code (and a silent guest link) shows on the host's board's status line and is
    said on its terminal (``say``), in one line each."""
    from audio.output import NullOutput
    from reader.practice.netwindow import OnlineWindow

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    m, host, guest, sim = _pair()
    said = []
    w = OnlineWindow(host, host.local, threading.Lock(), NullOutput(48000), say=said.append)
    w.open()
    try:
        link = host.connect(0.0, "203.0.113.9")
        host.receive({"t": "hello", "v": online.VERSION, "code": "999999"}, 0.0, link)
        w._tick(0.0)
        assert said == ["someone at 203.0.113.9 gave a wrong code (refused)"]
        assert w.scene.texts["status"] == said[0]
        assert sim.run_until(lambda: host.joined, limit=5.0)
        sim.up.hold(sim.now + 10.0)  # the guest's lines stop coming
        assert sim.run_until(lambda: not host.joined, limit=sim.now + online.SILENT_S + 0.5)
        w._tick(sim.now)
        assert "silent for 3 s" in said[-1] and "silent" in w.scene.texts["status"]
    finally:
        import pygame

        pygame.display.quit()
