"""Online play at a board: a human seat on each machine, each a table (``reader.practice.table``).

``karuta practice --host`` / ``--join HOST --code C`` without ``--as``: the board window
(``reader.practice.window.BoardWindow``, the same as on one machine) draws a table's view and
hands it the clicks; the table here is

- at the host, ``HostTable``: the host's own session (``online.Host``, the judge), a click
  queued with the host (``Host.touch``: judged once every earlier frame has arrived);
- at the guest, ``GuestTable``: a mirror session (``PracticeSession(mirror=True)``) over the
  guest's copy of the match, moved on by what the host says (``closed``, ``sent``,
  ``judged``, ``over``), a click sent to the host (``Guest.touch``);
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

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.practice import online
from reader.practice import view as V
from reader.practice.local import Saver
from reader.practice.session import PracticeSession
from reader.practice.table import SessionTable

__all__ = ["Locked", "Transport", "HostTable", "GuestTable", "OnlineWindow"]


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


class _NetTable(SessionTable):
    """What the host's and the guest's tables share: ``side`` (an ``online.Host`` or
    ``Guest``, not locked: the table takes ``lock`` itself around every call into it, as the
    transport's thread does); ``local``: this machine's seat; ``sound``: the
    ``netsound.SoundProcess`` (started once the board is up: ``open``); ``transport``: the
    running ``Transport`` (its end with an error ends the table); ``say``: a line for the
    user's terminal; ``calibrate(sound)``: this device's calibration (ms), once the sound is
    open; ``clock``: the front end's (the touch trace's)."""

    def __init__(self, session, side, local: str, lock: threading.Lock, sound, *,
                 transport=None, say: Callable[[str], None] | None = None,
                 calibrate: Callable[[object], float] | None = None, hints: bool = False,
                 log_file=None, clock: Clock = SYSTEM_CLOCK, calibration_ms: float = 0.0):
        super().__init__(session, here=() if local is None else (local,),
                         viewer=local or "A")
        self.side = side
        self.local = local
        self.lock = lock
        self.output = sound
        self.transport = transport
        self.say = say or (lambda text: None)
        self.calibrate = calibrate
        self.calibration_ms = float(calibration_ms)
        self.hints = hints
        self.clock = clock
        self.rate = side.m.plan.sample_rate
        self._saver = Saver(log_file)
        self._inbox: list[tuple[str, object]] = []
        side.notify = self._queue

    @property
    def log_file(self):
        return self._saver.log_file

    def _queue(self, name: str, data) -> None:
        """The side's news (the transport's thread, under the lock): for the next tick."""
        self._inbox.append((name, data))

    def _news(self, name, data):
        super()._news(name, data)
        if name == "done" or (name == "closed" and data.owed is not None) or \
                (name == "phase" and data == "reading"):
            self._saver.save(self.m)

    def open(self, now: float) -> None:
        # the sound starts once the window is up: opening a window is a burst of work, and a
        # sound server starved meanwhile plays the stream late ever after (not seen in the
        # DAC times)
        if hasattr(self.output, "start"):  # (a ``SoundProcess``; tests: a ``NullOutput``)
            self.output.start()
        if self.calibrate is not None:
            self.calibration_ms = float(self.calibrate(self.output))
        with self.lock:
            self.side.ready = True  # the board is up: the reading may be scheduled

    def go(self, now: float) -> None:
        """Space or Enter: the highlighted send, if this machine's player owes one (the host
        starts the reading: nothing to arrange or skip here)."""
        if self.phase == "reading":
            self.send_default(self.local)

    def skip(self) -> None:
        """(The host starts the reading.)"""

    def arrange(self, player, poem, row, side, index) -> bool:
        return False  # (the cards lie as the host's seed lays them)

    @property
    def ended(self) -> bool:
        t = self.transport
        if t is not None and t.done.is_set() and (t.error is not None or self.phase != "over"):
            return True
        return getattr(self.output, "error", None) is not None and self.phase != "over"

    def line(self, now: float):
        if self.phase in ("arrange", "memorize"):
            said = self.session.line  # (a wrong code tried meanwhile: said on the board)
            return (said if isinstance(said, V.Notice) and said.text else V.Waiting("start")), None
        left = self._memorising(now)
        if left is not None:
            return V.Memorize(left, online=True), None
        owed = self.m.owed_send()
        if owed is not None and owed.sender != self.local:
            return V.Waiting("send"), None  # (not "pick on your side")
        return super().line(now)

    def _host_now(self, now: float) -> float | None:
        return now

    def _memorising(self, now: float) -> float | None:
        """Seconds until the reading's first sync point while it is further off than any
        but a memorisation's (the host's ``--memorize``); else ``None``."""
        tl = self.side.timeline
        t = self._host_now(now)
        if tl is None or not tl.anchors or t is None:
            return None
        left = tl.anchors[-1].at - t
        return left if left > online.FIRST_LEAD_S + 2.5 else None

    def heard(self, t: float) -> float | None:
        """The plan frame heard at instant ``t`` (this machine's clock), calibration
        applied."""
        f = self._frame_at(t)
        if f is None:
            return None
        return f - self.calibration_ms * self.rate / 1000.0

    def _trace(self, poem: int, t: float, frame: float | None, source: str) -> None:
        """``KARUTA_ONLINE_TRACE=FILE`` (the benchmark's): one JSON line a touch -- its stamp
        (perf ns), how it was stamped, when the table took it, the plan frame it was mapped
        to, the calibration and (a guest) the host's clock minus ours used."""
        import json
        import os

        path = os.environ.get("KARUTA_ONLINE_TRACE")
        if not path:
            return
        row = {"poem": poem, "ns": round(t * 1e9), "source": source,
               "handled_ns": self.clock.ns(), "frame": frame,
               "cal_ms": self.calibration_ms,
               "offset": getattr(self.side, "offset", None)}
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")

    def tick(self, now: float) -> tuple[V.TableView, list[V.Event]]:
        with self.lock:
            news, self._inbox = self._inbox, []
            for name, data in news:
                self._side_news(name, data, now)
            self._follow(now)
            view = self.view(now)
        self._sound_news()
        return view, self.events()

    def close(self) -> None:
        self._saver.close()


class HostTable(_NetTable):
    """The host's board: the judge's own session (what it shows is what is judged)."""

    def __init__(self, host: online.Host, lock: threading.Lock, sound, **kw):
        super().__init__(host.session, host, host.local, lock, sound, **kw)

    def _frame_at(self, t: float) -> float | None:
        return self.side.timeline.heard(t)

    def touch(self, player: str, card: int, t: float, source: str = "") -> None:
        if player not in self.here:
            return
        with self.lock:
            if self.m.owed_send() is not None:
                self.session.pick(player, card)
                return
            frame = self.heard(t)
            self._trace(card, t, frame, source)
            self.side.touch(card, frame, t)

    def pick(self, player: str, card: int) -> None:
        with self.lock:
            self.session.pick(player, card)

    def send_default(self, player: str | None = None) -> None:
        with self.lock:
            owed = self.m.owed_send()
            if owed is not None and owed.sender == self.local:
                self.session.send_default()

    def _side_news(self, name: str, data, now: float) -> None:
        if name in ("phase", "read", "touch", "closed", "done"):
            self._news(name, data)
        elif name in ("tries", "silent", "refused"):  # wrong codes, a silent link, bad
            self.session.notice(str(data))             # touches: on the board and the
            self.say(str(data))                        # terminal

    def _follow(self, now: float) -> None:
        """(The host's session is ticked by the host, on the judge's time.)"""

    def _sound_news(self) -> None:
        """This machine's sound heard a start too late, or stalled: the host schedules
        further ahead and says it in one line."""
        out = self.output
        if not hasattr(out, "cut_ms"):  # (tests: a ``NullOutput``)
            return
        with self.lock:
            line = self.side.local_sound(out.underruns, out.cut_ms)
            if line is not None:
                self.session.notice(line)
                self.say(line)


class GuestTable(_NetTable):
    """A guest's board: a mirror session over the guest's copy of the match, moved on by
    the host's news; its clicks and sends go to the host (``drain``).  A watcher's
    (``Guest(watch=True)``): the same board, no seat of its own, its input ignored."""

    def __init__(self, guest: online.Guest, lock: threading.Lock, sound, **kw):
        super().__init__(self._mirror(guest.m, guest.me), guest, guest.me, lock, sound, **kw)
        self.outbox: list[dict] = []  # the messages for the host (``drain``)
        self._picked: list[int] = []

    def _mirror(self, m, me: str | None) -> PracticeSession:
        """A session over ``m`` that follows the host's (``me``: this machine's seat; a
        watcher's: ``None``)."""
        return PracticeSession(m, mirror=True, here=() if me is None else (me,),
                               on_event=self._news)

    def _frame_at(self, t: float) -> float | None:
        return self.side.heard(t)

    def _host_now(self, now: float) -> float | None:
        return self.side.host_time(now)

    def drain(self, now: float) -> list[dict]:
        """The messages the board made for the host since the last call (a guest's
        ``players`` entry for ``netplay.run_guest``)."""
        with self.lock:
            out, self.outbox = self.outbox, []
        return out

    def touch(self, player: str, card: int, t: float, source: str = "") -> None:
        if player not in self.here:
            return  # (a watcher's board, or another machine's seat)
        with self.lock:
            m = self.m
            owed = m.owed_send()
            if owed is not None:  # the guest picks what it sends; the host makes the send
                if owed.sender != player or card in self._picked or card not in m.board[player]:
                    return  # (the host checks the rest: "pick again")
                self._picked.append(card)
                if len(self._picked) >= owed.count:
                    self._send(self._picked[:owed.count])
                return
            frame = self.heard(t)
            self._trace(card, t, frame, source)
            if frame is not None:
                self.outbox += self.side.touch(card, t, frame=frame)

    def pick(self, player: str, card: int) -> None:
        """``player`` picks ``card`` to send (sent to the host once enough are picked)."""
        if self.m.owed_send() is not None:
            self.touch(player, card, 0.0)

    def send_default(self, player: str | None = None) -> None:
        with self.lock:
            owed = self.m.owed_send()
            if owed is not None and owed.sender == self.local:
                self._send(self.m.suggest_send(owed.sender, owed.count))

    def _send(self, cards) -> None:
        self._picked = []
        self.outbox += self.side.send(cards)
        self.session.waiting("host")

    def _side_news(self, name: str, data, now: float) -> None:
        s = self.session
        if name == "welcome" and data is not self.m:  # joined again: the host's log anew
            self._attach(self._mirror(data, self.local))
            self.session.start_reading()
            self.say(f"joined again: the match goes on from read {data.index + 1}")
        elif name == "judged":
            s.shown(data["player"], data["card"], data["verdict"])
            self._events.append(V.Judged(data["player"], data["card"], data["frame"],
                                         data["verdict"]))
        elif name == "closed" and data is not None:
            self._picked = []
            s.closed_read(data)
        elif name == "over":
            s.end()
        elif name == "warn":
            s.notice(str(data))
            self.say(f"the host says: {data}")

    def _follow(self, now: float) -> None:
        """The mirror follows the reading as this machine hears it: it starts at the first
        sync point; the counter, the read line's time and the hints go by the frame heard."""
        s = self.session
        tl = self.side.timeline
        if s.phase in ("arrange", "memorize") and tl is not None and tl.anchors:
            s.start_reading()  # (the first sync point is here)
        if s.phase == "reading":
            s.tick(now, self.heard(now))

    def _sound_news(self) -> None:
        """This machine's sound's counts, told to the host (it schedules further ahead)."""
        out = self.output
        if not hasattr(out, "cut_ms"):  # (tests: a ``NullOutput``)
            return
        with self.lock:
            self.outbox += self.side.sound_status(out.underruns, out.cut_ms)


def OnlineWindow(side, local: str, lock: threading.Lock, sound, *, transport=None,
                 say: Callable[[str], None] | None = None,
                 calibrate: Callable[[object], float] | None = None, hints: bool = False,
                 log_file=None, **window):
    """The board window of one machine of an online match: a ``BoardWindow`` over a
    ``HostTable`` (``side`` an ``online.Host``) or a ``GuestTable`` (an ``online.Guest``).
    ``local``: this machine's seat (the side's own)."""
    from reader.practice.window import BoardWindow

    kind = HostTable if isinstance(side, online.Host) else GuestTable
    table = kind(side, lock, sound, transport=transport, say=say, calibrate=calibrate,
                 hints=hints, log_file=log_file, clock=window.get("clock", SYSTEM_CLOCK))
    if table.local != local:
        raise ValueError(f"seat {local} is not this machine's ({table.local})")
    return BoardWindow(table, **window)
