"""``karuta practice --web``: a practice match on a phone's or tablet's page, judged here.

``WebBoard`` is a table (``reader.practice.table.SessionTable``): the match's rules are the
``PracticeSession`` every front end plays through; this class only turns the page's messages
into the session's input and the session's view into messages.  Pure: messages and time in,
messages out (``reader.web.server`` is the transport).

The page plays the match's plan itself (its ``timeline.js``, as the drill page does) and
reports, with every message, the plan frame it hears (``at``): that frame is the session's
``heard`` -- bots' touches are delivered when the page has heard their frame, a read closes
when the page has heard its end.  A touch comes as (card, the plan frame heard when it was
touched); before it is judged the session is moved on to that frame (every bot touch before
it delivered first: frames decide, not arrival).  The kyogi wait after a 上の句 stands on the
page until the session lets the reading go on (``go``: the wait's end frame).

A device is known by the id its page keeps; its calibration is the one the speed drill's
tap-along saved under ``web:<id>`` (subtracted from every touch's frame).  An uncalibrated
device plays, its touches judged by their raw frames (said on the page and the terminal).
"""
from __future__ import annotations

from collections.abc import Callable

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.practice import online
from reader.practice import view as V
from reader.practice.local import Saver
from reader.practice.session import PracticeSession, result_lines
from reader.practice.table import SessionTable
from reader.web import boardproto

__all__ = ["WebBoard"]


class WebBoard(SessionTable):
    """Match ``m`` played on one page: seat A the player at the page, B a bot or a second
    player at the same tablet (the far half: a touch is B's when it starts there).
    ``receive(msg, now, link, addr)`` / ``drop(link)``: as ``WebDrill``'s (the transport's
    calls); ``log_file``: saved after every read (``LocalTable``'s saver); ``store``: a
    ``CalibrationStore`` (None: no calibration)."""

    page = "board.html"
    protocol = boardproto

    def __init__(self, m, voice, code: str, *, log_file=None, store=None,
                 clock: Clock = SYSTEM_CLOCK, echo: Callable[[str], None] = print,
                 memorize_s: float = 0.0, hints: bool = False):
        from reader.base import seeds
        from reader.web.cards import WIDTHS, CardImages

        session = PracticeSession(m, memorize_s=memorize_s, hints=hints, on_event=self._news,
                                  release=self._release)
        super().__init__(session, here=session.humans, viewer="A")
        self.hints = hints
        # the torifuda as images (every card dealt: sends only move them between sides)
        self.images = CardImages({c for h in m.deal.hands.values() for c in h}, WIDTHS)
        self.voice, self.code, self.store, self.clock, self.echo = voice, code, store, clock, echo
        self.gate = online.CodeGate(echo)
        self.digest = online.plan_digest(m.plan)
        self.token = f"{seeds.secret(2**128):032x}"
        self.rate = m.plan.sample_rate
        self.waits = [s for s in m.plan.segments if s.wait]
        self._saver = Saver(log_file)
        self.device: str | None = None
        self.link: int | None = None
        self.calibration_ms: float | None = None
        self.frame: float | None = None  # the plan frame the page said it hears
        self.anchor_frame = 0  # the frame the page's reading last went on from
        self._go = False
        self._sent_view = None
        self.over_told = False
        self.hangup = False

    # -- the table ----------------------------------------------------------------------------
    @property
    def over(self) -> bool:  # (the transport stops once the end screen is told)
        return self.over_told

    def _news(self, name, data):
        if name == "phase" and data == "reading":
            self._saver.save(self.m)
        elif name == "closed" and data.owed is not None:
            self._saver.save(self.m)
        super()._news(name, data)
        if name == "done":
            self._saver.save(self.m)

    def _release(self) -> None:
        self._go = True

    def heard(self, t: float) -> float | None:
        return self.frame

    def waiting_on(self) -> int | None:
        """The poem whose kyogi wait the page stands in (its reading went on from
        ``anchor_frame``; it stands at the first wait's end after it)."""
        if self.frame is None:
            return None
        w = next((w for w in self.waits if w.end > self.anchor_frame), None)
        return w.poem if w is not None and self.frame >= w.start else None

    def step(self, now: float, frame: float | None = None) -> None:
        """The session moved on to ``now`` and the page's frame ``frame`` (never back)."""
        if frame is not None:
            if self.waits:  # (the page stands at the wait's end until ``go``)
                w = next((w for w in self.waits if w.end > self.anchor_frame), None)
                if w is not None:
                    frame = min(frame, w.end)
            self.frame = frame if self.frame is None else max(self.frame, frame)
        finished = self.frame is not None and self.frame >= self.m.plan.frames
        self.session.tick(now, self.frame, self.waiting_on(), finished=finished)

    def touch_frame(self, player: str, card: int, frame: float) -> None:
        """``player`` touched ``card`` at plan ``frame`` (as the page heard it)."""
        cal = (self.calibration_ms or 0.0) * self.rate / 1000.0
        self.step(self.clock.seconds(), frame)
        self.session.touch(player, card, frame - cal)

    def arrange(self, player: str, poem: int, row: int, side: int, index: int) -> bool:
        """``player`` dragged ``poem`` of their own side to a place (before the reading: while
        arranging or memorising; the match keeps it and logs it)."""
        from reader.practice import board as B

        if self.session.phase not in ("arrange", "memorize") or player not in self.here:
            return False
        if not self.m.game.territories:
            return False
        t = self.m.layout()[player]
        if poem not in t:
            return False
        self.m.arrange(player, B.move(t, poem, row, side, index))
        self._moved()
        self._events.append(V.Moved(poem, row, side, index))
        return True

    # -- the transport's calls ------------------------------------------------------------------
    def drop(self, link: int) -> None:
        if link == self.link:
            self.link = None

    def receive(self, msg: dict, now: float, link: int, addr: str) -> list[dict]:
        msg = boardproto.check(msg)
        self.hangup = False
        t = msg["t"]
        if t == "hello":
            return self._hello(msg, now, link, addr)
        if link != self.link:
            self.hangup = True
            return [{"t": "error", "text": "say hello with the code first"}]
        if t == "start":  # (arranged: the memorisation; memorised or skipped: the reading)
            s = self.session
            if s.phase == "arrange" and s.memorize_s > 0:
                s.start_memorize(now)
                self.echo(f"memorisation: {s.memorize_s / 60:g} min on the device")
            elif s.phase in ("arrange", "memorize"):
                s.start_reading()
                self.echo("the reading starts on the device")
        elif t == "arrange":
            self.arrange(msg.get("player", "A"), msg["card"], msg["row"], msg["side"],
                         msg["index"])
        elif t == "at":
            self.step(now, msg["frame"])
        elif t == "touch":
            player = msg.get("player", "A")
            if player in self.here:  # (a bot's half: nobody's touch)
                self.touch_frame(player, msg["card"], msg["frame"])
        elif t == "pick":
            self.session.pick(msg.get("player", "A"), msg["card"])
        elif t == "send":
            self.session.send_default()
        self.step(now)
        return self._out(now)

    def _out(self, now: float) -> list[dict]:
        out = []
        self.events()  # (the page draws the view; the events are for animating front ends)
        v = self.view(now)
        view = V.to_json(v)
        view["line_text"] = V.status_text(v.line, v.verdict)
        if view != self._sent_view:
            self._sent_view = view
            out.append({"t": "view", "view": view})
        if self._go:
            self._go = False
            w = next((w for w in self.waits if w.end > self.anchor_frame), None)
            if w is not None:
                self.anchor_frame = w.end
                out.append({"t": "go", "frame": int(w.end)})
        if self.session.over and not self.over_told:
            self.over_told = True
            self._saver.close()
            lines = result_lines(self.m, self.here)
            for line in lines:
                self.echo(line)
            cal = ("calibration: none (touches judged by their raw frames)"
                   if self.calibration_ms is None else
                   f"calibration: {self.calibration_ms:+.1f} ms subtracted")
            out.append({"t": "over", "lines": [s[:400] for s in [*lines, cal]]})
        return out

    def _hello(self, msg, now, link, addr) -> list[dict]:
        import poems

        self.hangup = True
        if msg["v"] != boardproto.VERSION:
            return [{"t": "error", "text": "this page is of another karuta: reload it"}]
        locked = self.gate.locked(addr, now)
        if locked is not None:
            return [{"t": "error", "text": locked}]
        if not online.same_secret(msg["code"], self.code):
            return [{"t": "error", "text": self.gate.wrong(
                addr, now, "wrong code: open the address the laptop shows, with its code")}]
        if self.device is not None and msg["device"] != self.device:
            return [{"t": "error", "text": "another device is playing this board"}]
        self.gate.forgive(addr)
        self.hangup = False
        self.device, self.link = msg["device"], link
        self.calibration_ms = self._calibration()
        self.echo(f"a device joined from {addr} (" + (
            "not calibrated" if self.calibration_ms is None
            else f"calibrated {self.calibration_ms:+.1f} ms") + ")")
        self._sent_view = None
        cards = {c for t in self.m.layout().values() for c in
                 (t.cards if hasattr(t, "cards") else t)}
        return [{"t": "welcome", "v": boardproto.VERSION, "rate": self.rate,
                 "plan": self.digest, "clip": f"/clip/{self.token}/{self.digest}/",
                 "segs": [[s.kind, s.poem if isinstance(s.poem, int) else None, s.start, s.end,
                           int(s.wait), int(s.is_speech)] for s in self.m.plan.segments],
                 "from": self.anchor_frame if self.frame is None else self._resume_frame(),
                 "labels": {str(c): poems.poem(c).torifuda for c in sorted(cards)},
                 "calibration": self.calibration_ms,
                 "cards": f"/card/{self.token}/", "widths": list(self.images.widths),
                 "ext": self.images.format}] + self._out(now)

    def _resume_frame(self) -> int:
        return int(self.anchor_frame)

    def _calibration(self) -> float | None:
        if self.store is None:
            return None
        from reader.drills.calibrate import CalibrationError

        try:
            c = self.store.get(f"web:{self.device}")
        except CalibrationError as e:
            self.echo(f"karuta: {e}")
            return None
        return None if c is None else float(c["offset_ms"])

    def clip(self, token: str, digest: str, index: int):
        """The samples of speech segment ``index`` of the plan, or a line saying why not."""
        if not online.same_secret(token, self.token):
            return "not this board's clip"
        if digest != self.digest:
            return "a clip of another plan (reload the page)"
        segs = self.m.plan.segments
        if not 0 <= index < len(segs) or not segs[index].is_speech:
            return "no such clip"
        return self.voice.samples(segs[index].speech)

    def card(self, token: str, width: int, poem: int, ext: str):
        """The torifuda of ``poem``, ``width`` px wide: (bytes, content type), or a line
        saying why not."""
        if not online.same_secret(token, self.token):
            return "not this board's card"
        if ext != self.images.format:
            return f"the cards are {self.images.format}"
        got = self.images.image(poem, width)
        return got if isinstance(got, str) else (got, self.images.content_type)

    def click_track(self, token: str):
        return "calibrate with karuta drill speed --web (the tap-along is kept for the device)"

    def close(self) -> None:
        self._saver.close()
