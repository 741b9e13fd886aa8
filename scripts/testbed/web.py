"""What the web benchmarks (bench_web.py: the drill page; bench_web_board.py: the practice
board page) share: ``karuta ... --web`` as a process and its address, a headless Chromium on
an insecure LAN-like origin with its sound into a PulseAudio null sink, waiting on the page's
state, the wall clock against ``perf_counter`` (the ear's clock), and the spread of errors.

    app = WebApp(["drill", "speed", ...], env)        # app.url: http://karuta.test:PORT/#code
    b = web_browser(tmp / "profile", env)             # its sound to env's PULSE_SERVER
    js_wait(b, "karuta.phase === 'join'")
    onset, want = onset_of(ear, b, frame)             # the ear's onset of the page's frame
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from testbed import apps
from testbed.apps import Unavailable

KARUTA = str(Path(sys.executable).parent / "karuta")
#: the page's host: mapped to 127.0.0.1, an insecure origin as a phone's LAN address is
HOST = "karuta.test"
FLAGS = ["--autoplay-policy=no-user-gesture-required",
         f"--host-resolver-rules=MAP {HOST} 127.0.0.1"]
#: what a page that did not get somewhere was doing (both pages keep ``window.karuta``)
WHY = ("JSON.stringify([karuta.phase, karuta.refused, document.getElementById('status')"
       ".textContent, karuta.read, karuta.sent.slice(-3)])")


def epoch_minus_perf() -> float:
    """time.time() - time.perf_counter(), from the narrowest of 50 pairings (s)."""
    best = None
    for _ in range(50):
        a = time.perf_counter()
        w = time.time()
        b = time.perf_counter()
        if best is None or b - a < best[0]:
            best = (b - a, w - (a + b) / 2)
    return best[1]


def js_wait(b, expr: str, timeout: float = 30):
    """The value of ``expr`` on page ``b`` once it is truthy (polled every 20 ms), or
    TimeoutError saying where the page was."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = b.js(expr)
        if v:
            return v
        time.sleep(0.02)
    raise TimeoutError(f"the page did not get to {expr}: " + str(b.js(WHY)))


def spread(xs: list[float], within: float) -> str:
    """How many of ``xs`` (ms) are within ±``within``, their median, 90th percentile of
    |x| and worst."""
    a = sorted(abs(x) for x in xs)
    if not a:
        return "no touches"
    share = sum(x <= within for x in a) / len(a)
    return (f"{share:.0%} within ±{within:g} ms · median {statistics.median(xs):+.2f} ms · "
            f"90 % |err| {a[int(0.9 * (len(a) - 1))]:.2f} ms · worst {a[-1]:.2f} ms "
            f"(n {len(a)})")


def load_average() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


class WebApp(apps.WebApp):
    """``karuta ARGS --web --address 127.0.0.1 --port 0`` in a process group of its own
    (``env``: its sound server, data and config folders): ``testbed.apps.WebApp`` (the tests'
    one), with ``url`` on ``HOST`` and a process that never printed its address a benchmark's
    ``Unavailable``."""

    def __init__(self, args: list[str], env: dict, timeout: float = 60):
        try:
            super().__init__([KARUTA, *args, "--web", "--address", "127.0.0.1", "--port", "0"],
                             env, timeout)
        except AssertionError as e:
            raise Unavailable(str(e).splitlines()[0]) from None
        self.url = self.page

    def via(self, port: int) -> str:
        """The page's address through another port (a relay's in front of this one)."""
        return self.url.replace(f":{self.port}/", f":{port}/")

    def end(self, wait: float = 10.0) -> int | None:
        return super().end(wait)


def web_browser(profile: Path, env: dict, flags: list[str] = ()):
    """A headless Chromium on ``HOST`` with autoplay, its sound to ``env``'s server."""
    from testbed.cdp import Browser

    return Browser(profile, [*FLAGS, *flags], env=env)


def chromium_line(b) -> str:
    """The browser's version and its audio context's rate and latencies."""
    version = b.js("navigator.userAgent").split("Chrome/")[-1].split(" ")[0]
    return (f"headless Chromium {version}, AudioContext {b.js('karuta.ctx.sampleRate')} Hz, "
            f"baseLatency {b.js('karuta.ctx.baseLatency') * 1000:.1f} ms, "
            f"outputLatency {b.js('karuta.ctx.outputLatency') * 1000:.1f} ms")


def onset_of(ear, b, frame: int, timeout: float = 30) -> tuple[float | None, float]:
    """(the ear's onset of the sound page ``b`` starts at plan ``frame``, the instant the page
    has it heard), both ``perf_counter`` s; the onset None if none came within 2 s of the
    page's instant.  Which sound is which: the first onset after the page's own instant less
    100 ms (a stall of the browser's sound moves it later; a dropout of the sink's stream
    makes an "onset" inside a sound)."""
    want = js_wait(b, f"karuta.timeline.instantOf({frame}) !== null && "
                      f"karuta.epochOfFrame({frame})", timeout) / 1000
    want_perf = want - epoch_minus_perf()
    try:  # (waited for no longer than it could count: a page that plays nothing costs 2.5 s)
        onset = ear.wait(1, after=want_perf - 0.1,
                         timeout=max(0.5, min(timeout, want_perf + 2.5 - time.perf_counter())))
    except TimeoutError:
        return None, want_perf
    return (onset if onset - want_perf < 2.0 else None), want_perf


def start_skew(ears: list, frame_instant: float, timeout: float = 10) -> float | None:
    """How far apart (s) the pages whose sinks ``ears`` hear started the sound they are due
    to start at perf instant ``frame_instant``: each ear's first onset after it less 100 ms,
    the last minus the first (None if an ear heard none within 2 s of it).  Any pages: two
    devices of one match, or one page heard by two ears (the measurement's own floor)."""
    got = []
    for ear in ears:
        try:
            t = ear.wait(1, after=frame_instant - 0.1, timeout=timeout)
        except TimeoutError:
            return None
        if t - frame_instant > 2.0:
            return None
        got.append(t)
    return max(got) - min(got)


def sleep_until_perf(t: float) -> None:
    while time.perf_counter() < t:
        time.sleep(0.001)
