"""A private PulseAudio daemon with null sinks: the one start-up the tests
(``tests/audio_fixtures.py``'s ``pulse_server``) and the benchmarks (bench_startup,
bench_online, bench_grab, bench_stress) share.

A null sink has no hardware clock: it is the clock of the sound a test or benchmark hears on
its monitor.  Everything lives in a temporary folder (its own ``XDG_RUNTIME_DIR`` and
``HOME``); ``env`` is the environment for its clients (``PULSE_SERVER`` set).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from testbed.apps import Unavailable, need, stop_process

RATE = 48000


def null_sink(name: str, rate: int = RATE, channels: int | None = None) -> str:
    """The ``-L`` module line of a null sink ``name``."""
    return (f"module-null-sink sink_name={name} rate={rate}"
            + (f" channels={channels}" if channels else ""))


class PulseServer:
    """A PulseAudio daemon with the modules ``modules`` (``-L`` lines; by default one null
    sink ``sink``, 48 kHz mono) and a unix socket, in ``root`` (a new temporary folder if
    None, removed by ``close``).  With ``keepalive``, a low-latency ``parec`` of
    ``sink``'s monitor keeps the null sink ticking (see inside).  ``Unavailable`` if it does
    not come up within 10 s."""

    def __init__(self, modules: list[str] | None = None, *, sink: str = "ci_sink",
                 root: Path | None = None, keepalive: bool = True):
        self._pulseaudio = need("pulseaudio")
        need("pactl", "pulseaudio-utils")
        self._parec = need("parec", "pulseaudio-utils")
        self.sink = sink
        self.modules = list(modules) if modules else [null_sink(sink)]
        self._owned = root is None
        self.root = Path(tempfile.mkdtemp(prefix="karuta-pulse-")) if root is None else Path(root)
        self.runtime, home = self.root / "run", self.root / "home"
        self.runtime.mkdir(mode=0o700, parents=True)
        home.mkdir()
        self.socket = self.runtime / "pulse" / "native"
        # Two ways the daemon ends itself on a loaded machine, both lifted here: its sink
        # thread runs SCHED_RR (we are root, or rtkit grants it) under RLIMIT_RTTIME 200 ms,
        # soft = hard, so the kernel SIGKILLs the daemon if that thread once runs 200 ms
        # without blocking; and its CPU watchdog ends it after 70 % of a core over 10 s
        # (``--no-cpu-limit``).  The priority stays (the null sink is the timing tests'
        # clock).  A worker's daemon that vanished mid-run (-n 4: every later test of that
        # worker found no 'pulse' device) fits either; not reproduced since, so the fixture
        # also checks the daemon after each test and keeps its log (``trouble``).
        conf = home / ".config" / "pulse"
        conf.mkdir(parents=True)
        (conf / "daemon.conf").write_text("rlimit-rttime = -1\n")
        self._server_env = dict(os.environ, XDG_RUNTIME_DIR=str(self.runtime), HOME=str(home))
        self._server_env.pop("PULSE_SERVER", None)
        self.env = dict(self._server_env, PULSE_SERVER=f"unix:{self.socket}")
        self._log = open(self.root / "pulseaudio.log", "wb")
        self.proc: subprocess.Popen | None = None
        self.keepalive: subprocess.Popen | None = None
        try:
            self._start(keepalive)
        except BaseException:
            self.close()
            raise

    def _start(self, keepalive: bool) -> None:
        self.proc = subprocess.Popen(
            [self._pulseaudio, "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
             "--log-target=stderr", "--use-pid-file=no", "--log-time=1", "--log-level=info",
             "--no-cpu-limit=yes", *[a for m in self.modules for a in ("-L", m)],
             "-L", "module-native-protocol-unix"],
            env=self._server_env, stdout=self._log, stderr=self._log)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                raise Unavailable(f"pulseaudio exited ({self.proc.returncode}): "
                                  f"{self.log_tail(500)}")
            if self.socket.exists() and subprocess.run(
                    ["pactl", "info"], env=self.env, capture_output=True).returncode == 0:
                break
            if time.monotonic() > deadline:
                raise Unavailable("pulseaudio did not come up within 10 s")
            time.sleep(0.05)
        if keepalive:
            # A null sink has no hardware clock: once idle it sleeps in ~2 s steps, and the
            # next stream then stalls ~1.9 s after filling its buffer (measured).  A
            # low-latency reader of its monitor keeps it ticking every few ms, as a card would.
            self.keepalive = subprocess.Popen(
                [self._parec, "-d", f"{self.sink}.monitor", "--raw", "--latency-msec=5"],
                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)  # measured: with 0.3 s the first stream still stalled ~1.5 s

    def kill(self) -> None:
        """The daemon (and the keepalive) gone at once, as a sound server that crashed."""
        self.proc.kill()
        self.proc.wait()
        stop_process(self.keepalive)
        self.keepalive = None

    def restart(self) -> None:
        """A new daemon on the same socket (the clients' ``PULSE_SERVER`` stays valid), with
        its keepalive."""
        try:
            self.socket.unlink()
        except FileNotFoundError:
            pass
        self._start(keepalive=True)

    def listen(self, seconds: float) -> np.ndarray:
        """What the sink plays for the next ``seconds`` of its monitor (int16 mono), from when
        the recorder is up: an ear on the room, for "is anything being heard now".  (Counted in
        samples, not wall time: a recorder that a busy machine starts late still hears
        ``seconds`` of the sink; at load 20 a wall-time window got less than half of them.)"""
        import select

        want = int(RATE * seconds) * 2
        p = subprocess.Popen(["parec", "-d", f"{self.sink}.monitor", "--raw",
                              "--format=s16le", f"--rate={RATE}", "--channels=1",
                              "--latency-msec=50"], env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        buf = bytearray()
        end = time.monotonic() + seconds + 20
        try:
            while len(buf) < want and time.monotonic() < end:
                ready, _, _ = select.select([p.stdout], [], [], 0.5)
                if ready:
                    chunk = os.read(p.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    buf += chunk
        finally:
            stop_process(p)
        got = np.frombuffer(bytes(buf[: min(len(buf), want) // 2 * 2]), dtype=np.int16)
        assert got.shape[0] * 2 >= want, "the sink's monitor could not be recorded"
        return got

    def trouble(self, answer_s: float | None = None) -> str | None:
        """Why the server cannot be used now (its daemon or the keepalive ended; with
        ``answer_s``, it did not answer ``pactl info`` within that many seconds), or None."""
        for what, p in (("pulseaudio", self.proc), ("the keepalive parec", self.keepalive)):
            if p is not None and p.poll() is not None:
                return f"{what} (pid {p.pid}) exited ({p.returncode})"
        if answer_s is not None:
            try:
                r = subprocess.run(["pactl", "info"], env=self.env, capture_output=True,
                                   timeout=answer_s)
                if r.returncode == 0:
                    return None
                why = f"pactl info failed: {r.stderr.decode(errors='replace').strip()}"
            except subprocess.TimeoutExpired:
                why = f"pactl info had no answer in {answer_s} s"
            threads = []
            for t in sorted(Path(f"/proc/{self.proc.pid}/task").glob("*")):
                try:
                    st = dict(ln.split(":\t", 1) for ln in (t / "status").read_text().splitlines()
                              if ":\t" in ln)
                    threads.append(f"{st.get('Name')} {st.get('State')} "
                                   f"wchan={(t / 'wchan').read_text()}")
                except OSError:
                    pass
            return f"{why}; daemon threads: {'; '.join(threads)}"
        return None

    def log_tail(self, chars: int = 1500) -> str:
        try:
            return (self.root / "pulseaudio.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def close(self, keep_log: bool = False) -> Path | None:
        """Stop the daemon; a folder of its own is removed, with ``keep_log`` (a failure) all
        but its log, whose path is returned."""
        for p in (self.keepalive, self.proc):
            stop_process(p)
        self._log.close()
        if not self._owned:
            return None
        if keep_log:
            for child in self.root.iterdir():
                if child.name != "pulseaudio.log":
                    shutil.rmtree(child, ignore_errors=True)
            return self.root / "pulseaudio.log"
        shutil.rmtree(self.root, ignore_errors=True)
        return None
