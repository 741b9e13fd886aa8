"""Headless audio test infrastructure: real PortAudio / PulseAudio / SDL paths, no fakes.

Import into a test module (or conftest) with ``from audio_fixtures import *``.

Fixtures:
  - ``tone_voice``: a fast ``ToneVoice`` (20 ms morae) at 48 kHz.
  - ``alsa_capture``: a temporary HOME whose ``.asoundrc`` makes ALSA's default device a
    ``plug`` (S16_LE, 48000 Hz, mono) in front of a ``file`` plugin writing a WAV and feeding
    ``null``; PortAudio is re-initialised inside and after.  ``.samples()`` reads the capture.
    The null device consumes as fast as it is fed (no clock).
  - ``pulse_server``: a real PulseAudio daemon (``testbed.sound``, as the benchmarks start
    theirs) with a 48 kHz null sink ``ci_sink`` in a temporary XDG_RUNTIME_DIR, started once
    a session and killed at the end; for each test using it, ``XDG_RUNTIME_DIR`` and ``PULSE_SERVER`` are set so ALSA's ``pulse`` device
    reaches it (and restored after the test).  Consumes in real time (a
    ``parec`` of the sink's monitor keeps the clockless null sink ticking; see inside).

Helpers:
  - ``small_plan(voice, cards=2, seed=1, **settings)``: a short kyogi plan from the engine.
  - ``find_lead_in(captured, reference)``: offset of ``reference`` inside ``captured``.
  - ``require_tool(name)``: fail (not skip) with a clear message when a system tool is missing.

Nothing here reads /work/shared or any file outside the temporary folders it creates.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from testbed.apps import Unavailable, need, stop_process
from testbed.sound import RATE
from testbed.sound import PulseServer as _PulseServer

__all__ = [
    "tone_voice", "alsa_capture", "pulse_server", "small_plan", "find_lead_in", "require_tool", "stop_process",
    "read_wav_capture", "AlsaCapture", "PulseServer", "REPO",
]

REPO = Path(__file__).resolve().parent.parent


def require_tool(name: str, package: str | None = None) -> str:
    """The tool's path; fail (not skip) with a clear message when a system tool is missing."""
    try:
        return need(name, package)
    except Unavailable as e:
        pytest.fail(str(e), pytrace=False)


def small_plan(voice, cards: int = 2, seed: int = 1, **settings):
    """A short kyogi reading (jo-ka + ``cards`` cards) with short silences by default."""
    from reader.reading.engine import build_plan
    from reader.reading.settings import preset

    opts = dict(cards=cards, ma_ms=300, take_ms=200, yoin_ms=150, gap_ms=100)
    opts.update(settings)
    return build_plan(preset("kyogi", **opts), seed, voice)


def find_lead_in(captured: np.ndarray, reference: np.ndarray, at: int | None = None,
                 n: int = 256) -> int:
    """Offset of ``reference`` in ``captured`` (captured index of reference[0]), found by
    matching ``n`` samples of ``reference`` from index ``at`` (default: its first non-zero
    sample) exactly; the first match wins, so make the probe unique (tone voices repeat
    their morae: include some silence before an onset).  Fails the test if it is not there."""
    if at is None:
        ref_nz = np.flatnonzero(reference)
        assert ref_nz.size, "reference is silent"
        at = int(ref_nz[0])
    probe = reference[at:at + n]
    assert probe.any(), "the probe is silent"
    lead = np.flatnonzero(probe)[0]
    for start in np.flatnonzero(captured == probe[lead])[:100000]:
        begin = int(start) - lead
        if begin >= 0 and np.array_equal(captured[begin:begin + probe.shape[0]], probe):
            return begin - at
    pytest.fail("the reference was not found in the capture", pytrace=False)


def assert_played_as_rendered(captured: np.ndarray, reference: np.ndarray, underruns: int,
                              blocksize: int, xruns: int = 0, device_frames: int = 0) -> int:
    """What a device received is the rendered reading, sample for sample, except where the
    output counted trouble on a busy machine:

    - a late feeder (an underrun): a run of zeros *inserted* before the late sample; all of
      them together no longer than ``underruns`` blocks;
    - the device's own underrun (``xruns``, e.g. ALSA recovering a starved stream drops what
      it had queued): up to ``device_frames`` samples *lost* per xrun, then exact again.

    Nothing else: no sample changed or moved, no gap nobody counted.  Silent before and after
    the reading.  Returns the number of inserted samples.  On a machine that keeps up
    (``underruns == 0``) this is bit-for-bit equality.  Zero underruns under load is the
    real-time core's target, measured by ``scripts/bench_stress.py``, not asserted here."""
    got = np.asarray(captured)
    ref = np.asarray(reference)
    off = find_lead_in(got, ref)
    assert not got[:off].any(), "sound before the reading"
    i, j, inserted, lost = off, 0, 0, 0
    while j < ref.shape[0]:
        n = min(got.shape[0] - i, ref.shape[0] - j)
        assert n > 0, f"the capture ends {ref.shape[0] - j} samples before the reading does"
        diff = np.flatnonzero(got[i:i + n] != ref[j:j + n])
        if not diff.size:
            i, j = i + n, j + n
            continue
        i, j = i + int(diff[0]), j + int(diff[0])
        if got[i] == 0:  # silence where the reading had sound: a gap
            nz = np.flatnonzero(got[i:])
            assert nz.size, "the reading stops early"
            inserted += int(nz[0])
            i += int(nz[0])
            if got[i] == ref[j]:
                continue
        # samples lost: only where the device reported its own underruns
        budget = xruns * device_frames - lost
        probe = got[i:i + 64]
        skip = next((k for k in range(1, budget + 1)
                     if np.array_equal(ref[j + k:j + k + probe.shape[0]], probe)), None)
        assert skip is not None, (f"sample {j} of the reading was changed or lost (played "
                                  f"{got[i]}, rendered {ref[j]}; {xruns} device underruns)")
        lost += skip
        j += skip
    assert not got[i:].any(), "sound after the reading"
    assert inserted <= underruns * blocksize + xruns * device_frames, (
        f"{inserted} samples of silence inserted, but only {underruns} underruns of "
        f"{blocksize} frames counted: a gap nobody reported")
    return inserted


def read_wav_capture(path: Path) -> np.ndarray:
    """int16 samples of a WAV written by ALSA's ``file`` plugin (whose header sizes may be
    stale while the device is open: read the bytes after the ``data`` chunk id)."""
    raw = Path(path).read_bytes()
    k = raw.find(b"data")
    assert k >= 0, f"{path} is not a WAV"
    body = raw[k + 8:]
    return np.frombuffer(body[: len(body) // 2 * 2], dtype=np.int16)


@pytest.fixture
def tone_voice():
    from audio.voice import ToneVoice

    return ToneVoice(RATE, mora_ms=20)


ASOUNDRC = """\
pcm.!default {{
    type plug
    slave {{
        pcm "karuta_capture"
        format S16_LE
        rate {rate}
        channels 1
    }}
}}
pcm.karuta_capture {{
    type file
    slave.pcm "null"
    file "{wav}"
    format "wav"
}}
"""


class AlsaCapture:
    def __init__(self, home: Path):
        self.home = home
        self.wav = home / "capture.wav"

    def samples(self) -> np.ndarray:
        assert self.wav.exists(), "ALSA wrote no capture file: was anything played?"
        return read_wav_capture(self.wav)


@pytest.fixture
def alsa_capture(tmp_path, monkeypatch):
    from audio.output import reinit_portaudio

    home = tmp_path / "home"
    home.mkdir()
    cap = AlsaCapture(home)
    (home / ".asoundrc").write_text(ASOUNDRC.format(rate=RATE, wav=cap.wav))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("ALSA_CONFIG_PATH", raising=False)
    # no reachable PulseAudio: while one is, ALSA makes ``pulse`` the default device
    monkeypatch.delenv("PULSE_SERVER", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(home))
    reinit_portaudio()
    try:
        yield cap
    finally:
        monkeypatch.undo()
        reinit_portaudio()


def PulseServer(*args, **kw) -> _PulseServer:
    """``testbed.sound.PulseServer`` (the one PulseAudio start-up), a test failing with its
    reason (a tool missing, a daemon that did not come up) instead of erroring."""
    try:
        return _PulseServer(*args, **kw)
    except Unavailable as e:
        pytest.fail(str(e), pytrace=False)


_PULSE: _PulseServer | None = None


def _stop_pulse(session=None) -> None:
    """End the session's server; its log is kept (the path printed) when a test failed."""
    global _PULSE
    if _PULSE is not None:
        failed = bool(session is not None and session.testsfailed) or _PULSE.trouble() is not None
        kept = _PULSE.close(keep_log=failed)
        _PULSE = None
        if kept is not None:
            sys.stderr.write(f"\nkaruta tests: the PulseAudio log is kept: {kept}\n")


@pytest.fixture
def pulse_server(request, monkeypatch):
    """The session's PulseAudio daemon (started on first use, killed when pytest ends),
    reachable for this test only: ``XDG_RUNTIME_DIR`` and ``PULSE_SERVER`` are set (and
    PortAudio re-initialised) for the test and restored after, because while a server is
    reachable ALSA's ``pulse_load_if_running`` hook makes ``pulse`` the default device —
    which would swallow audio meant for other tests' devices."""
    global _PULSE
    from audio.output import reinit_portaudio

    if _PULSE is None:
        from procguard import session_owned

        with session_owned():  # shared by the session's tests: not ended with this one
            _PULSE = PulseServer()
        session = request.session
        request.config.add_cleanup(lambda: _stop_pulse(session))
    monkeypatch.setenv("XDG_RUNTIME_DIR", _PULSE.env["XDG_RUNTIME_DIR"])
    monkeypatch.setenv("PULSE_SERVER", _PULSE.env["PULSE_SERVER"])
    reinit_portaudio()
    try:
        yield _PULSE
    finally:
        monkeypatch.undo()
        reinit_portaudio()
    why = _PULSE.trouble(answer_s=10)
    if why is not None:  # the next test starts a new one; this one says what happened
        tail, kept = _PULSE.log_tail(), _PULSE.close(keep_log=True)
        _PULSE = None
        pytest.fail(f"the session's PulseAudio server broke during this test: {why}; its log "
                    f"(kept: {kept}) ends:\n{tail}", pytrace=False)


class Stall:
    """Makes a ``NullOutput`` stall once a play, as a device or sound server does under load:
    when stream frame ``at`` is due it takes nothing for ``ms`` (silence is heard, counted as
    underflows), then plays on, so everything after is heard that much later.  ``at``: a
    frame, a list of frames (one per play, the last repeated), or None (set it while playing).
    ``frame``: where the latest play stalled (None: not yet)."""

    def __init__(self, out, ms: float, at=None):
        from audio.output.feeder import EMPTY

        self.at, self.frame, self.run = at, None, -1
        real_start = out._start

        def start():
            self.run += 1
            self.frame = None
            q = out._feeder.q
            take = q.get_nowait
            held = {"item": None, "left": round(ms / 10)}

            def get_nowait():
                if held["item"] is not None:
                    held["left"] -= 1
                    if held["left"] > 0:
                        return EMPTY
                    item, held["item"] = held["item"], None
                    return item
                item = take()
                at = self._due()
                if self.frame is None and at is not None and item is not EMPTY \
                        and item is not None and item[0] >= at:
                    self.frame, held["item"] = item[0], item
                    return EMPTY
                return item

            q.get_nowait = get_nowait
            real_start()

        out._start = start

    def _due(self) -> int | None:
        if isinstance(self.at, list):
            return self.at[min(self.run, len(self.at) - 1)]
        return self.at


def run_python(code: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter at the repo root (for SDL, whose environment must
    be set before pygame is imported), finding what a test finds: the app, tests/'s helpers
    and scripts/testbed (as pyproject.toml's pytest ``pythonpath``).  Fails the test with its
    stderr if it fails."""
    path = os.pathsep.join(str(p) for p in (REPO, REPO / "tests", REPO / "scripts"))
    full_env = dict(os.environ, PYTHONPATH=path, PYGAME_HIDE_SUPPORT_PROMPT="1")
    full_env.update(env or {})
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=full_env,
                         capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        pytest.fail(f"subprocess failed ({res.returncode}):\n{res.stderr[-2000:]}", pytrace=False)
    return res


__all__.append("run_python")
