// The laptop's clock against this page's, as reader.practice.online.ClockSync measures the
// other laptop's in the two-laptop match (the same rule, checked against it on the same
// round trips: tests/test_web_clocksync.py).  Each round trip gives (t0, t1, t2, t3): our
// send, their receipt, their reply, our receipt (s).  As no message arrives before it was
// sent, the offset (theirs minus ours) lies between t2 - t3 and t1 - t0; the bounds of the
// last `keep` trips are intersected (the quickest trip out and the quickest trip back, from
// whichever trips they came) and the estimate is its middle, within half its `width`.
// `jumps` counts steps of a clock: a trip whose bounds miss the intersection by more than
// JUMP_MS, or the last RECENT trips' bounds all moved the same way by more than that; the
// estimate then starts again from the newer trips.
export const JUMP_MS = 5.0;
export const RECENT = 12;

export class ClockSync {
  constructor(keep = 128) {
    this.keep = keep;
    this.samples = [];  // [lo, hi, rtt]
    this.count = 0;
    this.offset = null;
    this.width = 0.0;
    this.jumps = 0;
    this.lastJumpMs = 0.0;
    this.rtts = [];
  }

  add(t0, t1, t2, t3) {
    let lo = t2 - t3, hi = t1 - t0;
    if (lo > hi) { lo = hi = (lo + hi) / 2.0; }  // a reply before its ping: a clock stepped
    const rtt = hi - lo;
    this.rtts.push(rtt);
    if (this.rtts.length > 64) this.rtts.shift();
    this.count += 1;
    if (this.offset !== null) {
      const [a, b] = this.bounds();
      const miss = Math.max(lo - b, a - hi) * 1000.0;
      if (miss > JUMP_MS) {
        this.jumps += 1;
        this.lastJumpMs = ((lo + hi) / 2.0 - this.offset) * 1000.0;
        this.samples = [];  // the old trips are wrong now: keep the new
      }
    }
    this.samples.push([lo, hi, rtt]);
    if (this.samples.length > this.keep) this.samples.shift();
    const moved = this.stepped();
    if (moved !== null) {
      this.jumps += 1;
      this.lastJumpMs = moved * 1000.0;
      this.samples = this.samples.slice(-1);  // which trips were after the step is not known
    }
    let [a, b] = this.bounds();
    while (a > b && this.samples.length > 1) {  // drift moved the bounds apart: the newer half
      this.samples.shift();
      [a, b] = this.bounds();
    }
    this.offset = (a + b) / 2.0;
    this.width = Math.max(0.0, b - a);
  }

  bounds(samples = this.samples) {
    let a = -Infinity, b = Infinity;
    for (const s of samples) { if (s[0] > a) a = s[0]; if (s[1] < b) b = s[1]; }
    return [a, b];
  }

  stepped() {
    if (this.samples.length < 10 * RECENT) return null;  // the older bounds must be tight
    const old = this.samples.slice(0, -RECENT), now = this.samples.slice(-RECENT);
    const [a0, b0] = this.bounds(old), [a1, b1] = this.bounds(now);
    const dlo = a1 - a0, dhi = b1 - b0;
    if (dlo * dhi > 0 && Math.min(Math.abs(dlo), Math.abs(dhi)) * 1000.0 > JUMP_MS) return (dlo + dhi) / 2.0;
    return null;
  }

  get rtt() {
    return this.samples.length ? Math.min(...this.samples.map((s) => s[2])) : null;
  }

  // the laptop's time (s) of this page's `ours` (s), or null before the first trip
  theirs(ours) { return this.offset === null ? null : ours + this.offset; }
}
