"""A private X server (Xvfb) on a display number it picks itself, and presses made through
XTest as a finger makes them: the window tests' ``xvfb`` fixture (tests/conftest.py) and the
benchmarks that click and press (bench_board, bench_grab, bench_stress, bench_online)."""
from __future__ import annotations

import os
import select
import subprocess
import time

from testbed.apps import Unavailable, need, stop_process


def start_xvfb(size: str = "1280x800") -> tuple[subprocess.Popen, str]:
    """Xvfb with one ``size`` screen (24 bits), on the display number it picks itself
    (``-displayfd``): (its process, ":N").  End it with ``stop_process``.

    ``-noreset``: an X server resets itself whenever its last client disconnects, and a
    connection that comes during the reset fails.  The tests' pollers (xdotool, a client
    each time) disconnect while the app starts: SDL's connection then failed and it fell back
    to its invisible offscreen driver (2 in 150 starts beside a poller; 0 in 450 with
    -noreset) — the "no window"/"display did not answer" failures of the window tests."""
    xvfb = need("Xvfb", "xvfb")
    r, w = os.pipe()
    proc = subprocess.Popen([xvfb, "-displayfd", str(w), "-screen", "0", f"{size}x24",
                             "-nolisten", "tcp", "-noreset"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    try:
        buf = b""
        while not buf.endswith(b"\n"):
            ready, _, _ = select.select([r], [], [], 20)
            if not ready or proc.poll() is not None:
                raise Unavailable("Xvfb did not start")
            chunk = os.read(r, 64)
            if not chunk:
                raise Unavailable(f"Xvfb did not start (exit status {proc.wait(5)})")
            buf += chunk
    except BaseException:
        stop_process(proc)
        raise
    finally:
        os.close(r)
    return proc, ":" + buf.decode().strip()


def press_realtime() -> bool:
    """Put the calling thread (only it) at realtime priority, as a presser should be: a finger
    does not wait for a CPU, so a press is made when its time is taken.  False where refused
    (a press may then be late by a time slice)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
        return True
    except (AttributeError, OSError):
        return False


def xtest_press(d, kind: str, code: int) -> tuple[int, int]:
    """Press and release key ``code`` (``kind`` "key") or button ``code`` ("mouse") through
    XTest on display ``d``; returns (perf ns when the press's request was written, perf ns once
    the X server had processed it)."""
    from Xlib import X
    from Xlib.ext import xtest

    key = kind == "key"
    xtest.fake_input(d, X.KeyPress if key else X.ButtonPress, code)
    t0 = time.perf_counter_ns()  # the press: its request is written now
    d.flush()
    d.sync()
    t1 = time.perf_counter_ns()
    xtest.fake_input(d, X.KeyRelease if key else X.ButtonRelease, code)
    d.sync()
    return t0, t1
