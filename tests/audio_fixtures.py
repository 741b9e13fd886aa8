"""Headless audio test infrastructure: real PortAudio / PulseAudio / SDL paths, no fakes.

Import into a test module (or conftest) with ``from audio_fixtures import *``.

Fixtures:
  - ``tone_voice``: a fast ``ToneVoice`` (20 ms morae) at 48 kHz.
  - ``alsa_capture``: a temporary HOME whose ``.asoundrc`` makes ALSA's default device a
    ``plug`` (S16_LE, 48000 Hz, mono) in front of a ``file`` plugin writing a WAV and feeding
    ``null``; PortAudio is re-initialised inside and after.  ``.samples()`` reads the capture.
    The null device consumes as fast as it is fed (no clock).
  - ``pulse_server`` (session): a real PulseAudio daemon with a 48 kHz null sink ``ci_sink``
    in a temporary XDG_RUNTIME_DIR, started once and killed at the end; sets
    ``PULSE_SERVER`` so ALSA's ``pulse`` device reaches it.  Consumes in real time (a
    ``parec`` of the sink's monitor keeps the clockless null sink ticking; see inside).

Helpers:
  - ``small_plan(voice, cards=2, seed=1, **settings)``: a short kyogi plan from the engine.
  - ``find_lead_in(captured, reference)``: offset of ``reference`` inside ``captured``.
  - ``require_tool(name)``: fail (not skip) with a clear message when a system tool is missing.

Nothing here reads /work/shared or any file outside the temporary folders it creates.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

__all__ = [
    "tone_voice", "alsa_capture", "pulse_server", "small_plan", "find_lead_in", "require_tool",
    "read_wav_capture", "AlsaCapture", "PulseServer", "REPO",
]

REPO = Path(__file__).resolve().parent.parent
RATE = 48000


def require_tool(name: str, package: str | None = None) -> str:
    path = shutil.which(name)
    if not path:
        pytest.fail(f"system tool {name!r} is missing: install the Debian package "
                    f"{package or name!r} (CI installs it)", pytrace=False)
    return path


def small_plan(voice, cards: int = 2, seed: int = 1, **settings):
    """A short kyogi reading (jo-ka + ``cards`` cards) with short silences by default."""
    from reader.engine import build_plan
    from reader.settings import preset

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
    reinit_portaudio()
    try:
        yield cap
    finally:
        monkeypatch.undo()
        reinit_portaudio()


class PulseServer:
    def __init__(self, runtime: Path, proc: subprocess.Popen, env: dict):
        self.runtime = runtime
        self.proc = proc
        self.env = env  # environment for clients (parec, pactl)
        self.sink = "ci_sink"
        self.socket = runtime / "pulse" / "native"


@pytest.fixture(scope="session")
def pulse_server():
    pulseaudio = require_tool("pulseaudio")
    require_tool("pactl", "pulseaudio-utils")
    from audio.output import reinit_portaudio

    root = Path(tempfile.mkdtemp(prefix="karuta-pulse-"))
    runtime, home = root / "run", root / "home"
    runtime.mkdir(mode=0o700)
    home.mkdir()
    saved = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR", "PULSE_SERVER", "HOME")}
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), HOME=str(home))
    env.pop("PULSE_SERVER", None)
    log = open(root / "pulseaudio.log", "wb")
    keepalive = None
    proc = subprocess.Popen(
        [pulseaudio, "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
         "--log-target=stderr", "--use-pid-file=no",
         "-L", f"module-null-sink sink_name=ci_sink rate={RATE}",
         "-L", "module-native-protocol-unix"],
        env=env, stdout=log, stderr=log)
    socket = runtime / "pulse" / "native"
    env["PULSE_SERVER"] = f"unix:{socket}"
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                pytest.fail(f"pulseaudio exited ({proc.returncode}): "
                            f"{(root / 'pulseaudio.log').read_text(errors='replace')[-500:]}",
                            pytrace=False)
            ok = socket.exists() and subprocess.run(
                ["pactl", "info"], env=env, capture_output=True).returncode == 0
            if ok:
                break
            if time.monotonic() > deadline:
                pytest.fail("pulseaudio did not come up within 10 s", pytrace=False)
            time.sleep(0.05)
        # A null sink has no hardware clock: once idle it sleeps in ~2 s steps, and the next
        # stream then stalls ~1.9 s after filling its buffer (measured).  A low-latency reader
        # of its monitor keeps it ticking every few ms, as a real card would.
        keepalive = subprocess.Popen(
            [require_tool("parec", "pulseaudio-utils"), "-d", "ci_sink.monitor", "--raw",
             "--latency-msec=5"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)  # measured: with 0.3 s the first stream still stalled ~1.5 s
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        os.environ["PULSE_SERVER"] = env["PULSE_SERVER"]
        reinit_portaudio()
        yield PulseServer(runtime, proc, env)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if keepalive is not None:
            keepalive.terminate()
            keepalive.wait(timeout=5)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        try:
            reinit_portaudio()
        except Exception:
            pass
        shutil.rmtree(root, ignore_errors=True)


def run_python(code: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter at the repo root (for SDL, whose environment must
    be set before pygame is imported).  Fails the test with its stderr if it fails."""
    full_env = dict(os.environ, PYTHONPATH=str(REPO), PYGAME_HIDE_SUPPORT_PROMPT="1")
    full_env.update(env or {})
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=full_env,
                         capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        pytest.fail(f"subprocess failed ({res.returncode}):\n{res.stderr[-2000:]}", pytrace=False)
    return res


__all__.append("run_python")
