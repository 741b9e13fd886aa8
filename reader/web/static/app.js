// karuta's speed drill on a phone or tablet: this page plays the reading (Web Audio, each
// clip started at its plan frame's instant) and maps each touch to the plan frame it was
// playing; the laptop judges by that frame and records.  No library, nothing from outside.
import { Timeline } from "./timeline.js";
import {
  askCalibration, bind, calibrationLine, GAP_MS, stampOf, tapAlong as tapAlongOf, tapTouch,
} from "./device.js";

const LEAD_S = 0.5;     // silence before the first sound is due (it is never cut)
const GO_S = 0.3;       // the next card is scheduled this far ahead of "now"
const AHEAD = 3;        // clips fetched ahead (GAP_MS: the output clock moved more than this
                        // since the 上の句 began: the sound had a gap, the touch is not timed)

const $ = (id) => document.getElementById(id);
const S = {             // the page's state (window.karuta, for the tests)
  ws: null, welcome: null, timeline: null, ctx: null, clock: null, read: 0, phase: "connecting",
  clips: new Map(), touched: new Set(), waited: new Set(), sent: [], cut: 0, cal: null,
  kami: [], takes: [], refused: null, touches: [], tries: 0, last: null,
};
window.karuta = S;

function refuse(text) {
  S.refused = text;
  const r = $("refusal");
  r.textContent = text;
  r.hidden = false;
}
function status(text) { $("status").textContent = text; }
function show(id) {
  for (const s of ["join", "play", "end"]) $(s).hidden = s !== id;
  S.phase = id;
}
function send(msg) {
  if ("read" in msg) S.last = msg;  // (sent again if the link breaks before the answer)
  if (S.ws && S.ws.readyState === WebSocket.OPEN) { S.ws.send(JSON.stringify(msg)); S.sent.push(msg); }
}


const { connect, sound, clip, play, heardNow } = bind(S, {
  get handlers() { return HANDLERS; }, send, refuse, status,
});

const HANDLERS = {
  welcome(m) {
    S.tries = 0;
    if (S.ctx && S.phase === "play" && S.welcome && S.welcome.plan === m.plan) {
      // joined again while playing: the reading went on here; what the laptop missed
      S.welcome = m;
      status("");
      if (m.read > S.read) HANDLERS.go({ read: m.read, frame: S.timeline.segs[S.takes[S.read]].end });
      else if (S.last && S.last.read === S.read) send(S.last);
      return;
    }
    S.welcome = m;
    S.timeline = new Timeline(m.segs, m.rate);
    S.read = m.read;
    S.kami = []; S.takes = [];
    m.segs.forEach((s, i) => {
      if (s[0] === "kami") S.kami.push(i);
      if (s[0] === "take") S.takes.push(i);
    });
    showCalibration(m.calibration);
    status(`joined · ${m.cards} card${m.cards === 1 ? "" : "s"}`);
    show("join");
  },
  error(m) { refuse(m.text); status(""); },
  warn(m) { status(m.text); S.touched.delete(S.read); },  // (a touch not taken: touch again)
  choices(m) {
    $("big").textContent = m.line;
    $("big").className = "";
    const box = $("choices");
    box.innerHTML = "";
    m.cards.forEach((c, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "card";
      b.dataset.card = String(c);
      b.textContent = m.labels[i] || String(c);
      box.appendChild(b);
    });
  },
  verdict(m) {
    const big = $("big");
    big.textContent = m.correct ? "○" : "×";
    big.className = m.correct ? "ok" : "no";
    $("line").textContent = m.line;
    for (const b of $("choices").children) b.disabled = true;
  },
  go(m) {
    const tl = S.timeline, take = tl.segs[S.takes[S.read]];
    S.read = m.read;
    // the next card once the 上の句 just read has been heard whole (its take skipped)
    const heardAll = tl.instantOf(take.start);
    const at = Math.max(S.ctx.currentTime + GO_S, heardAll === null ? 0 : heardAll);
    setTimeout(() => { $("choices").innerHTML = ""; }, 600);
    anchor(at, m.frame);
  },
  clicks(m) { tapAlong(m); },
  calibrated(m) {
    status(m.line);
    S.cal.done = true;
    if (m.offset_ms !== null) showCalibration({ offset_ms: m.offset_ms });
    show("join");
    $("start").disabled = false; $("calibrate").disabled = false;
  },
  over(m) {
    show("end");
    const ul = $("endlines");
    ul.innerHTML = "";
    for (const line of m.lines) { const li = document.createElement("li"); li.textContent = line; ul.appendChild(li); }
    status("");
  },
};

function showCalibration(c) { $("calib").textContent = calibrationLine(c ? c.offset_ms : null); }

// ---------------------------------------------------------------- sound


function prefetch() {
  for (let k = S.read; k < Math.min(S.kami.length, S.read + AHEAD); k++) clip(S.kami[k]);
  for (const i of [...S.clips.keys()]) if (i < S.kami[S.read]) S.clips.delete(i);
}


function anchor(at, frame) {
  const tl = S.timeline;
  S.since = S.clock.offset();
  tl.anchor(at, frame);
  const w = tl.waitAfter(frame);
  const top = w ? w.end : tl.frames;
  tl.segs.forEach((s, i) => {
    if (s.kind === "kami" && s.start >= frame && s.start < top) play(i, at + (s.start - frame) / tl.rate);
  });
  prefetch();
}


async function keepAwake() {
  // Wake Lock needs a secure context: a LAN http address has none (the page says so)
  try {
    if (navigator.wakeLock) { await navigator.wakeLock.request("screen"); return true; }
  } catch (e) { /* refused: said below */ }
  $("line").textContent = "this page cannot keep the screen on (plain http): turn Auto-Lock off for long drills";
  return false;
}

async function begin() {
  show("play");
  status("get ready…");
  S.awake = await keepAwake();
  $("start").disabled = true;
  await sound();
  S.read = S.welcome.read;
  prefetch();
  await clip(S.kami[S.read]);
  send({ t: "start" });
  status("");
  anchor(S.ctx.currentTime + LEAD_S, S.welcome.from);
  tick();
}

function tick() {
  if (S.phase !== "play") return;
  const f = heardNow(), tl = S.timeline;
  if (f !== null && S.read < S.takes.length) {
    const kami = tl.segs[S.kami[S.read]], take = tl.segs[S.takes[S.read]];
    $("count").textContent = `${S.read + 1} / ${S.kami.length}`;
    const p = (f - kami.start) / (kami.end - kami.start);
    $("fill").style.width = `${Math.max(0, Math.min(1, p)) * 100}%`;
    if (f >= kami.start && S.sinceRead !== S.read) { S.sinceRead = S.read; S.since = S.clock.offset(); }
    if (f >= take.end && !S.touched.has(S.read) && !S.waited.has(S.read)) {
      S.waited.add(S.read);
      send({ t: "waited", read: S.read });
    }
  }
  setTimeout(tick, 30);
}

// ---------------------------------------------------------------- touches

function onTouch(e) {
  if (tapTouch(S, e, TAPS)) return;  // the tap-along: each tap against the click track's start
  if (S.phase !== "play") return;
  const card = e.target.closest && e.target.closest(".card");
  if (card) {
    if (!card.disabled) send({ t: "answer", read: S.read, card: Number(card.dataset.card) });
    return;
  }
  if (S.touched.has(S.read) || S.waited.has(S.read)) return;
  const st = stampOf(e), t = S.clock.ctxOf(st.ms);
  const f = t === null ? null : S.timeline.heard(t);
  if (f === null) return;  // nothing is being read yet
  S.touched.add(S.read);
  // (how it was mapped: for scripts/bench_web.py)
  S.touches.push({ read: S.read, stamp: st.ms, frame: f, window: [...S.clock.offsets], pairs: [...S.clock.pairs], anchor: S.timeline.base(t) });
  if (navigator.vibrate) navigator.vibrate(15);
  const msg = { t: "touch", read: S.read, frame: Math.round(f), stamp: st.ok ? "ok" : "bad" };
  const gap = (S.clock.offset() - S.since) * 1000;
  if (Math.abs(gap) > GAP_MS) msg.gap_ms = Math.round(gap * 10) / 10;
  send(msg);
}

// ---------------------------------------------------------------- calibration: tap along
// (device.js: the one tap-along of both pages)
const TAPS = {
  send, refuse, status,
  playing() { show("play"); $("count").textContent = "tap on each click"; },
  tapped(n) { $("big").textContent = String(n); },
};
async function calibrate(count = 20) {
  $("start").disabled = true; $("calibrate").disabled = true;
  await askCalibration(S, TAPS, count);
}
const tapAlong = (m) => tapAlongOf(S, TAPS, m);
S.calibrate = calibrate;

document.addEventListener("pointerdown", onTouch, { passive: true });
$("start").addEventListener("click", () => begin());
$("calibrate").addEventListener("click", () => calibrate());
connect();
