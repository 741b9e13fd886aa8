"""The online reading's sound: a timeline source (``audio.output.timed``) that the audio
process plays from the timeline, each buffer made in its callback (``TimelineFill``) into
buffers made once, and ``reader.practice.netsound.SoundProcess`` over it.  What every output
must do is ``test_output_contract.py``'s (it runs this source too); here: which frames a buffer
holds, that making one allocates nothing, and the counts the host is told of."""
from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audio_fixtures import pulse_server  # noqa: F401
from audio.output import audio_process as ap
from audio.output.timed import NSLOTS, TimelineSource
from audio.voice import ToneVoice
from reader.practice import headless, online
from reader.practice.match import Seat

VOICE = ToneVoice(48000, mora_ms=20)
RATE = 48000


def _match(cards: int = 2):
    return headless.new_match("kyogi", {"A": Seat("bot", 3), "B": Seat("human")}, 3, VOICE,
                              cards=cards)


class _Fill:
    """A ``TimelineFill`` over an in-process block (as the audio process has it over shared
    memory), its pool filled with the plan's speech, its anchors written the way the feeder
    writes them."""

    def __init__(self, plan, blocksize: int = 480, fetched: bool = True):
        src = TimelineSource(plan, VOICE, lambda: None, lambda: 0.0)
        self.src = src
        nseg, nwait = len(src.speech), len(src.wait_ends)
        slotlen = max(s.end - s.start for s in src.speech)
        nslots = nseg if fetched else NSLOTS
        self.block = bytearray(ap.TimelineLayout.size(nseg, nwait, nslots, slotlen))
        lay = self.lay = ap.TimelineLayout(self.block, nseg, nwait, nslots, slotlen)
        lay.tf[:] = np.nan
        lay.s_slot[:] = -1
        lay.s_start[:nseg] = [s.start for s in src.speech]
        lay.s_end[:nseg] = [s.end for s in src.speech]
        lay.w_end[:nwait] = src.wait_ends
        if fetched:
            for i in range(nseg):
                data = src.samples(i)
                n = min(data.shape[0], slotlen)
                lay.pool[i, :n] = data[:n]
                lay.s_len[i] = n
                lay.s_slot[i] = i
        self.clk = np.zeros(ap.CLK)  # stream clock = perf_counter
        self.fill = ap.TimelineFill(lay, self.clk, plan.sample_rate, plan.frames,
                                    maxframes=blocksize)

    def anchors(self, anchors, offset: float = 0.0) -> None:
        lay = self.lay
        lay.tf[ap.T_OFFSET] = offset
        lay.tctl[ap.ASEQ] += 1
        for j, a in enumerate(anchors):
            lay.a_at[j], lay.a_fr[j] = a.at, a.frame
        lay.tctl[ap.NANCH] = len(anchors)
        lay.tctl[ap.ASEQ] += 1


def per_sample(tl: online.Timeline, t0: float, n: int) -> np.ndarray:
    """The plan frame at each sample by its own instant (the definition: ``online.Timeline``'s
    anchors and waits, one sample at a time; -1 where nothing is heard)."""
    t = t0 + np.arange(n) / tl.rate
    out = np.full(n, -1, dtype=np.int64)
    anchors = list(tl.anchors)
    for a, nxt in zip(anchors, anchors[1:] + [None]):
        mask = (t >= a.at) & (True if nxt is None else t < nxt.at)
        f = a.frame + np.floor((t - a.at) * tl.rate + 0.5).astype(np.int64)
        w = tl._wait_after(a.frame)
        top = w[1] if w is not None else tl.frames
        out[mask & (f < top)] = f[mask & (f < top)]
    return out


def test_a_buffer_holds_each_frame_at_its_instant():
    """A buffer made for instant t holds the frames the timeline gives for t on, whenever it
    is made: silence before the first anchor and while a wait stands, the reading going on
    from the wait's end at the sync point."""
    m = _match()
    tl = online.Timeline(m.plan)
    f = _Fill(m.plan)
    assert (f.fill.frames_at(0.0, 64) == -1).all()
    tl.anchor(1.0, 0)
    f.anchors(tl.anchors)
    got = f.fill.frames_at(1.0 - 10 / RATE, 64)
    assert (got[:10] == -1).all() and list(got[10:14]) == [0, 1, 2, 3]
    start, end, _ = tl.waits[0]
    t_end = 1.0 + end / RATE  # the wait, counted on, stands at its end: silence
    assert (f.fill.frames_at(t_end + 1.0, 256) == -1).all()
    tl.anchor(t_end + 2.0, end)  # the sync point: the reading goes on from the wait's end
    f.anchors(tl.anchors)
    got = f.fill.frames_at(t_end + 2.0 - 5 / RATE, 16)
    assert (got[:5] == -1).all() and list(got[5:8]) == [end, end + 1, end + 2]
    assert np.array_equal(f.fill.frames_at(1.5, 8), np.arange(8) + round(0.5 * RATE))
    # the frame heard, as the window maps a touch: the timeline's own
    for t in (0.5, 1.2, t_end + 1.0, t_end + 2.5):
        assert f.fill.heard(t) == tl.heard(t)


_M = _match(cards=3)
_WAITS = [w[1] for w in online.Timeline(_M.plan).waits]


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.floats(0.001, 4.0), min_size=1, max_size=5),
       frames=st.lists(st.sampled_from([0, *_WAITS]) | st.integers(0, _M.plan.frames),
                       min_size=5, max_size=5),
       t0=st.floats(-1.0, 25.0), n=st.integers(1, 2048))
def test_the_buffers_frames_are_the_per_sample_definitions(gaps, frames, t0, n):
    """For any anchors (at any instants, to any frames) and any buffer, the frames the
    callback puts in it are those of each sample's own instant."""
    tl = online.Timeline(_M.plan)
    at = 0.0
    for g, fr in zip(gaps, frames):
        at += g
        tl.anchor(at, fr)
    f = _Fill(_M.plan, blocksize=2048, fetched=False)
    f.anchors(tl.anchors)
    assert np.array_equal(f.fill.frames_at(t0, n), per_sample(tl, t0, n))


def test_the_callback_puts_the_speech_at_its_frames():
    """What ``fill`` writes is the rendered plan's samples at the frames it holds: buffers
    made one after another from the first anchor are the reading as rendered."""
    from audio.render import render

    m = _match(cards=1)
    tl = online.Timeline(m.plan)
    f = _Fill(m.plan)
    tl.anchor(0.5, 0)
    for s, e, _ in tl.waits:  # straight through every wait
        tl.anchor(0.5 + e / RATE, e)
    f.anchors(tl.anchors)
    ref = render(m.plan, VOICE)
    got = []
    raw, n = 0.5, 480
    while f.fill.fill(n, raw) and raw < 0.5 + 20.0:  # (the first 20 s: jo-ka, cards, waits)
        got.append(f.fill.buf[:n].copy())
        raw += n / RATE
    got = np.concatenate(got)
    assert got.any() and np.array_equal(got, ref[:got.shape[0]].astype(np.float32))
    assert f.lay.tctl[ap.T_LATE] == 0 and f.lay.tctl[ap.T_UNDERRUNS] == 0


def test_making_a_buffer_allocates_nothing():
    """The callback's work (``TimelineFill.fill``: anchors taken, frames found, speech
    copied, onsets noted) allocates no buffer: over 2,000 buffers of 480 samples through the
    reading, the most memory Python and numpy held at once grew by less than one buffer of
    samples (1,920 bytes) -- a ``np.zeros(480)`` or an array of instants a buffer would
    show (each at least that).  The small objects a Python callback cannot avoid (floats,
    views) are freed as they go."""
    m = _match(cards=1)
    tl = online.Timeline(m.plan)
    f = _Fill(m.plan)
    tl.anchor(0.5, 0)
    f.anchors(tl.anchors)
    fill, n = f.fill, 480
    raw = 0.5 - 0.2
    fill.fill(n, raw)  # (first call: lazy set-up inside numpy and Python)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for k in range(2000):
            raw += n / RATE
            if k == 700:  # the sync point at the first wait's end: new anchors taken
                tl.anchor(raw + 1.0, tl.waits[0][1])
                f.anchors(tl.anchors)
            fill.fill(n, raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert int(f.lay.tctl[ap.NPLACED]) >= 2  # (speech was placed: the path was walked)
    assert peak - base < n * 4, peak - base


def test_a_buffer_whose_dac_time_slips_is_a_stall_once_the_reading_has_begun():
    """Buffers whose DAC times follow on from each other are the reading; one that lands more
    than 2 ms off where the last ended (the stream's timing moved: a starved server) is
    counted with the underruns the host is told of -- once the reading has begun.  Each
    speech segment's first frame is noted where its buffer's DAC time placed it."""
    m = _match()
    tl = online.Timeline(m.plan)
    f = _Fill(m.plan)
    n = 480

    def play(raw):
        f.fill.fill(n, raw)

    t = 0.0
    for _ in range(4):
        play(t)
        t += n / RATE
    t += 0.3  # a jump before the reading: not counted
    while t < 1.0:
        play(t)
        t += n / RATE
    tl.anchor(t, 0)
    f.anchors(tl.anchors)
    s0 = next(s.start for s in m.plan.segments if s.is_speech)
    t1 = t
    while t < t1 + (s0 + 2 * n) / RATE:
        play(t)
        t += n / RATE
    assert f.lay.tctl[ap.T_UNDERRUNS] == 0
    play(t + 0.003)  # 3 ms off where the last ended
    assert f.lay.tctl[ap.T_UNDERRUNS] == 1
    row = f.lay.placed[0]
    assert int(row[0]) == s0 and row[1] == pytest.approx(t1 + s0 / RATE, abs=1e-9)


def test_speech_not_fetched_in_time_is_silence_counted():
    m = _match(cards=1)
    tl = online.Timeline(m.plan)
    f = _Fill(m.plan)
    f.lay.s_slot[0] = -1  # the first speech segment not fetched
    tl.anchor(0.0, 0)
    f.anchors(tl.anchors)
    s = f.src.speech[0]
    raw = s.start / RATE
    f.fill.fill(480, raw)
    assert f.lay.tctl[ap.T_LATE] == 1 and not f.fill.buf[:480].any()
    assert f.lay.tctl[ap.WANT] == s.start  # what the feeder fetches next
    assert not math.isnan(f.lay.tf[ap.MADE_TO])


@pytest.mark.realtime
def test_a_timeline_output_whose_process_ends_by_itself_says_so_and_a_stop_does_not(
        pulse_server):
    """Whether the audio process ended by itself is decided in one place
    (``process.AudioProcess``) for the online sound as for every audio process: killed while
    it plays, ``ended_by_itself`` says why and ``wait`` raises it as one line; stopped, or
    played out, it says nothing."""
    import time

    from audio.output.timed import TimelineOutput
    from reader.base.errors import DeviceError

    m = _match(cards=1)
    tl = online.Timeline(m.plan)
    out = TimelineOutput(device="pulse")
    out.play(TimelineSource(m.plan, VOICE, lambda: tl, lambda: 0.0))
    tl.anchor(time.perf_counter() + 0.3, 0)
    assert out.ended_by_itself() is None and out.is_active
    out._proc.proc.kill()
    with pytest.raises(DeviceError) as e:
        out.wait(timeout=10)
    assert "ended unexpectedly" in str(e.value) and "\n" not in str(e.value)
    out.stop()
    out.play(TimelineSource(m.plan, VOICE, lambda: tl, lambda: 0.0))
    time.sleep(0.3)
    out.stop()
    assert out.ended_by_itself() is None
    assert out.wait(timeout=1)
