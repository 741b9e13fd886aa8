"""The practice table: the one seam between a practice match and a front end.

A front end (the pygame board window, a browser board) draws what a table shows and reports
what the player does; it never reaches into the match or its session.  Every kind of match
is a table:

- ``reader.practice.local.LocalTable``: a match on this machine (the reading on this
  machine's sound);
- ``reader.practice.netwindow.HostTable``: the online host's match, judged here;
- ``reader.practice.netwindow.GuestTable``: a guest's mirror of the host's match.

What a front end calls (time is a value: ``now`` and ``t`` are seconds on the front end's
clock, the one its input is stamped on)::

    open(now)                     the board is up (the sound may start)
    touch(player, card, t)        a touch at instant t (mapped to the frame heard then)
    pick(player, card)            a card picked to send
    send_default(player)          the highlighted send
    go(now) / skip()              arranged: start the memorisation / skip it
    arrange(player, poem, row, side, index)   a card dragged to a place (arranging)
    tick(now) -> (TableView, [Event])         what to draw, and what happened since

The view and the events are plain data (``reader.practice.view``; ``view.to_json``).
``SessionTable`` here is what the three share: a ``PracticeSession`` seen as a view.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from reader.practice import view as V
from reader.practice.boardstate import board_state, done_event

__all__ = ["Table", "SessionTable"]


class Table(Protocol):
    viewer: str
    here: tuple[str, ...]
    hints: bool
    over: bool
    arranging: bool
    getting_ready: bool
    ended: bool

    def open(self, now: float) -> None: ...
    def touch(self, player: str, card: int, t: float, source: str = "") -> None: ...
    def pick(self, player: str, card: int) -> None: ...
    def send_default(self, player: str) -> None: ...
    def go(self, now: float) -> None: ...
    def skip(self) -> None: ...
    def arrange(self, player: str, poem: int, row: int, side: int, index: int) -> bool: ...
    def tick(self, now: float) -> tuple[V.TableView, list[V.Event]]: ...
    def view(self, now: float) -> V.TableView: ...
    def close(self) -> None: ...


class SessionTable:
    """A ``PracticeSession`` (``session``) as a table's view and events.  ``here``: the
    players at this screen; ``viewer``: whose side is drawn near.  Subclasses give the
    session, tick it and take the input; ``heard(t)`` is the plan frame this screen hears at
    ``t`` (``--hints`` dim what it rules out, as this screen hears it)."""

    #: the stats database and its session (``record_stats``; the caller sets them)
    db = None
    session_id: str | None = None

    def __init__(self, session, *, here: tuple[str, ...], viewer: str = "A",
                 on_news: Callable[[str, object], None] | None = None):
        self.here = tuple(here)
        self.viewer = viewer
        self.hints = False
        #: every piece of the session's news as it comes (tests, benchmarks: the raw objects)
        self.on_news = on_news or (lambda name, data: None)
        self._events: list[V.Event] = []
        self._version = 0
        self._owed_key = None
        self._owed = None
        self._attach(session)

    def _attach(self, session) -> None:
        """Show ``session`` (a new one: a guest that joined again)."""
        self.session = session
        self.m = session.m
        self._board = board_state(self.m)
        self._version += 1

    @property
    def over(self) -> bool:
        return self.session.over

    #: the table wants ``tick`` every turn of the loop (a local reading's "get ready")
    getting_ready = False
    #: the player may drag their cards now (``arrange``)
    arranging = False
    #: the table cannot go on (an online link or sound that failed: its caller says why)
    ended = False

    @property
    def phase(self) -> str:
        return self.session.phase

    # -- the session's news -------------------------------------------------------------------
    def _news(self, name: str, data) -> None:
        """The session's news (its ``on_event``) as typed events."""
        if name == "phase":
            self._events.append(V.Phase(data))
        elif name == "read":
            self._events.append(V.Read(data.index))
        elif name == "touch":
            self._events.append(V.Judged(data.player, data.card, int(data.frame), data.verdict,
                                         data.reaction_ms))
        elif name == "closed":
            owes = None if data.owed is None else (data.owed.sender, data.owed.count)
            self._events.append(V.Closed(data.index, data.poem, owes))
        elif name == "done":
            self._events.append(done_event(self.m, data, self._board))
            self._moved()
        self.on_news(name, data)

    #: the session's phases in which a player may drag their own cards (``arrange``)
    arrange_phases: tuple[str, ...] = ("arrange",)

    def arrange(self, player: str, poem: int, row: int, side: int, index: int) -> bool:
        """``player`` dragged ``poem`` of their own side to a place (before the reading: in
        ``arrange_phases``; the match keeps it and logs it).  False if it was not theirs to
        move then."""
        from reader.practice import board as B

        if self.session.phase not in self.arrange_phases or player not in self.here:
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

    def _moved(self) -> None:
        """The cards' places changed."""
        self._board = board_state(self.m)
        self._version += 1

    def events(self) -> list[V.Event]:
        out, self._events = self._events, []
        return out

    # -- the view -----------------------------------------------------------------------------
    def heard(self, t: float) -> float | None:
        return None

    def line(self, now: float):
        """The status line (a subclass may say more: the network's wait)."""
        return self.session.line, self.session.verdict

    def view(self, now: float, countdown: str = "") -> V.TableView:
        s, m = self.session, self.m
        st = m.state
        dim = s.dim_at(self.heard(now)) if self.hints and s.phase == "reading" else frozenset()
        b = self._board
        board = V.BoardState(territories=b.territories, hands=b.hands, on_board=b.on_board,
                             ba=b.ba, dim=dim, marks=dict(s.marks))
        solo = None
        if st.solo:
            taken, missed, faults = st.solo_score()
            solo = (taken, missed, faults, m.game.left_alone(st, m.deal))
        seats = tuple(V.SeatView(p, seat.kind, seat.level, self.here == (p,), p in self.here,
                                 st.count(p)) for p, seat in m.seats.items())
        owed = None
        o = m.owed_send()
        if o is not None:
            key = (m.index, o.sender, o.count)
            if self._owed_key != key:  # (the bot's choice: worked out once a send)
                self._owed_key = key
                self._owed = (o.sender, o.count, tuple(m.suggest_send(o.sender, o.count)))
            owed = self._owed
        line, verdict = self.line(now)
        return V.TableView(phase=s.phase, viewer=self.viewer, board=board, seats=seats,
                           count_word=m.game.count_word, line=line, verdict=verdict,
                           solo=solo, owed=owed, countdown=countdown, version=self._version)

    # -- after the match ----------------------------------------------------------------------
    def record_stats(self):
        """Every human take and fault of the match goes into the stats database (``karuta
        stats`` and the memory drill learn from matches).  Called once the window is closed:
        SQLite commits wait for the disk, and the match log has everything meanwhile."""
        if self.db is None or self.session_id is None:
            return
        from reader.memory.deck import MemoryDeck
        from reader.practice.record import record_read

        deck = MemoryDeck.from_json(self.db.memory_cards())
        now = self.clock.now()
        for closed in self.m.closed:
            record_read(self.db, self.session_id, self.m, closed, now, players=self.here,
                        deck=deck)
