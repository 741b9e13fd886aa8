// What the drill page and the board page do alike on the device: who it is (an id kept in
// localStorage), the link to the laptop (joining again when it breaks), the sound (an
// AudioContext at the plan's rate, its output clock fitted), the plan's clips (fetched once,
// the plan's digest and length checked), a clip started at its instant, a touch's stamp.
// Each function takes the page's state S (window.karuta) and the page's own parts (ui).
import { OutputClock } from "./timeline.js";

export const PROTOCOL = 1;
export const REJOIN_TRIES = 120; // a lost link is tried again every second, this many times
const SETTLE_MS = 3000;          // the output clock's fit is waited for at most this long

// the device functions a page calls, bound to its state S and its parts ui ({handlers, send,
// refuse, status, hello?}: see connect): the drill page's and the board page's, one binding
export function bind(S, ui) {
  const heard = () => heardNow(S);
  S.epochOfFrame = (f) => epochOfFrame(S, f);  // (tests, benchmarks)
  S.heardNow = heard;
  return {
    connect: () => connect(S, ui),
    sound: () => openSound(S),
    clip: (i) => clip(S, i, ui.refuse),
    play: (i, when, offset = 0) => playAt(S, i, when, ui.refuse, offset),
    heardNow: heard,
  };
}

export function deviceId() {
  let id = null;
  try { id = localStorage.getItem("karuta-device"); } catch (e) { /* private mode */ }
  if (!id || !/^[0-9a-f]{32}$/.test(id)) {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    id = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    try { localStorage.setItem("karuta-device", id); } catch (e) { /* kept for this visit */ }
  }
  return id;
}

// ui: {handlers, send, refuse, status}.  The reading goes on here when the link breaks (a
// sleeping phone, the Wi-Fi): the page joins again, and its handlers' welcome says what then.
export function connect(S, ui) {
  const code = decodeURIComponent(location.hash.slice(1));
  if (!/^\d{1,64}$/.test(code)) {
    ui.refuse("no code in the address: open the address the laptop prints (it ends in #code)");
    ui.status("");
    return;
  }
  const ws = new WebSocket(`ws://${location.host}/ws`);
  S.ws = ws;
  S.joined = false;  // (until this link's welcome)
  // (ui.hello: what the page adds to its hello -- the board's protocol version, its seat token)
  ws.onopen = () => ui.send({ t: "hello", v: PROTOCOL, code, device: deviceId(), ...(ui.hello ? ui.hello(code) : {}) });
  ws.onmessage = (e) => {
    let msg;
    try { msg = JSON.parse(e.data); } catch (err) { return; }
    const fn = ui.handlers[msg.t];
    if (fn) fn(msg);
  };
  ws.onclose = (e) => {
    if (S.phase === "end" || ws !== S.ws) return;
    if (e.code === 1009) ui.refuse("the laptop refused a message that was too long: the link is closed (reload the page)");
    else if (!S.refused && S.welcome && S.tries < REJOIN_TRIES) {
      S.tries += 1;
      ui.status("the link to the laptop was lost: joining again…");
      setTimeout(() => connect(S, ui), 1000);
      return;
    } else if (!S.refused) ui.refuse(S.welcome ? "the link to the laptop was lost: reload the page to join again"
      : "the laptop refused this page (is this the address it printed, with its code?)");
    ui.status("");
  };
}

export async function openSound(S) {
  if (S.ctx) return;
  const rate = S.welcome.rate;
  try { S.ctx = new AudioContext({ sampleRate: rate, latencyHint: "interactive" }); }
  catch (e) { S.ctx = new AudioContext({ latencyHint: "interactive" }); }
  try { if (navigator.audioSession) navigator.audioSession.type = "playback"; } catch (e) { /* iOS < 16.4 */ }
  await S.ctx.resume();
  S.clock = new OutputClock(S.ctx);
  S.clock.run();
  const t0 = performance.now();
  while (!S.clock.settled() && performance.now() - t0 < SETTLE_MS) await new Promise((r) => setTimeout(r, 20));
}

// segment i's samples, decoded (a promise kept in S.clips); a network failure is fetched
// again later, a wrong clip (another plan, another length) is refused
export function clip(S, i, refuse) {
  if (!S.clips.has(i)) {
    const seg = S.timeline.segs[i];
    S.clips.set(i, fetch(`${S.welcome.clip}${i}.wav`).then(async (r) => {
      if (!r.ok) throw new Error((await r.text()).trim());
      if (r.headers.get("X-Karuta-Plan") !== S.welcome.plan) throw new Error("a clip of another plan: reload the page");
      const buf = await S.ctx.decodeAudioData(await r.arrayBuffer());
      const want = (seg.end - seg.start) * S.ctx.sampleRate / S.welcome.rate;
      if (Math.abs(buf.length - want) > 2) throw new Error(`clip ${i} has ${buf.length} frames, the plan ${want}`);
      return buf;
    }).catch((e) => {
      if (e instanceof TypeError) S.clips.delete(i);  // (the network: fetched again later)
      else refuse(`karuta: ${e.message}`);
      throw e;
    }));
  }
  return S.clips.get(i);
}

// segment i started at context time `when` (sample-exact), from `offset` s into it (a page
// catching up mid-segment); a start already past is cut by as much, and the most cut is kept
// (S.cut)
export async function playAt(S, i, when, refuse, offset = 0) {
  const buf = await clip(S, i, refuse);
  const src = S.ctx.createBufferSource();
  src.buffer = buf;
  src.connect(S.ctx.destination);
  const late = S.ctx.currentTime - when;
  if (late > 0) { S.cut = Math.max(S.cut, late); src.start(S.ctx.currentTime, offset + late); } else src.start(when, offset);
}

// the plan frame heard now (null before the output clock and the timeline are known), and
// the instant (ms since the epoch) the page expects frame f to be heard (tests, benchmark)
export function heardNow(S) {
  const t = S.clock && S.clock.ctxOf(performance.now());
  return t === null || !S.timeline ? null : S.timeline.heard(t);
}
export function epochOfFrame(S, f) {
  const t = S.timeline.instantOf(f);
  return t === null ? null : performance.timeOrigin + S.clock.perfOf(t);
}

// the platform's input time, on performance.now()'s clock; range-checked (Safari has sent
// negative stamps and stamps later than now)
export function stampOf(e) {
  const now = performance.now(), ts = e.timeStamp;
  const ok = Number.isFinite(ts) && ts > 0 && ts <= now + 1 && ts >= now - 1000;
  return { ms: ok ? ts : now, ok };
}

// ---------------------------------------------------------------- the tap-along (calibration)
// One for both pages: the laptop's clicks (its "clicks" message, after "calibrate") played
// after a lead-in; every touch meanwhile is a tap, stamped on the clicks' track; the taps sent
// ("cal") once the clicks have ended, with where the output clock moved (a gap in the sound:
// the taps after it are not used, as `karuta calibrate` does).  The laptop keeps the result
// for this device (its id) and answers "calibrated".
// ui: {send, refuse, status, playing(), tapped(n)}: the page's parts.
export const GAP_MS = 5;       // the output clock moved more than this: the sound had a gap
const TAP_LEAD_S = 0.5;        // silence before the first click

export async function askCalibration(S, ui, count = 20) {
  ui.status("get ready…");
  await openSound(S);
  ui.send({ t: "calibrate", count });
}

export async function tapAlong(S, ui, m) {
  S.clicksFrames = m.clicks;
  const r = await fetch(m.url);
  if (!r.ok) { ui.refuse(`karuta: ${(await r.text()).trim()}`); return; }
  const buf = await S.ctx.decodeAudioData(await r.arrayBuffer());
  ui.playing();
  ui.tapped(0);
  const at = S.ctx.currentTime + TAP_LEAD_S;
  S.cal = { at, taps: [], done: false, moved: null, since: S.clock.offset() };
  const watch = setInterval(() => {  // the output clock moved: the sound had a gap then
    if (S.cal.done) { clearInterval(watch); return; }
    const gap = (S.clock.offset() - S.cal.since) * 1000;
    if (S.cal.moved === null && Math.abs(gap) > GAP_MS) S.cal.moved = (S.ctx.currentTime - at) * 1000;
  }, 20);
  const src = S.ctx.createBufferSource();
  src.buffer = buf;
  src.connect(S.ctx.destination);
  src.start(at);
  ui.status("tap anywhere on each click");
  src.onended = () => setTimeout(() => {
    const msg = { t: "cal", taps: S.cal.taps.slice(0, 80) };
    if (S.cal.moved !== null) msg.moved_ms = Math.round(S.cal.moved);
    ui.send(msg);
  }, 300);
}

// a touch during a tap-along: a tap (true), or not one (false: the page's own touch)
export function tapTouch(S, e, ui) {
  if (!S.cal || S.cal.done) return false;
  const st = stampOf(e), t = S.clock.ctxOf(st.ms);
  if (t !== null && st.ok) S.cal.taps.push(+((t - S.cal.at) * 1000).toFixed(3));
  ui.tapped(S.cal.taps.length);
  return true;
}

// the line a page shows for its device's calibration (offset ms, or null: none)
export function calibrationLine(offset) {
  return offset === null || offset === undefined
    ? "this device is not calibrated: its touches are not timed and are kept out of karuta stats (tap along first: about 15 s)"
    : `this device: calibrated ${offset >= 0 ? "+" : ""}${offset.toFixed(1)} ms`;
}
