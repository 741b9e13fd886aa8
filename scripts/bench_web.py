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
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from testbed.web import (WebApp, chromium_line, epoch_minus_perf, js_wait, load_average,
                         onset_of, sleep_until_perf, spread, web_browser)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cards", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="a line for each touch")
    args = ap.parse_args()

    from testbed.ear import Ear
    from testbed.sound import PulseServer

    from audio.voice import ToneVoice
    from reader.drills.grab import drill_plan

    rng = __import__("random").Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="karuta-bench-web-"))
    pulse = PulseServer(sink="bench", root=tmp / "pulse", keepalive=False)
    env = pulse.env
    app = browser = ear = None
    try:
        cards = ["--poems", "1-100", "--cards", str(args.cards), "--seed", str(args.seed),
                 "--take", "1", "--ma", "0.6"]
        app = WebApp(["drill", "speed", "--voice", "tone", *cards],
                     dict(env, KARUTA_DATA_DIR=str(tmp / "data"),
                          KARUTA_CONFIG_DIR=str(tmp / "config")))
        ear = Ear("bench", env, 0.25)
        ear.listening.wait(10)
        browser = web_browser(tmp / "profile", env)
        browser.load(app.url, 390, 844, touch=True)
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
            onset, want_perf = onset_of(ear, browser, seg.start)
            if onset is not None:
                starts.append((onset - want_perf) * 1000)
            else:
                skipped += 1  # (no onset heard within 2 s of it: no reference for this card)
            delay = rng.uniform(0.15, 0.45)
            if onset is None:
                base = want_perf
            else:
                base = onset
            at_perf = base + delay
            at = at_perf + epoch_minus_perf()
            sleep_until_perf(at_perf + 0.002)
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
              f"sink ({chromium_line(browser)})")
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
        print(f"  load average during the run: {load_average()}")
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
        if app is not None:
            app.end(0)
        pulse.close()


if __name__ == "__main__":
    main()
