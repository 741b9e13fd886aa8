// The touch-only mode's clock: the laptop's clock against this page's, measured over the
// WebSocket with the two-laptop match's ping and pong (reader/web/touchonly.py) and its
// ClockSync rule (clocksync.js), so a touch's timeStamp has an instant on the laptop's clock
// (within half the sync's width).  Pings every 100 ms (they also keep a phone's Wi-Fi awake).
import { ClockSync } from "./clocksync.js";

export const PING_MS = 100;

// S.sync measured from now on; `send` drops a ping while the link is down (never queued:
// a late ping would only widen its trip)
export function startSync(S, send) {
  if (S.sync) return;
  S.sync = new ClockSync();
  S.pingId = 0;
  setInterval(() => { S.pingId = (S.pingId + 1) % 2 ** 31; send({ t: "ping", id: S.pingId, a: performance.now() / 1000 }); }, PING_MS);
}

export function onPong(S, m) {
  if (S.sync) S.sync.add(m.a, m.b, m.c, performance.now() / 1000);
}

// [the laptop's time (s) of a stamp (performance.now() ms), the bound (s) it is within] or null
export function laptopTimeOf(S, stampMs) {
  const t = S.sync ? S.sync.theirs(stampMs / 1000) : null;
  return t === null ? null : [t, S.sync.width / 2];
}
