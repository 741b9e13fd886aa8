#!/usr/bin/env python3
"""The practice board page's figures (issue 36's targets), in real browsers on this machine.

    python scripts/bench_web_board.py [--cards 25] [--seed 3] [--delay 80 --jitter 20]
                                      [--cut 5] [--reads N] [--one-tablet] [--verbose] [--keep]

``karuta practice --web --vs device`` (a device for each player, the tone voice) serves two
headless Chromiums with touch emulation (Debian's, over their DevTools pipes) on
``http://karuta.test:PORT`` (an insecure origin, as a LAN address is): a tablet at 1024×1366
(it joins first: seat A) and a phone at 390×844 (seat B), each a browser of its own.  Each
page has its own link, a ``testbed.relay.Relay`` holding every chunk ``delay ± jitter`` ms
each way (its WebSocket and its clips), and plays into its own PulseAudio server's null sink,
heard by its own ear on that sink's monitor (``testbed.ear.Ear``: onsets placed by the
capture's ADC times).  Every 上の句 is heard at both sinks; reads whose card is on the board
take turns:

(a) **one touch**, on the tablet and the phone by turns: the card touched at an instant
    150-450 ms after its 上の句's onset at that page's sink (``Input.dispatchTouchEvent`` with
    that ``timestamp``); the page's frame for it (``pointerdown``'s ``timeStamp`` → its
    output-clock fit → plan frame) against the frame its sink played then.  Target ±3 ms (a
    constant is calibration's).
(b) **two pages start the same 上の句**: each 上の句's onset at the phone's sink minus at the
    tablet's (``testbed.web.start_skew``'s rule: the first onset after the page's instant less
    100 ms), over every read; beside it the pages' own instants for it (each page's
    ``epochOfFrame``: what each scheduled).  Target within 5 ms.
(c) **the same card on both devices, 10 ms apart in plan frames**: each device touches at the
    instant its own sink played frame F (one) and F + 10 ms (the other), which one by turns,
    dispatched in that order or the later first (by turns), each across its own link.  Target:
    the earlier wins N of N.
(d) **the link lost for 5 s**: once, as a 上の句 begins, the tablet's relay cuts its link and
    refuses it ``--cut`` s; the card is touched on the tablet meanwhile (the page keeps it
    unacknowledged); the page joins again by itself: how long after the link is back, and
    the pending read judged by the frame touched offline, the match going on after it.

(touch-only) the touch-only mode's clock: each touch's instant on the laptop's clock, as the
    page's ClockSync (static/clocksync.js, pinging over the same link) gives it, against the
    true instant (the pages and the laptop share CLOCK_MONOTONIC here), and the bound it
    states (half the sync's width).

``--one-tablet``: ``--vs human``, both players at one tablet (one page, one link, one sink):
(c) is then the card's own side's player touching it and the other swiping onto it from
their half (one page's link delays both alike; "the later first" stands for two links that
reorder them), and (b) is the measurement's floor (the one page heard by two ears).

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

from testbed.web import (WHY, WebApp, chromium_line, epoch_minus_perf, js_wait, load_average,
                         onset_of, sleep_until_perf, spread, start_skew, web_browser)

TABLET = (1024, 1366)
PHONE = (390, 844)
#: the tone voice at twice its pace, short waits (the karafuda pass quickly); touches under
#: 5 ms apart are simultaneous (the default 10 would make (c)'s pairs a tie)
QUICK = ("--voice", "tone", "--no-joka", "--speed", "2", "--ma", "0.6", "--yoin", "0.3",
         "--take", "1", "--simultaneous", "5", "--memorize", "0")
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


class Page:
    """One device of the bench: its browser (``b``) at ``size``, its player's seat, its own
    null sink heard by its own ear, its own relay link to the laptop."""

    def __init__(self, name: str, size: tuple[int, int], player: str, pulse, ear, relay):
        self.name, self.size, self.player = name, size, player
        self.pulse, self.ear, self.relay = pulse, ear, relay
        self.b = None

    def touches(self, poem: int, n: int = 1, timeout: float = 10) -> list[dict]:
        """The page's first ``n`` touches of ``poem`` (waited for)."""
        return js_wait(self.b, f"(() => {{ const g = karuta.touches.filter(t => t.card === "
                               f"{poem}); return g.length >= {n} ? g : null; }})()", timeout)


def settle_read(pages: list[Page], poem: int, timeout: float = 30) -> None:
    """Wait until ``poem``'s read is done: the card off the board and no send owed (a send
    owed at a page is made with its button: the highlighted card)."""
    end = time.monotonic() + timeout
    gone_at = None
    while time.monotonic() < end:
        owed = False
        for pg in pages:
            over, gone, owes = pg.b.js(f"[karuta.over !== null, {WHERE.format(poem)} === null, "
                                       "!document.getElementById('send').hidden]")
            if over:
                return
            if owes:
                pg.b.touch(*centre(pg.b, "#send"))
                owed = True
            if pg is pages[0]:
                first_gone = gone
        if owed:
            time.sleep(0.3)
            gone_at = None
            continue
        if first_gone:
            gone_at = gone_at or time.monotonic()
            if time.monotonic() - gone_at > 0.4:  # (no send shown since: none owed)
                return
        time.sleep(0.05)
    raise Hung(f"card {poem} still on the board {timeout:g} s after its touches: the page "
               "says " + repr(pages[0].b.js("karuta.view && karuta.view.line_text")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cards", type=int, default=25, help="cards a side")
    ap.add_argument("--reads", type=int, default=0,
                    help="stop after this many reads of cards on the board (0: the match's end)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--delay", type=float, default=80.0, help="each link's delay each way (ms)")
    ap.add_argument("--jitter", type=float, default=20.0, help="± this (ms)")
    ap.add_argument("--cut", type=float, default=5.0, help="the link lost this long (s; 0: no)")
    ap.add_argument("--one-tablet", action="store_true",
                    help="two players at one tablet (--vs human) instead of a device each")
    ap.add_argument("--verbose", action="store_true", help="a line for each read")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary folder (the match's log, the browsers' profiles)")
    args = ap.parse_args()

    from testbed.ear import Ear
    from testbed.relay import Relay
    from testbed.sound import PulseServer

    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="karuta-bench-web-board-"))
    log = tmp / "match.jsonl"
    # each device: its name, size and seat (the first page to join takes seat A)
    devices = ([("tablet", TABLET, "A")] if args.one_tablet
               else [("tablet", TABLET, "A"), ("phone", PHONE, "B")])
    pages: list[Page] = []
    app = ear2 = None
    skew: list[float] = []         # (b) B's onset - A's (two devices), or the floor (ms)
    planned: list[float] = []      # (b) B's page's instant for it - A's (two devices; ms)
    on_time: list[float] = []      # (b) the reads both sinks played within 10 ms of their
    #                                  page's instant: the onsets' difference (ms)
    single: list[float] = []       # (a) page frame - sink frame (ms)
    late: list[float] = []         # the same touches' 上の句: onset at the sink - page's instant
    starts: list[float] = []       # each 上の句's onset at a sink - its page's instant (ms)
    pairs: list[dict] = []         # (c)
    cut: dict = {}                 # (d)
    sync: list[tuple[float, float]] = []  # (touch-only) the laptop's time of a touch - truth,
    #                                         and the bound the page gave it (ms)
    skipped = 0
    try:
        for i, (name, size, player) in enumerate(devices):
            pulse = PulseServer(sink=name, root=tmp / f"pulse-{name}", keepalive=False)
            pages.append(Page(name, size, player, pulse, Ear(name, pulse.env, 0.25), None))
        env = dict(pages[0].pulse.env, KARUTA_DATA_DIR=str(tmp / "data"),
                   KARUTA_CONFIG_DIR=str(tmp / "config"))
        vs = "human" if args.one_tablet else "device"
        app = WebApp(["practice", "--vs", vs, "--cards", str(args.cards), "--seed",
                      str(args.seed), *QUICK, "--log", str(log)], env)
        if args.one_tablet:  # (b)'s floor: a second ear on the one page's sink
            ear2 = Ear("tablet", pages[0].pulse.env, 0.25)
            ear2.listening.wait(10)
        for i, pg in enumerate(pages):
            pg.ear.listening.wait(10)
            pg.relay = Relay(app.port, args.delay / 1000, args.jitter / 1000, seed=args.seed + i)
            pg.b = web_browser(tmp / f"profile-{pg.name}", pg.pulse.env)
            pg.b.load(app.via(pg.relay.port), *pg.size, touch=True)
            js_wait(pg.b, "karuta.phase === 'join' && karuta.you", 30)
            you = pg.b.js("karuta.you")
            if not args.one_tablet and you != pg.player:
                raise SystemExit(f"bench_web_board: the {pg.name} got seat {you!r}, not "
                                 f"{pg.player}")
        tablet = pages[0]
        for pg in pages:
            pg.b.touch(*centre(pg.b, "#start"))
        for pg in reversed(pages):
            try:
                js_wait(pg.b, "karuta.view && karuta.timeline.anchors.length > 0", 60)
            except TimeoutError as e:
                raise TimeoutError(f"the {pg.name}: {e}; karuta: {' | '.join(app.lines)}; the "
                                   f"tablet: {tablet.b.js(WHY)}") from None
        rate = tablet.b.js("karuta.welcome.rate")
        kami = tablet.b.js("karuta.timeline.segs.filter(s => s.kind === 'kami')")
        turn = 0
        hung = None
        for seg in kami:
            if tablet.b.js("karuta.over !== null") or (args.reads and turn >= args.reads):
                break
            try:
                poem = seg["poem"]
                side = tablet.b.js(WHERE.format(poem))
                heard = {}  # page -> (its sink's onset or its own instant, that - its instant)
                for pg in pages:
                    onset, want = onset_of(pg.ear, pg.b, seg["start"], timeout=60)
                    if onset is not None:
                        starts.append((onset - want) * 1000)
                    heard[pg.name] = (onset, want)
                if args.one_tablet:
                    d = start_skew([tablet.ear, ear2], heard["tablet"][1])
                    if d is not None:
                        skew.append(d * 1000)
                else:
                    (oa, wa), (ob, wb) = heard["tablet"], heard["phone"]
                    planned.append((wb - wa) * 1000)
                    if oa is not None and ob is not None:
                        skew.append((ob - oa) * 1000)
                        if abs(oa - wa) <= 0.010 and abs(ob - wb) <= 0.010:
                            on_time.append(skew[-1])  # (neither page's sound stalled)
                    if args.verbose:
                        print(f"  (b) {poem}'s 上の句: the phone's instant − the tablet's "
                              f"{planned[-1]:+.2f} ms, heard "
                              + ("-" if oa is None or ob is None else f"{skew[-1]:+.2f} ms")
                              + "; at each sink − its page's instant: " + ", ".join(
                                  "-" if o is None else f"{(o - w) * 1000:+.1f} ms"
                                  for o, w in ((oa, wa), (ob, wb))))
                if side is None:
                    continue  # (a karafuda: the reading goes on after its wait by itself)
                for pg in pages:
                    onset, want = heard[pg.name]
                    if onset is None:
                        skipped += 1
                    heard[pg.name] = (want if onset is None else onset,
                                      0.0 if onset is None else (onset - want) * 1000)
                card_xy = {pg.name: centre(pg.b, f".card[data-card='{poem}']") for pg in pages}
                e2p = epoch_minus_perf()

                def sink_frame(pg, t_perf):  # the frame page pg's sink played at t_perf
                    return seg["start"] + (t_perf - heard[pg.name][0]) * rate

                if args.cut > 0 and not cut and turn >= 2:
                    # (d): the tablet's link cut just after the 上の句 began; the card touched
                    # offline there
                    t_cut = time.perf_counter()
                    tablet.relay.cut(args.cut)
                    js_wait(tablet.b, "!karuta.joined", 10)
                    t = heard["tablet"][0] + rng.uniform(0.3, 0.6)
                    sleep_until_perf(t + 0.002)
                    tap(tablet.b, card_xy["tablet"], t + e2p, 1)
                    queued = tablet.b.js("karuta.unacked.length")
                    js_wait(tablet.b, "karuta.joined && karuta.tries === 0", args.cut + 30)
                    back = time.perf_counter() - (t_cut + args.cut)
                    got = tablet.b.js(f"karuta.touches.filter(t => t.card === {poem})")
                    player = got[-1]["player"] if got else side
                    cut = {"poem": poem, "side": side, "queued": queued, "rejoin_s": back,
                           "err": ((got[-1]["frame"] - sink_frame(tablet, t)) * 1000 / rate
                                   if got else None),
                           "frame": got[-1]["frame"] if got else None, "player": player}
                    settle_read(pages, poem, 60)
                    cut["next"] = tablet.b.js(f"karuta.heardNow() > {seg['end']}")
                elif turn % 2 == 0:
                    # (a): one touch, on each device by turns (one tablet: the card's own side's
                    # player)
                    pg = pages[(turn // 2) % len(pages)]
                    t = heard[pg.name][0] + rng.uniform(0.15, 0.45)
                    sleep_until_perf(t + 0.002)
                    tap(pg.b, card_xy[pg.name], t + e2p, 1)
                    got = pg.touches(poem)
                    single.append((got[-1]["frame"] - sink_frame(pg, t)) * 1000 / rate)
                    late.append(heard[pg.name][1])
                    if got[-1].get("laptop"):  # (both clocks are CLOCK_MONOTONIC here)
                        sync.append(((got[-1]["laptop"][0] - t) * 1000,
                                     got[-1]["laptop"][1] * 1000))
                    if args.verbose:
                        print(f"  (a) card {poem} on the {pg.name}: {single[-1]:+.2f} ms")
                    settle_read(pages, poem)
                else:
                    # (c): two players, the same card, 10 ms apart in plan frames; by turns
                    # which is earlier, and whether the later is dispatched (so sent) first
                    reverse = (turn // 4) % 2 == 1
                    u = rng.uniform(0.2, 0.45)
                    if args.one_tablet:
                        other = "B" if side == "A" else "A"
                        early = side if (turn // 2) % 2 == 0 else other
                        later = ({"A", "B"} - {early}).pop()
                        t_of = {early: heard["tablet"][0] + u,
                                later: heard["tablet"][0] + u + 0.010}
                        start = mid_edge(tablet.b, other)
                        xy = card_xy["tablet"]
                        moves = {side: lambda: tap(tablet.b, xy, t_of[side] + e2p, 1),
                                 other: lambda: swipe_points(tablet.b, start, xy,
                                                             t_of[other] + e2p - 0.05,
                                                             t_of[other] + e2p, 2)}
                        page_of = {"A": tablet, "B": tablet}
                    else:
                        # each device touches at the instant its own sink played that frame
                        ep = pages[(turn // 2) % 2]
                        lp = pages[1 - (turn // 2) % 2]
                        early, later = ep.player, lp.player
                        t_of = {early: heard[ep.name][0] + u, later: heard[lp.name][0] + u + 0.010}
                        moves = {pg.player: (lambda pg=pg: tap(pg.b, card_xy[pg.name],
                                                               t_of[pg.player] + e2p, 1))
                                 for pg in pages}
                        page_of = {pg.player: pg for pg in pages}
                    order = [later, early] if reverse else [early, later]
                    sleep_until_perf(max(t_of.values()) + 0.002)
                    for p in order:
                        moves[p]()
                    got = (tablet.touches(poem, 2) if args.one_tablet
                           else [g for pg in pages for g in pg.touches(poem)[:1]])
                    fr = {g["player"]: g["frame"] for g in got}
                    stamp = {g["player"]: g["stamp"] for g in got}
                    sync.extend(((g["laptop"][0] - t_of[g["player"]]) * 1000, g["laptop"][1] * 1000)
                                for g in got if g.get("laptop"))
                    pairs.append({"poem": poem, "early": early, "reverse": reverse,
                                  "apart_ms": (fr.get(later, 0) - fr.get(early, 0)) * 1000 / rate,
                                  # (one page's timeStamps; two pages' origins differ)
                                  "stamps_ms": (stamp.get(later, 0) - stamp.get(early, 0)
                                                if args.one_tablet else None),
                                  "err": [(fr[p] - sink_frame(page_of[p], t_of[p])) * 1000 / rate
                                          for p in fr]})
                    single.extend(pairs[-1]["err"])
                    late.extend(heard[page_of[p].name][1] for p in fr)
                    settle_read(pages, poem)
                turn += 1
            except Hung as e:
                hung = f"{e}; karuta's last lines: {' | '.join(app.lines[-4:])}"
                break
        version = chromium_line(tablet.b)
        load = load_average()
        if not args.reads and hung is None:
            for pg in pages:
                js_wait(pg.b, "karuta.over !== null", 120)
        rc = app.end(15 if not args.reads and hung is None else 0)
    finally:
        for pg in pages:
            if pg.b is not None:
                pg.b.close()
            pg.ear.close()
        if ear2 is not None:
            ear2.close()
        if app is not None:
            app.end(0)
        for pg in pages:
            pg.pulse.close()

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
                  + (f"(stamps {p['stamps_ms']:.2f} ms; " if p["stamps_ms"] is not None else "(")
                  + "frame errors " + ", ".join(f"{e:+.2f}" for e in p["err"]) + " ms) "
                  f"({'later sent first' if p['reverse'] else 'in order'}): took {p['took']}")
    wins = [p for p in pairs if p["took"] == p["early"]]
    rev = [p for p in pairs if p["reverse"]]
    where = ("two players at one tablet (1024×1366), --vs human" if args.one_tablet
             else "--vs device: a tablet (1024×1366, seat A) and a phone (390×844, seat B), "
                  "each its own browser, null sink, ear and link")
    print(f"bench_web_board: kyogi, {where}; {args.cards} a side, seed {args.seed}; "
          f"{'the link' if args.one_tablet else 'each link'} {args.delay:g} ± {args.jitter:g} "
          f"ms each way (testbed.relay); {version}; karuta exited {rc}")
    if args.one_tablet:
        b_row = ("(b) the measurement's floor: one page heard by two ears", "within 5 ms",
                 spread(skew, 5.0))
        c_what = "(c) 10 ms earlier touch wins (one page, one link)"
    else:
        b_row = ("(b) the phone's onset − the tablet's, each 上の句 at its own sink",
                 "within 5 ms", spread(skew, 5.0) + " · the pages' own instants for it: "
                 + spread(planned, 5.0) + " · the reads both sinks played within 10 ms of "
                 "their page's instant: " + spread(on_time, 5.0))
        c_what = "(c) 10 ms earlier touch wins (one on each device, two links)"
    rows = [("(a) touch frame − frame the sink played then", "±3 ms",
             spread(single, 3.0)),
            ("(a) the same, around its median (calibration's constant)", "±3 ms",
             spread([e - statistics.median(single) for e in single], 3.0) if single else "-"),
            ("(a) the same, reads heard within 10 ms of the page's instant", "±3 ms",
             (lambda xs: spread([e - statistics.median(xs) for e in xs], 3.0) + " around "
              + (f"{statistics.median(xs):+.2f} ms" if xs else "-"))(
                 [e for e, d in zip(single, late) if abs(d) <= 10.0]) if single else "-"),
            ("    each 上の句's onset at a sink − its page's instant", "-",
             spread(starts, 3.0)),
            b_row,
            (c_what, "N of N",
             f"{len(wins)} of {len(pairs)} ({sum(p in wins for p in rev)} of {len(rev)} "
             f"with the later sent first); apart "
             + (f"{min(p['apart_ms'] for p in pairs):.2f}-{max(p['apart_ms'] for p in pairs):.2f}"
                " ms in the pages' frames" if pairs else "-")),
            ("(d) the tablet's link lost, the pending read resumes", "the read judged by its frame",
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
    print(f"  ({skipped} on-board 上の句 with no onset heard at a sink: timed against the "
          f"page's own instant; {len(reads)} reads in the log)")
    if hung:
        print(f"  STOPPED: {hung}")
    print(f"  load average at the end: {load}")
    print("  command: python scripts/bench_web_board.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
