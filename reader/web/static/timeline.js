// Which plan frame is heard when: anchors ("plan frame F is heard at context time T"),
// counting on at the sample rate, standing at the end of the first wait (a take) it reaches
// until the next anchor.  The same rule as reader.practice.online.Timeline.
export class Timeline {
  constructor(segs, rate) {
    this.rate = rate;
    this.segs = segs.map(([kind, poem, start, end, wait]) => ({ kind, poem, start, end, wait: !!wait }));
    this.frames = this.segs.length ? this.segs[this.segs.length - 1].end : 0;
    this.waits = this.segs.filter((s) => s.wait);
    this.anchors = [];
  }
  anchor(at, frame) {
    this.anchors = this.anchors.filter((a) => a.at < at);
    this.anchors.push({ at, frame });
  }
  waitAfter(frame) { return this.waits.find((w) => w.end > frame) || null; }
  base(t) {
    for (let i = this.anchors.length - 1; i >= 0; i--) if (this.anchors[i].at <= t) return this.anchors[i];
    return null;
  }
  heard(t) {
    const a = this.base(t);
    if (!a) return null;
    let f = a.frame + (t - a.at) * this.rate;
    const w = this.waitAfter(a.frame);
    if (w && f > w.end) f = w.end;
    return Math.min(f, this.frames);
  }
  instantOf(frame) {
    for (let i = 0; i < this.anchors.length; i++) {
      const a = this.anchors[i], next = this.anchors[i + 1];
      const w = this.waitAfter(a.frame);
      const top = w ? w.end : this.frames;
      if (a.frame <= frame && frame <= top) {
        const t = a.at + (frame - a.frame) / this.rate;
        if (!next || t <= next.at) return t;
      }
    }
    return null;
  }
}

// The output clock: performance.now() milliseconds -> AudioContext seconds, by the pairs
// getOutputTimestamp() gives ("contextTime is being heard at performanceTime"), their offset
// the median of the latest ones (a running fit of slope 1: the two clocks drift by ppm).
export class OutputClock {
  constructor(ctx, keep = 64) {
    this.ctx = ctx; this.keep = keep; this.offsets = []; this.pairs = []; this.timer = null;
  }
  sample() {
    const c = this.ctx;
    if (typeof c.getOutputTimestamp === "function") {
      const ts = c.getOutputTimestamp();
      if (ts.performanceTime > 0 && ts.contextTime > 0) {
        this.push(ts.performanceTime / 1000 - ts.contextTime);
        this.pairs.push([ts.performanceTime / 1000, ts.contextTime]);
        if (this.pairs.length > this.keep) this.pairs.shift();
      }
    } else if (c.currentTime > 0) {  // no output timestamps: what the context reports it adds
      const lat = (c.baseLatency || 0) + (c.outputLatency || 0);
      this.push(performance.now() / 1000 - (c.currentTime - lat));
    }
  }
  push(off) {
    this.offsets.push(off);
    if (this.offsets.length > this.keep) this.offsets.shift();
  }
  run(ms = 10) { this.timer = setInterval(() => this.sample(), ms); }
  offset() {
    if (!this.offsets.length) return null;
    const s = [...this.offsets].sort((a, b) => a - b);
    return s[s.length >> 1];
  }
  spread() {  // p10-p90 of the latest offsets (s)
    const s = [...this.offsets].sort((a, b) => a - b);
    if (s.length < 10) return Infinity;
    return s[Math.floor(s.length * 0.9)] - s[Math.floor(s.length * 0.1)];
  }
  settled() { return this.offsets.length >= 20 && this.spread() < 0.002; }
  ctxOf(perfMs) { const o = this.offset(); return o === null ? null : perfMs / 1000 - o; }
  perfOf(ctxT) { const o = this.offset(); return o === null ? null : (ctxT + o) * 1000; }
}
