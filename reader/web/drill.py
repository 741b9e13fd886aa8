"""The speed drill's host for a browser: pure (messages and time in, messages out).

The page plays the drill's plan itself and maps each touch to the plan frame it was playing
(its ``timeline.js``: anchors, counting on at the sample rate, standing at the end of each
``take`` until the host says ``go``).  Here each touch is judged by that frame exactly as the
laptop drill judges a tap (``reader.drills.grab``: ``card_at``, ``reaction``, the device's
calibration subtracted), recorded in the same stats rows and log lines, and the reading goes
on when the card is done (named, missed, a karafuda left alone).

A device is known by the id its page keeps (``localStorage``); its calibration is kept in the
calibration store under ``web:<id>`` (``reader.drills.calibrate``).  A device that was never
calibrated still plays, but its touches are not timed (``UNCALIBRATED``): the touch panel's
10-30 ms is in them and nothing else removes it, so their reactions stay out of ``stats``.

One code gate (``online.CodeGate``) for every door: a wrong code counts against the address,
and 5 lock it out.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.practice import online
from reader.web import protocol
from reader.web.page import PageHost, TapAlong

__all__ = ["WebDrill", "DrillState"]

@dataclass
class DrillState:
    records: list[dict] = field(default_factory=list)
    missed: list[int] = field(default_factory=list)
    passed: list[int] = field(default_factory=list)
    done: set = field(default_factory=set)


class WebDrill(PageHost):
    """The host of one speed drill played on one device.

    ``receive(msg, now, link, addr)`` and ``drop(link)`` are called by the transport
    (``reader.web.server``; ``PageHost``); ``hangup`` says the link is to be closed after
    the reply.
    ``store``: a ``CalibrationStore``; ``db``/``log``: as ``run_drill``'s; ``settings``:
    the stats session's (the device and its calibration are added when the drill starts).
    ``echo(line)``: what the laptop's terminal shows."""

    protocol = protocol  # (its messages: the drill page's table)

    def __init__(self, plan, voice, code: str, *, store, db=None, log=None,
                 settings: dict | None = None, take_s: float = 3.0, choices: int = 6,
                 rng: random.Random | None = None, clock: Clock = SYSTEM_CLOCK,
                 echo: Callable[[str], None] = print):
        from reader.base import seeds
        from reader.drills.grab import timeline_of

        self.plan, self.voice, self.code = plan, voice, code
        self.store, self.db, self.log = store, db, log
        self.settings = dict(settings or {})
        self.take_s = take_s
        self.n_choices = choices
        self.rng = rng or seeds.rng(seeds.pick_seed())
        self.clock = clock
        self.echo = echo
        self.gate = online.CodeGate(echo)
        self.digest = online.plan_digest(plan)
        self.token = f"{seeds.secret(2**128):032x}"  # what the clips' addresses carry
        self.rate = plan.sample_rate
        self.kami = {s.poem: s for s in plan.segments if s.kind == "kami"
                     and isinstance(s.poem, int)}
        self.timeline = {p: timeline_of(voice, s) for p, s in self.kami.items()}
        self.takes = {s.poem: s for s in plan.segments if s.kind == "take"}
        self.index = 0  # the read being played (0-based, in plan.order)
        self.device: str | None = None
        self.link: int | None = None
        self.calibration: dict | None = None
        self.started = False
        self.over = False
        self.hangup = False
        self.session: str | None = None
        self.state = DrillState()
        self._pending = None  # (grab, choices) while the player names the card
        self._warned: set = set()
        self.tap_along = TapAlong(store, self.rate, self.token, echo)

    # ------------------------------------------------------------------ the link
    def handle(self, msg: dict, now: float, link: int, addr: str) -> list[dict]:
        """A message from the welcomed page (``PageHost.receive`` checked it)."""
        t = msg["t"]
        if t == "start":
            self._start()
            return []
        if t == "calibrate":
            return self._calibrate(msg["count"])
        if t == "cal":
            return self._cal(msg["taps"], msg.get("moved_ms"))
        if self.over:
            return []
        if not self.started:
            return self._warn("early", "the drill has not started: tap Start first")
        if msg["read"] != self.index:
            return self._warn(("read", self.index), f"a message for card {msg['read'] + 1} "
                                                    f"while card {self.index + 1} is read: ignored")
        if t == "touch":
            return self._touch(msg)
        if t == "answer":
            return self._answer(msg["card"])
        if t == "waited":
            return self._waited()
        return []

    def _error(self, text: str) -> dict:
        return {"t": "error", "text": text[:400]}

    def _warn(self, key, text: str) -> list[dict]:
        if key in self._warned:
            return []
        self._warned.add(key)
        self.echo(f"  (the page: {text})")
        return [{"t": "warn", "text": text[:400]}]

    def _hello(self, msg, now, link, addr) -> list[dict]:
        self.hangup = True  # (unless welcomed)
        if msg["v"] != protocol.VERSION:
            return [self._error(f"this page speaks v{msg['v']}, the host v{protocol.VERSION}: "
                                "reload the page")]
        locked = self.gate.locked(addr, now)
        if locked is not None:
            return [self._error(locked)]
        if not online.same_secret(msg["code"], self.code):
            return [self._error(self.gate.wrong(
                addr, now, "wrong code: open the address the laptop shows, with its code"))]
        if self.device is not None and msg["device"] != self.device:
            return [self._error("another device is playing this drill: one device a drill")]
        self.gate.forgive(addr)
        self.hangup = False
        first = self.device is None
        self.device = msg["device"]
        self.link = link
        self.calibration = self._stored_calibration()
        if first:
            self.echo(f"a device joined from {addr} ({self._calibration_line()})")
        else:
            self.echo(f"the device joined again from {addr}")
        again = [] if self._pending is None else [self._choices(*self._pending)]
        return [{"t": "welcome", "v": protocol.VERSION, "rate": self.rate, "plan": self.digest,
                 "clip": f"/clip/{self.token}/{self.digest}/",
                 "segs": [[s.kind, s.poem, s.start, s.end, int(s.wait)]
                          for s in self.plan.segments],
                 "read": self.index, "from": self._from_frame(), "cards": len(self.plan.order),
                 "calibration": self._calibration_view()}] + again  # (a card being named)

    def _from_frame(self) -> int:
        """Where the page starts its reading: the start, or (joined again) the 間 before the
        current card's 上の句."""
        if self.index == 0 or self.index >= len(self.plan.order):
            return 0
        segs = self.plan.segments
        poem = self.plan.order[self.index]
        k = next(i for i, s in enumerate(segs) if s.kind == "kami" and s.poem == poem)
        return segs[k - 1].start if k > 0 else segs[k].start

    # ------------------------------------------------------------------ calibration
    @property
    def device_key(self) -> str:
        return f"web:{self.device}"

    def _stored_calibration(self) -> dict | None:
        return self.tap_along.stored(self.device)

    def _calibration_view(self) -> dict | None:
        c = self.calibration
        if c is None:
            return None
        return {"offset_ms": c["offset_ms"], "taps": c.get("taps"),
                "spread_ms": c.get("spread_ms"), "date": c.get("date")}

    def _calibration_line(self) -> str:
        c = self.calibration
        if c is None:
            return ("not calibrated: touches are not timed and kept out of stats "
                    "(calibrate on the device)")
        spread = c.get("spread_ms")
        return (f"calibration {c['offset_ms']:+.1f} ms"
                + (f", spread ±{spread:.1f} ms" if isinstance(spread, (int, float)) else "")
                + (f", {str(c['date'])[:10]}" if c.get("date") else ""))

    def _calibrate(self, count: int) -> list[dict]:
        if self.started:
            return self._warn("cal-late", "calibrate before the drill starts (reload the "
                                          "page after it to calibrate)")
        return [self.tap_along.ask(count)]

    def _cal(self, taps, moved_ms: float | None = None) -> list[dict]:
        """The tap-along's taps (``TapAlong.taps``: kept for the device)."""
        got = None if self.started else self.tap_along.taps(self.device, taps, moved_ms)
        if got is None:
            return self._warn("cal", "no tap-along is being played: ignored")
        self.calibration = self._stored_calibration()
        return [got]

    def clip(self, token: str, digest: str, index: int):
        """The samples of speech segment ``index`` of the plan (float32), or a line saying why
        not (a wrong token, another plan, not a speech segment)."""
        if not online.same_secret(token, self.token):
            return "not this drill's clip"
        if digest != self.digest:
            return "a clip of another plan (the drill was started again: reload the page)"
        if not 0 <= index < len(self.plan.segments) or not self.plan.segments[index].is_speech:
            return "no such clip"
        return self.voice.samples(self.plan.segments[index].speech)

    def click_track(self, token: str):
        """The tap-along's sound (float32), or a line saying why not."""
        return self.tap_along.track(token)

    # ------------------------------------------------------------------ the drill
    def _start(self) -> None:
        if self.started:
            return
        self.started = True
        cal = None if self.calibration is None else float(self.calibration["offset_ms"])
        self.settings.update(device=self.device_key, calibration_ms=cal, web=True)
        if self.db is not None:
            self.session = self.db.start_session("speed", self.clock.now(), self.settings)
        self.echo(f"the drill starts on the device ({self._calibration_line()})")

    def _touch(self, msg) -> list[dict]:
        from reader.drills.grab import card_at, reaction, untimed
        from reader.drills.speed import choices_for

        poem = self.plan.order[self.index]
        if self._pending is not None or poem in self.state.done:
            return []
        seg = card_at(self.plan, msg["frame"])
        if seg is None or seg.poem != poem:
            return self._warn(("outside", self.index), f"a touch at frame {msg['frame']}, "
                              f"outside card {self.index + 1}: ignored")
        cal = None if self.calibration is None else float(self.calibration["offset_ms"])
        grab = reaction(msg["frame"], seg, cal or 0.0, sample_rate=self.rate,
                        timeline=self.timeline[poem])
        if cal is None:  # (whatever else: the panel's constant is in it)
            grab = untimed(grab, None, protocol.UNCALIBRATED)
        elif msg["stamp"] != "ok":
            grab = untimed(grab, None, protocol.BAD_STAMP)
        elif "gap_ms" in msg:  # the page's output clock moved since the 上の句 began
            grab = untimed(grab, float(msg["gap_ms"]))
        line = ("not timed" if grab.reaction_ms is None
                else f"{grab.reaction_ms:+.0f} ms after the kimariji")
        self.echo(f"  card {self.index + 1}: touched, {line}")
        if poem in self.plan.karafuda:
            return self._finish(grab, None, False, True)
        cands = self._candidates(poem)
        ch = choices_for(poem, cands, self.n_choices, self.rng)
        self._pending = (grab, ch)
        return [self._choices(grab, ch)]

    def _choices(self, grab, ch) -> dict:
        import poems

        line = ("not timed" if grab.reaction_ms is None
                else f"{grab.reaction_ms:+.0f} ms after the kimariji")
        return {"t": "choices", "read": self.index, "cards": ch, "line": line,
                "labels": [poems.poem(c).torifuda for c in ch]}

    def _candidates(self, poem: int) -> list[int]:
        i = self.plan.order.index(poem)
        read_before = set(self.plan.order[:i])
        return [n for n in self.plan.universe
                if n not in read_before and n not in self.plan.karafuda]

    def _answer(self, card: int) -> list[dict]:
        if self._pending is None:
            return []
        grab, ch = self._pending
        if card not in ch:
            return self._warn(("pick", self.index), f"card {card} was not among the choices")
        self._pending = None
        return self._finish(grab, card, card == grab.poem, card != grab.poem)

    def _waited(self) -> list[dict]:
        poem = self.plan.order[self.index]
        if self._pending is not None or poem in self.state.done:
            return []
        self.state.done.add(poem)
        if poem in self.plan.karafuda:
            self.state.passed.append(poem)
            line = f"空札 {poem}: rightly left alone"
        else:
            self.state.missed.append(poem)
            line = f"missed {poem} {self.kami[poem].kimariji}"
        self.echo(f"  {line}")
        return [{"t": "verdict", "read": self.index, "line": line,
                 "correct": poem in self.plan.karafuda}] + self._next()

    def _finish(self, grab, answer, correct: bool, fault: bool) -> list[dict]:
        import json
        import os

        import poems
        from reader.drills.grab import log_record

        now = self.clock.now()
        rec = log_record(grab, correct=correct, answer=answer,
                         karafuda=grab.poem in self.plan.karafuda, fault=fault,
                         card=self.index + 1, ts=now.isoformat(timespec="milliseconds"))
        self.state.records.append(rec)
        if self.log is not None:
            self.log.write(json.dumps(rec, ensure_ascii=False) + "\n")
            self.log.flush()
            os.fsync(self.log.fileno())
        if self.db is not None and self.session is not None:
            self.db.record_tap(self.session, grab.poem, now, kimariji=grab.kimariji,
                               reaction_ms=grab.reaction_ms, from_kami_ms=grab.from_kami_ms,
                               correct=correct, anticipation=grab.anticipation, fault=fault)
        self.state.done.add(grab.poem)
        p = poems.poem(grab.poem)
        verdict = "○" if correct else "× お手つき" if fault else "×"
        if grab.poem in self.plan.karafuda:
            verdict = "× お手つき (空札)"
        line = f"{verdict}  {grab.poem} {grab.kimariji}  {' '.join(p.kanji[:3])}"
        self.echo(f"  {line}")
        return [{"t": "verdict", "read": self.index, "line": line[:400],
                 "correct": bool(correct)}] + self._next()

    def _next(self) -> list[dict]:
        poem = self.plan.order[self.index]
        frame = self.takes[poem].end
        self.index += 1
        self._warned = {k for k in self._warned if not isinstance(k, tuple)}
        if self.index >= len(self.plan.order):
            self.over = True
            return [{"t": "over", "lines": self.end_lines()}]
        return [{"t": "go", "read": self.index, "frame": int(frame)}]

    def summary(self):
        from reader.drills.grab import summarize

        s = self.state
        stopped = None if self.over or not self.started else self.index + 1
        return summarize(s.records, cards=len(s.done), missed=len(s.missed),
                         planned=len(self.plan.order), stopped_at=stopped)

    def end_lines(self) -> list[str]:
        """The end screen's lines (and the terminal's): the summary, the calibration."""
        from reader.drills.grab import UNTIMED_GAP

        line = self.summary().describe()
        why = {r["untimed"] for r in self.state.records if r.get("untimed")}
        if why and why != {UNTIMED_GAP}:  # (the summary names only gaps in the sound)
            reasons = "; ".join(sorted(w.removesuffix(": not timed") for w in why))
            line = line.replace(": gaps in the sound", f" ({reasons})")
        return [line[:400], self._calibration_line()[:400]]
