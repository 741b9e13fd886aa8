#!/usr/bin/env python3
"""Stress benchmark: a reading and the drill window under load, against what the sink heard.

    python scripts/bench_stress.py [--cards 8] [--voice synth|tone] [--workers 2]
                                   [--in-process] [--no-stamper]

Starts its own PulseAudio null sink and Xvfb (temporary folders), then:

  1. ``--workers`` CPU-bound processes (normal priority) keep both cores busy;
  2. an app process plays a kyogi reading (``--cards``, auto, short pauses) on the null sink
     through the commands' own output (``reader.reading.player.open_output``: the audio process,
     or ``--in-process``: the stream's callback in the app) while it runs the speed drill's
     window (``reader.drills.speed.WindowFront``) with a *full-screen* redraw every frame;
  3. this process records the sink's monitor (``parec``) and presses keys and clicks
     (XTest, python-xlib) into the window at random moments, noting when each was made (the
     moment its request is written; the pressing thread runs at realtime priority where it
     may, as a finger does not wait for a CPU: at normal priority a press's own time slice
     wait, 3-5 ms under the two workers, was counted as stamping delay);
  4. at the end it prints: underruns (the app's counts), the sink capture against the
     rendered reading (bit-identical or not; silence inserted / samples missing, found by
     realigning at every mismatch), window stamping delay (press -> stamp: median, p99,
     max; and how many came from the X stamping process), the window thread's poll gaps,
     and the load average.

Timing on this shared machine is noisy: quote the load with the figures.
Needs: pulseaudio, parec, Xvfb, python-xlib.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from testbed.sound import RATE, PulseServer
from testbed.xserver import press_realtime, start_xvfb, xtest_press

REPO = Path(__file__).resolve().parent.parent

APP = textwrap.dedent("""
    import json, os, sys, time
    from audio.render import PlanCursor
    from reader.reading.voices import make_voice
    from reader.reading.engine import build_plan
    from reader.reading.settings import preset
    from reader.reading.player import open_output
    from reader.drills.speed import WindowFront
    args = json.loads(sys.argv[1])
    voice = make_voice(args["voice"])
    plan = build_plan(preset("kyogi", cards=args["cards"], ma_ms=1000, take_ms=1500,
                             yoin_ms=1000), args["seed"], voice)
    out = open_output("sounddevice", "pulse", plan.sample_rate)
    front = WindowFront(title="karuta stress", fps=60)
    events = []
    fill = []  # audio queued ahead of the device, ms (every 6th frame, until the reading's end is queued)
    with front:
        import pygame
        front.message("stress")
        print("ready", pygame.display.get_wm_info()["window"], plan.seconds, flush=True)
        sys.stdin.readline()  # the bench has started its recorder
        out.play(PlanCursor(plan, voice))
        n = 0
        while out.is_active:
            front._dirty = True  # a full-screen redraw every frame
            front.big = str(n // 60)
            n += 1
            fd = out._feeder
            head = getattr(fd.cursor, "state_at_head", None) if fd is not None else None
            if fd is not None and n % 6 == 0 and not (head is not None and head.finished):
                fill.append(len(fd.q) * out.blocksize * 1000.0 / out.sample_rate)
            for e in front.poll(0.004):
                events.append([e.ns, e.kind, e.source])
        out.wait(timeout=1)
        lag = sorted(front.taps.lag)
        res = {{"underruns": out.underruns, "underflows": out.underflows, "xruns": out.xruns,
               "lead_xruns": getattr(out, "lead_xruns", 0), "events": events,
               "poll": front.taps.stats.describe(), "fps": front.loop.fps_measured(),
               "draw": front.loop.draw_stats(), "stamping": front.taps.describe_stamping(),
               "process": getattr(out, "process", False), "fill": fill,
               "xstamps": list(front.taps.stamper.received) if front.taps.stamper else []}}
    # to a file: a long reading's results outgrow a pipe's buffer, and a print blocked on it
    # kept the app alive (and the bench pressing keys nobody read) until the bench read it
    with open(args["out"], "w") as f:
        json.dump(res, f)
""")


def busy_worker():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def compare(captured: np.ndarray, ref: np.ndarray, max_events: int = 200) -> dict:
    """Walk the rendered reading through the capture: where they stop agreeing, find where
    the reading continues (a probe of the next sound, searched near the expected place) and
    count the silence inserted (+) or the samples missing (−)."""
    nz = np.flatnonzero(ref)
    if not nz.size:
        return {"error": "silent reference"}

    def find(probe_at: int, near: int, span: int) -> int | None:
        probe = ref[probe_at:probe_at + 480]
        lo, hi = max(0, near - span), min(captured.shape[0] - 480, near + span)
        if hi <= lo or not probe.any():
            return None
        k = int(np.flatnonzero(probe)[0])
        for c in np.flatnonzero(captured[lo + k:hi + k] == probe[k]):
            s = lo + int(c)
            if np.array_equal(captured[s:s + 480], probe):
                return s
        return None

    start = find(int(nz[0]), 0, captured.shape[0])
    if start is None:
        return {"error": "the reading was not found in the capture"}
    off = start - int(nz[0])
    i = int(nz[0])
    events = []
    while i < ref.shape[0] and len(events) < max_events:
        n = min(ref.shape[0] - i, captured.shape[0] - (i + off))
        if n <= 0:
            break
        a, b = ref[i:i + n], captured[i + off:i + off + n]
        bad = np.flatnonzero(a != b)
        if not bad.size:
            i += n
            break
        m = i + int(bad[0])
        # the next sound after the mismatch
        nxt = np.flatnonzero(ref[m:] != 0)
        if not nxt.size:
            break
        p = m + int(nxt[0]) + 240
        got = find(p, p + off, RATE)
        if got is None:
            events.append({"at_s": round(m / RATE, 3), "shift": None})
            break
        new_off = got - p
        events.append({"at_s": round(m / RATE, 3), "shift": new_off - off})
        off = new_off
        i = p
    covered = i >= ref.shape[0] or (i + off) >= captured.shape[0]
    shifts = [e["shift"] for e in events if e["shift"] is not None]
    return {"identical": not events and covered, "events": events,
            "inserted": sum(s for s in shifts if s > 0), "missing": -sum(s for s in shifts if s < 0),
            "complete": covered and all(e["shift"] is not None for e in events)}


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cards", type=int, default=8)
    ap.add_argument("--voice", default="synth")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--in-process", action="store_true", help="the stream's callback in the app")
    ap.add_argument("--no-stamper", action="store_true", help="no X stamping process")
    ap.add_argument("--queue-ms", type=float, default=None,
                    help="audio made ahead of the device (KARUTA_AUDIO_QUEUE_MS; default 150)")
    ap.add_argument("--ahead-ms", type=float, default=None,
                    help="audio process: how far the feeder runs ahead (KARUTA_AUDIO_AHEAD_MS; "
                         "default 3000, 0: only the queue)")
    ap.add_argument("--keep", default=None, help="keep the capture and rendered file here")
    ap.add_argument("--x-rt", action="store_true",
                    help="give the X server (Xvfb) realtime priority: is press -> X delivered "
                         "the X server waiting for the CPU?")
    ap.add_argument("--server-normal", action="store_true",
                    help="leave the sound server and the recorder at normal priority (a desktop's "
                         "PulseAudio/PipeWire runs at realtime priority through rtkit)")
    a = ap.parse_args()
    for tool in ("pulseaudio", "parec", "Xvfb"):
        if not shutil.which(tool):
            raise SystemExit(f"bench_stress: {tool} is missing")
    root = Path(tempfile.mkdtemp(prefix="karuta-stress-"))
    procs: list[subprocess.Popen] = []
    try:
        server = PulseServer(root=root / "pulse", keepalive=False)
        pulse, env = server.proc, server.env
        procs.append(pulse)
        xvfb, disp = start_xvfb("1280x800")
        procs.append(xvfb)
        env = dict(env, DISPLAY=disp, PYGAME_HIDE_SUPPORT_PROMPT="1",
                   KARUTA_AUDIO_PROCESS="0" if a.in_process else "1",
                   KARUTA_WINDOW_STAMPER="0" if a.no_stamper else "1")
        if a.queue_ms:
            env["KARUTA_AUDIO_QUEUE_MS"] = str(a.queue_ms)
        if a.ahead_ms is not None:
            env["KARUTA_AUDIO_AHEAD_MS"] = str(a.ahead_ms)
        env.pop("SDL_VIDEODRIVER", None)
        keep = subprocess.Popen(["parec", "-d", "ci_sink.monitor", "--raw", "--latency-msec=5"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(keep)
        # the reference: the same plan rendered (warms the voice cache too)
        from audio.render import quantize16, render
        from reader.reading.voices import make_voice
        from reader.reading.engine import build_plan
        from reader.reading.settings import preset

        voice = make_voice(a.voice)
        plan = build_plan(preset("kyogi", cards=a.cards, ma_ms=1000, take_ms=1500,
                                 yoin_ms=1000), a.seed, voice)
        ref = quantize16(render(plan, voice))
        app = subprocess.Popen([sys.executable, "-c", APP.format(repo=str(REPO)),
                                json.dumps({"voice": a.voice, "cards": a.cards, "seed": a.seed,
                                            "out": str(root / "app.json")})],
                               cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        procs.append(app)
        first = app.stdout.readline().split()
        if not first or first[0] != "ready":
            raise SystemExit(f"bench_stress: the app did not start: {app.stderr.read()[-2000:]}")
        wid = int(first[1])
        xenv = dict(os.environ, DISPLAY=disp)
        subprocess.run(["xdotool", "windowfocus", "--sync", str(wid)], env=xenv, check=False)
        subprocess.run(["xdotool", "mousemove", "--window", str(wid), "480", "500"], env=xenv,
                       check=False)
        # the bench's own ear on the X server: the same raw-event listener the app's stamping
        # process runs, in a process of its own: when X delivered each press (so press ->
        # stamp splits into the X server's part and the app's)
        from reader.input.taps import _XHELPER, x_stamp_frames

        xobs = subprocess.Popen([sys.executable, "-c", _XHELPER, str(wid)], env=xenv,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, bufsize=0)
        procs.append(xobs)
        delivered: list[int] = []

        def listen_x():
            for kind, ns, detail in x_stamp_frames(xobs.stdout.fileno()):
                if kind == b"K" or (kind == b"B" and detail == 1):
                    delivered.append(ns)

        import threading

        threading.Thread(target=listen_x, daemon=True).start()
        workers = [busy_worker() for _ in range(a.workers)]
        procs += workers
        cap_path = root / "monitor.raw"
        rec = subprocess.Popen(["parec", "-d", "ci_sink.monitor", "--raw", "--format=s16le",
                                f"--rate={RATE}", "--channels=1", "--latency-msec=5",
                                str(cap_path)], env=env, stderr=subprocess.DEVNULL)
        procs.append(rec)
        rt = "normal priority"
        if not a.server_normal:  # as rtkit gives a desktop's sound server
            ok = all(subprocess.run(["chrt", "-a", "-f", "-p", "15", str(p.pid)],
                                    capture_output=True).returncode == 0
                     for p in (pulse, rec))
            rt = "realtime priority (as rtkit gives it)" if ok else \
                "normal priority (chrt was refused)"
        if a.x_rt:
            if subprocess.run(["chrt", "-f", "-p", "5", str(xvfb.pid)],
                              capture_output=True).returncode != 0:
                raise SystemExit("bench_stress: chrt was refused (--x-rt)")
            rt += "; X server at realtime priority"
        time.sleep(0.5)
        app.stdin.write("go\n")
        app.stdin.flush()
        from Xlib import display

        d = display.Display(disp)
        space = d.keysym_to_keycode(0x20)
        # (after every child was started: they would inherit it)
        rt_presser = press_realtime()
        rng = random.Random(a.seed)
        sent = []
        loads = []
        t_end = time.monotonic() + plan.seconds + 60
        while app.poll() is None and time.monotonic() < t_end:
            time.sleep(0.2 + rng.random() * 0.6)
            kind = "mouse" if rng.random() < 0.3 else "key"
            t0, t1 = xtest_press(d, kind, space if kind == "key" else 1)
            sent.append((t0, t1, kind))
            if len(sent) % 20 == 0:
                loads.append(os.getloadavg()[0])
        if rt_presser:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        rt += ("; presses made at realtime priority" if rt_presser
               else "; presses made at normal priority (refused realtime)")
        out, err = app.communicate(timeout=max(30, plan.seconds + 30))
        time.sleep(0.5)
        rec.terminate()
        rec.wait(timeout=5)
        for w in workers:
            w.terminate()
        if app.returncode != 0 or not (root / "app.json").exists():
            raise SystemExit(f"bench_stress: the app failed: {err[-2000:]}")
        res = json.loads((root / "app.json").read_text())
        captured = np.fromfile(cap_path, np.int16)
        cmp = compare(captured, ref)
        if a.keep:
            kd = Path(a.keep)
            kd.mkdir(parents=True, exist_ok=True)
            captured.tofile(kd / "monitor.raw")
            ref.tofile(kd / "rendered.raw")
        # stamping: pair the presses with the app's events in order
        # each stamp against the last press made before it (a press SDL dropped, or one made
        # after the app stopped reading, then pairs with nothing)
        evs = [e for e in res["events"] if e[1] in ("key", "mouse")]
        starts = [t0 for t0, _, _ in sent]
        delays, flushed = [], []
        import bisect

        late = []
        x_part, app_part = [], []  # press -> X delivered (the bench's listener), -> app stamp
        helper_part = []  # X delivered -> the app's stamping process stamped it
        xst = sorted(res.get("xstamps") or [])
        paired = set()
        for e in evs:
            k = bisect.bisect_right(starts, e[0]) - 1
            if k >= 0:
                paired.add(k)
                delays.append((e[0] - sent[k][0]) / 1e6)
                flushed.append((e[0] - sent[k][1]) / 1e6)
                nxt = starts[k + 1] if k + 1 < len(starts) else float("inf")
                j = bisect.bisect_left(delivered, sent[k][0])
                if j < len(delivered) and delivered[j] < nxt:
                    x_part.append((delivered[j] - sent[k][0]) / 1e6)
                    app_part.append((e[0] - delivered[j]) / 1e6)
                    h = bisect.bisect_left(xst, sent[k][0])
                    if h < len(xst) and xst[h] < nxt:
                        helper_part.append((xst[h] - delivered[j]) / 1e6)
                if delays[-1] > 2.0:
                    late.append(f"press {k + 1}/{len(sent)} ({sent[k][2]}, {e[2]}): "
                                f"{delays[-1]:.1f} ms" + (f" (X delivered after "
                                f"{x_part[-1]:.1f} ms)" if x_part and len(x_part) == len(delays)
                                else ""))
        n = len(delays)
        load = statistics.mean(loads) if loads else os.getloadavg()[0]
        print(f"stress: {a.cards}-card kyogi reading ({plan.seconds:.0f} s, {a.voice} voice), "
              f"drill window redrawn in full every frame, {a.workers} CPU-bound workers; "
              f"audio {'in the app (callback thread)' if not res['process'] else 'in the audio process'}; "
              f"load average {load:.1f} (1 min, during the run); sound server and recorder at {rt}; "
              f"queue {a.queue_ms or 150:.0f} ms, running ahead "
              f"{3000 if a.ahead_ms is None else a.ahead_ms:.0f} ms")
        print(f"  underruns: {res['underruns']} (feeder late: {res['underflows']}, device: "
              f"{res['xruns']}; device hiccups in the lead-in silence: {res['lead_xruns']})")
        if "error" in cmp:
            print(f"  sink capture vs rendered file: {cmp['error']}")
        else:
            what = "bit-identical" if cmp["identical"] else \
                f"{len(cmp['events'])} places differ"
            print(f"  sink capture vs rendered file: {what}; silence inserted {cmp['inserted']} "
                  f"samples ({cmp['inserted'] / RATE * 1000:.1f} ms), missing {cmp['missing']} "
                  f"samples{'' if cmp['complete'] else ' (could not realign everywhere)'}")
            for e in cmp["events"][:8]:
                print(f"    at {e['at_s']:.3f} s: {e['shift']:+d} samples" if e["shift"] is not None
                      else f"    at {e['at_s']:.3f} s: lost the reading")
        if delays:
            print(f"  window stamping, press -> stamp over {n} presses ({len(sent)} sent): "
                  f"median {statistics.median(delays):.2f} ms, p99 {pct(delays, 0.99):.2f} ms, "
                  f"max {max(delays):.2f} ms (from the press's flush: median "
                  f"{statistics.median(flushed):.2f}, max {max(flushed):.2f} ms)")
        if x_part:
            print(f"    of which press -> X delivered (the bench's own raw-event listener) over "
                  f"{len(x_part)}: median {statistics.median(x_part):.2f}, p99 "
                  f"{pct(x_part, 0.99):.2f}, max {max(x_part):.2f} ms; X delivered -> the app's "
                  f"stamp: median {statistics.median(app_part):.2f}, p99 "
                  f"{pct(app_part, 0.99):.2f}, max {max(app_part):.2f} ms")
        if helper_part:
            print(f"    X delivered -> the app's stamping process read it: median "
                  f"{statistics.median(helper_part):.2f}, p99 {pct(helper_part, 0.99):.2f}, max "
                  f"{max(helper_part):.2f} ms (the rest of the app's part: pairing with SDL's "
                  f"event)")
        unseen = [k for k in range(len(sent)) if k not in paired]
        if unseen:
            t_first = sent[0][0]
            print(f"  presses the app did not report: {len(unseen)} ("
                  f"{sum(sent[k][2] == 'key' for k in unseen)} keys, "
                  f"{sum(sent[k][2] == 'mouse' for k in unseen)} clicks) at "
                  + ", ".join(f"{(sent[k][0] - t_first) / 1e9:.1f}" for k in unseen[:12])
                  + f"{' …' if len(unseen) > 12 else ''} s of {(sent[-1][0] - t_first) / 1e9:.0f} s"
                  f"; {len(evs) - len(paired)} reports paired with a press already paired")
        if late:
            print(f"  late stamps (> 2 ms): {'; '.join(late[:10])}")
        print(f"  {res['stamping']}")
        fl = res.get("fill") or []
        if fl:
            print(f"  audio queued ahead of the device (sampled {len(fl)} times): min "
                  f"{min(fl):.0f} ms, p1 {pct(fl, 0.01):.0f} ms, median {pct(fl, 0.5):.0f} ms, "
                  f"max {max(fl):.0f} ms; under 50 ms {sum(f < 50 for f in fl)} times")
        p = res["poll"]
        print(f"  window thread: {res['fps']:.1f} fps, draw median {res['draw'].get('median_ms')} "
              f"ms, max {res['draw'].get('max_ms')} ms; poll gaps median {p.get('median_ms')} ms, "
              f"p99 {p.get('p99_ms')} ms, max {p.get('max_ms')} ms (the drawing thread: input "
              f"is stamped off it)")
        # the targets, one verdict each
        sound_ok = res["underruns"] == 0 and cmp.get("identical") is True
        stamp_ok = bool(delays) and pct(delays, 0.99) <= 1.0 and max(delays) <= 2.0
        print(f"  targets: sound {'met' if sound_ok else 'NOT met'} (0 underruns, the capture "
              f"bit-identical); press -> stamp {'met' if stamp_ok else 'NOT met'} (p99 <= 1 ms, "
              f"max <= 2 ms)")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
