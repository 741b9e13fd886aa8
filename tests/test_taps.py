"""Tap input and the tap → plan-time mapping through the real sounddevice path.

Taps are injected at known DAC frames: a buffer's ``outputBufferDacTime`` (PortAudio's clock)
plus an offset inside it gives the instant a chosen stream frame reaches the (null) sink; a
byte is written to a real pty at that instant, the stamping process stamps it, and the mapping
must land on the chosen frame: typically within 0.25 ms for the mapping itself; through the whole path
typically within 1 ms (every time within 1 ms is the target of ``scripts/bench_grab.py`` on a
quiet machine; a busy one delays the stamping process now and then).
"""
from __future__ import annotations

import os
import pty
import statistics
import time

import numpy as np
import pytest

from audio_fixtures import pulse_server, small_plan  # noqa: F401
from machine_stall import Waited, run_delays
from audio.output import NullOutput, SounddeviceOutput
from audio.render import PlanCursor
from audio.voice import ToneVoice
from reader.drills.grab import drill_plan
from reader.input.taps import PollStats, TapMapper, TerminalTaps, _decode_one

RATE = 48000
VOICE = ToneVoice(RATE, mora_ms=60)


def _perf_of_stream_time(out: SounddeviceOutput, t_stream: float) -> float:
    """perf_counter time of a PortAudio stream-clock time (a paired reading, best of 5)."""
    best = None
    for _ in range(5):
        a = time.perf_counter()
        st = float(out._stream.time)
        b = time.perf_counter()
        if best is None or b - a < best[0]:
            best = (b - a, st - (a + b) / 2)
    return t_stream - best[1]


def _sleep_until(t_perf: float) -> None:
    while True:
        left = t_perf - time.perf_counter()
        if left <= 0:
            return
        if left > 0.0008:
            time.sleep(left - 0.0005)


def _wait_flowing(out: SounddeviceOutput) -> None:
    """Until buffers flow steadily: on PulseAudio a new stream plays ~3 buffers, stalls
    0.7-2 s, then runs (the DAC times jump by the stall; the early ones are off)."""
    deadline = time.monotonic() + 10
    while out.buffers < 40:
        assert time.monotonic() < deadline, "the stream does not run"
        time.sleep(0.01)


def _future_target(out: SounddeviceOutput, ahead: float, offset: int):
    """(stream frame, DAC time) of a frame ``offset`` into a buffer due ``ahead`` s from now."""
    deadline = time.monotonic() + 2
    while True:
        frames, dac = out.dac_times()
        now = float(out._stream.time)
        ok = np.flatnonzero(dac > now + ahead)
        if ok.size:
            k = int(ok[0])
            return int(frames[k]) + offset, float(dac[k]) + offset / RATE
        assert time.monotonic() < deadline, "no buffer is queued ahead of the ear"
        time.sleep(0.002)


def _inject_taps(pulse_server) -> dict:
    """40 taps written to a pty at known DAC instants while a reading plays on PulseAudio."""
    plan = small_plan(VOICE, cards=4, ma_ms=300, take_ms=300, yoin_ms=200)
    out = SounddeviceOutput(device="pulse")
    cursor = PlanCursor(plan, VOICE)
    mapper = TapMapper(out, cursor)
    master, slave = pty.openpty()
    errors_path, errors_pure, late, waits = [], [], [], []
    skipped = 0
    rng = np.random.default_rng(5)
    try:
        with TerminalTaps(fd=slave) as taps:
            out.play(cursor)
            _wait_flowing(out)
            stamper = getattr(taps, "_proc", None)
            waited = Waited(pulse_server.proc.pid,
                            *([stamper.pid] if stamper is not None else [])).__enter__()
            for i in range(40):
                offset = int(rng.integers(0, out.blocksize))
                frame, t_dac = _future_target(out, 0.004, offset)
                t_perf = _perf_of_stream_time(out, t_dac)
                before = _delays(stamper)
                _sleep_until(t_perf)
                t_written = time.perf_counter()
                os.write(master, b" ")
                t_after = time.perf_counter()
                ev = taps.get(timeout=1.0)
                assert ev is not None and ev.char == " "
                after = _delays(stamper)
                if t_after - t_written > 0.0002:  # the injector lost the CPU: truth unknown
                    skipped += 1
                    continue
                late.append((t_written - t_perf) * 1000)
                # the truth: the frame reaching the sink when the byte was written (the
                # injector itself may be a little late: that is not the app's error)
                want = cursor.plan_frame_at(frame) + (t_written - t_perf) * RATE
                got = mapper.plan_frame(ev.ns)
                errors_path.append((got - want) * 1000 / RATE)
                # how long the stamping process or a thread of ours waited for a CPU meanwhile
                waits.append(1000 * max((after.get(k, 0.0) - w for k, w in before.items()),
                                        default=0.0))
                # the mapping alone, for a stamp exactly at the DAC instant
                pure = mapper.plan_frame(round(t_perf * 1e9))
                errors_pure.append((pure - cursor.plan_frame_at(frame)) * 1000 / RATE)
                time.sleep(0.02 + rng.random() * 0.03)
            # the 40 taps done, the rest of the reading is not needed (it is long only so
            # that a busy machine's taps still fall inside it)
            assert out.is_active
            poll = taps.stats.describe()
            waited.update()
    finally:
        out.stop()
        os.close(master)
        os.close(slave)
    return {"path": errors_path, "pure": errors_pure, "skipped": skipped, "poll": poll,
            "underruns": out.underruns, "waited": waited, "waits": waits}


def _delays(stamper) -> dict:
    """Each thread of this process and of the stamping process: its wait for a CPU so far."""
    got = run_delays()
    if stamper is not None:
        got.update(run_delays(stamper.pid))
    return got


@pytest.mark.realtime
def test_taps_injected_at_known_dac_frames_map_within_a_few_ms(pulse_server, timing_figures):
    """Taps written to a pty at known DAC instants map to their frames, within what a player
    notices.  How close on a quiet machine (the mapping's median within 0.5 ms, the whole
    path's within 1 ms) is scripts/bench_timing.py's figure: a busy machine cannot hold it
    (beside a pip install, load ~3.5: the mapping's median 0.74 ms; PulseAudio's DAC times
    then wander, and the pty's kernel worker and the stamping process wake late).  A run in
    which the machine starved the sound (underruns: silence inserted, the DAC line moved and
    then replaced; seen at load 20-29, the mapping's median 3.5 ms) says nothing of the
    mapping: it is made once more, and the failure names the underruns."""
    first = None
    for attempt in (1, 2):
        got = _inject_taps(pulse_server)
        if got["underruns"] and attempt == 1:
            first = got["underruns"]
            continue
        break
    errors_path, errors_pure, skipped, poll = (got["path"], got["pure"], got["skipped"],
                                               got["poll"])
    stalled = (f"(made twice: {first} underruns the first time, {got['underruns']} now; "
               if first else "(") + f"{got['waited']})"
    pure = sorted(abs(e) for e in errors_pure)
    errs = sorted(errors_path)
    timing_figures.update(
        mapping_median_ms=statistics.median(pure), mapping_p90_ms=pure[int(0.9 * (len(pure) - 1))],
        mapping_worst_ms=pure[-1], path_median_ms=statistics.median(errs) if errs else None,
        path_p90_ms=errs[int(0.9 * (len(errs) - 1))] if errs else None,
        path_worst_ms=errs[-1] if errs else None, taps=len(errs), underruns=got["underruns"],
        waited_ms=got["waited"].s * 1000)
    # the mapping itself: exact to a few microseconds on a quiet machine (a buffer whose DAC
    # time is off the line by > 0.2 ms is replaced by the line: then up to that, plus the
    # line's own residual).  A busy machine moves the line now and then (a clean CI run saw
    # one tap of 40 at 1.06 ms; another, nine in ten within 1.15 ms, the errors drifting
    # 0 -> -0.48 ms and back in a sawtooth as the line was replaced; beside a pip install the
    # median 0.74 ms): the typical tap within 1.5 ms, and every one within what a player
    # notices (the target is ±3 ms).  A mapping off by a buffer (10 ms) or by the device's
    # latency (tens of ms) fails both
    assert statistics.median(pure) < 1.5, (errors_pure, stalled)
    assert pure[-1] < 3.0, (errors_pure, stalled)
    # the whole path (pty -> stamping process -> stamp -> mapping).  The machine may be busy
    # (the stamping process then wakes late: the OS's doing, not the mapping's, measured per
    # tap: how long it or a thread of ours waited for a CPU between the write and the stamp's
    # arrival is taken off that tap's error): the typical tap within 3 ms, where a stamp taken
    # by a drawing thread instead would be late by up to its frame (16 ms at 60 fps: 8 ms
    # typically).  Nine in ten within 5 ms is scripts/bench_timing.py's figure, not asserted
    # here: the pty hands bytes over in a kernel worker thread that a busy machine delays and
    # the test cannot measure (seen: one tap in 40 at 43 ms, load ~3; a CPU hog at load ~18:
    # nine in ten within 25 ms, and 8.02 ms with the stamper's waits taken off); the worst
    # case is bench_grab's to measure
    assert len(errs) >= 20, (skipped, errs)  # the injector itself needs the CPU on time
    # a stamp cannot come before the byte was written: the only way below 0 is the mapping's
    # own error, bounded just above
    assert errs[0] >= -pure[-1] - 0.05, (errs, errors_pure)
    less = sorted(e - w for e, w in zip(errors_path, got["waits"]))  # each less its stall
    said = (errs, [f"{e:.2f} ms, waited {w:.1f} ms" for e, w in zip(errors_path, got["waits"])],
            stalled)
    assert statistics.median(less) <= 3.0, said
    timing_figures["path_p90_less_waits_ms"] = less[int(0.9 * (len(less) - 1))]
    # the input thread polls about every millisecond
    assert 0.9 < poll["median_ms"] < 2.0, (poll, stalled)


def test_terminal_taps_decode_utf8_kana_and_report_end_of_input():
    r, w = os.pipe()
    with TerminalTaps(fd=r) as taps:
        t0 = time.perf_counter_ns()
        os.write(w, "あs".encode())
        os.write(w, "き"[:1].encode()[:2])  # half a character ...
        time.sleep(0.01)
        os.write(w, "き".encode()[2:])  # ... then the rest
        evs = [taps.get(timeout=1.0) for _ in range(3)]
        assert [e.char for e in evs] == ["あ", "s", "き"]
        assert all(e.ns >= t0 and e.kind == "key" for e in evs)
        os.close(w)
        assert taps.get(timeout=1.0).kind == "quit"
    os.close(r)
    assert _decode_one(b"\xff") == ("", 1) and _decode_one(b"\xe3\x81") == ("", 0)


def test_poll_stats():
    s = PollStats()
    for i in range(11):
        s.tick(i * 1_000_000)
    d = s.describe()
    assert d["n"] == 10 and d["median_ms"] == 1.0 and d["max_ms"] == 1.0


@pytest.mark.realtime
def test_a_tap_in_a_live_wait_counts_on_from_where_the_plan_stopped():
    """NullOutput is exact against perf_counter: isolates the cursor part of the mapping."""
    plan = drill_plan(VOICE, 1, poems=[1, 2], ma_ms=100, take_ms=1000, lead_ms=100)
    take = next(s for s in plan.segments if s.wait)
    out = NullOutput()
    cursor = PlanCursor(plan, VOICE, live=True)
    mapper = TapMapper(out, cursor)
    out.play(cursor)
    try:
        deadline = time.monotonic() + 10
        while True:  # until the ear is 0.3 s into the wait
            f = out.frame_now()
            if f is not None and cursor.plan_frame_at(int(f)) == take.start:
                wait_anchor = next(a for a in cursor.anchors if a.event == "wait")
                if f - wait_anchor.stream_frame > 0.3 * RATE:
                    break
            assert time.monotonic() < deadline
            time.sleep(0.005)
        ns = time.perf_counter_ns()
        s = out.frame_at_perf(ns / 1e9)
        got = mapper.plan_frame(ns)
        assert got == pytest.approx(take.start + (s - wait_anchor.stream_frame), abs=1e-6)
        assert got - take.start > 0.3 * RATE
        assert mapper.plan_frame(ns, continuous=False) == take.start
    finally:
        out.stop()


def _timeline_with(dac_error, seconds=12.0, block=480, callback_late=None):
    """A ``_Timeline`` as a PulseAudio stream records it: the sound reaches the sink at
    ``t0 + frame/rate + 0.075``; callbacks run ``0.075`` s before that plus a random lateness;
    the reported DAC time is off by ``dac_error(age)``."""
    from audio.output import _Timeline

    rng = np.random.default_rng(3)
    tl = _Timeline(RATE)
    t0 = 1000.0
    for k in range(int(seconds * RATE / block)):
        f = k * block
        heard = t0 + f / RATE + 0.075
        cur = heard - 0.075 + (rng.exponential(0.0005) if callback_late is None else callback_late)
        tl.record(f, heard + dac_error(f / RATE), cur)
    return tl


def test_dac_times_count_as_settled_only_once_they_stop_wandering_against_the_callbacks():
    """Measured on PulseAudio (scripts/bench_grab.py --debug, and 4 streams of 25 s under load):
    the DAC times of a new stream wander by a few ms for its first seconds (libpulse's
    interpolated latency) while the callback times keep one line; the drill waits for
    ``settled``: (DAC line − callback envelope) within 0.2 ms for the last second."""
    import math

    steady = _timeline_with(lambda age: 0.0, seconds=3.0)
    assert steady.settled()[0]
    assert steady.settled()[1] < 0.0002
    # not judged before min_age + SETTLE_SPAN_S (1.5 s)
    assert not _timeline_with(lambda age: 0.0, seconds=1.2).settled()[0]

    def wander(age):  # a few ms, moving, for the first 4 s; then steady
        return 0.003 * math.sin(age * 2.0) if age < 4.0 else 0.0

    for seconds in (2.0, 3.0, 4.0, 4.6):
        assert not _timeline_with(wander, seconds=seconds).settled()[0], seconds
    assert _timeline_with(wander, seconds=5.2).settled()[0]
    # 0.3 ms steps every half second (a line that still moves): never settled
    assert not _timeline_with(lambda age: 0.0003 * (int(age * 2) % 2), seconds=8.0).settled()[0]
    # no callback times (a host API without them): nothing to judge by
    tl = _timeline_with(wander, seconds=3.0, callback_late=math.nan)
    assert tl.settled()[0]


def test_the_first_burst_of_callbacks_does_not_fake_a_settled_line():
    """A device fills its buffer at the start: the first callbacks come early, in a burst.
    Left in the envelope they make a flat plateau ~tens of ms off (seen: 95 ms) that a short
    test would take for settled; they are left out (``PREFILL_S``)."""
    from audio.output import _Timeline

    tl = _Timeline(RATE)
    t0, block = 1000.0, 480
    for k in range(int(2.5 * RATE / block)):
        f = k * block
        heard = t0 + f / RATE + 0.075
        # the first 0.3 s of audio asked for within 10 ms (a 300 ms buffer filled at once)
        cur = t0 + min(f / RATE, 0.3) * 0.03 if f / RATE < 0.3 else heard - 0.075
        tl.record(f, heard, cur)
    ok, spread = tl.settled()
    assert ok and spread < 0.0002
    got = tl.dac_minus_envelope(1.0)[1]
    assert abs(got.mean() - 0.075) < 0.0005  # the real DAC - callback distance, not 0.3 s more


def test_a_drill_plays_silence_until_the_output_timing_has_settled():
    """``run_drill`` holds the first card (silence, "get ready") until
    ``output.timing_settled()``; taps meanwhile are ignored; then the drill runs as before.

    The output keeps real time: where the machine starved the test process for longer than
    its queue (seen at -n 2 on a quiet machine, often at load ~6), the output played silence
    it counted (an underflow) and the drill rightly leaves the tap untimed (a gap in the
    sound between the kimariji and the tap).  Such a run says nothing of the warm-up: it is
    made once more (three tries); an untimed tap with no underflow counted fails at once."""
    for attempt in range(3):
        out, front, events, res = _drill_after_a_late_settle()
        rec = res.records[0] if len(res.records) == 1 else {}
        if rec.get("reaction_ms") is None and rec.get("untimed") and out.underflows:
            continue  # the machine stalled the output: the timing says nothing
        break
    else:
        pytest.fail(f"each of 3 tries had the output stalled ({out.underflows} underflows in "
                    "the last) between the kimariji and the tap: the machine is too busy")
    names = [n for n, _, _ in events]
    assert "get ready…" in front.shown
    ready = next(t for n, t, _ in events if n == "ready")
    assert 0.75 < ready < 2.5  # settled at 0.8 s, then the countdown
    card_t = next(t for n, t, _ in events if n == "card")
    assert card_t > ready  # the first card comes after the warm-up
    assert names.count("grab") == 1 and len(res.records) == 1
    assert rec["correct"] and rec["reaction_ms"] is not None, (rec, out.underflows)
    assert rec["reaction_ms"] > 150  # not the tap made while getting ready


def _drill_after_a_late_settle():
    """One drill of one card on an output whose timing settles 0.8 s after it starts, with a
    tap while getting ready and one well after the card's kimariji."""
    import random

    from reader.drills.speed import run_drill
    from reader.input.taps import TapEvent

    class LateSettling(NullOutput):
        ready_at = None

        def timing_settled(self):
            return self.ready_at is not None and time.perf_counter() >= self.ready_at

        def play(self, cursor):
            self.ready_at = time.perf_counter() + 0.8
            super().play(cursor)

    events = []

    class Front:
        name = "fake"

        def __init__(self):
            self.script = []  # (perf time, TapEvent)
            self.shown = []

        def poll(self, timeout):
            time.sleep(timeout)
            now = time.perf_counter()
            due = [e for t, e in self.script if t <= now]
            self.script = [(t, e) for t, e in self.script if t > now]
            return due

        def is_tap(self, ev):
            return ev.kind == "key" and ev.char == " "

        def card(self, plan, index, poem):
            pass

        def show(self, text):
            self.shown.append(text)

        def ask(self, grab, choices):
            self.script.append((time.perf_counter() + 0.05,
                                TapEvent(time.perf_counter_ns(), "key", char=str(grab.poem))))

        def answer(self, ev, choices, candidates):
            return int(ev.char) if ev.char.isdigit() else None

    plan = drill_plan(VOICE, 1, poems=[1], ma_ms=100, take_ms=1500, lead_ms=100)
    out = LateSettling()
    front = Front()
    t0 = time.perf_counter()
    # a tap while getting ready (ignored), one well after the first card's kimariji
    kami = next(s for s in plan.segments if s.kind == "kami")
    front.script = [(t0 + 0.3, TapEvent(0, "key", char=" "))]

    def on_event(name, data):
        events.append((name, time.perf_counter() - t0, data))
        if name == "card":
            front.script.append((time.perf_counter() + 0.4 + (kami.decisive - kami.start) / RATE,
                                 TapEvent(0, "key", char=" ")))

    real_poll = front.poll

    def poll(timeout):  # stamp the scripted taps as they are taken in
        return [TapEvent(time.perf_counter_ns(), e.kind, char=e.char) for e in real_poll(timeout)]

    front.poll = poll
    res = run_drill(plan, VOICE, out, front, take_s=1.5, choices=2, rng=random.Random(1),
                    on_event=on_event)
    return out, front, events, res


def test_the_get_ready_hold_before_the_reading_does_not_count_on():
    """A hold before anything was heard (the "get ready") stands at its frame: counted on, the
    ear would seem seconds into the reading between the end of the wait and the sound (the
    practice board then closed read 1 at once after a get-ready longer than it).  A hold once
    the reading was heard still counts on."""
    from types import SimpleNamespace

    plan = drill_plan(VOICE, 1, poems=[1, 2], ma_ms=100, take_ms=1000, lead_ms=100)
    cursor = PlanCursor(plan, VOICE, live=True)
    cursor.hold()  # the get-ready, as SettleGate does before the output plays
    held = 20 * 480
    for _ in range(20):
        cursor.read(480)
    cursor.resume()
    for _ in range(10):
        cursor.read(480)  # the reading moves from plan frame 0 ...
    cursor.hold()  # ... then a hold mid-reading
    for _ in range(10):
        cursor.read(480)
    mid = next(a for a in cursor.anchors if a.event == "hold" and a.stream_frame > held)
    stream = {}
    out = SimpleNamespace(frame_at_perf=lambda t: stream["f"])
    mapper = TapMapper(out, cursor)
    stream["f"] = held - 480.0  # 19 blocks into the get-ready: still nothing heard
    assert mapper.plan_frame(0) == 0.0
    stream["f"] = mid.stream_frame + 960.0  # 2 blocks into the later hold: counts on
    assert mapper.plan_frame(0) == pytest.approx(mid.plan_frame + 960.0)
