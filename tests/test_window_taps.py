"""Window input is stamped off the drawing thread: a real window under Xvfb whose thread is
kept busy "drawing" (20 ms of work every 50 ms), key presses and left clicks injected with
XTest from this process at known times; the stamps must be within a millisecond or two of
the press, however late the window thread took the event in."""
from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
import textwrap

import pytest

from audio_fixtures import REPO
from machine_stall import descendants, run_delays

APP = textwrap.dedent("""
    import json, select, sys, time
    from reader.ui.window import open_window
    from reader.input.taps import WindowTaps
    screen = open_window((400, 300), "karuta taps test")
    import pygame
    taps = WindowTaps()
    print("ready", pygame.display.get_wm_info()["window"], taps.stamper is not None, flush=True)
    evs, end, next_draw = [], time.perf_counter() + float(sys.argv[1]), 0.0
    busy_s, period_s = float(sys.argv[2]), float(sys.argv[3])
    # until the test says it is done (a line on stdin), at most argv[1] s
    while time.perf_counter() < end and not select.select([sys.stdin], [], [], 0)[0]:
        for e in taps.pump():
            evs.append([e.ns, e.kind, e.source])
        now = time.perf_counter()
        if now >= next_draw:  # a slow redraw: the thread is busy for busy_s
            busy = now + busy_s
            while time.perf_counter() < busy:
                pass
            pygame.display.flip()
            next_draw = now + period_s
        time.sleep(0.001)
    for _ in range(20):
        for e in taps.pump():
            evs.append([e.ns, e.kind, e.source])
        time.sleep(0.002)
    lag = sorted(taps.lag)
    taps.close()
    print(json.dumps({"events": evs, "lag_max": lag[-1] if lag else None}), flush=True)
""")


def run_delays_of(pids) -> dict:
    """Every thread of ``pids``: the seconds it has waited for a CPU (tests/machine_stall.py)."""
    out = {}
    for pid in pids:
        out.update(run_delays(pid))
    return out


@pytest.mark.realtime
@pytest.mark.parametrize("busy,period,min_lag", [(0.02, 0.05, 10.0), (0.45, 0.5, 300.0)],
                         ids=["redraws", "long-stalls"])
def test_presses_are_stamped_as_x_delivers_them_while_the_window_thread_draws(
        xvfb, busy, period, min_lag):
    """``long-stalls``: the window thread is away for 450 ms at a time (a busy machine, a
    garbage collection, a slow frame): a press in a stall still gets its X stamp, not the
    time the thread came back (stamps older than 300 ms used to be thrown away)."""
    from Xlib import X, display
    from Xlib.ext import xtest

    env = {**os.environ, "DISPLAY": xvfb, "PYTHONPATH": str(REPO), "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    env.pop("SDL_VIDEODRIVER", None)
    app = subprocess.Popen([sys.executable, "-c", APP, "30", str(busy), str(period)], cwd=REPO,
                           env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = app.stdout.readline().split()
        assert first and first[0] == "ready", app.stderr.read()
        wid, has_stamper = int(first[1]), first[2] == "True"
        assert has_stamper, "the X stamping process did not start"
        xenv = {**os.environ, "DISPLAY": xvfb}
        subprocess.run(["xdotool", "windowfocus", "--sync", str(wid)], env=xenv, check=False)
        subprocess.run(["xdotool", "mousemove", "--window", str(wid), "200", "150"], env=xenv,
                       check=True)
        time.sleep(0.3)
        d = display.Display(xvfb)
        space = d.keysym_to_keycode(0x20)
        rng = random.Random(5)
        sent = []  # (perf ns before the press, after it was flushed, kind)
        # what X and the stamping process waited for a CPU around each press (the app's own
        # window thread, busy drawing on purpose, left out)
        servers = [pid for pid in descendants() if pid != app.pid]
        waits = []  # per press: the longest wait of one of their threads, from it to the next
        for i in range(24):
            time.sleep(0.03 + rng.random() * 0.05)
            waits.append(run_delays_of(servers))
            kind = "mouse" if i % 3 == 2 else "key"
            a = time.perf_counter_ns()
            if kind == "key":
                xtest.fake_input(d, X.KeyPress, space)
            else:
                xtest.fake_input(d, X.ButtonPress, 1)
            d.sync()
            b = time.perf_counter_ns()
            if kind == "key":
                xtest.fake_input(d, X.KeyRelease, space)
            else:
                xtest.fake_input(d, X.ButtonRelease, 1)
            d.sync()
            sent.append((a, b, kind))
        time.sleep(0.03)
        waits.append(run_delays_of(servers))
        out, err = app.communicate("done\n", timeout=60)  # the presses made: it may stop
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
    data = json.loads(out.strip().splitlines()[-1])
    evs = data["events"]
    x_evs = [e for e in evs if e[2] == "window-x"]
    assert len(x_evs) == len(sent), (len(x_evs), len(sent), evs)
    assert [e[1] for e in x_evs] == [k for _, _, k in sent]
    # each stamp: after the press was made, the typical one within 0.5 ms of it being flushed
    # to the server and nine in ten within 3 ms, what a player notices (a clean CI run, the
    # other worker busy, saw nine in ten within 2.6 ms).  Every one within 2 ms is the
    # benchmark's target (scripts/bench_stress.py, X at realtime priority); a busy machine may
    # delay X or the stamping process once in a while, never by a drawing frame
    #
    # A busy machine (a CPU hog beside: one press in 24 stamped 15 ms late) is measured, not
    # assumed: each press's bounds grow by as long as a thread of X or the stamping process
    # waited for a CPU between it and the next press, and the typical delay is judged on the
    # presses where none waited more than 1 ms (a stamp taken by the drawing thread instead is
    # late by up to its 20 ms of drawing without X or the stamper waiting at all)
    per_press = [(e[0] - b) / 1e6 for e, (a, b, _) in zip(x_evs, sent)]
    stalls = [max((after.get(k, 0.0) - w for k, w in before.items()), default=0.0) * 1000
              for before, after in zip(waits, waits[1:])]
    delays = sorted(per_press)
    said = (delays, [f"{d:.2f} ms, waited {w:.1f} ms" for d, w in zip(per_press, stalls)])
    assert all(e[0] >= a for e, (a, _, _) in zip(x_evs, sent)), said
    calm = sorted(d for d, w in zip(per_press, stalls) if w <= 1.0)
    if len(calm) >= 8:
        assert statistics.median(calm) <= 0.5, said
    over = sorted(d - w for d, w in zip(per_press, stalls))  # each less its stall
    assert over[int(0.9 * (len(over) - 1))] <= 3.0 and over[-1] <= 10.0, said
    # ... while the window thread itself was tens of ms late for some of them
    assert data["lag_max"] > min_lag, data["lag_max"]
    assert all(e[2] == "window-x" for e in evs)


TOUCH_APP = textwrap.dedent("""
    import json, time
    import pygame
    from reader.ui.window import open_window
    from reader.input.taps import WindowTaps
    screen = open_window((400, 300), "karuta touch test")
    taps = WindowTaps()
    st = taps.stamper
    out = {"stamper": st is not None, "touch": bool(st and st.touch)}
    def finger(x):
        pygame.event.post(pygame.event.Event(pygame.FINGERDOWN, touch_id=1, finger_id=0,
                                             x=x, y=0.5, dx=0.0, dy=0.0, pressure=1.0))
    # a touch the X server delivered 7 ms before SDL's event was taken in (the reading
    # thread puts a "T" frame's stamp here); then one with no stamp at all
    taps.pump()
    stamp = time.perf_counter_ns() - 7_000_000
    st.q["touch"].append(stamp)
    finger(0.25)
    evs = []
    end = time.monotonic() + 1.0
    while time.monotonic() < end and len(evs) < 1:
        evs += taps.pump()
        time.sleep(0.001)
    finger(0.75)
    seen = time.perf_counter_ns()
    end = time.monotonic() + 1.0
    while time.monotonic() < end and len(evs) < 2:
        evs += taps.pump()
        time.sleep(0.001)
    out["events"] = [[e.kind, e.source, e.ns, list(e.pos)] for e in evs]
    out["stamp"], out["seen"] = stamp, seen
    taps.close()
    print(json.dumps(out), flush=True)
""")


def test_touches_are_stamped_by_the_x_stamping_process_where_the_server_has_xinput_22(xvfb):
    """Xvfb speaks XInput 2.2, so the stamping process selects raw touch begins too (the
    selection is checked by the X server before the process says it is ready).  Xvfb has no
    touch device to touch with: the stamp of a touch is put where the process's frames land,
    and a FINGERDOWN posted to SDL.  The touch takes that stamp (``window-x``), not the time
    the window thread saw it; a touch with no X stamp keeps the window thread's time after
    the hold."""
    env = {**os.environ, "DISPLAY": xvfb, "PYTHONPATH": str(REPO),
           "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    env.pop("SDL_VIDEODRIVER", None)
    p = subprocess.run([sys.executable, "-c", TOUCH_APP], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["stamper"] and out["touch"], out
    (k1, s1, ns1, pos1), (k2, s2, ns2, pos2) = out["events"]
    assert (k1, s1, ns1) == ("touch", "window-x", out["stamp"]), out
    assert pos1 == [100, 150]
    assert (k2, s2) == ("touch", "window"), out
    assert ns2 >= out["seen"] and pos2 == [300, 150]
