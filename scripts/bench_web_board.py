#!/usr/bin/env python3
"""The practice board page's figures (issue 36's targets), in a real browser on this machine.

    python scripts/bench_web_board.py [--cards 25] [--seed 3] [--delay 80 --jitter 20]
                                      [--cut 5] [--reads N] [--verbose] [--keep]

``karuta practice --web --vs human`` (two players at one tablet, the tone voice) serves a
headless Chromium at 1024×1366 with touch emulation (Debian's, over its DevTools pipe) on
``http://karuta.test:PORT`` (an insecure origin, as a LAN address is), through
``testbed.relay.Relay`` holding every chunk ``delay ± jitter`` ms each way (the page's link:
its WebSocket and its clips).  The page plays into this bench's own PulseAudio null sink; an
ear on the sink's monitor (``testbed.ear.Ear``: onsets placed by the capture's ADC times)
hears each 上の句 begin.  Reads whose card is on the board take turns:

(a) **one touch**: the card touched at an instant 150-450 ms after its 上の句's onset at the
    sink (``Input.dispatchTouchEvent`` with that ``timestamp``); the page's frame for it
    (``pointerdown``'s ``timeStamp`` → its output-clock fit → plan frame) against the frame
    the sink played then.  Target ±3 ms (a constant is calibration's).
(c) **two touches 10 ms apart**: the card's own side's player touches it directly, the other
    player swipes onto it from their half (stamped when the finger reaches it), one of them
    10 ms earlier (by turns), dispatched in that order or the later first (by turns).  Target:
    the earlier wins N of N.  Today both players are at one tablet (one page, one link: the
    relay's jitter delays both alike); "the later first" is as two devices whose links
    reorder them.
(d) **the link lost for 5 s**: once, as a 上の句 begins, the relay cuts the link and refuses
    it ``--cut`` s; the card is touched meanwhile (the page queues it); the page joins again
    by itself: how long after the link is back, and the pending read judged by the frame
    touched offline (the take the touch made), the match going on after it.

(touch-only) the touch-only mode's clock: each touch's instant on the laptop's clock, as the
    page's ClockSync (static/clocksync.js, pinging over the same link) gives it, against the
    true instant (the page and the laptop share CLOCK_MONOTONIC here), and the bound it
    states (half the sync's width).

(b) two browsers starting the same 上の句 within 5 ms needs two pages of one match: today's
    board takes one device ("another device is playing this board": checked here with a second
    page), so it is reported as not measurable yet.  The measurement is built for any pages
    (``testbed.web.start_skew``: each page's sink heard by its own ear, each 上の句's onset,
    the difference); run here on the one page heard by two ears, it gives its own floor.

The table at the end gives each figure, the target, the load average and the command line.
Needs: pulseaudio, pactl, chromium.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from testbed.web import (WebApp, chromium_line, epoch_minus_perf, js_wait, load_average,
                         onset_of, sleep_until_perf, spread, start_skew, web_browser)

TABLET = (1024, 1366)
#: the tone voice at twice its pace, short waits (the karafuda pass quickly); touches under
#: 5 ms apart are simultaneous (the default 10 would make (c)'s pairs a tie)
QUICK = ("--voice", "tone", "--no-joka", "--speed", "2", "--ma", "0.6", "--yoin", "0.3",
         "--take", "1", "--simultaneous", "5")
#: the card, its side (the player whose territory holds it), or null: not on the board
WHERE = ("(p => {{ const t = karuta.view && karuta.view.board.territories; if (!t) return null;"
         " for (const s of ['A', 'B']) if (t[s] && t[s].rows.flat(2).includes(p)) return s;"
         " return null; }})({})")


def centre(b, selector: str) -> tuple[float, float]:
    r = b.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) "
             "return null; const r = e.getBoundingClientRect(); "
             "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    if r is None:
        raise TimeoutError(f"no {selector} on the page")
    return r[0], r[1]


def mid_edge(b, player: str) -> tuple[float, float]:
    """A point in the middle strip, on ``player``'s half of it (A: near), on no card: where a
    swipe of that player starts."""
    top, bottom = b.js("(() => { const r = document.getElementById('mid')"
                       ".getBoundingClientRect(); return [r.top, r.bottom]; })()")
    return 40.0, (bottom - 3 if player == "A" else top + 3)


def swipe_points(b, start, end, t0: float, t1: float, finger: int) -> None:
    """Finger ``finger`` down at ``start`` at ``t0`` (s since the epoch), moved to ``end``
    arriving at ``t1``, lifted."""
    call = b.call
    call("Input.dispatchTouchEvent", type="touchStart",
         touchPoints=[{"x": start[0], "y": start[1], "id": finger}], timestamp=t0)
    call("Input.dispatchTouchEvent", type="touchMove",
         touchPoints=[{"x": end[0], "y": end[1], "id": finger}], timestamp=t1)
    call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[], timestamp=t1 + 0.03)


def tap(b, at_xy, t: float, finger: int) -> None:
    b.call("Input.dispatchTouchEvent", type="touchStart",
           touchPoints=[{"x": at_xy[0], "y": at_xy[1], "id": finger}], timestamp=t)
    b.call("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[], timestamp=t + 0.03)


class Hung(Exception):
    """A read that did not close: the page's status line then."""


def settle_read(b, poem: int, timeout: float = 30) -> None:
    """Wait until ``poem``'s read is done: the card off the board and no send owed (a send
    owed at the page is made with the button: the highlighted card)."""
    end = time.monotonic() + timeout
    gone_at = None
    while time.monotonic() < end:
        over, gone, owed = b.js(f"[karuta.over !== null, {WHERE.format(poem)} === null, "
                                "!document.getElementById('send').hidden]")
        if over:
            return
        if owed:
            b.touch(*centre(b, "#send"))
            time.sleep(0.3)
            continue
        if gone:
            gone_at = gone_at or time.monotonic()
            if time.monotonic() - gone_at > 0.4:  # (no send shown since: none owed)
                return
        time.sleep(0.05)
    raise Hung(f"card {poem} still on the board {timeout:g} s after its touches: the page "
               "says " + repr(b.js("karuta.view && karuta.view.line_text")))


def second_page(tmp: Path, env: dict, url: str) -> str:
    """What today's board says to a second device (its own profile: another device id)."""
    b = web_browser(tmp / "profile2", env)
    try:
        b.load(url, 390, 844, touch=True)
        return js_wait(b, "karuta.refused", 20)
    except TimeoutError:
        return "(no refusal: a second page joined)"
    finally:
        b.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cards", type=int, default=25, help="cards a side")
    ap.add_argument("--reads", type=int, default=0,
                    help="stop after this many reads of cards on the board (0: the match's end)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--delay", type=float, default=80.0, help="the link's delay each way (ms)")
    ap.add_argument("--jitter", type=float, default=20.0, help="± this (ms)")
    ap.add_argument("--cut", type=float, default=5.0, help="the link lost this long (s; 0: no)")
    ap.add_argument("--verbose", action="store_true", help="a line for each read")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary folder (the match's log, the browser's profile)")
    args = ap.parse_args()

    from testbed.ear import Ear
    from testbed.relay import Relay
    from testbed.sound import PulseServer

    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="karuta-bench-web-board-"))
    log = tmp / "match.jsonl"
    pulse = PulseServer(sink="bench", root=tmp / "pulse", keepalive=False)
    env = dict(pulse.env, KARUTA_DATA_DIR=str(tmp / "data"),
               KARUTA_CONFIG_DIR=str(tmp / "config"))
    app = browser = ear = ear2 = relay = None
    skew: list[float] = []         # (b)'s measurement on one page heard by two ears (ms)
    single: list[float] = []       # (a) page frame - sink frame (ms)
    late: list[float] = []         # the same touches' 上の句: onset at the sink - page's instant
    starts: list[float] = []       # each 上の句's onset at the sink - the page's instant (ms)
    pairs: list[dict] = []         # (c)
    cut: dict = {}                 # (d)
    sync: list[tuple[float, float]] = []  # (touch-only) the laptop's time of a touch - truth,
    #                                         and the bound the page gave it (ms)
    skipped = 0
    try:
        app = WebApp(["practice", "--vs", "human", "--cards", str(args.cards), "--seed",
                      str(args.seed), *QUICK, "--log", str(log)], env)
        relay = Relay(app.port, args.delay / 1000, args.jitter / 1000, seed=args.seed)
        url = app.via(relay.port)
        ear = Ear("bench", pulse.env, 0.25)
        ear2 = Ear("bench", pulse.env, 0.25)  # (b): a second ear on the same sink
        ear.listening.wait(10)
        ear2.listening.wait(10)
        browser = web_browser(tmp / "profile", pulse.env)
        browser.load(url, *TABLET, touch=True)
        js_wait(browser, "karuta.phase === 'join'")
        refusal = second_page(tmp, pulse.env, url)
        browser.touch(*centre(browser, "#start"))
        js_wait(browser, "karuta.view && karuta.timeline.anchors.length > 0")
        rate = browser.js("karuta.welcome.rate")
        kami = browser.js("karuta.timeline.segs.filter(s => s.kind === 'kami')")
        turn = 0
        hung = None
        for seg in kami:
            if browser.js("karuta.over !== null") or (args.reads and turn >= args.reads):
                break
            try:
                poem = seg["poem"]
                side = browser.js(WHERE.format(poem))
                onset, want = onset_of(ear, browser, seg["start"], timeout=60)
                if onset is not None:
                    starts.append((onset - want) * 1000)
                    d = start_skew([ear, ear2], want)
                    if d is not None:
                        skew.append(d * 1000)
                if side is None:
                    continue  # (a karafuda: the reading goes on after its wait by itself)
                if onset is None:
                    skipped += 1
                    onset = want
                late_ms = (onset - want) * 1000
                card_xy = centre(browser, f".card[data-card='{poem}']")
                e2p = epoch_minus_perf()
                sink_frame = lambda t_perf: seg["start"] + (t_perf - onset) * rate  # noqa: E731
                if args.cut > 0 and not cut and turn >= 2:
                    # (d): the link cut just after the 上の句 began; the card touched offline
                    t_cut = time.perf_counter()
                    relay.cut(args.cut)
                    js_wait(browser, "!karuta.joined", 10)
                    t = onset + rng.uniform(0.3, 0.6)
                    sleep_until_perf(t + 0.002)
                    tap(browser, card_xy, t + e2p, 1)
                    queued = browser.js("karuta.queue.length")
                    js_wait(browser, "karuta.joined && karuta.tries === 0", args.cut + 30)
                    back = time.perf_counter() - (t_cut + args.cut)
                    got = browser.js(f"karuta.touches.filter(t => t.card === {poem})")
                    cut = {"poem": poem, "side": side, "queued": queued, "rejoin_s": back,
                           "err": (got[-1]["frame"] - sink_frame(t)) * 1000 / rate if got else None,
                           "frame": got[-1]["frame"] if got else None, "player": side}
                    settle_read(browser, poem, 60)
                    cut["next"] = browser.js(f"karuta.heardNow() > {seg['end']}")
                elif turn % 2 == 0:
                    # (a): one touch by the card's own side's player
                    t = onset + rng.uniform(0.15, 0.45)
                    sleep_until_perf(t + 0.002)
                    tap(browser, card_xy, t + e2p, 1)
                    got = js_wait(browser, f"karuta.touches.filter(t => t.card === {poem})", 10)
                    single.append((got[-1]["frame"] - sink_frame(t)) * 1000 / rate)
                    late.append(late_ms)
                    if got[-1].get("laptop"):  # (both clocks are CLOCK_MONOTONIC here)
                        sync.append(((got[-1]["laptop"][0] - t) * 1000,
                                     got[-1]["laptop"][1] * 1000))
                    if args.verbose:
                        print(f"  (a) card {poem}: {single[-1]:+.2f} ms")
                    settle_read(browser, poem)
                else:
                    # (c): two players, the same card, 10 ms apart; by turns which is earlier, and
                    # whether the later is dispatched (so sent) first
                    other = "B" if side == "A" else "A"
                    early = side if (turn // 2) % 2 == 0 else other
                    reverse = (turn // 4) % 2 == 1
                    t_early = onset + rng.uniform(0.2, 0.45)
                    t_of = {early: t_early, ({"A", "B"} - {early}).pop(): t_early + 0.010}
                    start = mid_edge(browser, other)
                    moves = {side: lambda: tap(browser, card_xy, t_of[side] + e2p, 1),
                             other: lambda: swipe_points(browser, start, card_xy,
                                                         t_of[other] + e2p - 0.05,
                                                         t_of[other] + e2p, 2)}
                    later = ({"A", "B"} - {early}).pop()
                    order = [later, early] if reverse else [early, later]
                    sleep_until_perf(t_early + 0.012)
                    for p in order:
                        moves[p]()
                    got = js_wait(browser, f"(() => {{ const g = karuta.touches.filter(t => t.card "
                                           f"=== {poem}); return g.length >= 2 ? g : null; }})()",
                                  10)
                    fr = {g["player"]: g["frame"] for g in got}
                    stamp = {g["player"]: g["stamp"] for g in got}
                    sync.extend(((g["laptop"][0] - t_of[g["player"]]) * 1000, g["laptop"][1] * 1000)
                                for g in got if g.get("laptop"))
                    pairs.append({"poem": poem, "early": early, "reverse": reverse,
                                  "apart_ms": (fr.get(later, 0) - fr.get(early, 0)) * 1000 / rate,
                                  "stamps_ms": stamp.get(later, 0) - stamp.get(early, 0),
                                  "err": [(fr[p] - sink_frame(t_of[p])) * 1000 / rate
                                          for p in fr]})
                    single.extend(pairs[-1]["err"])
                    late.extend([late_ms] * len(pairs[-1]["err"]))
                    settle_read(browser, poem)
                turn += 1
            except Hung as e:
                hung = f"{e}; karuta's last lines: {' | '.join(app.lines[-4:])}"
                break
        version = chromium_line(browser)
        load = load_average()
        if not args.reads and hung is None:
            js_wait(browser, "karuta.over !== null", 120)
        rc = app.end(15 if not args.reads and hung is None else 0)
    finally:
        if browser is not None:
            browser.close()
        for e in (ear, ear2):
            if e is not None:
                e.close()
        if app is not None:
            app.end(0)
        pulse.close()

    reads = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    reads = [r for r in reads if "read" in r]
    if args.keep:
        print(f"  (kept: {tmp})")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    took = {}
    for r in reads:
        took[r["read"]] = r["took"]
    for p in pairs:
        p["took"] = took.get(p["poem"])
        if args.verbose:
            print(f"  (c) card {p['poem']}: {p['early']} earlier by {p['apart_ms']:.2f} ms "
                  f"(stamps {p['stamps_ms']:.2f} ms; frame errors "
                  f"{', '.join(f'{e:+.2f}' for e in p['err'])} ms) "
                  f"({'later sent first' if p['reverse'] else 'in order'}): took {p['took']}")
    wins = [p for p in pairs if p["took"] == p["early"]]
    rev = [p for p in pairs if p["reverse"]]
    print(f"bench_web_board: kyogi, two players at one tablet (1024×1366), {args.cards} a "
          f"side, seed {args.seed}; the link {args.delay:g} ± {args.jitter:g} ms each way "
          f"(testbed.relay); {version}; karuta exited {rc}")
    rows = [("(a) touch frame − frame the sink played then", "±3 ms",
             spread(single, 3.0)),
            ("(a) the same, around its median (calibration's constant)", "±3 ms",
             spread([e - statistics.median(single) for e in single], 3.0) if single else "-"),
            ("(a) the same, reads heard within 10 ms of the page's instant", "±3 ms",
             (lambda xs: spread([e - statistics.median(xs) for e in xs], 3.0) + " around "
              + (f"{statistics.median(xs):+.2f} ms" if xs else "-"))(
                 [e for e, d in zip(single, late) if abs(d) <= 10.0]) if single else "-"),
            ("    each 上の句's onset at the sink − the page's instant", "-",
             spread(starts, 3.0)),
            ("(b) two pages start the same 上の句", "within 5 ms",
             f"not measurable: one device a board today (a second page: {refusal!r}); "
             "the measurement (each page's sink, onset to onset) on one page heard by two "
             "ears: " + spread(skew, 5.0)),
            ("(c) 10 ms earlier touch wins (one page, one link)", "N of N",
             f"{len(wins)} of {len(pairs)} ({sum(p in wins for p in rev)} of {len(rev)} "
             f"with the later sent first); apart "
             + (f"{min(p['apart_ms'] for p in pairs):.2f}-{max(p['apart_ms'] for p in pairs):.2f}"
                " ms in the page's frames" if pairs else "-")),
            ("(d) link lost, the pending read resumes", "the read judged by its frame",
             "no cut" if not cut else
             f"card {cut['poem']}: touched offline ({cut['queued']} queued), the page joined "
             f"again {cut['rejoin_s']:.2f} s after the link was back; took "
             f"{took.get(cut['poem'])} (touched by {cut['player']}), frame error "
             + (f"{cut['err']:+.2f} ms" if cut["err"] is not None else "-")
             + f"; the reading went on past it: {bool(cut.get('next'))}"),
            ("(touch-only) a touch's instant on the laptop's clock − the true one",
             "within the bound", (spread([e for e, _ in sync], 3.0) + " · bound (width/2) "
                                  f"median {statistics.median([b for _, b in sync]):.2f} ms · "
                                  f"{sum(abs(e) <= b + 0.1 for e, b in sync)} of {len(sync)} "
                                  "within it (+0.1 ms stamp steps)") if sync else "-")]
    w = max(len(r[0]) for r in rows)
    print(f"  {'figure'.ljust(w)} | target | measured")
    for what, target, got in rows:
        print(f"  {what.ljust(w)} | {target} | {got}")
    print(f"  ({skipped} on-board cards with no onset heard at the sink: timed against the "
          f"page's own instant; {len(reads)} reads in the log)")
    if hung:
        print(f"  STOPPED: {hung}")
    print(f"  load average at the end: {load}")
    print("  command: python scripts/bench_web_board.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
