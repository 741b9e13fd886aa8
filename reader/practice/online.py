"""Online play: a practice match between two machines, as pure state machines.

Nothing here opens a socket, reads a clock or sleeps: every call is given the time (seconds
on the caller's monotonic clock) and returns the messages to send.  The thin asyncio
transport (``reader.practice.netplay``) moves the messages; tests drive these objects with
delays of their own choosing.

Who is who::

    Host (karuta practice --host)                 Guest (karuta practice --join HOST --code C)
    the match: PracticeMatch + PracticeSession    a mirror of it: the same log, replayed
    judges every touch (its own and the guests')  maps its touches to plan frames, sends them
    decides every sync point (start, each wait)   plays the plan from the host's instants

A host may hold more remote seats than one: both players' (two guests play, the host's machine
only serves) and watchers' (``Guest(watch=True)``: told everything, touching nothing) --
``Host(remote=("A", "B"), watchers=N)``; each seat has its own link, token and clock.

Both read the same plan, built from the log header the host sends in ``welcome`` (seed, deal,
reading settings, voice: exact to the sample); its digest is checked.  The host's clock is the
shared clock: the guest measures its offset NTP-style (``ClockSync``: best of the recent
round trips by lowest RTT, re-measured all through the match for drift), and the host measures
the guest's the same way (to notice a clock that jumps).

Time on the plan: a ``Timeline`` says which plan frame is heard at an instant — anchors
("plan frame F is heard at host instant T"), counting on at the sample rate, standing at the
end of a kyogi wait (``take``) until the next anchor.  Every anchor is a sync point the host
sends (``start``): the first read, and the end of every kyogi wait (after the take and any
send).  The guest turns host instants into its own through its measured offset.

Judging: each touch is mapped locally to the plan frame heard (``Guest.touch``) and sent as
(card, frame); the host queues it and feeds the session in frame order, the session's time
running ``bound`` seconds behind the host's own: ``bound`` is the link's worst observed
delay (round trips and the lateness of touches that arrived), so every touch with an earlier
frame has arrived before a later one is judged — frames decide, not arrival.
"""
from __future__ import annotations

import bisect
import hashlib
import hmac
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from reader.base.errors import KarutaError

__all__ = ["VERSION", "DEFAULT_PORT", "ProtocolError", "encode", "decode", "check",
           "Timeline", "ClockSync", "Host", "Guest", "plan_digest", "new_code", "match_of_log",
           "CodeGate", "same_secret", "Peer", "admit", "WATCH"]

#: the protocol's version: a peer speaking another is refused in one line (2: touches carry an
#: id and are acknowledged, the welcome gives a seat token that a rejoin must show)
VERSION = 2
DEFAULT_PORT = 47_100
#: the longest line of any message but ``welcome`` (which carries the match log), bytes
MAX_LINE = 4096
#: the longest ``welcome`` line (a 100-read log with timings is ~80 kB)
MAX_WELCOME = 512 * 1024
#: the widest wait-out bound: a link slower than this cannot be judged fairly (s)
MAX_BOUND_S = 1.5
#: the least time between a sync point being decided and its instant (s): the guest must hear
#: of it (one-way delay) before its output makes the buffers it falls in (``netsound``: 0.25 s)
MIN_MARGIN_S = 0.6
#: how far ahead of the DAC a sound makes its buffers, with the time its process takes to hear
#: of a new anchor (s).  Asked for ``netsound.LATENCY_S`` (0.25 s), PortAudio on PulseAudio
#: makes 62.5 ms buffers whose first frame is 0.31 s ahead: the last is made 0.375 s before
#: it plays; then ``SoundProcess.PUSH_S`` and a window process's slow moments
SOUND_AHEAD_S = 0.45
#: a message that TCP lost once comes this much later (s): Linux's least retransmission
#: timeout (200 ms) and its share of the round trip's variance; a sync point is decided with
#: room for it, so one loss on the way cannot cut the start of a read
RETRANSMIT_S = 0.3
#: the first sync point comes this much later still (s): the sound processes open their
#: streams again shortly before it (``netsound.REOPEN_LEAD_S``)
FIRST_LEAD_S = 1.0
#: a clock whose best offset moves this much between two estimates has jumped (ms)
JUMP_MS = 5.0
#: how fast the offset a guest plays and maps touches by follows its estimate once the
#: reading has begun (s a s): its sound makes each buffer ~0.35 s before it is heard
#: (``SOUND_AHEAD_S``) by the offset then, a touch is mapped by the offset at the touch, so
#: an estimate that moved 1.8 ms at once between the two put the touch 1.8 ms off the frame
#: heard (measured, bench_online).  500 ppm is far above any clock's drift; a clock that
#: stepped (``ClockSync.jumps``) is followed at once, however little the estimate moved
SLEW = 0.0005
#: the latest round trips compared with the older ones to find a clock that stepped
RECENT = 12
#: round trips measured before the first read is scheduled (and after a guest joins again):
#: the offset is the middle of the quickest trip out's and back's bounds, so its error is the
#: difference of the two minima over the trips so far — at 80 ± 20 ms jitter 30 trips left
#: read 1's two sinks up to 5.7 ms apart (bench_online); 60 halve the expected error (1.8 s
#: at ``PING_FAST_S``), and the once-heard offset is only slewed after that (``SLEW``)
MIN_SAMPLES = 60
#: a guest's touches taken in on one read at most, whatever read they claim (a flood is not
#: judged, nor held in memory): counted on the host's read, and at most this many wait to be
#: judged
MAX_TOUCHES = 40
#: a link on which no line came for this long (pings go both ways every ``PING_S``) is a lost
#: link on both sides, however open its TCP connection looks (s)
SILENT_S = 3.0
#: a guest sends a touch within this long of the instant it was made (a tick, a window's slow
#: moment): the judge goes no further than the instant of the guest's latest line minus this,
#: so a touch in flight when a link dies is judged by its frame when it is sent again (s)
SEND_SLACK_S = 0.1
#: a touch's frame may be at most this far past the frame the host hears on arrival (s)
AHEAD_S = 0.5
#: wrong tries: an address that gave this many wrong codes is refused for ``LOCK_S``; this many
#: from all addresses together and no code is taken for ``LOCK_S``; each lock of the same kind
#: lasts twice the last (at most ``MAX_LOCK_S``)
FREE_TRIES = 5
ALL_TRIES = 20
LOCK_S = 60.0
MAX_LOCK_S = 3600.0
#: addresses whose wrong tries are remembered (the oldest forgotten first; the overall count
#: still holds them)
MAX_ADDRESSES = 1024
#: pings: a burst while joining, then this often through the match (s); a ping is ~60 bytes
PING_FAST_S = 0.03
PING_S = 0.1


class ProtocolError(KarutaError):
    """A message that is not what the protocol allows (one line saying what)."""


# ------------------------------------------------------------------------------- messages
_INT = {"type": "integer", "minimum": 0, "maximum": 2**53}
_FRAME = {"type": "integer", "minimum": -2**40, "maximum": 2**40}
_TIME = {"type": "number", "minimum": -1e12, "maximum": 1e12}
_CARD = {"type": "integer", "minimum": 1, "maximum": 100}
_PLAYER = {"enum": ["A", "B"]}
#: a welcome's ``you``: a player's seat, or a watcher's (``WATCH``: sees the match, touches
#: nothing)
WATCH = "watch"
#: the most watchers a host lets in (each is a link the host tells everything)
MAX_WATCHERS = 8
_YOU = {"enum": ["A", "B", WATCH]}
_TEXT = {"type": "string", "maxLength": 300}
_TOUCHES = {"type": "array", "maxItems": 200, "items": {
    "type": "array", "minItems": 3, "maxItems": 3,
    "prefixItems": [_PLAYER, _CARD, _FRAME],
    "items": [_PLAYER, _CARD, _FRAME]}}
_CARDS = {"type": "array", "minItems": 1, "maxItems": 2, "items": _CARD}
_SEAT = {"type": "string", "pattern": "^[0-9a-f]{32}$"}


def _msg(t: str, required: dict, optional: dict | None = None) -> dict:
    props = {"t": {"const": t}, **required, **(optional or {})}
    return {"type": "object", "required": ["t", *required], "properties": props,
            "additionalProperties": False}


#: every message, by its ``t``.  Guest → host: hello, ready, touch, send, status; host → guest:
#: welcome, ack, start, judged, closed, sent, over, warn; both: ping, pong, error.
SCHEMAS: dict[str, dict] = {
    "hello": _msg("hello", {"v": _INT, "code": {"type": "string", "maxLength": 64}},
                  {"seat": _SEAT, "watch": {"type": "boolean"}}),
    "welcome": _msg("welcome", {
        "v": _INT, "you": _YOU, "log": {"type": "string", "maxLength": MAX_WELCOME},
        "plan": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "open": {"anyOf": [{"type": "null"}, _TOUCHES]}},
        {"seat": _SEAT}),  # (optional in the schema: a v1 host's welcome is told by its v)
    "ping": _msg("ping", {"id": _INT, "a": _TIME}),
    "pong": _msg("pong", {"id": _INT, "a": _TIME, "b": _TIME, "c": _TIME}),
    "start": _msg("start", {"frame": _FRAME, "at": _TIME, "read": _INT}),
    "touch": _msg("touch", {"id": _INT, "card": _CARD, "frame": _FRAME, "read": _INT}),
    "ack": _msg("ack", {"id": _INT}),
    "judged": _msg("judged", {"player": _PLAYER, "card": _CARD, "frame": _FRAME,
                              "verdict": {"type": "string", "maxLength": 16}}),
    "closed": _msg("closed", {"read": _INT, "touches": _TOUCHES}),
    "send": _msg("send", {"read": _INT, "cards": _CARDS}),
    "sent": _msg("sent", {"read": _INT, "player": _PLAYER, "cards": _CARDS}),
    "status": _msg("status", {"underruns": _INT}, {"cut_ms": _INT}),
    "ready": _msg("ready", {}),
    "over": _msg("over", {}),
    "warn": _msg("warn", {"text": _TEXT}),
    "error": _msg("error", {"text": _TEXT}),
}


def check(msg, schemas: dict[str, dict] | None = None, name: str = "online") -> dict:
    """``msg`` if it is a message of the protocol (schema and bounds), else ``ProtocolError``.
    ``schemas``/``name``: another protocol's table of the same form (``reader.web``'s)."""
    import fastjsonschema

    schemas = SCHEMAS if schemas is None else schemas
    if not isinstance(msg, dict) or not isinstance(msg.get("t"), str):
        raise ProtocolError("not a message (a JSON object with a \"t\")")
    t = msg["t"]
    if t not in schemas:
        raise ProtocolError(f"unknown message {t[:20]!r}")
    from reader.base.statefiles import compiled

    try:
        compiled(f"{name}-{t}", schemas[t])(msg)
    except fastjsonschema.JsonSchemaValueException as e:
        why = " ".join(str(e.message).split())[:120]
        raise ProtocolError(f"bad {t!r} message ({why})") from None
    return msg


def encode(msg: dict) -> bytes:
    """One message as one line (UTF-8 JSON, no newline inside)."""
    return (json.dumps(check(msg), ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def decode(line: bytes) -> dict:
    """One received line → a checked message (``ProtocolError``: oversized, not JSON, not a
    message of this protocol)."""
    limit = MAX_WELCOME + 1024
    if len(line) > limit or (len(line) > MAX_LINE and not line.startswith(b'{"t":"welcome"')):
        raise ProtocolError(f"a message of {len(line)} bytes is too long")
    from reader.base.statefiles import decode_json

    try:
        obj = decode_json(line.decode("utf-8"))  # (NaN, Infinity and deep nesting refused)
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError("a message that is not JSON") from None
    return check(obj)


def new_code() -> str:
    """The code a host prints and a guest must give (6 digits, a secret: ``seeds.secret``)."""
    from reader.base import seeds

    return f"{seeds.secret(10**6):06d}"


def match_of_log(text: str, digest: str, voice_spec: str | None = None):
    """The host's match from its log's text (the guest's copy; the online sound's own
    process): the log's voice unless ``voice_spec``, its plan checked against ``digest``
    (``KarutaError``: another plan)."""
    from reader.practice import headless
    from reader.reading.voices import make_voice

    header = headless.parse_practice_log(text, "the host's match")[0]
    spec = voice_spec or header["practice"].get("voice") or None
    m = headless.resume_text(text, "the host's match", make_voice(spec))
    if plan_digest(m.plan) != digest:
        raise KarutaError("this machine's reading plan differs from the host's (the same "
                          "voice and karuta version on both machines?)")
    return m


def plan_digest(plan) -> str:
    """What both machines compare: the plan's segments to the frame (16 hex digits)."""
    body = json.dumps([plan.sample_rate, plan.frames] +
                      [[s.kind, str(s.poem), s.start, s.end, bool(s.wait)] for s in plan.segments])
    return hashlib.sha256(body.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------- the plan's time
@dataclass(frozen=True)
class Anchor:
    at: float  # an instant (the timeline's clock)
    frame: int  # the plan frame heard then


class Timeline:
    """Which plan frame is heard when: anchors, counting on at the sample rate from each, the
    count standing at the end of the first kyogi wait it reaches (the reading waits there until
    the next anchor, a sync point).  No anchor yet: nothing is heard (``None``)."""

    def __init__(self, plan):
        self.rate = plan.sample_rate
        self.frames = plan.frames
        self.anchors: list[Anchor] = []
        #: (start, end, poem) of each wait, in plan order; poem: the 上の句 it follows
        self.waits = [(s.start, s.end, plan.segments[i - 1].poem)
                      for i, s in enumerate(plan.segments) if s.wait and i > 0]

    def anchor(self, at: float, frame: int) -> None:
        self.anchors = [a for a in self.anchors if a.at < at] + [Anchor(float(at), int(frame))]

    def _base(self, t: float) -> Anchor | None:
        for a in reversed(self.anchors):
            if a.at <= t:
                return a
        return None

    def _wait_after(self, frame: int):
        return next((w for w in self.waits if w[1] > frame), None)

    def heard(self, t: float) -> float | None:
        a = self._base(t)
        if a is None:
            return None
        f = a.frame + (t - a.at) * self.rate
        w = self._wait_after(a.frame)
        if w is not None and f > w[1]:
            f = float(w[1])  # the wait goes on until the next anchor
        return f

    def waiting_on(self, t: float) -> int | None:
        """The poem whose kyogi wait is being heard at ``t`` (``None``: none)."""
        a = self._base(t)
        f = self.heard(t)
        if a is None or f is None:
            return None
        w = self._wait_after(a.frame)
        return w[2] if w is not None and f >= w[0] else None

    def wait_end(self, t: float) -> int | None:
        """The frame the reading goes on from after the wait being heard at ``t``."""
        a = self._base(t)
        w = None if a is None else self._wait_after(a.frame)
        return None if w is None else w[1]

    def finished(self, t: float) -> bool:
        f = self.heard(t)
        return f is not None and f >= self.frames

    def instant_of(self, frame: float) -> float | None:
        """When ``frame`` is (or was) heard on the anchors known now (``None``: not scheduled)."""
        for a, nxt in zip(self.anchors, self.anchors[1:] + [None]):
            w = self._wait_after(a.frame)
            top = w[1] if w is not None else self.frames
            if a.frame <= frame <= top:
                t = a.at + (frame - a.frame) / self.rate
                if nxt is None or t <= nxt.at:
                    return t
        return None


# ------------------------------------------------------------------------------- the clocks
class ClockSync:
    """The other side's clock against ours, NTP-style.  Each round trip gives ``(t0, t1, t2,
    t3)`` — our send, their receipt, their reply, our receipt.  As no message arrives before
    it was sent, the offset (theirs minus ours) lies between ``t2 − t3`` and ``t1 − t0``; the
    classic estimate is the middle of the lowest-RTT sample's bounds.  Here the bounds of all
    the last ``keep`` samples are intersected — the quickest trip *out* and the quickest trip
    *back*, from whichever samples they came — and the estimate is its middle: with jitter,
    one trip quick both ways is rare, each way quick on its own is not.  Both assume the
    link's least delay is the same both ways (NTP's assumption).  Re-measured all through the
    match, the window follows drift.  ``jumps`` counts steps of the clock: a trip whose bounds
    miss the intersection by more than ``JUMP_MS``, or the last ``RECENT`` trips' bounds both
    moved the same way by more than that (a step smaller than the round trip); the estimate
    then starts again from the newer trips."""

    def __init__(self, keep: int = 128):
        self.samples: deque = deque(maxlen=keep)  # (lo, hi, rtt)
        self.count = 0
        self.offset: float | None = None
        self.width = 0.0  # the intersection's width (s): the estimate is within half of it
        self.jumps = 0
        self.last_jump_ms = 0.0
        self._rtts: deque = deque(maxlen=64)

    def add(self, t0: float, t1: float, t2: float, t3: float) -> None:
        lo, hi = t2 - t3, t1 - t0
        if lo > hi:  # a reply before its ping: a clock that stepped while we measured
            lo = hi = (lo + hi) / 2.0
        rtt = hi - lo
        self._rtts.append(rtt)
        self.count += 1
        if self.offset is not None:
            a, b = self._bounds()
            miss = max(lo - b, a - hi) * 1000.0
            if miss > JUMP_MS:
                self.jumps += 1
                self.last_jump_ms = ((lo + hi) / 2.0 - self.offset) * 1000.0
                self.samples.clear()  # the old samples are wrong now: keep the new
        self.samples.append((lo, hi, rtt))
        moved = self._stepped()
        if moved is not None:
            self.jumps += 1
            self.last_jump_ms = moved * 1000.0
            while len(self.samples) > 1:  # which recent trips were after the step is not
                self.samples.popleft()      # known: start again from the newest
        a, b = self._bounds()
        if a > b:  # drift moved the bounds apart: trust the newer half of the window
            while len(self.samples) > 1 and a > b:
                self.samples.popleft()
                a, b = self._bounds()
        self.offset = (a + b) / 2.0
        self.width = max(0.0, b - a)

    def _bounds(self, samples=None) -> tuple[float, float]:
        samples = self.samples if samples is None else samples
        return max(s[0] for s in samples), min(s[1] for s in samples)

    def _stepped(self) -> float | None:
        """How far the clock stepped (s) if the last ``RECENT`` trips' bounds have both moved
        the same way by more than ``JUMP_MS`` from the older trips' (steady, a smaller set's
        bounds are only ever less tight: its lower bound falls, its upper rises)."""
        if len(self.samples) < 10 * RECENT:  # (the older trips' bounds must be tight: with
            return None                       # fewer, a lucky quick trip looks like a step)
        old = list(self.samples)[:-RECENT]
        new = list(self.samples)[-RECENT:]
        (a0, b0), (a1, b1) = self._bounds(old), self._bounds(new)
        dlo, dhi = a1 - a0, b1 - b0
        if dlo * dhi > 0 and min(abs(dlo), abs(dhi)) * 1000.0 > JUMP_MS:
            return (dlo + dhi) / 2.0
        return None

    @property
    def rtt(self) -> float | None:
        return min(s[2] for s in self.samples) if self.samples else None

    @property
    def max_rtt(self) -> float:
        return max(self._rtts) if self._rtts else 0.0


class _Pinger:
    """Both sides ping: ``ping`` carries our clock (``a``); ``pong`` adds theirs (``b``,
    ``c``); our receipt is the fourth instant."""

    def __init__(self):
        self.clock = ClockSync()
        self._next_ping = 0.0
        self._ping_id = 0

    def _pings(self, now: float, fast: bool) -> list[dict]:
        if now < self._next_ping:
            return []
        self._next_ping = now + (PING_FAST_S if fast else PING_S)
        self._ping_id += 1
        return [{"t": "ping", "id": self._ping_id, "a": now}]

    def _pong(self, msg: dict, now: float) -> list[dict]:
        if msg["t"] == "ping":
            return [{"t": "pong", "id": msg["id"], "a": msg["a"], "b": now, "c": now}]
        if msg["id"] <= self._ping_id and msg["a"] <= now:
            self.clock.add(msg["a"], msg["b"], msg["c"], now)
        return []


# ------------------------------------------------------------------------------- wrong codes
def same_secret(given: str, secret: str) -> bool:
    """``given`` is ``secret``, compared in constant time (how long it takes says nothing of
    how much of it was right)."""
    return hmac.compare_digest(given.encode(), secret.encode())


class CodeGate:
    """Wrong codes, counted per address and in all, and the locks they earn: ``FREE_TRIES``
    from one address lock that address for ``LOCK_S``, ``ALL_TRIES`` from all addresses lock
    every address; each lock of the same kind lasts twice the last (at most ``MAX_LOCK_S``).
    The one gate for every door that takes a code (the online host, the web host:
    ``reader.web``).  ``tell(line)``: news for the host's player ("someone at ... gave a wrong
    code").  Times are the caller's (s)."""

    def __init__(self, tell: Callable[[str], None] | None = None):
        self.tell = tell or (lambda line: None)
        self._tries: dict[str, list] = {}  # address -> [wrong, locked until, locks, refused]
        self._all = [0, 0.0, 0, 0]  # the same for all addresses together
        self.tried = 0  # wrong tries in all

    def forgive(self, addr: str) -> None:
        """``addr`` gave the right code: its earlier wrong tries are forgotten."""
        self._tries.pop(addr, None)

    def locked(self, addr: str, now: float, holder: bool = False) -> str | None:
        """Why a try from ``addr`` is refused unheard (``None``: it is heard): its address,
        or all, gave too many wrong codes lately.  ``holder``: a seat's holder (its token: 128
        bits no one guesses) is never held back."""
        mine = self._tries.get(addr)
        for tries, whom in ((mine, f"this address ({addr})"), (self._all, "all addresses")):
            if tries is None or holder or now >= tries[1]:
                continue
            tries[3] += 1
            return (f"too many wrong codes from {whom}: the host takes no code from it for "
                    f"another {tries[1] - now:.0f} s")
        return None

    def wrong(self, addr: str, now: float, text: str, code: bool = False) -> str:
        """A wrong try from ``addr``: counted (per address and in all), locked past the
        limits, told (``tell``); ``text`` with the lock added.  ``code``: the code was right
        but the seat's token was not."""
        self.tried += 1
        if addr not in self._tries and len(self._tries) >= MAX_ADDRESSES:
            self._tries.pop(next(iter(self._tries)))
        mine = self._tries.setdefault(addr, [0, 0.0, 0, 0])
        news = []
        if mine[0] == 0 and mine[2] == 0:
            what = "gave the right code but not the seat's token" if code else \
                "gave a wrong code"
            news.append(f"someone at {addr} {what} (refused)")
        for tries, limit, whom in ((mine, FREE_TRIES, f"from {addr}"),
                                   (self._all, ALL_TRIES, "in all")):
            tries[0] += 1
            if tries[0] >= limit:
                lock = min(MAX_LOCK_S, LOCK_S * 2 ** tries[2])
                more = f", {tries[3]} more refused while locked" if tries[3] else ""
                news.append(f"{self.tried} wrong tries so far ({tries[0]} {whom}{more}): "
                            f"{'that address' if tries is mine else 'every address'} is "
                            f"refused for {lock:.0f} s")
                tries[:] = [0, now + lock, tries[2] + 1, 0]
                text += f" (too many: try again in {lock:.0f} s)"
        for line in news:
            self.tell(line)
        return text


# ------------------------------------------------------------------------------- the host
class Peer(_Pinger):
    """One remote seat at the host: a player's (``role`` A or B) or a watcher's (``WATCH``),
    with its link, its seat's token, its clock against the host's and what its lines
    vouch for."""

    def __init__(self, role: str):
        super().__init__()
        self.role = role
        self.link: int | None = None
        self.joined = False
        self.ready = False  # its board is up (``ready``)
        self.seat: str | None = None  # the seat's token (its first welcome's)
        self.retired: list[str] = []  # its tokens before it was taken over (``take_over``)
        #: its guest has shown it holds the token (``ready`` after a welcome; a page's first
        #: line after its welcome): before, a welcome lost on a link that broke (a guest that
        #: gave up on a slow host) leaves the seat to the next hello with the code
        self.claimed = False
        self.addr: str | None = None  # where its latest hello came from
        self.synced_at = 0  # clock samples when it (re)joined
        self.synced_at_t = 0.0  # and the instant
        self.guest_at: float | None = None  # its clock in its latest line (s)
        self.heard_at = 0.0  # when its link last gave a line
        self.touch_high = 0  # the highest touch id taken in: a lower or equal one is a copy
        self.touch_count = (0, 0)  # (the host's read, its touches taken in on it)
        self.warned_jumps = 0

    @property
    def player(self) -> bool:
        return self.role != WATCH

    def gone(self, now: float, after: float) -> bool:
        """A player's seat given out whose guest has said nothing for ``after`` s (its link
        closed, or open but silent: a guest pings every 0.1 s): it may be taken over."""
        return self.player and self.seat is not None and now - self.heard_at >= after

    def take_over(self) -> None:
        """The seat goes to another device (``admit``'s ``take``): its token is retired (a
        hello showing it is not the holder's any more), what its guest sent is forgotten."""
        self.retired.append(self.seat)
        self.seat = None
        self.claimed = self.ready = False
        self.touch_high = 0
        self.touch_count = (0, 0)

    def retired_token(self, token: str) -> bool:
        """``token`` held this seat before it was taken over."""
        return any(same_secret(token, t) for t in self.retired)

    def fresh(self, touch_id: int) -> bool:
        """A touch (or any input the seat numbers) with this id is new: taken in once; a
        lower or equal id is a copy (sent again after a rejoin, or a line twice)."""
        if touch_id <= self.touch_high:
            return False
        self.touch_high = touch_id
        return True


#: the refusals ``admit`` says, by what went wrong (a front end may say them its own way)
ADMIT_TEXTS = {
    "code": "wrong code: ask the host for the code it printed",
    "taken": "the guest's seat is taken: only the player who took it can join again (its "
             "karuta shows the seat's token)",
    "watchers": "this match takes no more watchers",
    "live": "seat {role} is still played (its device was heard {ago:.0f} s ago): a seat is "
            "taken over only once its device has been gone {after:.0f} s",
    "no-take": "seat {role} cannot be taken over here",
}


def admit(peers: list, msg: dict, addr: str, now: float, *, code: str, gate: CodeGate,
          watchers: int, make: Callable[[str], Peer] = Peer,
          texts: dict[str, str] | None = None,
          takeover_s: float | None = None) -> tuple[Peer | None, str | None]:
    """Who a ``hello`` is among the remote seats ``peers``: ``(peer, None)``, or ``(None,
    the line that refuses it)``.  The one seat bookkeeping of every host (the online match's,
    the web board's).  A seat's holder shows its token (``seat``: 128 bits, compared in
    constant time) and gets that seat back, and is never held back by the wrong-code lock;
    anyone else needs ``code`` (constant time; wrong tries counted and locked by ``gate``) and
    gets the first player seat not taken, or, asking to watch (``watch``), a new watcher's
    seat (``make(WATCH)``, appended to ``peers``; at most ``watchers``).  A seat given for
    the first time gets its token.

    ``takeover_s`` (None: never): a player seat whose guest has said nothing for this long
    (``Peer.gone``: its device never came back) goes to a hello with the code that asks for it
    (``take``: the seat's role), with a new token -- the old one is ``retired`` and no longer
    holds the seat.  A seat heard from within ``takeover_s`` is never taken (refused in a
    line, not counted as a wrong try: the code was right)."""
    texts = {**ADMIT_TEXTS, **(texts or {})}
    holder = next((p for p in peers if p.seat is not None and "seat" in msg
                   and same_secret(msg["seat"], p.seat)), None)
    locked = gate.locked(addr, now, holder is not None)
    if locked is not None:
        return None, locked
    if not same_secret(msg["code"], code):
        return None, gate.wrong(addr, now, texts["code"])
    peer = holder
    if msg.get("take") and (peer is None or not peer.player):  # (a watcher may ask too)
        peer = next((p for p in peers if p.player and p.role == msg["take"]), None)
        if peer is None or takeover_s is None or peer.seat is None:
            return None, texts["no-take"].format(role=msg["take"])
        if not peer.gone(now, takeover_s):
            return None, texts["live"].format(role=peer.role, ago=now - peer.heard_at,
                                              after=takeover_s)
        peer.take_over()
    if peer is None and msg.get("watch"):
        if sum(1 for p in peers if not p.player) >= watchers:
            return None, texts["watchers"]
        peer = make(WATCH)
        peers.append(peer)
    if peer is None:
        peer = next((p for p in peers if p.player and p.seat is None), None)
    if peer is None:  # a seat whose welcome never reached its guest (its link gone, or the
        # same address joining again): given again, with a new token
        peer = next((p for p in peers if p.player and not p.claimed
                     and (not p.joined or p.addr == addr)), None)
        if peer is not None:
            peer.seat = None
    if peer is None:  # the code, but not a seat's holder, and every seat taken
        return None, gate.wrong(addr, now, texts["taken"], code=True)
    if peer.seat is None:
        from reader.base import seeds

        peer.seat = f"{seeds.secret(2**128):032x}"
    peer.addr = addr
    gate.forgive(addr)  # (the guest's own mistyped codes are forgiven)
    return peer, None


class Host:
    """The host's side: the match's one judge.

    ``m``: the ``PracticeMatch`` (seat ``remote`` is the guest's: a ``human`` seat; a tuple
    of seats: a guest at each, the first to say hello with the code takes the first free one);
    ``watchers``: how many more guests may watch (``hello`` with ``watch``: they are told
    everything and touch nothing); ``code``: what a guest must give.  The transport calls
    ``connect`` / ``receive`` / ``drop`` for each link and ``tick_links`` often (every few ms),
    which returns the messages for each link (``tick``: for the first remote seat's alone).
    ``touch(card, frame, now)``: the host player's own touch (a human at this machine).
    ``on_event(name, data)``: the session's news, for a window or a printout.  ``hangup``:
    set when the link is to be closed after sending what was returned."""

    def __init__(self, m, code: str, *, remote: str | tuple[str, ...] = "B",
                 watchers: int = 0, memorize_s: float = 0.0,
                 on_event: Callable[[str, object], None] | None = None, ready: bool = True):
        #: this machine's player can play (a window: once it is open); the guest's says so
        #: with ``ready`` after each welcome.  No sync point is scheduled before both are.
        self.ready = ready
        from reader.practice.session import PracticeSession

        self.m = m
        self.code = code
        self.remotes = (remote,) if isinstance(remote, str) else tuple(remote)
        self.remote = self.remotes[0] if self.remotes else None
        #: this machine's seat (``None``: every player is remote, or a bot)
        self.local = next((p for p in m.players if p not in self.remotes), None)
        self.watchers = int(watchers)
        #: the remote seats: the players' (in ``remotes``' order), then the watchers' as they
        #: join
        self.peers = [Peer(p) for p in self.remotes]
        self.memorize_s = float(memorize_s)
        self.notify = on_event or (lambda name, data: None)
        self.timeline = Timeline(m.plan)
        self.session = PracticeSession(m, on_event=self._event, release=self._release,
                                       here=() if self.local is None else (self.local,))
        self.rate = m.plan.sample_rate
        self.digest = plan_digest(m.plan)
        self._links = 0
        self.hangup = False
        self.lateness: deque = deque(maxlen=32)  # s, of the guest's touches on arrival
        self.started = False
        #: touches not judged yet: (frame, seq, player, card, read index it was meant for)
        self._queue: list[tuple[int, int, str, int, int]] = []
        self._seq = 0
        self._out: list[dict] = []
        #: what a seat is still to be told of a reply to another's message (``_flush_to``)
        self._later: dict[int, list[dict]] = {}
        self._want_release = False
        self._released: set[int] = set()  # wait-end frames already scheduled
        self._open: list[list] | None = None  # the touches of a read whose send is owed
        self._owed_by: str | None = None
        self._underruns: dict[str, int] = {}  # by whose sound ("host", "guest")
        self._cut_ms = 0
        self._cut_extra = 0.0
        self._status_read: dict[str, int] = {}
        self._pending = 0  # the guests' touches in ``_queue``
        self._warned: tuple[int, set] = (-1, set())  # (read, what was said on it)
        self._floor = 0  # the least frame a touch on the current read may have
        #: links the transport is to close (silent past ``SILENT_S``)
        self.closing: list[int] = []
        self._addr: dict[int, str] = {}  # an open link's peer address
        #: wrong codes counted per address and in all, and the locks (``CodeGate``)
        self.gate = CodeGate(lambda line: self.notify("tries", line))

    @property
    def tried(self) -> int:
        """Wrong tries in all (a wrong code, or the code without the seat's token)."""
        return self.gate.tried

    # -- the first remote seat (one guest: the guest) --------------------------------------------
    @property
    def _first(self) -> Peer | None:
        return self.peers[0] if self.peers else None

    @property
    def link(self) -> int | None:
        """The first remote seat's link (``None``: not joined)."""
        return None if self._first is None else self._first.link

    @property
    def joined(self) -> bool:
        return self._first is not None and self._first.joined

    @property
    def guest_ready(self) -> bool:
        return self._first is not None and self._first.ready

    @property
    def clock(self) -> ClockSync:
        """The first remote seat's clock against ours."""
        return self._first.clock

    @property
    def seat(self) -> str | None:
        """The first remote seat's token (``welcome``): only who shows it joins again once
        the seat is taken."""
        return None if self._first is None else self._first.seat

    def _peer_at(self, link: int | None) -> Peer | None:
        """The joined seat whose link is ``link``."""
        return next((p for p in self.peers if p.joined and p.link == link), None)

    # -- the link ---------------------------------------------------------------------------
    def connect(self, now: float, address: str = "?") -> int:
        """A link opened from ``address`` (its peer's, for the tries limit): its number, for
        ``receive`` and ``drop``.  It takes the match over once it says hello with the code
        (and, once the seat is taken, its token) — a guest joining again while its old link
        still looks open (a broken connection is often noticed late) replaces it."""
        self._links += 1
        self._addr[self._links] = str(address)[:64]
        return self._links

    def drop(self, now: float, link: int | None = None) -> None:
        """Link ``link`` (default: the guest's) is gone; the guest may come back with the
        same code and its seat token.  A link that is no seat's changes nothing."""
        if link is not None:
            self._addr.pop(link, None)
        for p in self.peers:
            if (p is self._first if link is None else p.link == link) and p.link is not None:
                p.link = None
                p.joined = False

    @property
    def linked(self) -> bool:
        return self.link is not None

    def receive(self, msg: dict, now: float, link: int | None = None) -> list[dict]:
        """A message on link ``link`` (default: the guest's).  ``hangup`` afterwards: close
        that link once the reply is sent."""
        msg = check(msg)
        t = msg["t"]
        self.hangup = False
        if link is None:
            link = self.link
        if t == "hello":
            return self._hello(msg, now, link)
        peer = self._peer_at(link)
        if peer is None:
            self.hangup = True
            return [{"t": "error", "text": "say hello with the match's code first"}]
        peer.heard_at = now
        if t in ("ping", "pong"):
            peer.guest_at = msg["a"] if t == "ping" else msg["c"]
            return peer._pong(msg, now)
        if t == "ready":
            peer.ready = peer.claimed = True
            return []
        if t in ("touch", "send") and not peer.player:
            return [{"t": "warn", "text": f"a watcher does not {t} (ignored)"}]
        if t == "touch":
            return self._remote_touch(peer, msg, now)
        if t == "send":
            owed = self.m.owed_send()
            if owed is None or owed.sender != peer.role or msg["read"] != self.m.index:
                return [{"t": "warn", "text": "that send was not owed (ignored)"}]
            for c in msg["cards"]:
                self.session.pick(peer.role, c)
            if self.m.owed_send() is not None:
                self.session.unpick()
                return [{"t": "warn", "text": "cards you cannot send (not in your territory, "
                                              "or the card just read): pick again"}]
            return self._flush_to(link)
        if t == "status":
            line = self._sound_news(peer.role, msg["underruns"], msg.get("cut_ms", 0))
            return [] if line is None else [{"t": "warn", "text": line}]
        if t == "error":
            self.hangup = True
            return []
        return [{"t": "warn", "text": f"a {t!r} message is not for the host (ignored)"}]

    def _hello(self, msg: dict, now: float, link: int | None) -> list[dict]:
        if msg["v"] != VERSION:
            self.hangup = True
            return [{"t": "error", "text": f"this host speaks protocol v{VERSION}, not "
                                           f"v{msg['v']}: use the same karuta on both machines"}]
        addr = self._addr.get(link, "?")
        peer, why = admit(self.peers, msg, addr, now, code=self.code, gate=self.gate,
                          watchers=self.watchers)
        if peer is None:
            self.hangup = True
            return [{"t": "error", "text": why}]
        if peer.joined and peer.link != link and peer.link is not None:
            self.closing.append(peer.link)  # (its old link: the transport closes it)
        peer.link = link
        peer.joined = True
        peer.ready = False
        peer.synced_at = peer.clock.count
        peer.synced_at_t = now
        peer._next_ping = now
        peer.heard_at = now
        return [{"t": "welcome", "v": VERSION, "you": peer.role, "log": self.m.log_text(),
                 "plan": self.digest, "open": self._open, "seat": peer.seat}]

    # -- the guest's touches ---------------------------------------------------------------------
    def _remote_touch(self, peer: Peer, msg: dict, now: float) -> list[dict]:
        """A guest's touch: acknowledged (its id) whatever becomes of it, so the guest stops
        sending it; taken in once (a copy — sent again after a rejoin, or a line twice — is
        only acknowledged); refused at the door past ``MAX_TOUCHES`` on the host's read or
        outside the reading (``_outside``); else queued in frame order for the judge."""
        if not peer.fresh(msg["id"]):
            return [{"t": "ack", "id": peer.touch_high}]
        out = [{"t": "ack", "id": msg["id"]}]
        read, n = peer.touch_count
        n = n + 1 if read == self.m.index else 1
        peer.touch_count = (self.m.index, n)
        if n > MAX_TOUCHES or self._pending >= MAX_TOUCHES:
            return out + self._warn_once("flood", f"more than {MAX_TOUCHES} touches on one "
                                                  "read: the rest are ignored")
        why = self._outside(msg, now)
        if why is not None:
            return out + self._warn_once("outside", f"a touch {why}: refused")
        heard = self.timeline.heard(now)
        if heard is not None:  # (a touch sent again after a rejoin is no measure of the link)
            late = (heard - msg["frame"]) / self.rate
            self.lateness.append(max(0.0, min(late, now - peer.synced_at_t)))
        if msg["read"] < self.m.index:  # meant for a read that has closed: too late
            return out + [{"t": "judged", "player": peer.role, "card": msg["card"],
                           "frame": msg["frame"], "verdict": "late"}]
        self._enqueue(peer.role, msg["card"], msg["frame"], msg["read"])
        return out

    def _outside(self, msg: dict, now: float) -> str | None:
        """Why a touch cannot have been made where it says (``None``: it can): a read not
        open yet, nothing heard yet, a frame before the plan or the current read (the frame
        the last read closed at, less a second), or more than ``AHEAD_S`` past the frame heard
        here now (the guest hears it later, never sooner)."""
        f, read = msg["frame"], msg["read"]
        if read > self.m.index:
            return f"for read {read + 1}, not open yet (read {self.m.index + 1} is)"
        heard = self.timeline.heard(now)
        if heard is None:
            return "before the reading began"
        lo = self._floor if read == self.m.index else 0
        hi = min(self.timeline.frames, heard + AHEAD_S * self.rate)
        if not lo <= f <= hi:
            return (f"at frame {f}, outside the reading heard so far (frames {lo}-"
                    f"{int(hi)})")
        return None

    def _warn_once(self, kind: str, text: str) -> list[dict]:
        """``text`` as a ``warn`` once a read (a flood of bad touches: one line)."""
        read, said = self._warned
        if read != self.m.index:
            self._warned = read, said = self.m.index, set()
        if kind in said:
            return []
        said.add(kind)
        self.notify("refused", text)
        return [{"t": "warn", "text": text[:300]}]

    @property
    def synced(self) -> bool:
        """Every remote player is here, ready, and its clock was measured since it
        (re)joined; this machine's player is ready too (watchers hold nothing up)."""
        return self.ready and all(
            p.joined and p.ready and p.clock.count - p.synced_at >= MIN_SAMPLES
            for p in self.peers if p.player)

    @property
    def bound(self) -> float:
        """How long the judge waits out the link (s): the worst round trip seen recently or
        the worst lateness of a touch, whichever is more, plus 20 ms; at most ``MAX_BOUND_S``."""
        worst = max([0.0, *(p.clock.max_rtt for p in self.peers), *self.lateness])
        return min(MAX_BOUND_S, worst + 0.02)

    @property
    def margin(self) -> float:
        """How far ahead a sync point is decided (s): a whole round trip (the worst seen: a
        bound on the one-way delay), a retransmission, and the sound's buffers ahead, so a
        message that jitter or one loss delays still reaches both sounds before they make
        the buffers it falls in; more after a sound said it heard a start too late."""
        rtt = max([0.0, *(p.clock.max_rtt for p in self.peers)])
        need = rtt + RETRANSMIT_S + SOUND_AHEAD_S + self._cut_extra
        return max(MIN_MARGIN_S, min(2.5, need))

    def local_sound(self, underruns: int, cut_ms: int) -> str | None:
        """This machine's sound's counts (a ``netsound.SoundProcess``'s): the line to tell
        this machine's player, as a guest's ``status`` is answered (``None``: nothing new)."""
        return self._sound_news("host", underruns, cut_ms)

    def _sound_news(self, who: str, underruns: int, cut_ms: int) -> str | None:
        cut = self.sound_cut(cut_ms)
        if cut is not None:
            return cut
        seen = self._underruns.get(who, 0)
        if underruns > seen and self._status_read.get(who) != self.m.index:
            self._underruns[who] = underruns
            self._status_read[who] = self.m.index  # (told once a read at most)
            return (f"your sound stalled (underruns: {underruns}): part of the reading was "
                    "not heard in time (is this machine busy?)")
        return None

    def sound_cut(self, cut_ms: int) -> str | None:
        """A sound (the guest's, by its ``status``, or this machine's) made the buffers of a
        sync point's instant before it heard of it: the start of that read was cut by
        ``cut_ms`` (the largest so far).  Later sync points are decided that much further
        ahead; the line to tell its player, once per new worst (``None``: nothing new)."""
        if cut_ms <= self._cut_ms:
            return None
        self._cut_ms = cut_ms
        self._cut_extra = min(1.5, cut_ms / 1000.0 + 0.05)
        return (f"a start of the reading reached the sound {cut_ms} ms too late (its first "
                f"{cut_ms} ms were not heard): the reading is now scheduled "
                f"{self.margin:.1f} s ahead")

    # -- the host player's touches ------------------------------------------------------------
    def touch(self, card: int, frame: float | None, now: float) -> None:
        if frame is not None and self.local is not None:
            self._enqueue(self.local, card, int(round(frame)))

    def pick(self, card: int) -> list[dict]:
        """The host player picks a card to send."""
        self.session.pick(self.local, card)
        return self._flush()

    def send_default(self) -> list[dict]:
        self.session.send_default()
        return self._flush()

    def _enqueue(self, player: str, card: int, frame: int, read: int | None = None) -> None:
        bisect.insort(self._queue, (frame, self._seq, player, card, self.m.index if read is None
                                    else read))  # (in frame order: no sort a touch)
        self._seq += 1
        if player in self.remotes:
            self._pending += 1

    @property
    def judge_time(self) -> float | None:
        """How far the remote players' lines vouch for their touches (host clock, s): the
        instant of each one's latest line, less ``SEND_SLACK_S`` — every touch it made before
        then has arrived (TCP keeps order) — the least of them.  ``None``: no clock measured
        yet (no limit)."""
        times = [p.guest_at - p.clock.offset - SEND_SLACK_S for p in self.peers
                 if p.player and p.guest_at is not None and p.clock.offset is not None]
        return min(times) if times else None

    # -- time -------------------------------------------------------------------------------
    def tick(self, now: float) -> list[dict]:
        """``tick_links``: the messages for the first remote seat's link."""
        out = self.tick_links(now)
        return out.get(self.link, []) if self.link is not None else []

    def tick_links(self, now: float) -> dict[int, list[dict]]:
        """Do what is due at ``now``; the messages for each joined seat's link."""
        before = self._out
        self._out = []
        own: dict[int, list[dict]] = {}
        for p in self.peers:
            if p.joined and now - p.heard_at > SILENT_S:  # a link gone silent: lost
                self.closing.append(p.link)
                self.drop(now, p.link)
                whose = "the guest's" if len(self.peers) == 1 else f"{p.role}'s"
                self.notify("silent", f"{whose} link was silent for {SILENT_S:.0f} s: "
                                      "closed, waiting for it to join again")
        synced = self.synced
        for p in self.peers:
            if not p.joined:
                continue
            mine = own[p.link] = p._pings(now, fast=not synced)
            if p.clock.jumps > p.warned_jumps:
                p.warned_jumps = p.clock.jumps
                mine.append({"t": "warn", "text": (
                    f"your clock jumped {p.clock.last_jump_ms:+.0f} ms against the host's: "
                    "it is measured again; the reading realigns at the next sync point")})
        after = self._judge(now)
        later, self._later = self._later, {}
        return {link: [*later.get(link, ()), *before, *mine, *after]
                for link, mine in own.items()}

    def _judge(self, now: float) -> list[dict]:
        """The judge's turn: the first sync point, the touches due, the session's tick, the
        next sync point; the messages for every seat."""
        out: list[dict] = []
        if not self.started:
            if self.synced:
                self.started = True
                self.session.start_reading()
                out += self._schedule(now + self.memorize_s + self.margin + FIRST_LEAD_S,
                                      self._first_frame())
            return out
        tj = now - self.bound  # the judge's time: every earlier touch has arrived
        vouched = self.judge_time
        if vouched is not None:  # (a link that died or stalls: the judge waits for it)
            tj = min(tj, vouched)
        heard = self.timeline.heard(tj)
        if heard is not None and self.timeline.waiting_on(tj) is not None \
                and heard >= self.timeline.wait_end(tj) and self.m.settled_at() is not None:
            # the reading stands at a wait's end until the next sync point, which waits for
            # this read to close: a take that settles past the wait's end closes it as one
            # machine does (at the take's settling frame; nothing more is heard before it)
            heard = max(heard, float(self.m.settled_at() + self.session.settle_frames))
        index = self.m.index
        while self._queue and heard is not None and self._queue[0][0] <= heard:
            frame, _, player, card, read = self._queue.pop(0)
            if player in self.remotes:
                self._pending -= 1
            if read < self.m.index:
                self._out.append({"t": "judged", "player": player, "card": card,
                                  "frame": frame, "verdict": "late"})
            elif self.m.owed_send() is not None:
                self.session.judged(self.m.touch(player, card, frame))  # "moving"
            else:
                self.session.touch(player, card, frame)
        self.session.tick(tj, heard, self.timeline.waiting_on(tj), self.timeline.finished(tj))
        if self.m.index != index and heard is not None:  # a read closed: the next one's
            self._floor = max(0, int(heard) - self.rate)  # touches come from here on
        out += self._flush()
        if self._want_release:
            end = self.timeline.wait_end(tj)
            if end is None or end in self._released:
                self._want_release = False
            elif self.synced:  # a sync point: only with the guest here and measured
                self._want_release = False
                self._released.add(end)
                out += self._schedule(max(now, self.timeline.instant_of(end) or now)
                                      + self.margin, end)
        return out

    def _first_frame(self) -> int:
        return self.m.first_frame()  # (resumed: from the 間 before the current read's 上の句)

    def _schedule(self, at: float, frame: int) -> list[dict]:
        self.timeline.anchor(at, frame)
        self.notify("start", (at, frame))
        return [{"t": "start", "at": at, "frame": int(frame), "read": self.m.index}]

    def _release(self) -> None:
        self._want_release = True

    def _flush(self) -> list[dict]:
        out, self._out = self._out, []
        return out

    def _flush_to(self, link: int | None) -> list[dict]:
        """What every seat is to be told, as a reply on ``link`` now; the other joined
        seats are told it at the next ``tick_links``."""
        out = self._flush()
        for p in self.peers:
            if p.joined and p.link != link and out:
                self._later.setdefault(p.link, []).extend(out)
        return out

    def _event(self, name: str, data) -> None:
        if name == "touch":
            self._out.append({"t": "judged", "player": data.player, "card": data.card,
                              "frame": int(data.frame), "verdict": data.verdict[:16]})
        elif name == "closed":
            touches = [[j.player, j.card, int(j.frame)] for j in data.touches]
            self._out.append({"t": "closed", "read": data.index, "touches": touches})
            self._open = touches if data.owed is not None else None
            self._owed_by = data.owed.sender if data.owed is not None else None
        elif name == "done":
            if self._owed_by is not None and data.event.send:
                self._out.append({"t": "sent", "read": data.index, "player": self._owed_by,
                                  "cards": list(data.event.send)})
            self._open = self._owed_by = None
        elif name == "phase" and data == "over":
            self._out.append({"t": "over"})
        self.notify(name, data)


# ------------------------------------------------------------------------------- the guest
class Guest(_Pinger):
    """The guest's side: a mirror of the host's match, its clock measured against the host's.

    ``build(log_text, digest)``: the ``PracticeMatch`` of the host's log (the plan built
    here; ``KarutaError`` if its digest differs).  ``hello(now)`` starts; ``receive`` and
    ``tick`` return the messages for the host; ``touch(card, now)`` maps a touch to the frame
    heard now and sends it — kept until the host acknowledges it, sent again with the hello of a
    rejoin.
    ``warnings`` collects the host's one-line warnings; ``error`` the host's refusal; ``over``
    is set at the end; ``lost``: the link gave no line for ``SILENT_S`` (the transport closes
    it and joins again)."""

    def __init__(self, code: str, build: Callable[[str, str], object],
                 on_event: Callable[[str, object], None] | None = None, watch: bool = False):
        super().__init__()
        self.code = code
        #: a watcher: asks the host to watch (``hello``'s ``watch``), is told everything,
        #: touches nothing (``me`` stays ``None``)
        self.watch = watch
        self.build = build
        self.notify = on_event or (lambda name, data: None)
        self.m = None
        self.me: str | None = None
        self.timeline: Timeline | None = None  # on the host's clock
        self.warnings: list[str] = []
        self.error: str | None = None
        self.over = False
        self.hangup = False
        self.read_started = -1
        self.rejoins = 0  # welcomes after the first: joined again
        #: this machine's player can play (a window: once it is open): said to the host
        #: (``ready``) after each welcome; the host schedules no sync point before
        self.ready = True
        self._ready_sent = False
        self._told = (0, 0)  # the sound's counts told to the host (``sound_status``)
        self._used: float | None = None  # the offset in use (``offset``), and when it moved
        self._used_at = 0.0
        self._jumps = 0  # the clock's steps already followed
        self.seat: str | None = None  # the seat's token (the first welcome's)
        self._touch_id = 0
        #: touches sent and not acknowledged yet, by id (sent again after a rejoin)
        self.unacked: dict[int, dict] = {}
        self._heard_at: float | None = None  # when the host's link last gave a line
        self.lost = False

    def hello(self, now: float) -> list[dict]:
        self._next_ping = now
        self._heard_at = now
        self.lost = False
        msg = {"t": "hello", "v": VERSION, "code": self.code}
        if self.watch:
            msg["watch"] = True
        if self.seat is not None:
            msg["seat"] = self.seat
        # what the host may not have had, sent again right behind the hello: before any line
        # that vouches for a later instant (a ping), or the judge could pass its frame
        return [msg, *self.unacked.values()]

    @property
    def offset(self) -> float | None:
        """The host's clock minus ours (s) as this machine plays and maps its touches: the
        measured estimate (``clock.offset``), followed at most ``SLEW`` s a second once the
        reading has begun, so that what the sound made ahead and a touch agree."""
        return self._used

    def _follow(self, now: float) -> None:
        est = self.clock.offset
        if est is None:
            return
        heard = self.timeline is not None and bool(self.timeline.anchors)
        if self._used is None or not heard or self.clock.jumps != self._jumps:
            self._used = est  # (a clock that stepped: ``ClockSync`` tells it apart from an
            # estimate that moved because a quicker trip came; early in a match, with few trips,
            # that can be 5 ms and more, and following it at once put a touch that far off)
        else:
            step = SLEW * max(0.0, now - self._used_at)
            self._used += min(step, max(-step, est - self._used))
        self._used_at = now
        self._jumps = self.clock.jumps

    def host_time(self, now: float) -> float | None:
        return None if self.offset is None else now + self.offset

    def heard(self, now: float) -> float | None:
        """The plan frame heard now (on the host's instants, through the measured offset)."""
        ht = self.host_time(now)
        return None if ht is None or self.timeline is None else self.timeline.heard(ht)

    def receive(self, msg: dict, now: float) -> list[dict]:
        msg = check(msg)
        t = msg["t"]
        if self._heard_at is not None:  # (measured from the hello on)
            self._heard_at = now
        if t == "ack":
            for i in [i for i in self.unacked if i <= msg["id"]]:
                del self.unacked[i]
            return []
        if t in ("ping", "pong"):
            out = self._pong(msg, now)
            self._follow(now)
            return out
        if t == "welcome":
            return self._welcome(msg)
        if t == "error":
            self.error = msg["text"]
            self.hangup = True
            return []
        if t == "warn":
            self.warnings.append(msg["text"])
            self.notify("warn", msg["text"])
            return []
        if self.m is None:
            self.hangup = True
            return [{"t": "error", "text": f"a {t!r} message before the welcome"}]
        if t == "start":
            self.timeline.anchor(msg["at"], msg["frame"])
            self.read_started = msg["read"]
            self.notify("start", (msg["at"], msg["frame"]))
        elif t == "judged":
            self.notify("judged", msg)
        elif t == "closed":
            self._closed(msg["touches"])
        elif t == "sent":
            if self.m.owed_send() is not None:
                self._apply(lambda: self.m.send(msg["player"], msg["cards"]))
        elif t == "over":
            self.over = True
            self.notify("over", None)
        else:
            return [{"t": "warn", "text": f"a {t!r} message is not for a guest (ignored)"}]
        return []

    def _apply(self, fn):
        try:
            closed = fn()
        except KarutaError as e:  # the mirror disagrees with the host: say so, stop
            self.error = f"this machine's copy of the match differs from the host's ({e})"
            self.hangup = True
            return None
        self.notify("closed", closed)
        return closed

    def _closed(self, touches) -> None:
        def close():
            for p, c, f in touches:
                self.m.touch(p, c, f)
            return self.m.close_read()
        self._apply(close)

    def _welcome(self, msg: dict) -> list[dict]:
        if msg["v"] != VERSION or "seat" not in msg:
            self.error = f"the host speaks protocol v{msg['v']}, this karuta v{VERSION}"
            self.hangup = True
            return []
        if self.m is not None:
            self.rejoins += 1
        try:
            self.m = self.build(msg["log"], msg["plan"])
        except KarutaError as e:
            self.error = str(e)
            self.hangup = True
            return [{"t": "error", "text": str(e)[:300]}]
        self.me = None if msg["you"] == WATCH else msg["you"]
        self.seat = msg["seat"]
        self._ready_sent = False
        if self.timeline is None or self.timeline.frames != self.m.plan.frames:
            self.timeline = Timeline(self.m.plan)
        if msg["open"] is not None:
            self._closed(msg["open"])
        self.notify("welcome", self.m)
        return []

    def tick(self, now: float) -> list[dict]:
        if self._heard_at is not None and not self.lost and now - self._heard_at > SILENT_S:
            self.lost = True  # (the transport closes the link and joins again)
        if self.lost:
            return []
        self._follow(now)
        out = self._pings(now, fast=self.clock.count < MIN_SAMPLES)
        if self.m is not None and self.ready and not self._ready_sent:
            self._ready_sent = True
            out.append({"t": "ready"})
        return out

    def touch(self, card: int, now: float, frame: float | None = None) -> list[dict]:
        """A touch on ``card`` at ``now`` (or at plan ``frame``, if the toucher knows it)."""
        if frame is None:
            frame = self.heard(now)
        if frame is None or self.m is None or self.me is None:
            return []
        self._touch_id += 1
        msg = {"t": "touch", "id": self._touch_id, "card": card, "frame": int(round(frame)),
               "read": self.m.index}
        self.unacked[self._touch_id] = msg
        if len(self.unacked) > MAX_TOUCHES:  # (a host that never acknowledges: bounded)
            del self.unacked[next(iter(self.unacked))]
        return [msg]

    def send(self, cards) -> list[dict]:
        return [{"t": "send", "read": self.m.index, "cards": [int(c) for c in cards]}]

    def sound_status(self, underruns: int, cut_ms: int) -> list[dict]:
        """This machine's sound's counts (a ``netsound.SoundProcess``'s), as a ``status``
        for the host when either grew since the last (the host says what it makes of them)."""
        told = self._told
        if self.m is None or (underruns <= told[0] and cut_ms <= told[1]):
            return []
        self._told = (max(underruns, told[0]), max(cut_ms, told[1]))
        return [{"t": "status", "underruns": int(underruns), "cut_ms": int(cut_ms)}]


# ------------------------------------------------------------------------------- a bot as guest
class GuestBot:
    """A bot in the guest's seat (``--as bot:N``): it touches what a bot of that level would,
    at the frames it would — the bots' draws are the same as in a one-machine match of the
    same seed with that bot in seat B — each sent as a touch when the guest hears its frame,
    and sends when its seat owes (the bot's choice).  ``make(m, seats)``: a match like ``m``
    with other seats (``headless.resume_text`` of its log)."""

    def __init__(self, guest: Guest, level: int, make: Callable):
        self.guest = guest
        self.level = level
        self.make = make
        self.oracle = None
        self._sent: set[tuple[int, int, int]] = set()
        self._sent_for: int | None = None

    def tick(self, now: float) -> list[dict]:
        from reader.practice.match import Seat

        g = self.guest
        m = g.m
        if m is None:
            return []
        if self.oracle is None or self.oracle.index > m.index:
            seats = {p: (Seat("bot", self.level) if p == g.me else s) for p, s in m.seats.items()}
            self.oracle = self.make(m, seats)
        if self.oracle.index < m.index:
            done = m.closed[self.oracle.index:m.index]
            self.oracle.replay([c.event for c in done], [c.timing for c in done])
        owed = m.owed_send()
        if owed is not None:
            if owed.sender == g.me and self._sent_for != m.index:
                self._sent_for = m.index
                return g.send(m.suggest_send(owed.sender, owed.count))
            return []
        heard = g.heard(now)
        if heard is None or self.oracle.current() is None:
            return []
        out = []
        for p, card, frame in self.oracle.bot_touches():
            key = (m.index, card, frame)
            if p == g.me and frame <= heard and key not in self._sent:
                self._sent.add(key)
                out += g.touch(card, now, frame=frame)
        return out


# ------------------------------------------------------------------------------- a simulated link
class SimLink:
    """One direction of a TCP-like link for tests and the benchmark: every message arrives
    whole and in order, ``delay(rng)`` seconds after it was sent (but never before the one sent
    before it).  ``cut`` drops what is in flight (a broken connection)."""

    def __init__(self, delay: Callable[[], float]):
        self.delay = delay
        self.flight: deque = deque()
        self._last = float("-inf")
        self.held_until = float("-inf")  # ``hold``: nothing moves before then

    def put(self, msgs, now: float) -> None:
        for msg in msgs:
            at = max(self._last, max(now, self.held_until) + self.delay())
            self._last = at
            self.flight.append((at, decode(encode(msg))))  # over the wire: encoded, checked

    def take(self, now: float) -> list[dict]:
        out = []
        while self.flight and self.flight[0][0] <= now:
            out.append(self.flight.popleft()[1])
        return out

    def cut(self) -> None:
        self.flight.clear()
        self._last = float("-inf")

    def hold(self, until: float) -> None:
        """A stall: what is sent (or in flight) moves on only after ``until``."""
        self.held_until = until
        self.flight = deque((max(at, until), msg) for at, msg in self.flight)


class _Lane:
    """One guest of a ``Sim``: its links both ways, its clock's offset, its players."""

    def __init__(self, guest, up: SimLink, down: SimLink, offset: float, players, address):
        self.guest, self.up, self.down = guest, up, down
        self.offset = offset
        self.players = list(players)
        self.address = address
        self.link: int | None = None
        self.back_at: float | None = None


class Sim:
    """A host and its guests joined by ``SimLink`` s on one virtual clock (tests and the
    benchmark): a guest's clock reads ``offset`` seconds behind the host's.  ``step(dt)``
    moves time on, delivering what arrived and ticking every side (and each guest's
    ``players``: callables ``(host_now, guest_now) -> messages from the guest``, e.g. a
    ``GuestBot``'s tick).  The first guest is given here (``guest``, ``up``, ``down``,
    ``offset``, ``players``, ``gnow``: its own); ``add`` joins more (another player, a
    watcher).  ``cut(seconds)``: the first guest's link breaks for that long, then it says
    hello again; ``hold(seconds)``: it stalls that long, the connection open.  A side that
    closes a silent link (``Host.closing``, ``Guest.lost``) breaks it as a cut would, the
    guest trying again ``RETRY_S`` later."""

    RETRY_S = 0.25

    def __init__(self, host: Host, guest: Guest, up: SimLink, down: SimLink,
                 offset: float = 0.0, players=()):
        self.host = host
        self.now = 0.0
        self.lanes: list[_Lane] = []
        self._first = self.add(guest, up, down, offset, players)

    def add(self, guest: Guest, up: SimLink, down: SimLink, offset: float = 0.0,
            players=()) -> _Lane:
        """Another guest on links of its own (it says hello now)."""
        lane = _Lane(guest, up, down, offset, players,
                     "guest" if not self.lanes else f"guest {len(self.lanes) + 1}")
        lane.link = self.host.connect(self.now, lane.address)
        up.put(guest.hello(self.now - offset), self.now)
        self.lanes.append(lane)
        return lane

    # the first guest's
    guest = property(lambda self: self._first.guest)
    up = property(lambda self: self._first.up,
                  lambda self, link: setattr(self._first, "up", link))
    down = property(lambda self: self._first.down,
                    lambda self, link: setattr(self._first, "down", link))
    players = property(lambda self: self._first.players)
    link = property(lambda self: self._first.link)

    @property
    def offset(self) -> float:
        return self._first.offset

    @offset.setter
    def offset(self, value: float) -> None:
        self._first.offset = value

    @property
    def gnow(self) -> float:
        return self.now - self._first.offset

    def step(self, dt: float) -> None:
        now, host = self.now, self.host
        for lane in self.lanes:
            if lane.back_at is not None and now >= lane.back_at:
                lane.back_at = None
                lane.link = host.connect(now, lane.address)
                lane.up.put(lane.guest.hello(now - lane.offset), now)
        for lane in self.lanes:
            for msg in lane.up.take(now):
                lane.down.put(host.receive(msg, now, lane.link), now)
        out = host.tick_links(now)
        for lane in self.lanes:
            if lane.back_at is None:
                lane.down.put(out.get(lane.link, []), now)
        for lane in self.lanes:
            g = now - lane.offset
            for msg in lane.down.take(now):
                lane.up.put(lane.guest.receive(msg, g), now)
            if lane.back_at is None:
                lane.up.put(lane.guest.tick(g), now)
                for p in lane.players:
                    lane.up.put(p(now, g), now)
            if lane.back_at is None and (lane.guest.lost or lane.link in host.closing):
                host.closing[:] = [x for x in host.closing if x != lane.link]
                self._break(lane, self.RETRY_S)
        live = {lane.link for lane in self.lanes}
        host.closing[:] = [x for x in host.closing if x in live]  # (a replaced link: gone)
        self.now = now + dt

    def run_until(self, done: Callable[[], bool], dt: float = 0.004, limit: float = 4000.0):
        while not done() and self.now < limit:
            self.step(dt)
        return done()

    def cut(self, seconds: float) -> None:
        self._break(self._first, seconds)

    def _break(self, lane: _Lane, seconds: float) -> None:
        lane.up.cut()
        lane.down.cut()
        self.host.drop(self.now, lane.link)
        lane.back_at = max(lane.back_at or 0.0, self.now + seconds)

    def hold(self, seconds: float) -> None:
        self.up.hold(self.now + seconds)
        self.down.hold(self.now + seconds)
