#!/usr/bin/env python3
"""Grab-timer benchmark: key or board click (XTest) -> reported reaction time, against the truth.

    python scripts/bench_grab.py [--cards 15] [--clicks 20]
    python scripts/bench_grab.py --board [--taps 20]      # practice board clicks

Starts its own PulseAudio null sink and Xvfb (temporary folders), then:

  1. an observer records the sink's monitor (``parec --latency-msec=5``) and keeps a clock
     model: monitor sample n was heard at perf time ``t(n) = min_recent(arrival - n/rate) +
     n/rate`` (lower envelope of chunk arrivals, tracked over the last 2 s for the sink's drift);
  2. ``karuta calibrate --window``: the robot taps (XTest key) exactly on the clicks it predicts
     from the first one it hears (same clock model);
  3. ``karuta drill speed --window --voice tone``: for each card the robot hears the 上の句's
     first sample, knows from the plan where the kimariji's last mora starts, and presses a key
     (XTest) exactly ``R_true`` (250-600 ms, random) after it; then picks the right torifuda.
  4. compares the drill log's ``reaction_ms`` with ``R_true``: median / sd / worst error, and
     quotes the drill's own input-poll and frame-rate figures.  A tap the drill marked not
     timed (a gap in the sound between the 上の句's start and the tap) is counted apart.

The observer's constant latency cancels: calibration and drill are timed by the same model.

``--board`` replaces step 3 with the practice board (issue 10: click -> reaction, end to end):
a match alone (``--vs none``, 50 cards, the tone voice at speed 2, no jo-ka, a 2.5 s 間 and a
1 s wait) is set up headless and saved, and ``karuta practice --log L --resume`` plays it in its
window (the log carries the reading settings).  For each of the player's cards the robot
hears its 上の句 begin, moves the pointer onto the card (where ``reader.practice.board`` lays
it out, as the window does) and clicks (XTest button 1) exactly ``R_true`` after the decisive
onset; karafuda go by untouched.  The log's ``timing`` reaction of each take is compared with
``R_true``.  Here an onset is a sound after at least 1.8 s of silence: only a 上の句 (after
its 2.5 s 間) is one, not a 下の句 (after at most the 1 s wait, or none once the card is
taken) nor a sound after one of the dropouts of a few tenths of a second that a loaded
machine's null-sink stream has now and then (a dropout still shifts that click's error).

``--debug DIR``: the drill runs with ``KARUTA_TIMING_DEBUG=1`` (each log line says how its tap
was mapped) and dumps its DAC timeline (``dac.npz``: frames, DAC times, callback times); the
observer's model per tap (``observer.json``) and every chunk arrival (``arrivals.npy``) go to
DIR too, and a per-tap table is printed.  What it showed: the observer's line and the drill's
callback-time envelope agree within 0.1 ms from the stream's start, while PortAudio's DAC
times wander by up to ±5 ms for a new stream's first 3-15 s (hence the drill's warm-up).
Needs: pulseaudio, parec, Xvfb, python-xlib.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np

from testbed.sound import RATE, PulseServer
from testbed.xserver import start_xvfb

REPO = Path(__file__).resolve().parent.parent
BOOT = "import reader.cli as c; c.main()"


class Observer(threading.Thread):
    """Reads the sink monitor; ``onsets`` gets the sample index of each sound that follows
    >= ``gap_s`` of silence (200 ms); ``t_of(n)`` maps a monitor sample index to perf time."""

    def __init__(self, env, gap_s: float = 0.2):
        super().__init__(daemon=True)
        self.gap_s = gap_s
        self.proc = subprocess.Popen(
            ["parec", "-d", "ci_sink.monitor", "--raw", "--format=s16le", f"--rate={RATE}",
             "--channels=1", "--latency-msec=5"], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, bufsize=0)
        self.n = 0
        self.arrivals: deque[tuple[float, int]] = deque(maxlen=2000)
        self.history: list[tuple[float, int]] = []  # every chunk (--debug)
        self.onsets: list[int] = []
        self.quiet_before: list[int] = []  # samples of silence before each onset
        self.cv = threading.Condition()
        self.lock = threading.Lock()

    def run(self):
        quiet = RATE
        fd = self.proc.stdout.fileno()
        while True:
            raw = os.read(fd, 4096)
            t = time.perf_counter()
            if not raw:
                return
            x = np.frombuffer(raw[: len(raw) // 2 * 2], np.int16)
            with self.lock:
                self.arrivals.append((t, self.n + x.shape[0]))
                self.history.append((t, self.n + x.shape[0]))
            loud = np.flatnonzero(np.abs(x) > 300)
            if loud.size:
                first = int(loud[0])
                if quiet + first >= RATE * self.gap_s:
                    with self.cv:
                        self.onsets.append(self.n + first)
                        self.quiet_before.append(quiet + first)
                        self.cv.notify_all()
                quiet = x.shape[0] - 1 - int(loud[-1])
            else:
                quiet += x.shape[0]
            self.n += x.shape[0]

    def t_of(self, n: int) -> float:
        return self.model()["off"] + n / RATE

    def model(self) -> dict:
        """The clock model now: ``off`` (perf time of monitor sample 0), how many chunks it
        is taken over, and how old the chunk that sets it is."""
        with self.lock:
            last = self.arrivals[-1][0]
            recent = [(t, k) for t, k in self.arrivals if t > last - 2.0]
        offs = [t - k / RATE for t, k in recent]
        i = min(range(len(offs)), key=offs.__getitem__)
        return {"off": offs[i], "chunks": len(offs), "min_age_s": last - recent[i][0],
                "span_s": last - recent[0][0], "n": recent[-1][1]}

    def wait_onset(self, count: int, timeout: float = 30) -> int:
        with self.cv:
            ok = self.cv.wait_for(lambda: len(self.onsets) >= count, timeout)
        if not ok:
            raise SystemExit(f"no sound heard (onset {count})")
        return self.onsets[count - 1]

    def wait_after_quiet(self, start: int, quiet_s: float, timeout: float = 60) -> int:
        """The index (in ``onsets``) of the first onset from ``start`` on that follows at
        least ``quiet_s`` of silence (a new stream's first sound)."""
        def found():
            return next((i for i in range(start, len(self.onsets))
                         if self.quiet_before[i] >= quiet_s * RATE), None)

        with self.cv:
            ok = self.cv.wait_for(lambda: found() is not None, timeout)
        if not ok:
            raise SystemExit("no sound heard (a run's first click)")
        return found()


class Keys:
    """XTest key presses and pointer clicks from Python (python-xlib)."""

    def __init__(self, display: str):
        from Xlib import X, XK, display as xd
        from Xlib.ext import xtest

        self.X, self.XK, self.xtest = X, XK, xtest
        self.d = xd.Display(display)

    def focus(self, pid: int, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r = subprocess.run(["xdotool", "search", "--pid", str(pid)], capture_output=True,
                               text=True, env={**os.environ, "DISPLAY": self.d.get_display_name()})
            if r.returncode == 0:
                wid = int(r.stdout.split()[-1])
                win = self.d.create_resource_object("window", wid)
                win.set_input_focus(self.X.RevertToParent, self.X.CurrentTime)
                self.d.sync()
                return
            time.sleep(0.1)
        raise SystemExit("no window")

    def origin(self, pid: int) -> tuple[int, int]:
        """Where the app's window's top left is on the screen (root coordinates)."""
        r = subprocess.run(["xdotool", "search", "--pid", str(pid)], capture_output=True,
                           text=True, env={**os.environ, "DISPLAY": self.d.get_display_name()})
        win = self.d.create_resource_object("window", int(r.stdout.split()[-1]))
        at = self.d.screen().root.translate_coords(win, 0, 0)
        return at.x, at.y

    def move(self, x: int, y: int) -> None:
        self.xtest.fake_input(self.d, self.X.MotionNotify, x=x, y=y)
        self.d.sync()

    def click(self) -> float:
        """Button 1 down and up where the pointer is; the time just before the press."""
        t = time.perf_counter()
        self.xtest.fake_input(self.d, self.X.ButtonPress, 1)
        self.d.sync()
        self.xtest.fake_input(self.d, self.X.ButtonRelease, 1)
        self.d.sync()
        return t

    def press(self, name: str) -> float:
        code = self.d.keysym_to_keycode(self.XK.string_to_keysym(name))
        t = time.perf_counter()
        self.xtest.fake_input(self.d, self.X.KeyPress, code)
        self.d.sync()
        self.xtest.fake_input(self.d, self.X.KeyRelease, code)
        self.d.sync()
        return t


def sleep_until(t: float):
    while True:
        left = t - time.perf_counter()
        if left <= 0:
            return
        time.sleep(left - 0.0005 if left > 0.001 else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cards", type=int, default=15)
    ap.add_argument("--clicks", type=int, default=20)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--board", action="store_true",
                    help="Measure practice board clicks (karuta practice) instead of drill keys.")
    ap.add_argument("--taps", type=int, default=20, help="--board: clicks on cards (1-50).")
    ap.add_argument("--server-rt", action="store_true",
                    help="Give the sound server (and the observer) realtime priority, as rtkit "
                         "gives a desktop's (default: normal priority: more gaps in the sound "
                         "under load).")
    ap.add_argument("--stall-ms", type=float, default=0, metavar="MS",
                    help="--calibrations: stop the app's audio process for MS ms after the tap "
                         f"on click {STALL_AFTER + 1} of every run (a gap in the sound).")
    ap.add_argument("--calibrations", type=int, default=0, metavar="N",
                    help="Only calibrate, N times, each against the bench's own truth (see "
                         "calibrations()); prints each error and how many were within ±0.5 ms.")
    ap.add_argument("--debug", metavar="DIR", default=None,
                    help="Timing diagnostics: the drill logs how each tap was mapped "
                         "(KARUTA_TIMING_DEBUG), dumps its DAC timeline, and the observer's "
                         "model per tap and chunk arrivals are written to DIR.")
    args = ap.parse_args()
    for tool in ("pulseaudio", "parec", "pactl", "Xvfb", "xdotool"):
        if not shutil.which(tool):
            raise SystemExit(f"missing {tool}")
    root = Path(tempfile.mkdtemp(prefix="karuta-bench-"))
    server = PulseServer(root=root / "pulse", keepalive=False)
    pulse, penv = server.proc, server.env
    xvfb, disp = start_xvfb("1280x800")
    obs = Observer(penv)
    obs.start()
    if args.server_rt:  # as rtkit gives a desktop's sound server (and this observer)
        for pid in (pulse.pid, obs.proc.pid):
            if subprocess.run(["chrt", "-a", "-f", "-p", "15", str(pid)],
                              capture_output=True).returncode != 0:
                raise SystemExit("chrt was refused: run without --server-rt")
    env = {**penv, "DISPLAY": disp, "KARUTA_CONFIG_DIR": str(root / "cfg"),
           "KARUTA_DATA_DIR": str(root / "data"), "PYTHONPATH": str(REPO),
           "PYGAME_HIDE_SUPPORT_PROMPT": "1"}
    dbg = Path(args.debug) if args.debug else None
    if dbg is not None:
        dbg.mkdir(parents=True, exist_ok=True)
    keys = Keys(disp)
    procs = []
    try:
        # 1. calibration: tap exactly on each predicted click
        time.sleep(0.5)
        if args.calibrations:
            calibrations(args, root, env, obs, keys, procs)
            return
        lines, _ = calibrate(args, env, obs, keys, procs)
        for ln in lines:
            if ln.startswith(("get ready:", "spread ")) or ": offset " in ln or "history:" in ln:
                print("calibrate:", ln)

        if args.board:
            board(args, root, env, obs, keys, procs)
            return

        # 2. the drill
        log, plan_out = root / "drill.jsonl", root / "plan.json"
        denv = env if dbg is None else {**env, "KARUTA_TIMING_DEBUG": "1",
                                        "KARUTA_TIMING_DUMP": str(dbg / "dac.npz")}
        p = subprocess.Popen([sys.executable, "-c", BOOT, "drill", "speed", "--window", "--poems",
                              f"1-{args.cards}", "--seed", str(args.seed), "--voice", "tone",
                              "--speed", "2", "--ma", "0.4", "--take", "5", "--choices", "2",
                              "--device", "pulse", "--log", str(log), "--plan-out", str(plan_out),
                              "--timing-details"],  # (its fps and get-ready lines, printed below)
                             cwd=REPO, env=denv, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        procs.append(p)
        while not plan_out.exists():
            time.sleep(0.05)
        time.sleep(0.1)
        plan = json.loads(plan_out.read_text())
        kami = {s["poem"]: s for s in plan["segments"] if s["kind"] == "kami"}
        keys.focus(p.pid)
        from reader.drills.speed import choices_for

        rng, truth_rng = random.Random(args.seed), random.Random(1)
        base = len(obs.onsets)
        truths, models = [], []
        for i, poem in enumerate(plan["order"]):
            n_start = obs.wait_onset(base + i + 1)
            k = kami[poem]
            n_dec = n_start + round((k["decisive_ms"] - k["start_ms"]) * RATE / 1000)
            r_true = truth_rng.uniform(250, 600)
            m = obs.model()
            sleep_until(m["off"] + n_dec / RATE + r_true / 1000)
            m.update(pressed=keys.press("space"), n_dec=n_dec, n_start=n_start, r_true=r_true,
                     model_at_press=obs.model()["off"])
            models.append(m)
            truths.append(r_true)
            cands = [n for n in plan["universe"] if n not in plan["order"][:i]]
            ch = choices_for(poem, cands, 2, rng)
            time.sleep(0.15)
            keys.press(str(ch.index(poem) + 1))
        out, _ = p.communicate(timeout=60)
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        # a tap across a gap in the sound has no reaction time (the log's "untimed"): counted
        # apart, not an error
        per_tap = [None if ln["reaction_ms"] is None else ln["reaction_ms"] - t
                   for ln, t in zip(lines, truths)]
        errs = [e for e in per_tap if e is not None]
        untimed = len(per_tap) - len(errs)
        ok = all(ln["correct"] for ln in lines) and len(lines) == len(truths)
        for ln in out.strip().splitlines():
            if ln.startswith(("window ", "get ready:", "audio:", "karuta: audio")):
                print("drill:", ln)
        print(f"key -> reported reaction, {len(errs)} taps timed, {untimed} not timed (gaps in "
              f"the sound) (all answered right: {ok})")
        if errs:
            print(f"  error median {statistics.median(errs):+.2f} ms, sd "
                  f"{statistics.pstdev(errs):.2f} ms, worst {max(errs, key=abs):+.2f} ms   "
                  f"(target: median ±3, sd ≤ 1, worst ≤ 3)")
        print("  errors:", " ".join("untimed" if e is None else f"{e:+.1f}" for e in per_tap))
        if dbg is not None:
            shutil.copy(log, dbg / "drill.jsonl")
            shutil.copy(plan_out, dbg / "plan.json")
            (dbg / "observer.json").write_text(json.dumps({"taps": models}))
            with obs.lock:
                np.save(dbg / "arrivals.npy", np.array(obs.history, dtype=np.float64))
            print("  tap  err   age_s  resid_ms mode   pair_us lat_ms  dac-cur  obs_chunks "
                  "obs_min_age  obs_moved_ms  dac-env  warm_s")
            for j, (ln, e, m) in enumerate(zip(lines, per_tap, models)):
                e = math.nan if e is None else e
                d = ln.get("debug", {})
                print(f"  {j + 1:3d} {e:+5.1f} {d.get('age_s', 0):7.2f} "
                      f"{d.get('residual_ms') if d.get('residual_ms') is not None else float('nan'):8.3f} "
                      f"{str(d.get('mode')):6s} {d.get('pair_w_us', 0):7.1f} "
                      f"{d.get('latency_ms', 0):6.2f} {d.get('dac_minus_cur_ms', 0):7.2f} "
                      f"{m['chunks']:6d} {m['min_age_s']:8.3f} "
                      f"{(m['model_at_press'] - m['off']) * 1000:+8.3f}     "
                      f"{d.get('dac_env_ms', float('nan')):7.3f} {d.get('warmup_s', 0):6.2f}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        obs.proc.terminate()
        xvfb.terminate()
        pulse.terminate()
        for p in (obs.proc, xvfb, pulse):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(root, ignore_errors=True)


def calibrate(args, env: dict, obs: Observer, keys: Keys, procs: list):
    """``karuta calibrate --window``, the robot tapping exactly on each click as the observer
    hears it (from the run's first click on).  Returns (its output lines, per run the robot's
    presses: (click index, press perf time, the observer's time of that click))."""
    nxt = len(obs.onsets)
    p = subprocess.Popen([sys.executable, "-c", BOOT, "calibrate", "--window", "--device",
                          "pulse", "--clicks", str(args.clicks), "--interval", "0.6"],
                         cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    procs.append(p)
    keys.focus(p.pid)
    step = round(0.6 * RATE)
    runs = []
    # karuta calibrate repeats a run whose spread is above 0.5 ms (up to 3 runs): tap along to
    # every run it plays
    for run in range(3):
        # a run's first click follows the stream's lead-in (>= 1.5 s of silence); the robot
        # taps the others on the beat it predicts from that one (a player tapping by rhythm)
        first = obs.wait_after_quiet(nxt, 1.2)
        n0 = obs.onsets[first]
        presses = []
        for k in range(1, args.clicks):
            t_click = obs.t_of(n0 + k * step)
            sleep_until(t_click)
            presses.append((k, keys.press("space"), t_click, n0 + k * step))
            if getattr(args, "stall_ms", 0) and k == STALL_AFTER:
                stall_audio(p.pid, args.stall_ms / 1000)
        time.sleep(0.4)
        # what was heard: each click's onset (a gap in the sound delays the clicks after it)
        heard = [n0]
        for i in range(first + 1, len(obs.onsets)):
            if obs.onsets[i] - heard[-1] >= 0.45 * RATE and len(heard) < args.clicks:
                heard.append(obs.onsets[i])
        nxt = first + 1
        runs.append({"presses": presses, "heard": heard})
        try:
            out, _ = p.communicate(timeout=8)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        out, _ = p.communicate(timeout=30)
    return out.strip().splitlines(), runs


#: ``--stall-ms``: the audio process is stopped right after the robot's tap on this click
STALL_AFTER = 12


def stall_audio(app_pid: int, seconds: float) -> None:
    """Stop the app's audio process for ``seconds`` (SIGSTOP, SIGCONT): the device buffer
    runs dry and the sound server inserts silence, as when a busy machine keeps the process
    off the CPU; every later click is heard that much later."""
    import signal

    r = subprocess.run(["pgrep", "-P", str(app_pid), "-f", "audio_process.py"],
                       capture_output=True, text=True)
    pids = [int(x) for x in r.stdout.split()]
    if not pids:
        print("   (no audio process to stall)")
        return
    os.kill(pids[0], signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pids[0], signal.SIGCONT)


def _wall_minus_perf() -> float:
    """time.time() − perf_counter() from the narrowest of 50 paired readings (the stream clock
    of PortAudio's ALSA host follows the wall clock)."""
    best = (math.inf, 0.0)
    for _ in range(50):
        a = time.perf_counter()
        w = time.time()
        b = time.perf_counter()
        best = min(best, (b - a, w - (a + b) / 2))
    return best[1]


def _run_truth(npz: Path, run: dict, wall_perf: float) -> dict:
    """What one calibration run should have found, from the bench's side.

    Per tap: ``late`` = the robot's press − the beat it aimed at (its own lateness, as a
    player's habit: the drill's presses have it too), ``s`` = the app's stamp − the robot's
    press (stamping delay), and ``D`` = the
    click's DAC time (the run's DAC line, median of DAC time − frame/rate within 0.3 s of the
    click's stream frame, turned into perf time with the bench's own wall-clock pairing) −
    when the observer heard that click at the sink's monitor (the output's unreported
    latency as this observer sees it; constant for a device).  The truth is ``late + s − D``:
    the offset that, taken off a tap, gives the instant the robot meant (the click heard).  A tap the robot
    made off the heard beat (a gap in the sound delayed the clicks after it) does not change
    the truth, only what a calibration that used that tap finds.  ``app`` is the app's own
    offset for these taps; its pairing (stream clock − perf) is compared with the bench's."""
    z = np.load(npz)
    rate = int(z["rate"])
    frames, times = z["frames"], z["times"]
    taps, anchors, clicks = z["taps"], z["anchors"], z["clicks"]
    pairings = z["pairings"]
    line = times - frames / rate

    def dac_of(f):  # the DAC line at stream frame f (wall clock)
        near = np.abs(frames - f) <= 0.3 * rate
        return float(np.median(line[near])) + f / rate if near.any() else math.nan

    def stream_of(pf):  # the anchors: plan frame -> stream frame (advancing spans)
        for k in range(anchors.shape[0] - 1, -1, -1):
            sf, pl, adv = anchors[k]
            if adv and pf >= pl:
                return sf + pf - pl
        return math.nan

    heard = run["heard"]
    rows = []
    for k, pressed, beat, n_beat in run["presses"]:
        j = int(np.argmin(np.abs(taps[:, 0] - pressed))) if taps.shape[0] else -1
        if j < 0 or not 0 <= taps[j, 0] - pressed < 0.05 or k >= len(heard):
            continue
        stamp, plan_f, _w, off = taps[j]
        click = float(clicks[k])
        t_dac = dac_of(stream_of(click)) - wall_perf
        # heard: by the observer's clock model as it stood when the robot pressed
        t_heard = beat + (heard[k] - n_beat) / RATE
        s_ms, d_ms = (stamp - pressed) * 1000, (t_dac - t_heard) * 1000
        late_ms = (pressed - beat) * 1000  # the robot's own lateness: a player's habit
        rows.append({"s": s_ms, "D": d_ms, "true": late_ms + s_ms - d_ms, "late": late_ms,
                     "app": (plan_f - click) * 1000 / rate,
                     "pair_err": (off - wall_perf) * 1000})
    if not rows:
        return {}

    def med(key):
        return statistics.median(r[key] for r in rows)

    pw = pairings[:, 2] - wall_perf if pairings.shape[0] else np.array([math.nan])
    jumps = np.flatnonzero(np.abs(np.diff(line)) > 0.003)
    ds = [r["D"] for r in rows]
    return {"taps": len(rows), "s": med("s"), "D": med("D"), "true": med("true"),
            "late": med("late"),
            "app": med("app"), "pair_err": med("pair_err"), "D_range": (min(ds), max(ds)),
            "jumps": [(round(float(frames[i + 1]) / rate, 2), round(float(line[i + 1] - line[i]) * 1000, 1))
                      for i in jumps],
            "pair_err_range": (float(np.nanmin(pw)) * 1000, float(np.nanmax(pw)) * 1000)}


def calibrations(args, root: Path, env: dict, obs: Observer, keys: Keys, procs: list) -> None:
    """``--calibrations N``: ``karuta calibrate`` N times against the bench's own truth."""
    import re

    rows = []
    for i in range(args.calibrations):
        dump = root / f"cal{i}.npz"
        load = os.getloadavg()[0]
        lines, runs = calibrate(args, {**env, "KARUTA_TIMING_DUMP": str(dump)}, obs, keys,
                                procs)
        wall_perf = _wall_minus_perf()
        said = next((ln for ln in lines if ": offset " in ln), "")
        m = re.search(r"offset ([-+]?\d+\.\d) ms .*spread ±(\d+\.\d+) ms", said)
        if m is None:
            print(f"run {i + 1}: no offset saved: {lines[-3:]}")
            continue
        offset, spread = float(m.group(1)), float(m.group(2))
        saved = json.loads((root / "cfg" / "calibration.json").read_text())["devices"]
        offset = float(saved["sounddevice:pulse"]["offset_ms"])
        gap = saved["sounddevice:pulse"].get("moved_at")
        # the run the app kept: the steadiest (its spread is the one it says)
        truths = []
        for r, run in enumerate(runs):
            f = root / f"cal{i}.run{r + 1}.npz"
            if f.exists():
                truths.append(_run_truth(f, run, wall_perf))
        kept = min((t for t in truths if t), key=lambda t: abs(t["app"] - offset),
                   default=None)
        for ln in lines:
            if ln.startswith(("spread ", "the sound ", "karuta: ", "audio: ")):
                print("   calibrate:", ln)
        if args.debug:
            for r, t in enumerate(truths):
                if t:
                    print(f"   run {r + 1}: app {t['app']:+.2f} truth {t['true']:+.2f} D "
                          f"{t['D_range'][0]:+.1f}..{t['D_range'][1]:+.1f} DAC-line jumps (s, ms) "
                          f"{t['jumps']}")
        if kept is None:
            print(f"run {i + 1}: no truth (no taps matched)")
            continue
        err = offset - kept["true"]
        rows.append((err, kept, offset, spread))
        if args.debug:
            for j, f in enumerate(sorted(root.glob(f"cal{i}.run*.npz"))):
                shutil.copy(f, Path(args.debug) / f.name)
            (Path(args.debug) / f"cal{i}.robot.json").write_text(
                json.dumps({"runs": runs, "wall_minus_perf": wall_perf}))
        print(f"run {i + 1:2d} (load {load:.2f}): offset {offset:+6.2f} ms (spread ±{spread:.2f}, "
              f"{len(runs)} run{'s' if len(runs) > 1 else ''}"
              f"{'' if gap is None else f'; a gap before click {gap}'}); truth {kept['true']:+6.2f} ms "
              f"-> error {err:+6.2f} ms | robot late {kept['late']:.2f} ms, stamp delay "
              f"{kept['s']:.2f} ms, DAC line - monitor "
              f"{kept['D']:+.2f} ms, app pairing - wall {kept['pair_err']:+.2f} ms "
              f"(range {kept['pair_err_range'][0]:+.2f}..{kept['pair_err_range'][1]:+.2f})",
              flush=True)
    if rows:
        errs = [r[0] for r in rows]
        offs = [r[2] for r in rows]
        ds = [r[1]["D"] for r in rows]
        ok = sum(abs(e) <= 0.5 for e in errs)
        print(f"{len(rows)} calibrations: error median {statistics.median(errs):+.2f} ms, "
              f"worst {max(errs, key=abs):+.2f} ms, sd {statistics.pstdev(errs):.2f} ms; "
              f"within ±0.5 ms of the truth: {ok} of {len(rows)}   (target: 10 of 10)")
        print(f"  offsets {min(offs):+.1f} .. {max(offs):+.1f} ms (spread {max(offs) - min(offs):.1f} ms); "
              f"DAC line - monitor per stream {min(ds):+.2f} .. {max(ds):+.2f} ms; "
              f"load average now {os.getloadavg()[0]:.2f}")


def board(args, root: Path, env: dict, obs: Observer, keys: Keys, procs: list) -> None:
    """Step 3 with ``--board``: clicks on the practice board (see the module docstring)."""
    from audio.voice import ToneVoice
    from reader.practice import board as B
    from reader.practice import headless
    from reader.practice.match import Seat
    from reader.practice.window import SIZE

    log = root / "practice.jsonl"
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("none")}, args.seed,
                           ToneVoice(), cards=50,
                           reading={"speed": 2.0, "ma_ms": 2500, "take_ms": 1000,
                                    "yoin_ms": 300, "joka": False})
    headless.save(m, log)
    mine = set(m.board["A"])
    kami = {s.poem: s for s in m.plan.segments if s.kind == "kami" and isinstance(s.poem, int)}
    # the window's layout, mirrored: the same placement; a taken card leaves its place empty
    terr = B.place(m.board["A"], random.Random(f"{args.seed}/place"), universe=m.plan.universe)
    vp = B.kyogi_viewport(SIZE, solo=True)
    p = subprocess.Popen([sys.executable, "-c", BOOT, "practice", "--log", str(log), "--resume",
                          "--voice", "tone", "--device", "pulse", "--memorize", "0",
                          "--timing-details"],
                         cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    procs.append(p)
    keys.focus(p.pid)
    time.sleep(1.0)  # (the first paint)
    ox, oy = keys.origin(p.pid)
    truth_rng = random.Random(1)
    obs.gap_s = 1.8  # only a 上の句 (calibration's clicks are 0.6 s apart: 0.2 s there)
    base = len(obs.onsets)
    keys.press("space")  # arranged; 0 min of memorisation: the reading starts
    truths: dict[int, float] = {}
    for i, poem in enumerate(m.order):
        if len(truths) >= args.taps:
            break
        n_start = obs.wait_onset(base + i + 1, timeout=60)  # read i's 上の句
        if poem not in mine:
            continue  # a karafuda: no touch
        k = kami[poem]
        box = next(c for c in vp.boxes(B.kyogi_board({"A": terr}, "A")) if c.poem == poem)
        keys.move(ox + round(box.rect.cx), oy + round(box.rect.cy))
        n_dec = n_start + (k.decisive - k.start)
        r_true = truth_rng.uniform(250, 600)
        sleep_until(obs.model()["off"] + n_dec / RATE + r_true / 1000)
        keys.click()
        truths[poem] = r_true
        terr = B.remove(terr, poem)
    # every clicked read logged, then quit (q)
    end = time.monotonic() + 60
    while True:
        lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        if sum(1 for r in lines[1:] if r["read"] in truths) >= len(truths):
            break
        if time.monotonic() > end:
            raise SystemExit("the last click's read was not logged")
        time.sleep(0.1)
    keys.press("q")
    out, _ = p.communicate(timeout=60)
    errs, bad = [], []
    for r in lines[1:]:
        if r["read"] not in truths:
            continue
        t = next((t for t in r.get("timing", {}).get("touches", []) if t["player"] == "A"), None)
        if t is None or t["verdict"] != "take" or t["card"] != r["read"]:
            bad.append((r["read"], t))
            continue
        errs.append(t["reaction_ms"] - truths[r["read"]])
    for ln in out.strip().splitlines():
        if ln.startswith(("window ", "get ready:", "karuta: audio", "karuta: no calibration")):
            print("board:", ln)
    print(f"click -> reported reaction (practice board, alone, 50 cards), {len(errs)} takes "
          f"of {len(truths)} clicks" + (f"; NOT taken: {bad}" if bad else ""))
    if errs:
        print(f"  error median {statistics.median(errs):+.2f} ms, sd {statistics.pstdev(errs):.2f} ms, "
              f"worst {max(errs, key=abs):+.2f} ms   (target: median ±3, sd ≤ 1, worst ≤ 3)")
        print("  errors:", " ".join(f"{e:+.1f}" for e in errs))


if __name__ == "__main__":
    main()
