"""Playback backends through real PortAudio / PulseAudio / SDL paths (no sound card needed)."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from audio_fixtures import (alsa_capture, assert_played_as_rendered, find_lead_in,  # noqa: F401
                            pulse_server, require_tool, small_plan, tone_voice)
from audio.output import (NO_DEVICE, AudioProcessOutput, NullOutput, SounddeviceOutput, list_devices,
                          reinit_portaudio)
from audio.render import PlanCursor, quantize16, render
from audio.voice import ToneVoice
from reader.base.errors import DeviceError
from machine_stall import Waited
from waits import wait_until

VOICE = ToneVoice(48000, mora_ms=20)


# ---------------------------------------------------------------------------- ALSA file capture
def test_alsa_capture_is_bit_identical_to_the_rendered_file(alsa_capture):
    plan = small_plan(VOICE, cards=3)
    ref = quantize16(render(plan, VOICE))
    # the null device has no clock: queue the whole reading so the feeder never lags
    out = SounddeviceOutput(queue_ms=plan.seconds * 1000 + 500)
    out.play(PlanCursor(plan, VOICE))
    assert out.wait(timeout=30)
    assert not out.is_active
    got = alsa_capture.samples()
    assert find_lead_in(got, ref) < 48000  # a fixed, small lead-in of silence
    # (the padded last block is silence; a feeder held up > 1 s on a busy machine is a counted gap)
    assert_played_as_rendered(got, ref, out.underruns, out.blocksize, xruns=out.xruns,
                              device_frames=int(out.latency * 48000) + out.blocksize)
    frames, dac = out.dac_times()
    assert frames[0] == -7200 and np.all(np.diff(frames) == out.blocksize)  # 150 ms lead-in
    assert frames.shape[0] * out.blocksize >= ref.shape[0]


def test_alsa_capture_with_the_default_queue_is_bit_identical(alsa_capture):
    # the session's defaults (100 ms queue) on a clockless device: no silence slips in
    plan = small_plan(VOICE, cards=2)
    ref = quantize16(render(plan, VOICE))
    out = SounddeviceOutput()
    out.play(PlanCursor(plan, VOICE))
    assert out.wait(timeout=30)
    assert_played_as_rendered(alsa_capture.samples(), ref, out.underruns, out.blocksize)


def test_alsa_capture_stereo_float_device_path(alsa_capture):
    # float32 to a mono plug: PortAudio converts; the sound arrives (not necessarily bit-exact)
    plan = small_plan(VOICE, cards=1)
    ref = quantize16(render(plan, VOICE)).astype(np.int32)
    out = SounddeviceOutput(device="default", queue_ms=plan.seconds * 1000 + 500, dtype="float32")
    out.play(PlanCursor(plan, VOICE))
    assert out.wait(timeout=30)
    got = alsa_capture.samples().astype(np.int32)
    nz = np.flatnonzero(got)
    seg = got[nz[0] - np.flatnonzero(ref)[0]:][:ref.shape[0]]
    assert np.abs(seg - ref).max() <= 2


def test_list_devices_and_device_by_name_and_index(alsa_capture):
    devs = list_devices()
    names = [d["name"] for d in devs]
    assert "karuta_capture" in names and "default" in names
    assert sum(d["default"] for d in devs) == 1
    idx = names.index("karuta_capture")
    assert SounddeviceOutput(device="karuta_cap").device == devs[idx]["index"]
    assert SounddeviceOutput(device=str(devs[idx]["index"])).device == devs[idx]["index"]
    with pytest.raises(DeviceError, match="no output device matches 'no-such-card'") as e:
        SounddeviceOutput(device="no-such-card")
    assert "\n" not in str(e.value)


def test_no_sound_device_is_one_clear_line(tmp_path, monkeypatch):
    # ALSA's devices all point at a sound card that is not there, and no sound server runs:
    # PortAudio finds no output device at all (as on a machine without a sound card)
    (tmp_path / ".asoundrc").write_text(
        "pcm.!default { type hw card 0 }\nctl.!default { type hw card 0 }\n"
        "pcm.!pulse { type hw card 0 }\nctl.!pulse { type hw card 0 }\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("PULSE_SERVER", raising=False)
    reinit_portaudio()
    try:
        assert list_devices() == []
        with pytest.raises(DeviceError) as e:
            SounddeviceOutput()
        assert str(e.value) == NO_DEVICE
        assert str(e.value) == ("no sound device found: use `karuta render --out reading.wav` "
                                "to write the reading to a file")
    finally:
        monkeypatch.undo()
        reinit_portaudio()


def test_null_output_stop_during_playback_returns_quickly():
    plan = small_plan(VOICE, cards=3)
    out = NullOutput()
    cursor = PlanCursor(plan, VOICE, live=True)
    out.play(cursor)
    time.sleep(0.2)
    with Waited() as waited:
        t = time.perf_counter()
        out.stop()
        el = time.perf_counter() - t
    assert el < 1.0 + waited.s, (el, str(waited))  # (a busy machine: as long as it kept us waiting)
    assert not out.is_active and cursor.finished


# ---------------------------------------------------------------------------- PulseAudio, real time
@pytest.mark.realtime
def test_pulse_null_sink_plays_in_real_time(pulse_server, tmp_path, timing_figures):
    require_tool("parec", "pulseaudio-utils")
    plan = small_plan(VOICE, cards=1, ma_ms=200, take_ms=300, joka_gap_ms=300)
    ref = quantize16(render(plan, VOICE))
    assert 1.5 < plan.seconds < 3.0
    monitor = tmp_path / "monitor.raw"
    # (a roomy recording buffer: a busy machine must not make the observer itself drop audio)
    rec = subprocess.Popen(["parec", "-d", "ci_sink.monitor", "--raw", "--format=s16le",
                            "--rate=48000", "--channels=1", "--latency-msec=200", str(monitor)],
                           env=pulse_server.env, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        out = SounddeviceOutput(device="pulse")
        with Waited(pulse_server.proc.pid) as waited:
            t0 = time.perf_counter()
            out.play(PlanCursor(plan, VOICE))
            assert out.is_active
            assert out.wait(timeout=plan.seconds + 5)
            elapsed = time.perf_counter() - t0
        time.sleep(0.3)
    finally:
        rec.terminate()
        rec.wait(timeout=5)
    # wait() returns once PortAudio has handed over the last buffer (≤ its latency early;
    # later by any silence a busy machine made it insert, counted as underruns, and by as long
    # as the machine kept the test's or the sound server's threads waiting for a CPU, measured)
    gaps = out.underruns * out.blocksize / 48000
    timing_figures.update(elapsed_minus_plan_s=elapsed - plan.seconds, underruns=out.underruns,
                          waited_ms=waited.s * 1000)
    assert plan.seconds - out.latency - 0.1 < elapsed < plan.seconds + 0.6 + gaps + waited.s, (
        elapsed, str(waited))
    assert 0 < out.latency < 0.2
    frames, dac = out.dac_times()
    assert frames.shape[0] == 15 + -(-plan.frames // out.blocksize) + 25  # lead-in, tail
    assert np.all(np.diff(dac) > 0)
    # DAC times advance with the frames at about the sample rate (after the settling start).
    # How close is PulseAudio's to say, and a busy machine's PulseAudio says it loosely (a
    # stalled server's DAC times jump: 39 kHz was fitted once beside a pip install, at load
    # ~3.5): the fitted rate is scripts/bench_timing.py's figure (target within 1 % on a quiet
    # machine).  Here: no factor of 2 or so off (frames counted in bytes or in both channels,
    # the times in ms), and each buffer maps within 3 ms (below)
    late = dac > dac[0] + 0.3
    rate = np.polyfit(dac[late], frames[late], 1)[0]
    timing_figures["dac_rate_hz"] = float(rate)
    assert 0.6 * 48000 < rate < 1.6 * 48000, (rate, str(waited))
    # frame_at maps each buffer's DAC time to its frame, and 1 ms later to 48 frames on.  On a
    # quiet machine exactly (wall-clock seconds: ~0.2 µs steps); a buffer whose DAC time a busy
    # machine moved off the line by > 0.2 ms is mapped by the line instead (a loaded run saw
    # most buffers 0.5-0.8 ms off it): every one within what a player notices (±3 ms = 144
    # frames), and the mapping runs at the sample rate between them, exactly
    ks = np.flatnonzero(late)[5:]
    at = np.array([out.frame_at(dac[k]) for k in ks])
    timing_figures["frame_at_worst_ms"] = float(np.abs(at - frames[ks]).max() / 48)
    assert np.abs(at - frames[ks]).max() < 144, (at - frames[ks], str(waited))
    step = np.array([out.frame_at(dac[k] + 0.001) for k in ks]) - at
    assert np.abs(step - 48).max() < 0.01, step
    # an independent observer: the sink's monitor heard exactly the rendered samples
    # (the monitor recording may begin a few ms into the reading: align on card 1's 上の句)
    # (the monitor recording may begin a few ms into the reading: align on card 1's 上の句;
    # nothing may be lost at the start: the 150 ms lead-in takes start-up effects)
    got = np.fromfile(monitor, np.int16)
    kami = [s for s in plan.segments if s.kind == "kami"][1]
    assert find_lead_in(got, ref, at=kami.start - 4000, n=8000) >= 0
    assert_played_as_rendered(got, ref, out.underruns, out.blocksize, xruns=out.xruns,
                              device_frames=int(out.latency * 48000) + out.blocksize)


@pytest.mark.realtime
def test_pulse_live_wait_and_release_from_another_thread(pulse_server):
    plan = small_plan(VOICE, cards=1, ma_ms=100, take_ms=3000, yoin_ms=100, joka_gap_ms=300)
    take = next(s for s in plan.segments if s.wait)
    out = SounddeviceOutput(device="pulse")
    cursor = PlanCursor(plan, VOICE, live=True)
    out.play(cursor)
    deadline = time.monotonic() + 10
    while not cursor.state.waiting:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    # a live wait: plays silence, the plan stands still; the ear is the feeder's queue and
    # the device's latency behind the cursor
    time.sleep(out.queue_ms / 1000 + out.latency + 0.1)
    assert cursor.position == take.start and out.is_active
    # what is audible now maps to the take's start on the plan
    heard = out.frame_now()
    assert heard is not None and cursor.plan_frame_at(int(heard)) == take.start
    with Waited(pulse_server.proc.pid) as waited:
        t = time.perf_counter()
        threading.Thread(target=cursor.release).start()
        assert out.wait(timeout=10)
        el = time.perf_counter() - t
    rest = plan.frames - take.end
    # the release skipped the 3 s take: the rest played in about its own length (a busy
    # machine may add a second or so, and as long as it kept a thread waiting for a CPU;
    # not the 3 s of the take)
    gaps = out.underruns * out.blocksize / 48000
    assert el < rest / 48000 + 2.0 + gaps + waited.s, (el, str(waited))


@pytest.mark.realtime
def test_pulse_stop_is_prompt(pulse_server):
    plan = small_plan(VOICE, cards=2)
    out = SounddeviceOutput(device="pulse")
    cursor = PlanCursor(plan, VOICE)
    out.play(cursor)
    time.sleep(0.3)
    with Waited(pulse_server.proc.pid) as waited:
        t = time.perf_counter()
        out.stop()
        el = time.perf_counter() - t
    assert el < 0.5 + waited.s, (el, str(waited))
    assert not out.is_active and cursor.finished
    out.stop()  # idempotent


class SlowShimo(ToneVoice):
    """Each 下の句 comes 0.4 s late (a synthesis job holding the feeder up)."""

    def samples(self, item):
        if item.part == "shimo":
            time.sleep(0.4)
        return super().samples(item)


@pytest.mark.realtime
def test_audio_process_runs_ahead_so_a_late_synthesis_is_not_heard(pulse_server):
    """The audio process's feeder runs seconds ahead, so three 0.4 s hold-ups of the feeder
    are not heard (without running ahead each is ~30 blocks of silence:
    test_output_contract.test_late_audio_is_silence_counted_not_waited_for)."""
    v = SlowShimo(48000, mora_ms=20)
    plan = small_plan(v, cards=2, ma_ms=600, gap_ms=600, take_ms=200, yoin_ms=150,
                      joka_gap_ms=600)
    out = AudioProcessOutput(device="pulse")
    with Waited(pulse_server.proc.pid, children=True) as waited:
        out.play(PlanCursor(plan, v, threaded=False))  # no look-ahead worker: the feeder waits
        assert out.wait(timeout=plan.seconds + 10)
    # the feeder's lateness is underflows (~90 without running ahead); the device's own
    # underruns (xruns) are the machine starving the audio process or the sound server
    # (beside a CPU hog: 10 xruns, no underflow), reported, not the feeder's doing
    total = out.underruns  # (brings the audio process's counts up to date)
    assert out.underflows < 10, (out.underflows, out.xruns, total, str(waited))


@pytest.mark.realtime
def test_audio_process_live_wait_shows_when_heard_and_release_is_prompt(pulse_server):
    """Running seconds ahead changes nothing the reader sees: the wait shows about when it is
    heard (not when the feeder got there), and a release plays on at once (what was queued
    beyond the point where commands act is made again)."""
    plan = small_plan(VOICE, cards=1, ma_ms=100, take_ms=3000, yoin_ms=100, joka_gap_ms=300)
    take = next(s for s in plan.segments if s.wait)
    out = AudioProcessOutput(device="pulse")
    cursor = PlanCursor(plan, VOICE, live=True)
    out.play(cursor)
    wait_until(lambda: cursor.state.waiting, what="the wait", every=0.005)
    heard = out.frame_now()
    wait_at = cursor.stream_frame_at(take.start)
    assert heard is not None and wait_at is not None
    assert wait_at - heard < 48000 * (out.queue_ms / 1000 + out.latency + 0.3), (wait_at, heard)
    time.sleep(out.queue_ms / 1000 + out.latency + 0.1)
    assert cursor.position == take.start and out.is_active
    assert cursor.plan_frame_at(int(out.frame_now())) == take.start
    with Waited(pulse_server.proc.pid, *_audio_processes()) as waited:
        t = time.perf_counter()
        threading.Thread(target=cursor.release).start()
        assert out.wait(timeout=10)
        el = time.perf_counter() - t
    rest = plan.frames - take.end
    assert el < rest / 48000 + 0.6 + waited.s, (el, str(waited))
    # the stream went on block after block: nothing dropped was heard, no block left out
    frames, _ = out.dac_times()
    assert np.all(np.diff(frames) == out.blocksize)


@pytest.mark.realtime
def test_an_audio_process_stopped_on_purpose_is_not_reported_dead(pulse_server):
    """The parent's abort ends the child without "done": that end is no death.  (The watch
    thread called it "the audio process ended unexpectedly (exit 0)" when it read the end
    before the output took the child's state: a club reading that stopped its first play
    failed with that line, a clean run at nice 5.)"""
    from audio.output.process import AudioProcess

    out = AudioProcessOutput(device="pulse")
    proc = AudioProcess(out.device, out.sample_rate, out.blocksize, out.channels, out.dtype,
                        "high")
    try:
        proc.open()
        ended = threading.Event()
        proc.start(ended.set)
        proc.abort()
        assert ended.wait(10), "the audio process did not end when aborted"
        assert proc.died is None and not proc.lost, proc.died
    finally:
        proc.close()


def _audio_processes() -> list[int]:
    """The pids of this process's audio processes (audio/output/audio_process.py)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = (d / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            if ppid == os.getpid() and b"audio_process.py" in cmd:
                pids.append(int(d.name))
    return pids


@pytest.mark.realtime
def test_audio_process_auto_take_released_early_moves_on_at_once(pulse_server):
    """Auto mode: seconds of the take's silence are queued when `next` comes; the 下の句
    follows at once all the same.  A Ctrl-C at the terminal, which reaches the audio process
    too (the foreground group), does not end the sound: what it means is the app's to say."""
    plan = small_plan(VOICE, cards=1, ma_ms=100, take_ms=4000, yoin_ms=100, joka_gap_ms=300)
    take = next(s for s in plan.segments if s.wait)
    out = AudioProcessOutput(device="pulse")
    cursor = PlanCursor(plan, VOICE)

    def hearing_the_take():
        f = out.frame_now()
        return f is not None and cursor.segment_at(int(f))[0] is take

    out.play(cursor)
    wait_until(hearing_the_take, what="the take heard", every=0.005)
    children = _audio_processes()
    assert len(children) == 1, children
    os.kill(children[0], signal.SIGINT)
    with Waited(pulse_server.proc.pid, children[0]) as waited:
        t = time.perf_counter()
        cursor.release()
        assert out.wait(timeout=10)
        el = time.perf_counter() - t
    rest = plan.frames - take.end
    assert el < rest / 48000 + 1.0 + waited.s, (el, str(waited))


@pytest.mark.realtime
def test_a_hold_in_the_silence_before_the_last_line_stands_there(pulse_server):
    """A goshiki reading held in its last seconds, in the gap before its last 下の句: the
    sink falls silent, and the 下の句 follows the resume.  By then the feeder has the whole
    rest of the reading queued and a command acts ``queue_ms`` ahead of the device: there
    the 下の句 had begun, so the hold waited for its end (a line is never cut) — the end of
    the reading: the hold did nothing.  Speech the ear has not reached does not begin after
    a hold.  (A 600 ms queue makes the window wide enough for a busy machine: the hold comes
    ~450 ms before the 下の句, well inside the queue, and well beyond the device.)"""
    from reader.reading.engine import build_plan
    from reader.reading.settings import settings_from_options

    # (30 ms morae: a 下の句 of 0.47 s; the feeder is 0.15 s into it when the hold comes)
    voice = ToneVoice(48000, mora_ms=30)
    plan = build_plan(settings_from_options("goshiki", colors=("blue",), cards=2, gap=1.0,
                                            ma=0.3, yoin=0.2, joka=False), 3, voice)
    last = plan.segments[-1]
    assert last.kind == "shimo" and plan.segments[-2].kind == "gap"
    out = AudioProcessOutput(device="pulse", queue_ms=600)
    cursor = PlanCursor(plan, voice, live=True)

    def ear_at(frame):
        f = out.frame_now()
        return f is not None and cursor.plan_frame_at(int(max(0.0, f))) >= frame

    out.play(cursor)
    try:
        wait_until(lambda: ear_at(last.start - round(0.45 * 48000)), timeout=60,
                   what="the gap before the last 下の句", every=0.002)
        cursor.hold()
        assert not pulse_server.listen(1.5).any(), "the last 下の句 was read during the hold"
        assert out.is_active
        cursor.resume()
        assert pulse_server.listen(1.0).any(), "the last 下の句 did not follow the resume"
        assert out.wait(timeout=10)
    finally:
        out.stop()


def test_perf_clock_maps_to_the_stream_clock(pulse_server):
    out = SounddeviceOutput(device="pulse")
    plan = small_plan(VOICE, cards=1)
    out.play(PlanCursor(plan, VOICE))
    try:
        time.sleep(0.4)
        t0 = time.perf_counter()
        b = out.frame_at(out.now())
        t1 = time.perf_counter()  # (this thread may lose the CPU or the GIL in between)
        a = out.frame_at_perf((t0 + t1) / 2)
        assert a is not None and abs(b - a) < 48000 * (0.005 + (t1 - t0) / 2)  # within 5 ms
    finally:
        out.stop()


# ---------------------------------------------------------------------------- NullOutput
@pytest.mark.realtime
def test_null_output_consumes_in_real_time():
    plan = small_plan(VOICE, cards=1, ma_ms=100, take_ms=100, yoin_ms=100, joka_gap_ms=300)
    out = NullOutput()
    with Waited() as waited:
        t = time.perf_counter()
        out.play(PlanCursor(plan, VOICE))
        time.sleep(0.5)  # (longer on a busy machine: the frame is checked against the real time)
        now = time.perf_counter()
        mid = out.frame_at_perf(now)
        assert out.wait(timeout=10)
        el = time.perf_counter() - t
    late = out.underruns * out.blocksize  # a busy machine: its thread woke late
    assert plan.seconds - 0.05 < el < plan.seconds + 0.3 + late / 48000 + waited.s, (
        el, str(waited))
    assert abs(mid - (now - t) * 48000) < 48000 * 0.05 + late


def test_clock_pairing_survives_a_stream_time_error():
    """PortAudio can fail to read the stream time ("Error getting stream time") while a stream
    starts, stops or hiccups.  The audio process's clock-pairing thread must skip such a
    reading, keep publishing, and never die with a traceback (the window then never opened)."""
    import threading

    import numpy as np
    import sounddevice as sd

    from audio.output import audio_process as ap

    class Flaky:  # a stream whose clock fails every other reading
        def __init__(self):
            self.n = 0

        @property
        def time(self):
            self.n += 1
            if self.n % 2:
                raise sd.PortAudioError("Error getting stream time")
            return 100.0 + time.perf_counter()

    clk = np.zeros(ap.CLK)
    halt = threading.Event()
    stream = Flaky()
    th = threading.Thread(target=ap.keep_paired, args=(stream, clk, halt, 0.01), daemon=True)
    th.start()
    deadline = time.monotonic() + 10
    while clk[ap.WHEN] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    n_seen = stream.n
    time.sleep(0.1)
    alive = th.is_alive()
    halt.set()
    th.join(5)
    assert alive and stream.n > n_seen  # still pairing after the errors
    assert abs(clk[ap.OFFSET] - 100.0) < 0.01  # and what it published is the stream's clock

    always = type("Dead", (), {"time": property(lambda s: (_ for _ in ()).throw(
        sd.PortAudioError("Error getting stream time")))})()
    clk2 = np.zeros(ap.CLK)
    halt2 = threading.Event()
    th2 = threading.Thread(target=ap.keep_paired, args=(always, clk2, halt2, 0.01), daemon=True)
    th2.start()
    time.sleep(0.1)
    assert th2.is_alive() and clk2[ap.WHEN] == 0  # nothing published, nothing crashed
    halt2.set()
    th2.join(5)


@pytest.mark.parametrize("body,said", [
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "ended by SIGSEGV"),
    ("raise SystemExit(3)\n", "ended with exit status 3"),
])
def test_an_audio_process_that_dies_before_its_stream_opens_says_how(tmp_path, monkeypatch,
                                                                     body, said):
    """A crash in the sound library (seen once beside a CPU hog: 'the audio process did not
    start', nothing more) is told apart from a refusal: the line says how the child ended."""
    import audio.output.audio_process as ap
    from audio.output.process import AudioProcess

    script = tmp_path / "child.py"
    script.write_text(body)
    monkeypatch.setattr(ap, "__file__", str(script))
    p = AudioProcess(0, 48000, 480, 1, "float32", "high")
    with pytest.raises(OSError, match=said):
        p.open()
