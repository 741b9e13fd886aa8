// karuta's practice board on a phone or tablet: this page plays the match's reading (Web
// Audio, each clip started at its plan frame's instant, as the drill page does) and maps each
// touch of a card to the plan frame it was playing; the laptop judges by frames (the same
// practice session as every board), and sends the view this page draws.  Nothing from outside.
import { Timeline } from "./timeline.js";
import {
  askCalibration, calibrationLine, clip as clipOf, connect as link, epochOfFrame, heardNow as heard, openSound,
  playAt, stampOf, tapAlong, tapTouch,
} from "./device.js";
import { laptopTimeOf, onPong, startSync } from "./touchonly.js";

const LEAD_S = 0.5;      // silence before the first sound is due (it is never cut)
const GO_S = 0.3;        // after a kyogi wait, the reading goes on at least this far ahead
const AHEAD = 6;         // speech clips fetched ahead
const AT_MS = 50;        // the frame heard is told to the laptop this often
const PROTOCOL = 2;      // the board's messages (boardproto.VERSION)
const INPUTS = new Set(["touch", "pick", "send"]);  // numbered, acknowledged, sent again

const $ = (id) => document.getElementById(id);
const S = {              // the page's state (window.karuta, for the tests)
  ws: null, welcome: null, timeline: null, ctx: null, clock: null, phase: "connecting",
  clips: new Map(), played: new Set(), sent: [], refused: null, view: null, over: null,
  touches: [], cut: 0, tries: 0,
  you: null, nextId: 0, unacked: [], sentIds: new Set(), begun: false,
};
window.karuta = S;

function refuse(text) { S.refused = text; $("refusal").textContent = text; $("refusal").hidden = false; }
function status(text) { $("status").textContent = text; }
function show(id) { for (const s of ["join", "taps", "play", "end"]) $(s).hidden = s !== id; S.phase = id; }
function send(msg) {
  // a touch, pick or send is numbered and kept until the laptop acknowledges it: sent again
  // after a rejoin (one sent into a link that was dying is not lost; the laptop takes each
  // number once).  Until the laptop has welcomed this link only the hello goes out: a touch
  // made meanwhile waits (sent on rejoining, before any frame heard since, which would close
  // its read first), and the frame heard is told again at the next tick
  if (INPUTS.has(msg.t) && !msg.id) { S.nextId += 1; msg.id = S.nextId; S.unacked.push(msg); }
  const open = S.ws && S.ws.readyState === WebSocket.OPEN && (S.joined || msg.t === "hello");
  if (!open) return;
  S.ws.send(JSON.stringify(msg));
  if (msg.t !== "at" && msg.t !== "ping" && !S.sentIds.has(msg.id)) { S.sent.push(msg); if (msg.id) S.sentIds.add(msg.id); }
}

// the seat's token (the welcome's): shown in the hello to get the seat back after a sleep or
// a reload (kept for this address's code in the device's storage)
const seatKey = (code) => `karuta-seat-${code}`;
function hello(code) {
  let seat = S.token || null;
  if (!seat) { try { seat = localStorage.getItem(seatKey(code)); } catch (e) { /* private mode */ } }
  return seat && /^[0-9a-f]{32}$/.test(seat) ? { v: PROTOCOL, seat } : { v: PROTOCOL };
}



function connect() { link(S, { handlers: HANDLERS, send, refuse, status, hello }); }
const sound = () => openSound(S);
const clip = (i) => clipOf(S, i, refuse);
const play = (i, when) => playAt(S, i, when, refuse);
const heardNow = () => heard(S);
S.epochOfFrame = (f) => epochOfFrame(S, f);
S.heardNow = heardNow;

const HANDLERS = {
  welcome(m) {
    S.tries = 0;
    S.joined = true;
    S.you = m.you;
    S.token = m.token;
    try {  // (this run's token; those of earlier runs, other codes, are done with)
      const key = seatKey(decodeURIComponent(location.hash.slice(1)));
      for (let i = localStorage.length - 1; i >= 0; i--) {
        const k = localStorage.key(i);
        if (k && k.startsWith("karuta-seat-") && k !== key) localStorage.removeItem(k);
      }
      localStorage.setItem(key, m.token);
    } catch (e) { /* kept for this visit */ }
    startSync(S, send);
    if (S.ctx && S.welcome && S.welcome.plan === m.plan) {  // joined again while playing
      status("");
      for (const msg of S.unacked) send(msg);  // (in order; the laptop takes each once)
      if (S.begun && !S.timeline.anchors.length) send({ t: "start" });  // (its go was lost)
      return;
    }
    S.welcome = m;
    S.timeline = new Timeline(m.segs, m.rate);
    S.speech = m.segs.map((s) => !!s[5]);
    $("calib").textContent = calibrationLine(m.calibration);
    $("calibrate").textContent = m.calibration === null ? "Calibrate first: tap along" : "Calibrate again: tap along";
    $("calibrate").hidden = m.you === "watch";  // (a watcher's touches are not taken)
    $("seat").textContent = m.you === "watch"
      ? "watching: the players' seats are taken (you see the board and hear the reading; touches are not taken here)"
      : `your seat: ${m.you}`;
    status("joined");
    show("join");
  },
  clicks(m) { tapAlong(S, TAPS, m); },
  calibrated(m) {
    status(m.line);
    if (S.cal) S.cal.done = true;
    if (m.offset_ms !== null) {
      $("calib").textContent = calibrationLine(m.offset_ms);
      $("calibrate").textContent = "Calibrate again: tap along";
    }
    show("join");
    $("start").disabled = false; $("calibrate").disabled = false;
  },
  error(m) { refuse(m.text); status(""); },
  warn(m) { status(m.text); },
  view(m) {
    S.view = m.view;
    draw(m.view);
    $("far-name").hidden = m.view.seats.filter((s) => s.here).length < 2;  // two at one tablet
  },
  ack(m) { S.unacked = S.unacked.filter((x) => x.id > m.id); },
  pong(m) { onPong(S, m); },
  go(m) {
    const tl = S.timeline;
    if (!S.ctx) return;  // (Start not pressed here yet: its own go comes then)
    if (!tl.anchors.length) {  // the reading starts (every player pressed Start)
      status("");
      anchor(S.ctx.currentTime + LEAD_S, m.frame);
      return;
    }
    const due = tl.instantOf(m.frame);
    anchor(Math.max(S.ctx.currentTime + GO_S, due === null ? 0 : due), m.frame);
  },
  over(m) {
    S.over = m.lines;
    const ul = $("endlines");
    ul.innerHTML = "";
    for (const line of m.lines) { const li = document.createElement("li"); li.textContent = line; ul.appendChild(li); }
    $("end").hidden = false;
    S.phase = "end";
    status("");
  },
};

// ---------------------------------------------------------------- the board
function cardEl(c, b) {
  const d = document.createElement("div");
  d.className = "card";
  if (c === 0) { d.classList.add("hole"); return d; }
  d.dataset.card = String(c);
  d.textContent = S.welcome.labels[String(c)] || String(c);
  if (b.dim.includes(c)) d.classList.add("dim");
  if (b.marks[String(c)]) d.classList.add(b.marks[String(c)]);
  return d;
}

function territory(el, t, b, far) {
  el.innerHTML = "";
  if (!t) return;
  // rows 0 上段 .. 2 下段 (nearest its player); left/right as its player sees them, each
  // listed from the edge inwards.  The far side is seen from across the table.
  const order = far ? [2, 1, 0] : [0, 1, 2];
  for (const r of order) {
    const [left, right] = t.rows[r];
    const row = document.createElement("div");
    row.className = "row";
    const gl = document.createElement("div"), gr = document.createElement("div");
    gl.className = gr.className = "group";
    const [a, z] = far ? [right, left] : [left, right];
    for (const c of a) gl.appendChild(cardEl(c, b));
    for (const c of [...z].reverse()) gr.appendChild(cardEl(c, b));
    row.append(gl, gr);
    el.appendChild(row);
  }
}

function hand(el, cards, onBoard, b) {
  // goshiki: a player's ten as laid out, those taken or gone to the 場 left as empty places
  el.innerHTML = "";
  const row = document.createElement("div");
  row.className = "row";
  for (const c of cards) row.appendChild(cardEl(onBoard.includes(c) ? c : 0, b));
  el.appendChild(row);
}

function draw(v) {
  const b = v.board, me = v.viewer, other = me === "A" ? "B" : "A";
  if (!Object.keys(b.territories).length) {  // goshiki: the hands and the 場
    document.documentElement.style.setProperty("--cols", "11");
    hand($("near"), b.hands[me] || [], b.on_board[me] || [], b);
    hand($("far"), b.hands[other] || [], b.on_board[other] || [], b);
    $("ba").innerHTML = "";
    for (const c of b.ba) $("ba").appendChild(cardEl(c, b));
    return drawRest(v, me, other);
  }
  $("ba").innerHTML = "";
  let cols = 4;  // the widest row of either side (its places, and one for the gap)
  for (const t of Object.values(b.territories)) for (const [l, r] of t.rows) cols = Math.max(cols, l.length + r.length + 1);
  document.documentElement.style.setProperty("--cols", String(cols));
  territory($("near"), b.territories[me], b, false);
  territory($("far"), b.territories[other], b, true);
  drawRest(v, me, other);
}

function drawRest(v, me, other) {
  const seats = Object.fromEntries(v.seats.map((s) => [s.player, s]));
  const name = (s) => s.kind === "human" ? (s.you ? "you" : `player ${s.player}`) : s.kind === "bot" ? `bot ${s.level}` : s.kind;
  $("score").textContent = `${name(seats[me])}: ${seats[me].count} · ${name(seats[other])}: ${seats[other].count} (${v.count_word})`;
  $("line").textContent = v.line_text;
  $("countdown").textContent = v.countdown || "";
  const owes = v.owed && seats[v.owed[0]] && seats[v.owed[0]].here;  // (a player at this page)
  $("send").hidden = !owes;
  if (owes) for (const c of v.owed[2]) { const el = document.querySelector(`.card[data-card="${c}"]`); if (el) el.classList.add("pick"); }
}

// ---------------------------------------------------------------- sound (as the drill page)


function speechFrom(frame, n) {
  const out = [];
  S.timeline.segs.forEach((s, i) => { if (out.length < n && s.end > frame && S.speech[i]) out.push(i); });
  return out;
}
function prefetch(frame) {
  const want = speechFrom(frame, AHEAD);
  for (const i of want) clip(i);
  for (const i of [...S.clips.keys()]) if (S.timeline.segs[i].end < frame) S.clips.delete(i);
}


function anchor(at, frame) {
  // every speech segment from `frame` up to the next kyogi wait, each at its frame's instant
  const tl = S.timeline;
  tl.anchor(at, frame);
  const w = tl.waitAfter(frame);
  const top = w ? w.end : tl.frames;
  tl.segs.forEach((s, i) => {
    if (S.speech[i] && s.start >= frame && s.start < top && !S.played.has(i)) {
      S.played.add(i);
      play(i, at + (s.start - frame) / tl.rate);
    }
  });
  prefetch(frame);
}


// ---------------------------------------------------------------- the tap-along, the names
const TAPS = {  // (device.js: the one tap-along of both pages)
  send, refuse, status,
  playing() { show("taps"); },
  tapped(n) { $("tapcount").textContent = String(n); },
};
async function calibrate(count = 20) {
  $("start").disabled = true; $("calibrate").disabled = true;
  await askCalibration(S, TAPS, count);
}
S.calibrate = calibrate;

// the names the players gave (kept on the device): stats are filed under them
function names() {
  const out = {}, v = S.view, me = v ? v.viewer : "A", far = me === "A" ? "B" : "A";
  const near = $("name").value.trim(), other = $("name-b").value.trim();
  try { localStorage.setItem("karuta-name", near); } catch (e) { /* private mode */ }
  if (near) out[me] = near.slice(0, 24);
  if (other && !$("far-name").hidden) out[far] = other.slice(0, 24);
  return out;
}

async function begin() {
  const who = names();
  show("play");
  status("get ready…");
  $("start").disabled = true;
  await sound();
  prefetch(S.welcome.from);
  await Promise.all(speechFrom(S.welcome.from, 1).map(clip));
  S.begun = true;
  status("waiting for the reading to start…");
  // (the laptop says go once every player's page has pressed Start)
  send(Object.keys(who).length ? { t: "start", names: who } : { t: "start" });
  setInterval(tick, AT_MS);
}

function tick() {
  if (S.over) return;
  const f = heardNow();
  if (f === null) return;
  send({ t: "at", frame: Math.round(f) });
  prefetch(f);
}

// ---------------------------------------------------------------- touches

// Whose touch: two players at one tablet (both seats here) -- the half where the pointer went
// down (the far half: the far side's player), whatever card it then reaches; else seat A's.
const pointers = new Map();  // pointerId -> {player, done}
function ownerOf(e) {
  const v = S.view;
  if (!v || v.seats.filter((s) => s.here).length < 2) return v ? v.viewer : "A";
  const mid = $("mid").getBoundingClientRect();
  const far = v.viewer === "A" ? "B" : "A";
  return e.clientY < mid.top + mid.height / 2 ? far : v.viewer;
}

function onDown(e) {
  if (tapTouch(S, e, TAPS)) return;  // a tap of the tap-along
  if (S.phase !== "play" || S.over) return;
  const dot = document.createElement("div");  // where the touch landed ("I touched but missed")
  dot.className = "dot";
  dot.style.left = `${e.clientX}px`; dot.style.top = `${e.clientY}px`;
  document.body.appendChild(dot);
  setTimeout(() => dot.remove(), 1500);
  if (e.target.closest && e.target.closest("#send")) { send({ t: "send" }); return; }
  const p = { player: ownerOf(e), done: false };
  pointers.set(e.pointerId, p);
  onCard(e, p, e.target);
}

function onMove(e) {
  // a swipe from the player's half reaches a card: the touch is when it reaches it
  const p = pointers.get(e.pointerId);
  if (!p || p.done || S.phase !== "play") return;
  onCard(e, p, document.elementFromPoint(e.clientX, e.clientY));
}

function onCard(e, p, target) {
  const card = target && target.closest && target.closest(".card[data-card]");
  if (!card) return;
  const st = stampOf(e);
  const t = S.clock.ctxOf(st.ms);
  const f = t === null ? null : S.timeline.heard(t);
  if (f === null) return;  // nothing is being read yet
  p.done = true;
  const c = Number(card.dataset.card);
  S.touches.push({ card: c, player: p.player, stamp: st.ms, frame: f, laptop: laptopTimeOf(S, st.ms) });
  if (navigator.vibrate) navigator.vibrate(15);
  send({ t: "touch", card: c, frame: Math.round(f), stamp: st.ok ? "ok" : "bad", player: p.player });
}

document.addEventListener("pointerdown", onDown, { passive: true });
document.addEventListener("pointermove", onMove, { passive: true });
for (const end of ["pointerup", "pointercancel"]) document.addEventListener(end, (e) => pointers.delete(e.pointerId), { passive: true });
$("start").addEventListener("click", () => begin());
$("calibrate").addEventListener("click", () => calibrate());
try { $("name").value = localStorage.getItem("karuta-name") || ""; } catch (e) { /* private mode */ }
connect();
