#!/usr/bin/env python3
"""The web drill's touch timing: a touch's plan frame, as the page maps it, against the frame
the sound server played at that instant.

    python scripts/bench_web.py [--cards 20] [--seed 1]

``karuta drill speed --web`` (the tone voice) serves a headless Chromium (Debian's, over its
DevTools pipe: tests/cdp.py) on ``http://karuta.test:PORT`` (mapped to 127.0.0.1: an insecure
origin, as a phone on the LAN has).  The page plays into this bench's own PulseAudio null sink;
an ear on the sink's monitor (``testbed.ear.Ear``: PortAudio capture, each onset placed by the
capture's ADC times, within 0.5 ms of a stream's DAC times) hears each 上の句 begin.  For each
card a touch is dispatched (``Input.dispatchTouchEvent`` with its ``timestamp``) at a chosen
instant 150-450 ms after that onset: the frame the sink played then is the 上の句's first frame
plus the time since its onset; the page's frame is the one its ``touch`` message carries
(``pointerdown``'s ``timeStamp`` → AudioContext time by its fit of ``getOutputTimestamp()`` →
plan frame).  The difference (ms) is the error of the page's mapping, the browser's and the
sound server's path included; calibration removes a constant, not this spread.  Target: within
±3 ms.  The same touches are mapped again with other fits of the output clock (the pairs the
page had at that touch), to say which fit the page should use.

Needs: pulseaudio, pactl, chromium.
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

KARUTA = str(Path(sys.executable).parent / "karuta")


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
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = b.js(expr)
        if v:
            return v
        time.sleep(0.02)
    raise TimeoutError(f"the page did not get to {expr}: " + b.js(
        "JSON.stringify([karuta.phase, karuta.refused, document.getElementById('status')"
        ".textContent, karuta.read, karuta.sent.slice(-3)])"))


def spread(xs: list[float], within: float) -> str:
    a = sorted(abs(x) for x in xs)
    if not a:
        return "no touches"
    share = sum(x <= within for x in a) / len(a)
    return (f"{share:.0%} within ±{within:g} ms · median {statistics.median(xs):+.2f} ms · "
            f"90 % |err| {a[int(0.9 * (len(a) - 1))]:.2f} ms · worst {a[-1]:.2f} ms "
            f"(n {len(a)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cards", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="a line for each touch")
    args = ap.parse_args()

    from testbed.cdp import Browser
    from testbed.ear import Ear
    from testbed.sound import PulseServer

    from audio.voice import ToneVoice
    from reader.drills.grab import drill_plan

    rng = __import__("random").Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="karuta-bench-web-"))
    pulse = PulseServer(sink="bench", root=tmp / "pulse", keepalive=False)
    env = pulse.env
    procs = []
    browser = ear = None
    try:
        cards = ["--poems", "1-100", "--cards", str(args.cards), "--seed", str(args.seed),
                 "--take", "1", "--ma", "0.6"]
        drill = subprocess.Popen(
            [KARUTA, "drill", "speed", "--web", "--address", "127.0.0.1", "--port", "0",
             "--voice", "tone", *cards],
            env=dict(env, KARUTA_DATA_DIR=str(tmp / "data"),
                     KARUTA_CONFIG_DIR=str(tmp / "config")),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        procs.append(drill)
        url = None
        for line in drill.stdout:
            m = re.search(r"same Wi-Fi\): (\S+)", line)
            if m:
                url = m.group(1).replace("127.0.0.1", "karuta.test")
                break
        if url is None:
            sys.exit("karuta did not print its address")
        threading.Thread(target=lambda: [None for _ in drill.stdout], daemon=True).start()
        ear = Ear("bench", env, 0.25)
        ear.listening.wait(10)
        browser = Browser(tmp / "profile", ["--autoplay-policy=no-user-gesture-required",
                                            "--host-resolver-rules=MAP karuta.test 127.0.0.1"],
                          env=env)
        browser.load(url, 390, 844, touch=True)
        js_wait(browser, "karuta.phase === 'join'")
        plan = drill_plan(ToneVoice(), args.seed, poems=list(range(1, 101)), cards=args.cards,
                          ma_ms=600, take_ms=1000)
        kami = [s for s in plan.segments if s.kind == "kami"]
        rate = plan.sample_rate
        js_wait(browser, "document.getElementById('start') !== null")
        r = browser.js("(() => { const r = document.getElementById('start')"
                       ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + 20]; })()")
        browser.touch(r[0], r[1])
        errors: dict[str, list[float]] = {"page": [], "median": [], "p10": [], "min": [],
                                          "linear": []}
        skipped = gapped = refused = 0
        starts: list[float] = []  # each 上の句's onset at the sink - where the page had it (ms)
        for i, seg in enumerate(kami):
            # the ear's onset of this 上の句: the first after the page's own instant for it
            # less 100 ms (which sound is which; a stall of the browser's sound moves it
            # later, a dropout of the sink's stream makes an "onset" inside a sound)
            want = js_wait(browser, f"karuta.timeline.instantOf({seg.start}) !== null && "
                                    f"karuta.epochOfFrame({seg.start})") / 1000
            want_perf = want - epoch_minus_perf()
            try:
                onset = ear.wait(1, after=want_perf - 0.1, timeout=30)
            except TimeoutError:
                onset = None
            if onset is not None and onset - want_perf < 2.0:
                starts.append((onset - want_perf) * 1000)
            else:
                skipped += 1  # (no onset heard within 2 s of it: no reference for this card)
                onset = None
            delay = rng.uniform(0.15, 0.45)
            if onset is None:
                base = want_perf
            else:
                base = onset
            at_perf = base + delay
            at = at_perf + epoch_minus_perf()
            while time.perf_counter() < at_perf + 0.002:
                time.sleep(0.001)
            browser.touch(195, 420, at=at)
            try:
                sent = js_wait(browser, f"(() => {{ const m = karuta.sent.find(m => m.t === "
                                        f"'touch' && m.read === {i}), d = karuta.touches.find("
                                        f"t => t.read === {i}); return m && d ? "
                                        f"JSON.stringify([m, d]) : null; }})()", timeout=5)
                card = js_wait(browser, f"karuta.read > {i} ? 'gone' : (() => {{ const c = "
                                        "document.querySelector('#choices .card'); if (!c) "
                                        "return null; const r = c.getBoundingClientRect(); "
                                        "return [r.x + r.width / 2, r.y + r.height / 2]; })()",
                               timeout=5)
            except TimeoutError:
                card = None
            if card is None or card == "gone":  # (the host did not take the touch: the page
                refused += 1                     # thought it outside the card)
                js_wait(browser, f"karuta.read > {i} || karuta.phase === 'end'", timeout=30)
                continue
            import json

            msg, dbg = json.loads(sent)[:2]
            browser.touch(*card)
            js_wait(browser, f"karuta.read > {i} || karuta.phase === 'end'")
            if "gap_ms" in msg:
                gapped += 1  # (the page said its sound had a gap: not timed)
            if onset is None or "gap_ms" in msg:
                continue
            sink_frame = seg.start + delay * rate
            page_frame = dbg["frame"]
            errors["page"].append((page_frame - sink_frame) * 1000 / rate)
            if args.verbose:
                print(f"  card {i + 1}: onset {onset:.4f} +{delay * 1000:.0f} ms: page frame "
                      f"{page_frame:.0f}, sink {sink_frame:.0f}: {errors['page'][-1]:+.2f} ms")
            # the same touch through other fits of the page's output-clock pairs
            offs = sorted(dbg["window"])
            anchor = dbg["anchor"]
            pairs = np.array(dbg["pairs"], dtype=np.float64).reshape(-1, 2)
            slope, icpt = np.polyfit(pairs[:, 0] - pairs[-1, 0], pairs[:, 1], 1)
            lin = dbg["stamp"] / 1000 - (icpt + slope * (dbg["stamp"] / 1000 - pairs[-1, 0]))
            for name, off in (("median", offs[len(offs) // 2]),
                              ("p10", offs[int(0.1 * (len(offs) - 1))]), ("min", offs[0]),
                              ("linear", lin)):
                t = dbg["stamp"] / 1000 - off
                f = anchor["frame"] + (t - anchor["at"]) * rate
                errors[name].append((f - sink_frame) * 1000 / rate)
        print(f"bench_web: {len(kami)} touches, each 150-450 ms after a 上の句's onset at the "
              f"sink (headless Chromium {browser.js('navigator.userAgent').split('Chrome/')[-1].split(' ')[0]}, "
              f"AudioContext {browser.js('karuta.ctx.sampleRate')} Hz, "
              f"baseLatency {browser.js('karuta.ctx.baseLatency') * 1000:.1f} ms, "
              f"outputLatency {browser.js('karuta.ctx.outputLatency') * 1000:.1f} ms)")
        print(f"  touch frame - frame the sink played then (the page's fit): "
              f"{spread(errors['page'], 3.0)}")
        if errors["page"]:
            const = statistics.median(errors["page"])
            print(f"    less its median ({const:+.2f} ms, a constant: calibration's): "
                  f"{spread([e - const for e in errors['page']], 3.0)}")
        print(f"  each 上の句's onset at the sink - the instant the page had it heard: "
              f"{spread(starts, 3.0)}")
        print(f"  ({skipped} of {len(kami)} cards with no onset at the sink within 2 s of the "
              f"page's instant: not counted; {gapped} touches the page itself said were not "
              f"timed, its output clock having moved > 5 ms since the 上の句 began; {refused} "
              f"touches the host did not take (mapped outside their card))")
        print(f"  load average during the run: {' '.join(open('/proc/loadavg').read().split()[:3])}")
        for name in ("median", "p10", "min", "linear"):
            what = ("a straight line fitted to" if name == "linear"
                    else f"the {name} offset of")
            print(f"    the same touches, context time by {what} the page's last 64 pairs: "
                  f"{spread(errors[name], 3.0)}")
            if errors[name]:
                c = statistics.median(errors[name])
                print(f"      around its median ({c:+.2f} ms): "
                      f"{spread([e - c for e in errors[name]], 3.0)}")
        print("  command: python scripts/bench_web.py " + " ".join(sys.argv[1:]))
    finally:
        if browser is not None:
            browser.close()
        if ear is not None:
            ear.close()
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        pulse.close()


if __name__ == "__main__":
    main()
