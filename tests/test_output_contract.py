"""One behaviour, every output: the same tests run over ``NullOutput`` (real time, no device),
``SyncOutput`` (no real time, keeps what it played), real PortAudio (sounddevice on the
PulseAudio null sink, in this process and in the audio process) and the audio process
playing a timeline source (``TimelineOutput``: the online reading's sound, each frame at its
timeline's instant), so the outputs other tests use as stand-ins behave like the real one.
Content is checked where it can be captured: ``SyncOutput``/``NullOutput`` keep their blocks,
PortAudio is captured by ALSA's file plugin."""
from __future__ import annotations

import time

import numpy as np
import pytest

from audio_fixtures import (alsa_capture, assert_played_as_rendered, pulse_server,  # noqa: F401
                            small_plan)
from audio.output import AudioProcessOutput, NullOutput, SounddeviceOutput, SyncOutput
from audio.output.timed import TimelineOutput, TimelineSource
from audio.render import PlanCursor, quantize16, render
from audio.voice import ToneVoice
from machine_stall import Waited

VOICE = ToneVoice(48000, mora_ms=20)
BACKENDS = ["null", "sync", "portaudio", "portaudio-process", "timeline-process"]
REALTIME = {"null", "portaudio", "portaudio-process", "timeline-process"}


class _Anchor:
    def __init__(self, at: float, frame: int):
        self.at, self.frame = at, frame


class TimedReading(TimelineSource):
    """A plan as a timeline source (as the online reading plays it): frame 0 heard
    ``LEAD_S`` after the output first looks at the timeline, each wait passed straight
    through as a cursor's; ``live``: standing at the first wait until ``release()`` (a sync
    point ``LEAD_S`` ahead), as a live cursor waits for its release.  ``threaded=False``: no
    speech fetched ahead of the segment heard (a cursor without look-ahead)."""

    LEAD_S = 0.4

    def __init__(self, plan, voice, live: bool = False, threaded: bool = True):
        super().__init__(plan, voice, self._timeline, lambda: 0.0, ahead=threaded)
        self.live = live
        self.anchors = None

    def _timeline(self):
        if self.anchors is None:
            t0 = time.perf_counter() + self.LEAD_S
            self.anchors = [_Anchor(t0, 0)] + ([] if self.live else self._through(t0, 0))
        return self

    def _through(self, t0: float, frame: int) -> list:
        return [_Anchor(t0 + (e - frame) / self.sample_rate, e) for e in self.wait_ends
                if e > frame]

    def release(self) -> None:
        e = self.wait_ends[0]
        self.anchors = self.anchors + [_Anchor(time.perf_counter() + self.LEAD_S, e)] + \
            self._through(time.perf_counter() + self.LEAD_S, e)


@pytest.fixture(params=BACKENDS)
def make_output(request):
    """A factory of the backend under test (PortAudio: on the session's null sink), and of
    what it plays (``make.source``: a ``PlanCursor``, or for a timeline output the plan as a
    ``TimedReading``)."""
    kind = request.param
    if kind == "timeline-process":
        request.getfixturevalue("pulse_server")

        def make(**kw):
            kw.pop("ahead_ms", None)  # (no look-ahead: the source's ``threaded=False``)
            return TimelineOutput(device="pulse", **kw)

        make.kind = kind
        make.source = TimedReading
        return make
    if kind.startswith("portaudio"):
        request.getfixturevalue("pulse_server")
        cls = AudioProcessOutput if kind.endswith("process") else SounddeviceOutput

        def make(**kw):
            return cls(device="pulse", **kw)
    elif kind == "null":
        def make(**kw):
            return NullOutput(keep=True, **kw)
    else:
        def make(**kw):
            return SyncOutput(**kw)
    make.kind = kind
    make.source = PlanCursor
    return make


def _servers() -> list[int]:
    """The session's sound server, if this worker started one (its threads' waits count)."""
    import audio_fixtures

    return [audio_fixtures._PULSE.proc.pid] if audio_fixtures._PULSE is not None else []


def one_card(voice):
    """A card's 上の句, the take and its 下の句 (0.9 s of real time; no jo-ka): every output's
    start, a silence between two parts, and an end, for the tests about playing in time."""
    return small_plan(voice, cards=1, ma_ms=100, take_ms=100, yoin_ms=100, joka=False)


class SlowVoice(ToneVoice):
    """Its 下の句 arrives ``delay`` s late (a synthesis job that keeps the feeder waiting)."""

    def __init__(self, delay: float):
        super().__init__(48000, mora_ms=20)
        self.delay = delay

    def samples(self, item):
        if item.part == "shimo":
            time.sleep(self.delay)
        return super().samples(item)


class BrokenVoice(ToneVoice):
    def samples(self, item):
        if item.part == "shimo":
            raise RuntimeError("synthesis failed")
        return super().samples(item)


def test_plays_to_the_end_and_says_so(make_output):
    plan = one_card(VOICE)
    out = make_output()
    out.play(make_output.source(plan, VOICE))  # returns once the device runs (a process is up)
    with Waited(*_servers()) as waited:
        t = time.perf_counter()
        assert out.wait(timeout=plan.seconds + 10)
        el = time.perf_counter() - t
    assert not out.is_active
    if make_output.kind in REALTIME:
        # real time: as long as the reading, plus any silence a late feeder made (counted),
        # plus as long as the machine kept a thread waiting for a CPU (measured)
        late = out.underruns * out.blocksize / 48000
        assert plan.seconds - 0.3 < el < plan.seconds + 1.5 + late + waited.s, (
            el, out.underruns, str(waited))
    else:
        assert el < plan.seconds / 2, el  # no real time


def test_what_was_played_is_the_rendered_reading(make_output):
    if make_output.kind.startswith("portaudio"):
        pytest.skip("PortAudio's content: test_portaudio_capture_is_bit_identical below")
    if make_output.kind.startswith("timeline"):
        pytest.skip("its buffers' content: test_netsound.py's, in the process")
    plan = small_plan(VOICE, cards=1, ma_ms=100, take_ms=100, yoin_ms=100, joka_gap_ms=300)
    ref = quantize16(render(plan, VOICE))
    out = make_output()
    out.play(PlanCursor(plan, VOICE))
    assert out.wait(timeout=plan.seconds + 10)
    # (the real-time null output on a busy machine: the silence it counted, nothing else)
    assert_played_as_rendered(quantize16(out.samples()), ref, out.underruns, out.blocksize)


@pytest.mark.parametrize("cls", [SounddeviceOutput, AudioProcessOutput], ids=["thread", "process"])
def test_portaudio_capture_is_bit_identical(alsa_capture, cls):
    plan = small_plan(VOICE, cards=2)
    ref = quantize16(render(plan, VOICE))
    out = cls()
    out.play(PlanCursor(plan, VOICE))
    assert out.wait(timeout=30)
    assert_played_as_rendered(alsa_capture.samples(), ref, out.underruns, out.blocksize)
    frames, _ = out.dac_times()
    assert frames[0] == -7200 and np.all(np.diff(frames) == out.blocksize)


def test_stop_is_prompt_idempotent_and_stops_the_cursor(make_output):
    plan = small_plan(VOICE, cards=3)
    out = make_output()
    cursor = make_output.source(plan, VOICE, live=True)
    out.play(cursor)
    time.sleep(0.3)
    with Waited(*_servers()) as waited:
        t = time.perf_counter()
        out.stop()
        el = time.perf_counter() - t
    assert el < 1.0 + waited.s, (el, str(waited))
    assert not out.is_active and cursor.finished
    out.stop()
    assert out.wait(timeout=1)


def test_one_play_at_a_time_and_the_output_plays_again(make_output):
    plan = one_card(VOICE)
    out = make_output()
    held = make_output.source(plan, VOICE, live=True)  # waits at the take until released
    out.play(held)
    assert out.is_active
    with pytest.raises(RuntimeError, match="already playing"):
        out.play(make_output.source(plan, VOICE))
    held.release()
    assert out.wait(timeout=plan.seconds + 10)
    out.play(make_output.source(plan, VOICE))
    assert out.wait(timeout=plan.seconds + 10)
    assert not out.is_active


def test_the_heard_frame_moves_on_with_the_sound(make_output):
    if make_output.kind == "sync":
        pytest.skip("no real time: its clock is the stream itself")
    plan = small_plan(VOICE, cards=2)
    out = make_output()
    out.play(make_output.source(plan, VOICE))
    try:
        time.sleep(0.5)
        waited = Waited(*_servers(), children=True).__enter__()
        t0 = time.perf_counter()
        a = out.frame_now()
        t1 = time.perf_counter()  # (this thread may lose the CPU or the GIL in between)
        b = out.frame_at_perf((t0 + t1) / 2)
        time.sleep(0.4)
        t2 = time.perf_counter()
        c = out.frame_at_perf(t2)
        assert a is not None and abs(b - a) < 48000 * (0.005 + (t1 - t0) / 2)
        # 0.4 s on (or more: a busy machine wakes the sleep late), the heard frame is as far on
        # as the clock, within what the output counted as late (underruns) and as long as the
        # machine kept a thread of the sound's (this process, the audio process, the sound
        # server) waiting for a CPU: their clock pairing is then that much older (measured)
        late = out.underruns * out.blocksize + waited.update() * 48000
        assert c - b == pytest.approx((t2 - (t0 + t1) / 2) * 48000, abs=0.05 * 48000 + late), (
            b, c, t2 - (t0 + t1) / 2, str(waited))
    finally:
        out.stop()


def test_a_voice_failure_surfaces_in_wait(make_output):
    v = BrokenVoice(48000, mora_ms=20)
    plan = small_plan(v, cards=1, joka_gap_ms=300)
    out = make_output()
    out.play(make_output.source(plan, v))
    with pytest.raises(RuntimeError, match="synthesis failed"):
        out.wait(timeout=10)
    assert not out.is_active


def test_late_audio_is_silence_counted_not_waited_for(make_output):
    """A feeder held up for 0.4 s: a real-time output plays silence meanwhile and counts the
    underruns (the realtime side never waits for it); the synchronous one just waits.  (The
    audio process's feeder without running ahead: with it, see test_output.py.)"""
    v = SlowVoice(0.4)
    plan = one_card(v)
    out = make_output(**({"ahead_ms": 0} if make_output.kind == "portaudio-process" else {}))
    cursor = make_output.source(plan, v, threaded=False)  # no look-ahead: the feeder waits
    out.play(cursor)
    with Waited(*_servers()) as waited:
        t = time.perf_counter()
        assert out.wait(timeout=plan.seconds + 10)
        el = time.perf_counter() - t
    if make_output.kind in REALTIME:
        # 0.4 s minus what was queued ahead is silence: at least 0.1 s of 10 ms blocks
        assert out.underruns >= 10, out.underruns
        assert el < plan.seconds + 0.4 + 1.5 + waited.s, (el, str(waited))
    else:
        assert out.underruns == 0  # it waits for the feeder: nothing is ever late
