"""Online play in the board window: a human seat on each machine.

``karuta practice --host`` / ``--join HOST --code C`` without ``--as``: the board window
(``reader.practice.window.BoardWindow``) draws the match and takes the clicks as on one
machine, but

- the judge is the host's (``online.Host``): at the host the window shows the host's own
  session, and a click is queued with the host (``Host.touch``: judged once every earlier
  frame has arrived); at the guest the window shows a session over the guest's mirror of the
  match, moved on by what the host says (``closed``, ``sent``), and a click is sent to the
  host (``Guest.touch``);
- the reading is the ``online.Timeline``'s, heard through ``netsound.TimelineSound``: a click
  stamped at ``t`` is plan frame ``timeline.heard(t)`` (the guest's ``t`` turned into the
  host's clock through its measured offset), the calibration subtracted — the sound places
  every buffer by its DAC time, so the frame heard at an instant is the timeline's;
- the transport (``reader.practice.netplay``) runs on a thread of its own with its asyncio
  loop; it and the window call the online side only under one lock (``Locked``), and the
  side's news is queued for the window's thread (it draws).

The arrangement and the memorisation are skipped (the host starts the reading once the
guest's clock is measured).  A transport that ends in an error (a refused code, a link
that did not come back, a mirror that differs) ends the window; the caller says it in one
line.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from reader.practice import online
from reader.practice.window import BoardWindow

__all__ = ["Locked", "Transport", "OnlineWindow"]


class Locked:
    """``side`` (an ``online.Host`` or ``Guest``) with its methods called under ``lock``:
    the transport's thread and the window's share it.  Attributes are read as they are."""

    def __init__(self, side, lock: threading.Lock):
        self._side = side
        self._lock = lock

    def __getattr__(self, name):
        value = getattr(self._side, name)
        if not callable(value):
            return value

        def call(*a, **k):
            with self._lock:
                return value(*a, **k)
        return call


class Transport:
    """A coroutine (``netplay.run_host`` / ``run_guest``) on a thread with its own event
    loop.  ``error``: what it ended with (a ``KarutaError`` to say in one line);
    ``done``: set when it ended; ``stop()`` cancels it."""

    def __init__(self, coro_of: Callable[[], object]):
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._coro_of = coro_of
        self._loop = None
        self._task = None
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="karuta-net", daemon=True)
        self.thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            self._task = loop.create_task(self._coro_of())
            self._ready.set()
            loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except BaseException as e:  # (handed to the window's thread, said there)
            self.error = e
        finally:
            self._ready.set()
            rest = asyncio.all_tasks(loop)  # (the links' handlers: ended, not left pending)
            for t in rest:
                t.cancel()
            if rest:
                loop.run_until_complete(asyncio.gather(*rest, return_exceptions=True))
            loop.close()
            self.done.set()

    def stop(self) -> None:
        if not self.done.is_set() and self._loop is not None and self._task is not None:
            try:
                self._loop.call_soon_threadsafe(self._task.cancel)
            except RuntimeError:  # (the loop closed meanwhile)
                pass
        self.thread.join(10)


class OnlineWindow(BoardWindow):
    """The board window of one machine of an online match.  ``side``: the ``online.Host``
    or ``online.Guest`` (not locked: this window takes ``lock`` itself); ``local``: this
    machine's seat; ``sound``: the ``netsound.SoundProcess`` (the window's output, started
    once the window is up);
    ``transport``: the running ``Transport`` (its end with an error ends the window)."""

    def __init__(self, side, local: str, lock: threading.Lock, sound, *, transport=None,
                 say: Callable[[str], None] | None = None,
                 calibrate: Callable[[object], float] | None = None, **kw):
        super().__init__(side.m, sound, memorize_min=0, **kw)
        self.calibrate = calibrate  # sound -> this device's calibration (ms), once it is open
        self.say = say or (lambda text: None)  # a line for the user (the host's warnings)
        self.side = side
        self.local = local
        self.lock = lock
        self.transport = transport
        self.is_host = isinstance(side, online.Host)
        self.viewer = local
        self.humans = (local,)
        self._news: list[tuple[str, object]] = []
        self.outbox: list[dict] = []  # the guest's messages for the host (``drain``)
        self._picked: list[int] = []
        self._hint_key = None  # (read, morae heard) the dimmed cards are for (``_hint``)
        if self.is_host:
            self.session = side.session  # the judge's own: what it shows is what is judged
        side.notify = self._queue

    def open(self):
        super().open()
        # the sound starts once the window is up: opening a window is a burst of work, and a
        # sound server starved meanwhile plays the stream late ever after (not seen in the
        # DAC times)
        if hasattr(self.output, "start"):  # (a ``SoundProcess``; tests: a ``NullOutput``)
            self.output.start()
        if self.calibrate is not None:
            self.calibration_ms = float(self.calibrate(self.output))
        with self.lock:
            self.side.ready = True  # the board is up: the reading may be scheduled

    # -- the transport's side (its thread, under the lock) ------------------------------------
    def _queue(self, name: str, data) -> None:
        self._news.append((name, data))

    def drain(self, now: float) -> list[dict]:
        """The messages the window made for the host since the last call (a guest's
        ``players`` entry for ``netplay.run_guest``)."""
        with self.lock:
            out, self.outbox = self.outbox, []
        return out

    def show(self, status: str | None = None, panels: bool = False):
        owed = self.m.owed_send()
        if status is None and owed is not None and owed.sender != self.local:
            status = "waiting for the other player's send"  # (not "pick on your side")
        super().show(status, panels)
        if panels:  # this machine's player near, named "you"; the session's: A near, B far
            t = self.scene.texts
            by = {"A": t.get("near", ""), "B": t.get("far", "")}
            other = "B" if self.local == "A" else "A"
            t["near"] = by[self.local].replace(f"player {self.local}", "you", 1)
            t["far"] = by[other].replace(f"player {other}", "the other machine", 1)

    # -- time on the plan ---------------------------------------------------------------------
    def heard(self, ns: int | None = None) -> float | None:
        t = (self.clock.ns() if ns is None else ns) / 1e9
        f = self.side.timeline.heard(t) if self.is_host else self.side.heard(t)
        if f is None:
            return None
        return f - self.calibration_ms * self.rate / 1000.0

    def _start_reading(self):
        """The reading is the timeline's (the sound plays it from the start): nothing to
        start here."""

    def _release(self):
        """(The host decides each sync point: ``Host`` releases the wait itself.)"""

    # -- input --------------------------------------------------------------------------------
    def _player_at(self, y: float) -> str | None:
        return self.local

    def handle(self, ev):
        pg = self.pg
        quits = ev.kind == "quit" or (ev.kind == "key" and (ev.key == pg.K_ESCAPE
                                                            or ev.char in ("q", "Q")))
        if self.phase in ("arrange", "memorize") and not quits:
            return  # (the host starts the reading: nothing to arrange or skip here)
        with self.lock:
            m = self.m
            owed = m.owed_send()
            go = ev.kind == "key" and ev.key in (self.pg.K_SPACE, self.pg.K_RETURN)
            if go and self.phase == "reading":  # the highlighted send, if this player owes
                if owed is not None and owed.sender == self.local:
                    if self.is_host:
                        self.session.send_default()
                    else:
                        self._send(m.suggest_send(owed.sender, owed.count))
                return
            self._ev = ev  # (``_trace``: how the touch was stamped)
            super().handle(ev)

    def _trace(self, poem: int, ns: int, frame: float | None) -> None:
        """``KARUTA_ONLINE_TRACE=FILE`` (the benchmark's): one JSON line a touch -- its stamp
        (perf ns), how it was stamped, when the window handled it, the plan frame it was
        mapped to, the calibration and (a guest) the host's clock minus ours used."""
        import json
        import os

        path = os.environ.get("KARUTA_ONLINE_TRACE")
        if not path:
            return
        ev = getattr(self, "_ev", None)
        row = {"poem": poem, "ns": ns, "source": getattr(ev, "source", ""),
               "handled_ns": self.clock.ns(), "frame": frame,
               "cal_ms": self.calibration_ms,
               "offset": None if self.is_host else self.side.offset}
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")

    def touch(self, player: str, poem: int, ns: int) -> None:
        m = self.m
        owed = m.owed_send()
        if self.is_host:
            if owed is not None:
                self.session.pick(player, poem)
            else:
                frame = self.heard(ns)
                self._trace(poem, ns, frame)
                self.side.touch(poem, frame, ns / 1e9)
            return
        if owed is not None:  # the guest picks what it sends; the host makes the send
            if owed.sender != player or poem in self._picked or poem not in m.board[player]:
                return  # (the host checks the rest: "pick again")
            self._picked.append(poem)
            if len(self._picked) >= owed.count:
                self._send(self._picked[:owed.count])
            return
        frame = self.heard(ns)
        self._trace(poem, ns, frame)
        if frame is not None:
            self.outbox += self.side.touch(poem, ns / 1e9, frame=frame)

    def _send(self, cards) -> None:
        self._picked = []
        self.outbox += self.side.send(cards)
        self.session.status = "sent: waiting for the host"

    # -- the loop -----------------------------------------------------------------------------
    def _tick(self, now: float) -> None:
        with self.lock:
            news, self._news = self._news, []
            for name, data in news:
                if self.is_host:
                    if name in ("phase", "read", "touch", "closed", "done"):
                        self._on_session(name, data)
                    elif name in ("tries", "silent", "refused"):  # wrong codes, a silent
                        self.session.status = str(data)[:120]     # link, bad touches: on
                        self.say(str(data))                       # the board and the terminal
                else:
                    self._guest_news(name, data)
            if not self.is_host and self.phase in ("arrange", "memorize") and \
                    self.side.timeline is not None and self.side.timeline.anchors:
                self.session.start_reading()  # (the first sync point is here)
            if self.phase in ("arrange", "memorize"):
                self.show(status="waiting for the other machine: the reading starts once "
                                 "the clocks are measured")
            else:
                if self.hints:
                    self._hint(now)
                left = self._memorising(now)
                self.show(status=None if left is None else
                          f"memorise: {left:.0f} s, then the reading starts on both machines")
        self._sound_news()
        t = self.transport
        if t is not None and t.done.is_set() and (t.error is not None or self.phase != "over"):
            self.quit = True  # (the caller says why)
        if getattr(self.output, "error", None) is not None and self.phase != "over":
            self.quit = True  # the sound stopped (the caller says it)

    def _memorising(self, now: float) -> float | None:
        """Seconds until the reading's first sync point while it is further off than any
        but a memorisation's (the host's ``--memorize``); else ``None``."""
        tl = self.side.timeline
        t = now if self.is_host else self.side.host_time(now)
        if tl is None or not tl.anchors or t is None:
            return None
        left = tl.anchors[-1].at - t
        return left if left > online.FIRST_LEAD_S + 2.5 else None

    def _hint(self, now: float) -> None:
        """``--hints``: the cards the morae heard here rule out, dimmed as this machine hears
        them (the host's session runs ``bound`` behind; the guest's mirror is not ticked)."""
        from reader.practice.session import morae_heard, ruled_in

        cur = self.m.current()
        heard = self.heard(round(now * 1e9))
        if cur is None or heard is None or self.m.owed_send() is not None:
            key, dim = None, frozenset()
        else:
            key = (cur.index, morae_heard(cur.morae, cur.start, heard))
            if key == self._hint_key:
                return
            on = [c for cs in self.m.board.values() for c in cs]
            dim = frozenset(on) - ruled_in(on, cur.poem, key[1])
        self._hint_key = key
        self.session.dim = dim

    def _sound_news(self) -> None:
        """This machine's sound heard a start too late, or stalled: the host schedules further
        ahead (its own sound: here; the guest's: told by ``status``) and says it in one line."""
        out = self.output
        if not hasattr(out, "cut_ms"):  # (tests: a ``NullOutput``)
            return
        with self.lock:
            if self.is_host:
                line = self.side.local_sound(out.underruns, out.cut_ms)
                if line is not None:
                    self.session.status = line[:120]
                    self.say(line)
            else:
                self.outbox += self.side.sound_status(out.underruns, out.cut_ms)

    def _guest_news(self, name: str, data) -> None:
        s = self.session
        if name == "welcome" and data is not self.m:  # joined again: the host's log anew
            self._rebuilt(data)
            self.say(f"joined again: the match goes on from read {data.index + 1}")
        elif name == "start":
            if self.m.current() is not None:
                s.status = self._read_line()
        elif name == "judged":
            verdict, card = data["verdict"], data["card"]
            if verdict in ("take", "fault"):
                s.marks[card] = verdict
                if verdict == "fault":
                    self._shake(card)
            if verdict in ("take", "fault", "miss", "late"):
                who = "you" if data["player"] == self.local else data["player"]
                # under the read it belongs to (the read still open), not under the line
                # that tells the last read's outcome
                s.status = f"{self._read_line() or s.status.split(' · ')[0]} · {who}: {verdict}"
        elif name == "closed" and data is not None:
            self._picked = []
            s.closed_read(data)
        elif name == "over" and s.phase != "over":
            s._set_phase("over")
        elif name == "warn":
            s.status = str(data)[:120]
            self.say(f"the host says: {data}")

    def _read_line(self) -> str:
        """``read N/M`` for the read now open ("" when none is)."""
        cur = self.m.current()
        return "" if cur is None else f"read {cur.index + 1}/{len(self.m.order)}"

    def _rebuilt(self, m) -> None:
        from reader.practice.session import PracticeSession

        from reader.base import seeds

        self.m = m
        self.session = PracticeSession(m, on_event=self._on_session, release=self._release)
        self.session.phase = "reading"
        self.rng = seeds.rng(m.extra.get("seed", 0), "place")  # (as a window opened now)
        self._layout_board()
        self.show(panels=True)
        self.painter.full()
