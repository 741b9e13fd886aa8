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

Seats (``devices``): one page plays seat A (against a bot, or two players at one tablet: a
touch is B's when it starts in the far half), or each player has a page of their own
(``--vs device``: A's and B's, on two phones or tablets).  Who a page is comes from
``online.admit``, the online match's seat bookkeeping: the first pages with the code take the
free seats, each gets its seat's token (128 bits) in the welcome and shows it to get its seat
back after a phone slept or the page was reloaded; a page without a token once the seats are
taken watches (``MAX_WATCHERS``: sees the board, hears the reading, its touches refused in a
line).  With two devices the session hears what both have heard: its ``heard`` is the least of
the two pages' frames -- a read closes once both have heard its end, the kyogi wait holds
until both stand in it, and a device that stops reporting holds the match (said on the other
page and the terminal) until it is back.  A touch, pick or send carries an id: acknowledged,
sent again by the page after a rejoin until it is, taken once.

A device is known by the id its page keeps; its calibration is the one a tap-along (the
board page's own, before the reading, or the speed drill's: ``reader.web.page.TapAlong``)
kept under ``web:<id>`` (subtracted from every touch's frame).  An uncalibrated device plays,
its touches judged by their raw frames (said on the page and the terminal); every touch is
logged with the calibration it had (``calibration_ms``, null: none) and the player's name if
the page gave one, and ``record_stats`` files each player's takes under that name, an
uncalibrated touch's with no reaction time (kept out of ``karuta stats``' figures).
"""
from __future__ import annotations

from collections.abc import Callable

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.practice import online
from reader.practice import view as V
from reader.practice.local import Saver
from reader.practice.session import PracticeSession, result_lines
from reader.practice.table import SessionTable
from reader.web import boardproto, touchonly
from reader.web.page import PageHost, TapAlong

__all__ = ["WebBoard", "MAX_WATCHERS", "QUIET_S", "TAKEOVER_S"]

#: pages that may watch a board (beyond its players'): as many as an online host lets in
MAX_WATCHERS = online.MAX_WATCHERS
#: a player's page that said nothing this long (it says the frame it hears every 50 ms) has
#: stopped: said on the other pages and the terminal (the match waits for it meanwhile) (s)
QUIET_S = 2.0
#: a ``go``'s instant on this machine's clock is this far ahead of when it is sent (the
#: reading's start, s: every page has its clips; after a kyogi wait: ahead of a slow link's
#: delay): each page measures this clock (``touchonly``'s ping) and plays the frame at that
#: instant, so two devices read together (a page without the measure plays it on arrival)
START_LEAD_S = 0.8
GO_LEAD_S = 0.3
#: a player's seat whose device has said nothing this long (its link gone, or silent: a page
#: pings every 0.1 s) is offered to a page that joins with the code ("take over seat A"): the
#: device never came back, and the club takes the seat over (s)
TAKEOVER_S = 60.0
#: how the web board says ``online.admit``'s refusals
_TEXTS = {"code": "wrong code: open the address the laptop shows, with its code",
          "watchers": f"the seats are taken and this board has its {MAX_WATCHERS} watchers"}


class _Page(online.Peer):
    """One page at the board: a player's seat (``role`` A or B) or a watcher's
    (``online.WATCH``), with what the web adds: its device, calibration, the frame it said it
    hears, whether it pressed Start, the view it was last sent."""

    def __init__(self, role: str):
        super().__init__(role)
        self.device: str | None = None
        self.calibration_ms: float | None = None
        self.frame: float | None = None
        self.started = False
        self.sent_view = None
        self.quiet = False  # said to have stopped reporting (``QUIET_S``)
        self.tap: TapAlong | None = None  # its tap-along (``tap_along``)

    def tap_along(self, board) -> TapAlong:
        """This page's tap-along (its own clicks and token: two devices may tap at once)."""
        if self.tap is None:
            from reader.base import seeds

            self.tap = TapAlong(board.store, board.rate, f"{seeds.secret(2**128):032x}",
                                board.echo)
        return self.tap



class WebBoard(SessionTable, PageHost):
    """Match ``m`` played on pages: seat A the player at the page, B a bot or a second
    player at the same tablet (the far half: a touch is B's when it starts there); with
    ``devices`` each player at a page of their own.  ``watchers``: how many more pages may
    watch.  ``receive(msg, now, link, addr)`` (``PageHost``'s) / ``drop(link)`` / ``tick(now)``:
    the transport's calls; ``receive`` returns the messages for the page that sent, ``pending()``
    those for the other pages (by link).  ``log_file``: saved after every read
    (``LocalTable``'s saver); ``store``: a ``CalibrationStore`` (None: no calibration)."""

    page = "board.html"
    protocol = boardproto

    def __init__(self, m, voice, code: str, *, devices: bool = False,
                 watchers: int = MAX_WATCHERS, log_file=None, store=None,
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
        self.devices = bool(devices)
        if self.devices and self.here != ("A", "B"):
            raise ValueError("a device for each player needs two human seats")
        self.watchers = int(watchers)
        self.gate = online.CodeGate(echo)
        self.digest = online.plan_digest(m.plan)
        self.token = f"{seeds.secret(2**128):032x}"
        self.rate = m.plan.sample_rate
        self.waits = [s for s in m.plan.segments if s.wait]
        self.kamis = [s for s in m.plan.segments if s.kind == "kami"]
        self._saver = Saver(log_file)
        #: the pages: the players' (A; with ``devices`` A and B), then watchers' as they join
        self.pages: list[_Page] = [_Page(r) for r in (("A", "B") if self.devices else ("A",))]
        self.anchor_frame = m.first_frame()  # where the pages' reading last went on from
        self.names: dict[str, str] = {}  # seat -> the name its player gave on the page
        #: the reading the pages were told: the last go's instant (this clock) and frame
        self._schedule: tuple[float, int] | None = None
        self._go = False
        self._outbox: dict[int, list[dict]] = {}
        self.over_told = False
        self.hangup = False
        self._vacant: list[str] = []  # the seats the watchers were last told may be taken over
        #: links the transport is to close, each with its last message (a seat's old link,
        #: once a page joined again with the seat's token: that page, or another tab)
        self.closing: list[tuple[int, dict]] = []

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

    @property
    def players(self) -> list[_Page]:
        return [p for p in self.pages if p.player]

    @property
    def frame(self) -> float | None:
        """The frame the session hears: the least the players' pages said they hear (``None``
        until each has said one)."""
        frames = [p.frame for p in self.players]
        return None if any(f is None for f in frames) else min(frames)

    def heard(self, t: float) -> float | None:
        return self.frame

    def plays(self, page: _Page) -> tuple[str, ...]:
        """The seats ``page`` touches for (a watcher: none)."""
        if not page.player:
            return ()
        return (page.role,) if self.devices else self.here

    def _name(self, page: _Page) -> str:
        if not page.player:
            return "a watcher's device"
        return f"{page.role}'s device" if self.devices else "the device"

    def _wait_ahead(self):
        return next((w for w in self.waits if w.end > self.anchor_frame), None)

    def waiting_on(self) -> int | None:
        """The poem whose kyogi wait the pages stand in (their reading went on from
        ``anchor_frame``; each stands at the first wait's end after it)."""
        f = self.frame
        if f is None:
            return None
        w = self._wait_ahead()
        return w.poem if w is not None and f >= w.start else None

    def step(self, now: float, page: _Page | None = None, frame: float | None = None) -> None:
        """The session moved on to ``now``, ``page`` heard ``frame`` (never back)."""
        if page is not None and frame is not None and page.player:
            w = self._wait_ahead()
            if w is not None:  # (the page stands at the wait's end until ``go``)
                frame = min(frame, w.end)
            page.frame = frame if page.frame is None else max(page.frame, frame)
        s = self.session
        if s.phase == "memorize" and not s.memorize_started:
            return  # (a resumed match: its countdown starts once every player pressed Start)
        f = self.frame
        finished = f is not None and f >= self.m.plan.frames
        s.tick(now, f, self.waiting_on(), finished=finished)

    def touch_frame(self, page: _Page, player: str, card: int, frame: float,
                    gap_ms: float | None = None) -> None:
        """``player`` touched ``card`` at plan ``frame`` as ``page`` heard it (its device's
        calibration subtracted; the touch logged with the calibration it had -- null: not
        calibrated, not timed -- the player's name if the page gave one, and ``gap_ms`` if the
        page's sound had a gap since the 上の句 began: judged by its frame, not timed)."""
        cal = (page.calibration_ms or 0.0) * self.rate / 1000.0
        self.step(self.clock.seconds(), page, frame)
        note = {"calibration_ms": page.calibration_ms}
        if gap_ms is not None:
            note["gap_ms"] = gap_ms
        if player in self.names:
            note["name"] = self.names[player]
        self.session.touch(player, card, frame - cal, note)

    #: a card is dragged while arranging and while the memorisation is counted down
    arrange_phases = ("arrange", "memorize")

    # -- the transport's calls (``PageHost.receive``: checked, the hello answered) ----------------
    def _page_at(self, link: int) -> _Page | None:
        return next((p for p in self.pages if p.joined and p.link == link), None)

    def knows(self, link: int) -> bool:
        return self._page_at(link) is not None

    def drop(self, link: int) -> None:
        page = self._page_at(link)
        if page is not None:
            page.link, page.joined = None, False

    def pending(self) -> dict[int, list[dict]]:
        """The messages for pages other than the one a ``receive`` answered, by link."""
        out, self._outbox = self._outbox, {}
        return {k: v for k, v in out.items() if v}

    def _tell(self, page: _Page, msgs: list[dict]) -> None:
        if page.joined and msgs:
            self._outbox.setdefault(page.link, []).extend(msgs)

    def _tell_others(self, page: _Page | None, text: str) -> None:
        self.echo(text)
        for p in self.pages:
            if p is not page:
                self._tell(p, [{"t": "warn", "text": text[:400]}])

    def vacant(self, now: float) -> list[str]:
        """The players' seats that may be taken over (their device gone ``TAKEOVER_S``)."""
        return [p.role for p in self.players if p.gone(now, TAKEOVER_S)]

    def tick(self, now: float) -> None:
        """Every fraction of a second: a player's page that stopped reporting (its link lost,
        or silent ``QUIET_S``) is said on the other pages and the terminal, once; the watchers
        are told when a seat may be taken over (``vacant``), and when it may not any more."""
        if self.over_told:
            return
        vacant = self.vacant(now)
        if vacant != self._vacant:
            self._vacant = vacant
            if vacant:
                self.echo(" and ".join(f"seat {r}" for r in vacant) + f": its device has been "
                          f"gone {TAKEOVER_S:.0f} s -- a device that joins with the code may "
                          "take it over")
            self._tell_vacant()
        if self.session.phase != "reading":
            return
        for p in self.players:
            if p.started and not p.quiet and (not p.joined or now - p.heard_at > QUIET_S):
                p.quiet = True
                why = "its link was lost" if not p.joined else \
                    f"nothing heard from it for {QUIET_S:.0f} s"
                self._tell_others(p, f"{self._name(p)} stopped reporting ({why}): the match "
                                     "waits for it")

    def handle(self, msg: dict, now: float, link: int, addr: str) -> list[dict]:
        page = self._page_at(link)
        t = msg["t"]
        page.heard_at = now
        page.claimed = True  # (a page says nothing but its hello until it is welcomed)
        if page.quiet:
            page.quiet = False
            self._tell_others(page, f"{self._name(page)} is back")
        if t == "ping":  # (the touch-only clock: answered at once, nothing else moves)
            return [touchonly.pong(msg, now, self.clock.seconds())]
        out: list[dict] = []
        if t == "start":
            if self.session.phase in ("arrange", "memorize"):
                for p, name in msg.get("names", {}).items():
                    if p in self.plays(page) and name.strip():
                        self.names[p] = " ".join(name.split())
            out += self._start(page, now)
        elif t in ("calibrate", "cal"):  # the tap-along, before the reading
            got = None
            if self.session.phase in ("arrange", "memorize") and page.player:
                if t == "calibrate":
                    got = page.tap_along(self).ask(msg["count"])
                else:
                    got = page.tap_along(self).taps(page.device, msg["taps"],
                                                    msg.get("moved_ms"))
                    page.calibration_ms = self._calibration(page.device)
            return [got] if got is not None else [
                {"t": "warn", "text": "calibrate before the reading starts: ignored"}]
        elif t == "arrange":
            player = msg.get("player", page.role)
            if player in self.plays(page):  # (a device arranges its own seat's side)
                self.arrange(player, msg["card"], msg["row"], msg["side"], msg["index"])
        elif t == "at":
            self.step(now, page, msg["frame"])
        elif t in ("touch", "pick", "send"):
            fresh = page.fresh(msg["id"])
            out.append({"t": "ack", "id": page.touch_high})
            if fresh:  # (a copy, sent again after a rejoin: acknowledged only)
                out += self._input(page, msg)
        self.step(now)
        self._out(now)
        return out + self._outbox.pop(link, [])

    def _input(self, page: _Page, msg: dict) -> list[dict]:
        """A page's touch, pick or send (the first time its id came)."""
        t = msg["t"]
        if not page.player:
            return [{"t": "warn", "text": f"you are watching: a watcher's {t} is not taken"}]
        plays = self.plays(page)
        if t == "send":
            owed = self.m.owed_send()
            if owed is not None and owed.sender not in plays:
                return [{"t": "warn", "text": f"{owed.sender} owes the send: it is made on "
                                              f"{owed.sender}'s device"}]
            self.session.send_default()
            return []
        player = msg.get("player", page.role)
        if player not in plays:
            if self.devices:
                return [{"t": "warn", "text": f"this is {page.role}'s device: a touch for "
                                              f"{player} is not taken"}]
            return []  # (a bot's half: nobody's touch)
        if t == "touch":
            self.touch_frame(page, player, msg["card"], msg["frame"], msg.get("gap_ms"))
        else:
            self.session.pick(player, msg["card"])
        return []

    def _start(self, page: _Page, now: float) -> list[dict]:
        """``page`` pressed Start: once every player's page has, the memorisation starts
        (``memorize_s``; the pages count it down, the players drag their cards), and the
        reading starts at its end -- a page's start then (its countdown at 0, or "start the
        reading") -- or at once if there is none (each page told ``go`` from the first frame);
        a page that starts later (a watcher, a page reloaded) goes on from the last wait's
        end."""
        page.started = True
        s = self.session
        if s.phase not in ("arrange", "memorize"):
            return [self._late_go(page)]
        waiting = [p.role for p in self.players if not p.started]
        if waiting:
            return [{"t": "warn", "text": "waiting for " + " and ".join(
                f"{r}'s device" for r in waiting) + " to join and press Start"}]
        if s.memorize_s > 0 and not s.memorize_started:  # (new, or resumed)
            s.start_memorize(now)
            self.echo(f"memorisation: {s.memorize_s / 60:g} min on the device"
                      + ("s" if self.devices else ""))
            return []
        self.session.start_reading()
        self.echo("the reading starts on the device" + ("s" if self.devices else "") + "".join(
            f" · {p}: {n}" for p, n in sorted(self.names.items())))
        go = self._first_go(now)
        for p in self.pages:
            if p.started and p is not page:
                self._tell(p, [go])
        return [go]

    def _first_go(self, now: float) -> dict:
        """The reading starts (or, for a page that starts later, goes on) from
        ``anchor_frame``: at ``START_LEAD_S`` from now on this machine's clock, or at the
        instant the pages were told already if it is still ahead (both players' countdowns
        ended: one instant for both)."""
        return {**self._go_at(self.anchor_frame, START_LEAD_S), "first": True}

    def _late_go(self, page: _Page) -> dict:
        """A page that starts once the reading is under way (reloaded mid-read, a watcher
        come late) catches up at once: it plays on from the frame the shared schedule
        (``_schedule``: what every page was told) reaches at ``START_LEAD_S`` from now, at that
        instant, part-way into a segment if need be.  If that frame is past the decisive onset
        of the 上の句 being read (the page would hear only the end of its kimariji) or in the
        kyogi wait after it, the page keeps its timeline but sounds nothing before the wait's
        end (``quiet``): its reading goes on from the next read, and it says so.  No schedule
        (the reading's first go not sent yet, or restarted by a take-over): ``_first_go``."""
        if self._schedule is None:
            return self._first_go(0.0)
        t0, f0 = self._schedule
        t = self.clock.seconds()
        if t0 - t >= GO_LEAD_S:  # (the go told is still far enough ahead: that go)
            return {"t": "go", "frame": int(f0), "at": round(t0, 6), "first": True}
        at = t + START_LEAD_S
        frame = f0 + round((at - t0) * self.rate)
        go = {"t": "go", "first": True, "at": round(at, 6)}
        w = self._wait_ahead()
        if w is None:
            return {**go, "frame": int(min(frame, self.m.plan.frames))}
        kami = next((g for g in reversed(self.kamis) if g.start < w.start), None)
        decisive = None if kami is None else kami.decisive if kami.decisive is not None \
            else kami.end
        if frame >= w.end:  # (standing in the wait: just before its end, it stands there)
            frame = w.end - 1
        if decisive is not None and frame > decisive:
            go["quiet"] = int(w.end)
        self.echo(f"{self._name(page)} plays on from the reading's now (frame {frame}"
                  + (", silent until the next read" if "quiet" in go else "") + ")")
        return {**go, "frame": int(frame)}

    def _go_at(self, frame: int, lead: float) -> dict:
        """``go`` on from plan ``frame`` at an instant of this machine's clock: where the
        reading the pages were told would reach ``frame`` (``_schedule``: the last go's
        instant and frame), but at least ``lead`` from now; that instant is the schedule from
        then on.  Every page plays ``frame`` at it as it measured this clock, so two devices
        stay together after a kyogi wait even if one of them ran late before it."""
        t = self.clock.seconds()
        at = t + lead
        if self._schedule is not None:
            t0, f0 = self._schedule
            at = max(at, t0 + (frame - f0) / self.rate)
        self._schedule = (at, int(frame))
        return {"t": "go", "frame": int(frame), "at": round(at, 6)}

    def _tell_vacant(self) -> None:
        """The watchers are told which seats they may take over now (``_vacant``)."""
        for p in self.pages:
            if not p.player:
                self._tell(p, [{"t": "vacant", "seats": self._vacant}])

    def _take_over(self, page: _Page, addr: str, gone_s: float) -> None:
        """``page``'s seat was taken over by a device from ``addr`` (its own was gone
        ``gone_s``): said on the pages and the terminal; the reading the match held for it
        starts again at the pending read (the 間 before its 上の句), on the new device's Start."""
        page.quiet = False  # (not "back": another device)
        page.tap = None
        self._vacant = [r for r in self._vacant if r != page.role]
        self._tell_others(page, f"seat {page.role} was taken over by a device from {addr} "
                                f"(its device was gone {gone_s:.0f} s)")
        self._tell_vacant()
        cur = self.m.current() if self.session.phase == "reading" else None
        w = self._wait_ahead()
        if cur is None or w is None:
            return
        segs = self.m.plan.segments
        k = next((i for i, s in enumerate(segs) if s.kind == "kami" and s.poem == cur.poem), None)
        if k is None:
            return
        start = segs[k - 1].start if k > 0 and segs[k - 1].kind == "ma" else segs[k].start
        if self.anchor_frame <= start < w.end:
            self.anchor_frame = start
            self._schedule = None  # (the next Start goes from there, and sets the schedule)

    def _view_of(self, page: _Page, now: float) -> dict:
        """The view as ``page`` sees it (its seat near; a watcher: A's side near)."""
        keep = self.here, self.viewer
        self.here, self.viewer = self.plays(page), page.role if page.player else "A"
        try:
            v = self.view(now)
        finally:
            self.here, self.viewer = keep
        view = V.to_json(v)
        view["line_text"] = V.status_text(v.line, v.verdict)
        return view

    def _out(self, now: float) -> None:
        """What each joined page is to be told now (its view if it changed, the reading's
        going on, the end) into the outbox."""
        self.events()  # (the pages draw the view; the events are for animating front ends)
        go = None
        if self._go:
            self._go = False
            w = self._wait_ahead()
            if w is not None:
                self.anchor_frame = w.end
                go = self._go_at(w.end, GO_LEAD_S)
        over = self.session.over and not self.over_told
        if over:
            self.over_told = True
            self._saver.close()
            for line in result_lines(self.m, () if self.devices else self.here):
                self.echo(line)
        for p in self.pages:
            if not p.joined:
                continue
            msgs = []
            view = self._view_of(p, now)
            if view != p.sent_view:
                p.sent_view = view
                msgs.append({"t": "view", "view": view})
            if go is not None and p.started:
                msgs.append(go)
            if over:
                msgs.append({"t": "over", "lines": self._end_lines(p)})
            self._tell(p, msgs)

    def _end_lines(self, page: _Page) -> list[str]:
        lines = result_lines(self.m, self.plays(page))
        if page.player:
            lines.append("calibration: none (touches judged by their raw frames, kept out of "
                         "karuta stats: tap along before the next match)"
                         if page.calibration_ms is None else
                         f"calibration: {page.calibration_ms:+.1f} ms subtracted")
        return [s[:400] for s in lines]

    def _hello(self, msg, now, link, addr) -> list[dict]:
        out = self._admit(msg, now, link, addr)
        self._out(now)
        return out + self._outbox.pop(link, [])

    def _admit(self, msg, now, link, addr) -> list[dict]:
        import poems

        self.hangup = True
        if msg["v"] != boardproto.VERSION:
            return [{"t": "error", "text": "this page is of another karuta: reload it"}]
        # a page without its seat's token once every seat is taken watches (or asks to take
        # over a seat whose device has been gone ``TAKEOVER_S``: ``take``)
        held = next((p for p in self.pages if "seat" in msg and p.seat is not None
                     and online.same_secret(msg["seat"], p.seat)), None)
        holder, seated = held is not None, held is not None and held.player
        free = any(p.player and p.seat is None for p in self.pages)
        ask = {**msg, "watch": not holder and not free and "take" not in msg}
        gone = {p.role: now - p.heard_at for p in self.players}
        page, why = online.admit(self.pages, ask, addr, now, code=self.code, gate=self.gate,
                                 watchers=self.watchers, make=_Page, texts=_TEXTS,
                                 takeover_s=TAKEOVER_S)
        if page is None:
            asker = self._page_at(link)
            if "take" in msg and asker is not None and not asker.player:
                self.hangup = False  # (a watcher refused a seat watches on)
                return [{"t": "warn", "text": why}]
            return [{"t": "error", "text": why}]
        self.hangup = False
        taken = "take" in msg and not seated
        again = page.device is not None and not taken
        if page.joined and page.link not in (None, link):
            self.closing.append((page.link, {"t": "error", "text": (
                f"seat {page.role} was taken over by another device: this one is closed"
                if taken else "this seat joined again from another page: this one is closed")}))
        if taken:  # (a watcher's page taking the seat: its watcher's place is given up)
            self.pages = [p for p in self.pages if p is page or p.link != link]
            self._take_over(page, addr, gone[page.role])
        retired = [p.role for p in self.players if page is not p and not seated
                   and "seat" in msg and p.retired_token(msg["seat"])]
        page.link, page.joined, page.heard_at, page.sent_view = link, True, now, None
        # (read again at every hello: a device calibrated meanwhile -- by the drill's page,
        # or another match's -- brings its calibration when it joins again)
        page.device = msg["device"]
        page.calibration_ms = self._calibration(page.device)
        seat = ("watching" if not page.player else
                f"seat {page.role}" if self.devices else "")
        self.echo(f"a device joined from {addr} (" + ", ".join(x for x in (
            seat, "again" if again else "",
            "" if not page.player else "not calibrated" if page.calibration_ms is None
            else f"calibrated {page.calibration_ms:+.1f} ms") if x) + ")")
        more = []
        if retired:
            more.append({"t": "warn", "text": (
                f"seat {retired[0]} was taken over by another device while this one was gone "
                f"(over {TAKEOVER_S:.0f} s): you are watching")})
        vacant = [] if page.player else self.vacant(now)
        if vacant:
            more.append({"t": "vacant", "seats": vacant})
        if page.quiet:
            page.quiet = False
            self._tell_others(page, f"{self._name(page)} is back")
        cards = {c for t in self.m.layout().values() for c in
                 (t.cards if hasattr(t, "cards") else t)}
        return [{"t": "welcome", "v": boardproto.VERSION, "rate": self.rate,
                 "plan": self.digest, "clip": f"/clip/{self.token}/{self.digest}/",
                 "segs": [[s.kind, s.poem if isinstance(s.poem, int) else None, s.start, s.end,
                           int(s.wait), int(s.is_speech)] for s in self.m.plan.segments],
                 "from": int(self.anchor_frame),
                 "labels": {str(c): poems.poem(c).torifuda for c in sorted(cards)},
                 "calibration": page.calibration_ms, "you": page.role, "token": page.seat,
                 "cards": f"/card/{self.token}/", "widths": list(self.images.widths),
                 "ext": self.images.format}] + more

    def _calibration(self, device: str) -> float | None:
        c = TapAlong(self.store, self.rate, self.token, self.echo).stored(device)
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
        """A page's tap-along clicks (each page has its own tap-along and token)."""
        for p in self.pages:
            if p.tap is not None and online.same_secret(token, p.tap.token):
                return p.tap.track(token)
        return "not this host's clip"

    def record_players(self, db, ts) -> int:
        """Each player's takes and faults of the match (its reads closed here) into the stats
        database (``reader.practice.record.record_web``): under the player's name, one
        session a player and calibration.  The number of taps recorded."""
        from reader.practice.record import record_web

        return sum(record_web(db, self.m, ts, players=self.plays(p), names=self.names,
                              settings={"device": f"web:{p.device}"}) for p in self.players)

    def close(self) -> None:
        self._saver.close()
