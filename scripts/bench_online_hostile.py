#!/usr/bin/env python3
"""The online host under a hostile guest: CPU and memory of a flood of touches, and how fast
join codes can be tried (the pure ``reader.practice.online.Host``; no sockets: what the
host's own code costs, the transport's share excluded).

    python scripts/bench_online_hostile.py [--touches 2000,20000,200000]

1. **Touch flood.**  A host in the middle of read 1 (two human seats, the tone voice) is sent
   N touches on the read's card, the ``read`` field alternating between the current read and
   the next (the count of old reset when it changed), frames spread over what was heard.  The
   CPU time per touch (``time.process_time``) must stay flat as N grows (linear in all), the
   queue at most ``MAX_TOUCHES``.  (Before: the queue kept every touch and was sorted on each:
   20,000 touches 3.75 s of CPU, quadratic.)
2. **Wrong codes.**  Hellos with wrong codes from one address, then from a new address each
   time, one a millisecond of the host's clock: how many were checked against the code, and
   at the limits (``FREE_TRIES``, ``ALL_TRIES``, the lock doubling from ``LOCK_S``) how long
   trying all 10^6 codes would take.
"""
from __future__ import annotations

import argparse
import random
import time

from reader.practice import headless, online
from reader.practice.match import Seat
from reader.reading.voices import make_voice

VOICE = make_voice("tone")


def running_host():
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("human")}, 7, VOICE,
                           cards=50, reading={"joka": False})
    host = online.Host(m, "314159")
    guest = online.Guest("314159", lambda text, digest: headless.resume_text(
        text, "the host's match", VOICE))
    rng = random.Random(1)
    sim = online.Sim(host, guest, online.SimLink(lambda: 0.08 + rng.uniform(-0.02, 0.02)),
                     online.SimLink(lambda: 0.08 + rng.uniform(-0.02, 0.02)))
    sim.run_until(lambda: host.timeline.heard(sim.now) is not None
                  and host.timeline.heard(sim.now) > m.current().decisive)
    return m, host, sim


def flood(n: int) -> tuple[float, int, int]:
    m, host, sim = running_host()
    cur = m.current()
    heard = int(host.timeline.heard(sim.now))
    msgs = [{"t": "touch", "id": 10**6 + i, "card": cur.poem, "frame": (i * 7919) % (heard + 1),
             "read": m.index + i % 2} for i in range(n)]
    most, lines = 0, 0
    t0 = time.process_time()
    for msg in msgs:
        lines += len(host.receive(msg, sim.now, host.link))
        most = max(most, len(host._queue))
    return time.process_time() - t0, most, lines


def codes() -> None:
    m = headless.new_match("kyogi", {"A": Seat("human"), "B": Seat("human")}, 7, VOICE, cards=2)
    told = []
    host = online.Host(m, "314159", on_event=lambda name, data: told.append(data)
                       if name == "tries" else None)
    for kind, addr in (("one address", lambda i: "10.0.0.1"),
                       ("a new address each", lambda i: f"10.{i // 65536}.{i // 256 % 256}.{i % 256}")):
        checked, t0 = 0, time.process_time()
        for i in range(1000):
            link = host.connect(i / 1000, addr(i))
            out = host.receive({"t": "hello", "v": online.VERSION, "code": f"{i:06d}"},
                               i / 1000 + (0 if kind == "one address" else 1000), link)
            checked += out[0]["text"].startswith("wrong code")
            host.drop(0.0, link)
        cpu = time.process_time() - t0
        print(f"wrong codes, 1,000 hellos from {kind} in 1 s: {checked} checked against the "
              f"code ({cpu * 1e3:.0f} ms of CPU)")
    print(f"the host's player was told in {len(told)} lines, the last: {told[-1]}")
    # all 10^6 codes at the overall limit: ALL_TRIES per lock, each lock twice the last
    t, tried, lock = 0.0, 0, online.LOCK_S
    while tried < 10**6 // 2:  # (half of them: the expected time to the right one)
        tried += online.ALL_TRIES
        t += lock
        lock = min(online.MAX_LOCK_S, lock * 2)
    print(f"at the limits, half of the 10^6 codes (the expected time to the right one) "
          f"takes {t / 86400:.0f} days")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--touches", default="2000,20000,200000")
    args = ap.parse_args()
    for n in map(int, args.touches.split(",")):
        cpu, most, lines = flood(n)
        print(f"flood of {n:,} touches (read field alternating): {cpu:.2f} s of CPU, "
              f"{cpu / n * 1e6:.1f} µs a touch; the queue held at most {most}; "
              f"{lines:,} lines answered")
    codes()


if __name__ == "__main__":
    main()
