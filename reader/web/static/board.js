// karuta's practice board on a phone or tablet: this page plays the match's reading (Web
// Audio, each clip started at its plan frame's instant, as the drill page does) and maps each
// touch of a card to the plan frame it was playing; the laptop judges by frames (the same
// practice session as every board), and sends the view this page draws.  Nothing from outside.
import { Timeline } from "./timeline.js";
import { askCalibration, bind, calibrationLine, deviceId, GAP_MS, stampOf, tapAlong, tapTouch } from "./device.js";
import { laptopTimeOf, onPong, startSync } from "./touchonly.js";

const LEAD_S = 0.5;      // silence before the first sound is due (it is never cut)
const GO_S = 0.3;        // after a kyogi wait, the reading goes on at least this far ahead
const SYNC_WAIT_MS = 3000;  // a page starting late waits this long at most for the laptop's clock
const AHEAD = 6;         // speech clips fetched ahead
const AT_MS = 50;        // the frame heard is told to the laptop this often
const PROTOCOL = 2;      // the board's messages (boardproto.VERSION)
const INPUTS = new Set(["touch", "pick", "send"]);  // numbered, acknowledged, sent again

const $ = (id) => document.getElementById(id);
const S = {              // the page's state (window.karuta, for the tests)
  ws: null, welcome: null, timeline: null, ctx: null, clock: null, phase: "connecting",
  clips: new Map(), played: new Set(), sent: [], refused: null, view: null, over: null,
  touches: [], cut: 0, tries: 0,
  you: null, nextId: 0, unacked: [], sentIds: new Set(), begun: false, firstGo: null,
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


const { connect, sound, clip, play, heardNow } = bind(S, {
  get handlers() { return HANDLERS; }, send, refuse, status, hello,
});

const HANDLERS = {
  welcome(m) {
    S.tries = 0;
    S.joined = true;
    const took = S.you === "watch" && m.you !== "watch";  // (this page took a seat over)
    S.you = m.you;
    S.token = m.token;
    $("takeover").hidden = true;
    try {  // (this run's token; those of earlier runs, other codes, are done with)
      const key = seatKey(decodeURIComponent(location.hash.slice(1)));
      for (let i = localStorage.length - 1; i >= 0; i--) {
        const k = localStorage.key(i);
        if (k && k.startsWith("karuta-seat-") && k !== key) localStorage.removeItem(k);
      }
      localStorage.setItem(key, m.token);
    } catch (e) { /* kept for this visit */ }
    startSync(S, send);
    // a watcher that was playing took a seat over: the page starts again as the seat's (its
    // token kept above), and its Start plays the pending read
    if (took && S.ctx) { location.reload(); return; }
    if (S.ctx && S.welcome && S.welcome.plan === m.plan) {  // joined again while playing
      status("");
      for (const msg of S.unacked) send(msg);  // (in order; the laptop takes each once)
      if (S.begun && !S.timeline.anchors.length && !memorising()) send({ t: "start" });  // (its go was lost)
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
    smallHint(m.view);
    $("far-name").hidden = m.view.seats.filter((s) => s.here).length < 2;  // two at one tablet
  },
  ack(m) { S.unacked = S.unacked.filter((x) => x.id > m.id); },
  vacant(m) {  // seats whose devices never came back: this watcher may take one over
    S.vacant = m.seats;
    const b = $("takeover");
    b.hidden = !m.seats.length || S.you !== "watch";
    if (m.seats.length) b.textContent = `take over seat ${m.seats[0]}: its device is gone`;
  },
  pong(m) { onPong(S, m); },
  go(m) {
    const tl = S.timeline;
    if (!S.ctx) return;  // (Start not pressed here yet: its own go comes then)
    // the go's instant on the laptop's clock, on this page's audio clock (the laptop's clock
    // measured by the pings): every device plays the frame at the same instant
    const at = ctxOfLaptop(m.at);
    if (!tl.anchors.length) {  // the reading starts (every player pressed Start)
      // (a page that starts late -- reloaded mid-read, a watcher -- is told the frame the
      // schedule every page shares reaches at `at`: it catches up at once; `quiet`: it came
      // back past the read's decisive part, and sounds nothing before the next read)
      S.late = m.frame > S.welcome.from ? { frame: m.frame, quiet: m.quiet ?? null } : null;
      status(!S.late ? "" : S.late.quiet !== null
        ? "you came back after this read's decisive sound: the reading goes on here from the next read"
        : "you came back mid-read: the reading plays on from where it is now");
      $("countdown").textContent = "";
      S.firstGo = m;
      startOn(m, performance.now());
      return;
    }
    // on at the laptop's instant (every device at the same one, a page that ran late before
    // included); unmeasured, at the page's own instant for the frame
    if (at !== null) { anchor(Math.max(S.ctx.currentTime + 0.02, at), m.frame); return; }
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
// Each torifuda is an image the laptop drew with the project's card renderer (reader.ui.torifuda,
// served by reader/web/cards.py), one <img> a card kept for the whole match (fetched once);
// the far side's turned 180° by CSS.  A card's box is as wide as the screen allows
// (fit()): the widest row's places (half a place for the gap between its groups, one to spare
// for a card sent in), six rows and the middle bar in the height; the column count only grows,
// so a card never moves under a finger (a card that leaves leaves its place empty; only its
// owner's own drag moves cards; a second card beyond the widest row's end shrinks them all).
const IMGS = new Map();  // card -> its <img>
function imgOf(c) {
  let im = IMGS.get(c);
  const w = S.welcome;
  if (!w.cards) return null;
  const need = (S.cw || 60) * (window.devicePixelRatio || 1);
  const width = w.widths.find((x) => x >= need) || w.widths[w.widths.length - 1];
  const src = `${w.cards}${width}/${c}.${w.ext}`;
  if (!im) { im = document.createElement("img"); im.alt = w.labels[String(c)] || String(c); im.draggable = false; IMGS.set(c, im); }
  if (im.getAttribute("src") !== src) im.src = src;
  return im;
}

function cardEl(c, b, where) {
  const d = document.createElement("div");
  d.className = "card";
  if (where) { d.dataset.owner = where.owner; d.dataset.row = String(where.row); d.dataset.side = String(where.side); d.dataset.index = String(where.index); }
  if (c === 0) { d.classList.add("hole"); return d; }
  d.dataset.card = String(c);
  const im = imgOf(c);
  if (im) d.appendChild(im); else d.textContent = S.welcome.labels[String(c)] || String(c);
  if (b.dim.includes(c)) d.classList.add("dim");
  if (b.marks[String(c)]) d.classList.add(b.marks[String(c)]);
  return d;
}

function territory(el, t, b, far, owner) {
  el.innerHTML = "";
  if (!t) return;
  // rows 0 上段 .. 2 下段 (nearest its player); left/right as its player sees them, each
  // listed from the edge inwards.  The far side is seen from across the table.
  const order = far ? [2, 1, 0] : [0, 1, 2];
  for (const r of order) {
    const [left, right] = t.rows[r];
    const row = document.createElement("div");
    row.className = "row";
    row.dataset.owner = owner; row.dataset.row = String(r);
    const gl = document.createElement("div"), gr = document.createElement("div");
    gl.className = gr.className = "group";
    // (screen-left group: the near player's left, the far player's right)
    const [sa, sz] = far ? [1, 0] : [0, 1];
    const [a, z] = far ? [right, left] : [left, right];
    gl.dataset.side = String(sa); gr.dataset.side = String(sz);
    a.forEach((c, i) => gl.appendChild(cardEl(c, b, { owner, row: r, side: sa, index: i })));
    [...z].reverse().forEach((c, k) => gr.appendChild(cardEl(c, b, { owner, row: r, side: sz, index: z.length - 1 - k })));
    row.append(gl, gr);
    el.appendChild(row);
  }
}

function hand(el, cards, onBoard, b, far) {
  // goshiki: a player's ten as laid out (two rows of five, the first five the front row, head
  // to head with the other player's), those taken or gone to the 場 left as empty places
  el.innerHTML = "";
  const front = cards.slice(0, 5), back = cards.slice(5);
  for (const part of far ? [back, front] : [front, back]) {
    const row = document.createElement("div");
    row.className = "row five";
    for (const c of far ? [...part].reverse() : part) row.appendChild(cardEl(onBoard.includes(c) ? c : 0, b));
    el.appendChild(row);
  }
}

const GAP = 3, CHROME = 34;  // (between cards; the two sides' borders, paddings and row gaps)
function fit() {
  // the card width (--cw) for this screen: the widest row across, the rows down.  A phone on
  // its side (landscape, short) moves the middle bar to a column at the right.
  const v = S.view;
  if (!v) return;
  const W = innerWidth, H = innerHeight;
  const land = W > H, short = land && H < 600;
  const body = document.body.classList;
  body.toggle("landscape", land);
  body.toggle("short", short);
  body.toggle("playing", S.phase === "play");
  const b = v.board;
  let cols = 4, rows = 6;
  if (!Object.keys(b.territories).length) { cols = 5.5; rows = 5; }  // (goshiki: 2 + 2, the 場)
  else for (const t of Object.values(b.territories)) for (const [l, r] of t.rows) cols = Math.max(cols, l.length + r.length + 0.5);
  // never fewer, and one place to spare from the start: a card sent in beyond a row's end
  // (no empty place there) fits in the gap between the groups, and no card moves or shrinks
  // (goshiki: nothing is sent into a hand)
  const spare = Object.keys(b.territories).length ? 1 : 0;
  S.cols = Math.max(S.cols || cols + spare, cols);
  const pad = short ? 4 : 10;
  const mid = $("mid");
  const fixed = (short ? 0 : mid.offsetHeight + GAP) + (S.phase === "play" ? 0 : $("status").offsetHeight)
    + ($("refusal").hidden ? 0 : $("refusal").offsetHeight);
  const across = W - 2 * 10 - 10 - (short ? mid.offsetWidth + 6 : 0);
  const byW = (across - (Math.ceil(S.cols) - 1) * GAP) / S.cols;
  const byH = ((H - fixed - 2 * pad - CHROME - Math.max(0, rows - 6) * GAP) / rows) * 52 / 73;
  const cw = Math.max(16, Math.floor(Math.min(byW, byH, 150)));
  if (cw !== S.cw) {
    S.cw = cw;
    document.documentElement.style.setProperty("--cw", `${cw}px`);
    for (const c of IMGS.keys()) imgOf(c);  // (a sharper size for a bigger box)
  }
}
window.addEventListener("resize", () => { fit(); });

function draw(v) {
  const b = v.board, me = v.viewer, other = me === "A" ? "B" : "A";
  document.body.classList.toggle("arranging", arranging());
  if (!Object.keys(b.territories).length) {  // goshiki: the hands and the 場
    hand($("near"), b.hands[me] || [], b.on_board[me] || [], b, false);
    hand($("far"), b.hands[other] || [], b.on_board[other] || [], b, true);
    $("ba").innerHTML = "";
    for (const c of b.ba) $("ba").appendChild(cardEl(c, b));
    drawRest(v, me, other);
    return fit();
  }
  $("ba").innerHTML = "";
  territory($("near"), b.territories[me], b, false, me);
  territory($("far"), b.territories[other], b, true, other);
  drawRest(v, me, other);
  fit();
}

function drawRest(v, me, other) {
  const seats = Object.fromEntries(v.seats.map((s) => [s.player, s]));
  const name = (s) => s.kind === "human" ? (s.you ? "you" : `player ${s.player}`) : s.kind === "bot" ? `bot ${s.level}` : s.kind;
  $("score").textContent = `${name(seats[me])}: ${seats[me].count} · ${name(seats[other])}: ${seats[other].count} (${v.count_word})`;
  const memo = v.line && v.line.kind === "memorize";
  const drags = Object.keys(v.board.territories).length > 0;  // (goshiki's cards stay as dealt)
  $("line").textContent = memo ? (drags ? "暗記 memorise · drag your cards" : "暗記 memorise")
    : v.line.kind === "arrange" ? (drags ? "drag your cards, then Start" : "Start") : v.line_text;
  if (memo) {
    const end = performance.now() + v.line.left_s * 1000;
    if (S.memoEnd === undefined || Math.abs(S.memoEnd - end) > 1500) S.memoEnd = end;
  }
  $("skip").hidden = !(memo && S.begun);
  if (!memo) $("countdown").textContent = v.countdown || "";
  const owes = v.owed && seats[v.owed[0]] && seats[v.owed[0]].here;  // (a player at this page)
  $("send").hidden = !owes;
  if (owes) for (const c of v.owed[2]) { const el = document.querySelector(`.card[data-card="${c}"]`); if (el) el.classList.add("pick"); }
  const read = v.line && (v.line.kind === "counter" || v.line.kind === "read-over") ? v.line.read : null;
  if (read !== null && v.line.kind === "counter" && read !== S.readNo) clearMarks();
  if (read !== null) S.readNo = read;
}
// a phone dealt a tablet's match (more than PHONE_CARDS a side): its cards are small, and the
// join screen says how the laptop deals fewer with the 友札 kept (docs/web.md)
const PHONE_SIDE = 600, PHONE_CARDS = 12;  // (CSS px: a screen's short side under it is a phone's)
function smallHint(v) {
  const t = v.board.territories[v.viewer];
  const n = t ? t.rows.flat(2).filter((c) => c > 0).length : 0;
  const small = Math.min(innerWidth, innerHeight) < PHONE_SIDE && n > PHONE_CARDS && S.phase === "join";
  $("small").hidden = !small;
  if (small) {
    $("small").textContent = `${n} cards a side are ${S.cw} px wide on this phone: for a phone the laptop `
      + "deals fewer with the 友札 kept (karuta practice --web --cards 8 --tomofuda)";
  }
}

// the memorisation's countdown runs (a resumed match's view says "memorize" before it does)
function memorising() { return !!(S.view && S.view.phase === "memorize" && S.view.line && S.view.line.kind === "memorize"); }

// the memorisation's countdown, on the page's own clock from the laptop's "left"; at 0 (or
// "start the reading") the page asks for the reading
setInterval(() => {
  const v = S.view;
  if (!v || !v.line || v.line.kind !== "memorize" || S.memoEnd === undefined) return;
  const left = Math.max(0, (S.memoEnd - performance.now()) / 1000);
  $("countdown").textContent = `${Math.floor(left / 60)}:${String(Math.floor(left % 60)).padStart(2, "0")}`;
  if (left <= 0 && S.begun && !S.askedRead) { S.askedRead = true; send({ t: "start" }); }
}, 250);

// ---------------------------------------------------------------- marks where touches landed
// A dot where each touch landed, kept until the next read begins ("I touched but missed"):
// gold on a card, red off every card.
function markTouch(e) {
  const dot = document.createElement("div");
  dot.className = "dot";
  if (!(e.target.closest && e.target.closest(".card[data-card]"))) dot.classList.add("off");
  dot.style.left = `${e.clientX}px`; dot.style.top = `${e.clientY}px`;
  document.body.appendChild(dot);
  S.marks = (S.marks || 0) + 1;
}
function clearMarks() { for (const d of document.querySelectorAll(".dot")) d.remove(); }

// ---------------------------------------------------------------- arranging (memorisation)
// Before the first read (arranging, memorising) a player drags the cards of their own side:
// the card follows the finger; let go on a place (a card, or an empty place) it goes there
// (reader.practice.board.move: the group's cards pushed inwards up to the next empty place),
// on the bare row it goes to the inner end of that row's nearer group.  The laptop's table
// (its arrange) moves it, and the view it sends back draws it.
function arranging() { return !!(S.view && (S.view.phase === "arrange" || S.view.phase === "memorize") && S.phase === "play"); }
function mine(owner) { return !!(S.view && S.view.seats.some((s) => s.player === owner && s.here)); }
function dragDown(e) {
  if (!arranging()) return;
  const el = e.target.closest && e.target.closest(".card[data-card]");
  if (!el || !el.dataset.owner || !mine(el.dataset.owner)) return;
  e.stopPropagation();  // (not a touch of a card: the reading has not begun)
  S.drag = { id: e.pointerId, el, x0: e.clientX, y0: e.clientY, card: Number(el.dataset.card), owner: el.dataset.owner };
  el.classList.add("lifted");
}
function dragMove(e) {
  const d = S.drag;
  if (!d || d.id !== e.pointerId) return;
  d.el.style.setProperty("--dx", `${e.clientX - d.x0}px`);
  d.el.style.setProperty("--dy", `${e.clientY - d.y0}px`);
}
function dropAt(d, x, y) {
  const under = document.elementsFromPoint(x, y).filter((n) => n !== d.el && !d.el.contains(n));
  const place = under.find((n) => n.classList && n.classList.contains("card") && n.dataset.owner === d.owner);
  if (place) return { row: Number(place.dataset.row), side: Number(place.dataset.side), index: Number(place.dataset.index) };
  const row = under.find((n) => n.classList && n.classList.contains("row") && n.dataset.owner === d.owner);
  if (!row) return null;
  const [g0, g1] = row.children;
  const r0 = g0.getBoundingClientRect(), r1 = g1.getBoundingClientRect();
  const g = Math.abs(x - r0.right) <= Math.abs(x - r1.left) ? g0 : g1;
  return { row: Number(row.dataset.row), side: Number(g.dataset.side), index: g.children.length };
}
function dragUp(e) {
  const d = S.drag;
  if (!d || d.id !== e.pointerId) return;
  S.drag = null;
  const to = e.type === "pointerup" ? dropAt(d, e.clientX, e.clientY) : null;
  d.el.classList.remove("lifted");
  d.el.style.removeProperty("--dx"); d.el.style.removeProperty("--dy");
  if (to) {
    const msg = { t: "arrange", card: d.card, ...to };
    if (d.owner !== "A") msg.player = d.owner;
    send(msg);
    S.arranged = (S.arranged || 0) + 1;
  }
}
$("play").addEventListener("pointerdown", dragDown);
$("play").addEventListener("pointermove", dragMove);
$("play").addEventListener("pointerup", dragUp);
$("play").addEventListener("pointercancel", dragUp);

// ---------------------------------------------------------------- keeping the screen on
// Wake Lock needs a secure context (https, or 127.0.0.1): on a LAN's plain http it is not
// there, and the page says so (the player turns Auto-Lock off).
async function keepAwake() {
  const say = (text) => { S.wake = text; $("wake").textContent = text; };
  if (!("wakeLock" in navigator)) {
    say(window.isSecureContext ? "this browser cannot keep the screen on: turn Auto-Lock off"
      : "the screen may turn off: plain http cannot keep it on (turn Auto-Lock off)");
    return;
  }
  try {
    const lock = await navigator.wakeLock.request("screen");
    say("the screen is kept on");
    lock.addEventListener("release", () => { if (document.visibilityState !== "visible") S.wake = "released"; });
  } catch (err) { say(`the screen may turn off (${String(err && err.name || err).slice(0, 60)}): turn Auto-Lock off`); }
}
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible" && S.begun && S.wake === "released") keepAwake(); });

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


// The reading's first go on this page: at the laptop's instant for its frame.  A page that
// starts late (reloaded mid-read, a watcher) and has not measured the laptop's clock yet waits
// for it (up to SYNC_WAIT_MS: then on at its own instant); one whose instant has passed (a
// busy page) plays on from the frame the schedule every page shares reaches a moment from
// now.  The match's first go is never cut: late, it starts LEAD_S from now.
function startOn(m, since) {
  if (S.firstGo !== m || S.timeline.anchors.length) return;  // (another go came first)
  const at = ctxOfLaptop(m.at), now = S.ctx.currentTime;
  if (at === null && S.late && performance.now() - since < SYNC_WAIT_MS) {
    setTimeout(() => startOn(m, since), 50);
    return;
  }
  if (at !== null && at > now + 0.05) anchor(at, m.frame, m.quiet);
  else if (at !== null && S.late) anchor(now + 0.05, m.frame + Math.round((now + 0.05 - at) * S.timeline.rate), m.quiet);
  else anchor(now + LEAD_S, m.frame, m.quiet);
}

function anchor(at, frame, quiet = null) {
  // every speech segment from `frame` up to the next kyogi wait, each at its frame's instant
  // (one `frame` falls in: from that point of it, at `at`); none before `quiet`
  const tl = S.timeline;
  tl.anchor(at, frame);
  const w = tl.waitAfter(frame);
  const top = w ? w.end : tl.frames;
  tl.segs.forEach((s, i) => {
    if (S.speech[i] && s.end > frame && s.start < top && !S.played.has(i) && (quiet === null || s.start >= quiet)) {
      S.played.add(i);
      if (s.start >= frame) play(i, at + (s.start - frame) / tl.rate);
      else play(i, at, (frame - s.start) / tl.rate);
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
  fit();
  requestAnimationFrame(fit);  // (once the middle bar has its size)
  status("get ready…");
  $("start").disabled = true;
  keepAwake();
  await sound();
  prefetch(S.welcome.from);
  await Promise.all(speechFrom(S.welcome.from, 1).map(clip));
  S.begun = true;
  // arranged: the memorisation starts once every player's page has pressed Start (or the
  // reading, if there is none: the laptop says go); a page joined again during the
  // memorisation goes on counting it down (a start then would skip the rest)
  if (!memorising()) {
    status("waiting for the reading to start…");
    send(Object.keys(who).length ? { t: "start", names: who } : { t: "start" });
  } else status("");
  setInterval(tick, AT_MS);
}

// a laptop instant (s, its clock) on this page's audio context clock, or null (not measured)
function ctxOfLaptop(at) {
  if (typeof at !== "number" || !S.sync || S.sync.offset === null || !S.clock) return null;
  const t = S.clock.ctxOf((at - S.sync.offset) * 1000);
  return t === null || !Number.isFinite(t) ? null : t;
}

function tick() {
  if (S.over) return;
  const f = heardNow();
  if (f === null) return;
  // the output clock as each 上の句 began: a touch made after it moved more than GAP_MS (the
  // sound had a gap: a busy device's stalls) says so, its frame kept but its time not trusted
  const segs = S.timeline.segs;
  let k = -1;
  for (let i = 0; i < segs.length && segs[i].start <= f; i++) if (segs[i].kind === "kami") k = i;
  if (k !== S.sinceSeg) { S.sinceSeg = k; S.since = S.clock.offset(); }
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
  markTouch(e);  // where the touch landed ("I touched but missed"), until the next read
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
  const msg = { t: "touch", card: c, frame: Math.round(f), stamp: st.ok ? "ok" : "bad", player: p.player };
  const gap = S.since === undefined ? 0 : (S.clock.offset() - S.since) * 1000;
  if (Math.abs(gap) > GAP_MS) msg.gap_ms = Math.round(gap * 10) / 10;
  send(msg);
}

document.addEventListener("pointerdown", onDown, { passive: true });
document.addEventListener("pointermove", onMove, { passive: true });
for (const end of ["pointerup", "pointercancel"]) document.addEventListener(end, (e) => pointers.delete(e.pointerId), { passive: true });
$("start").addEventListener("click", () => begin());
$("takeover").addEventListener("click", () => {  // (the code again, not this watcher's token)
  if (!S.vacant || !S.vacant.length) return;
  send({ t: "hello", v: PROTOCOL, code: decodeURIComponent(location.hash.slice(1)), device: deviceId(), take: S.vacant[0] });
});
$("calibrate").addEventListener("click", () => calibrate());
try { $("name").value = localStorage.getItem("karuta-name") || ""; } catch (e) { /* private mode */ }
$("skip").addEventListener("click", () => { if (!S.askedRead) { S.askedRead = true; send({ t: "start" }); } });
connect();
