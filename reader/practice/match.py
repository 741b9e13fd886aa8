"""``PracticeMatch``: a match driven by timed touches, judged by the existing rules machines.

The board window (a live loop) and the headless player (a virtual clock) both drive one object:

    m = PracticeMatch(deal, plan, seats, rng, settings, voice=voice)
    while (cur := m.current()) is not None:          # the card being read
        for player, card, frame in m.bot_touches():  # what the bots will do on this read
            ...                                      # (the loop delivers them when their frame comes)
        m.touch("A", 37, frame)                      # -> Judgement, as each touch happens
        res = m.close_read(frame)                    # when the read is over -> ReadClosed
        if (owed := m.owed_send()) is not None:      # a human owes a send: pick on the board
            m.send(owed.sender, m.suggest_send(owed.sender, owed.count))
    m.outcome(); m.log_records()

Time: every ``frame`` is a sample frame of the reading plan (``reader.plan.Plan``, 48 kHz), the
frame that was reaching the listener when the touch happened (the window maps DAC times to plan
frames as the speed drill does, calibration applied).  Nothing here reads a clock or sleeps;
randomness comes from the ``random.Random`` passed in.

Rules of timing (rules.md §3-4 and issue 10):

- A read is live from the start of its 上の句 until the next 上の句 starts (or, for the last
  card, until ``close_read``).  A touch before the 上の句 starts is ``early`` (ignored: no
  card is live yet); a touch once the next 上の句 has started is ``late`` (refused).
- Kyogi: the first touch on the read card takes it; another player touching it within
  ``settings.simultaneous_ms`` (default 10 ms) makes a simultaneous touch, and the card goes to
  the owner of the territory it lies in (``took: "both"``).  A touch in a territory that does
  not hold the read card is a fault (お手つき); a touch on another card of the right territory
  is not.  Once the card is taken (plus the simultaneous window), further touches are ``dead``.
- Goshiki: anyone may take any card; simultaneous touches go to the player in whose rows the
  card lies; a wrong card is a fault (one per read); a wrong card after the right one loses it
  (``lost``), and the other player may still take it.  A player who sits out may not touch.
- Sends (kyogi): when a read leaves a send owed, the sent cards are in transit until
  ``send`` is called: ``current()`` returns ``None`` and every touch is refused (``moving``).
  A bot (or an empty seat) sends at once, by ``reader.practice.bot.choose_send``; a human
  picks on the board (``suggest_send`` gives the highlighted default).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Seat", "PracticeSettings", "Current", "Judgement", "ReadClosed", "OwedSend",
           "PracticeMatch", "VERDICTS"]

#: what a touch did.  take: the read card (provisional until the read closes); fault: a wrong
#: territory (kyogi) or a wrong card (goshiki); miss: another card of the right territory
#: (kyogi: no fault); dead: after the card was taken; early: before the 上の句 started;
#: late: after the next 上の句 started; moving: a send is in progress; out: this player sits
#: out the read (goshiki) or the card is not on the board.
VERDICTS = ("take", "fault", "miss", "dead", "early", "late", "moving", "out")


@dataclass(frozen=True)
class Seat:
    """Who sits at a side.  ``kind``: ``human`` (touches come from the window), ``bot``
    (``level`` 1-5; touches come from ``bot_touches``), ``none`` (an empty seat: never touches,
    sends at once by the bot's strategy)."""

    kind: str
    level: int | None = None


@dataclass(frozen=True)
class PracticeSettings:
    #: touches on the read card within this many ms of the first count as simultaneous
    simultaneous_ms: float = 10.0
    #: kyogi: a card that moved (sent) within this many reads counts as "just sent" for bots
    recent_reads: int = 3


@dataclass(frozen=True)
class Current:
    """The read in progress.

    ``index``: 0-based read number; ``poem``; ``kami``: its ``kami`` plan segment;
    ``kimariji`` / ``kimariji_sound``: at read time; ``start``: the 上の句's first frame;
    ``decisive``: the frame where the kimariji's last mora starts; ``closes``: the frame where
    touches stop counting (the next 上の句's start, or ``None`` for the last card);
    ``where``: the territory holding the card (kyogi ``"A"``/``"B"``, goshiki: whose rows), or
    ``None`` for a karafuda; ``morae``: plan frames where each mora of the 上の句 starts.
    """

    index: int
    poem: int
    kami: Any
    kimariji: str
    kimariji_sound: str
    start: int
    decisive: int
    closes: int | None
    where: str | None
    morae: tuple[int, ...] = ()

    @property
    def karafuda(self) -> bool:
        return self.where is None


@dataclass(frozen=True)
class Judgement:
    """What one touch did, at once (``verdict`` in ``VERDICTS``, ``reason`` a short sentence).

    ``territory``: the side the touched card lies on (kyogi), ``None`` when off the board.
    ``reaction_ms``: from the decisive onset (negative: before it), as the grab timer measures.
    A ``take`` is provisional: a simultaneous touch may still give the card to its owner.
    """

    player: str
    card: int
    frame: int
    verdict: str
    reason: str
    territory: str | None = None
    reaction_ms: float | None = None


@dataclass(frozen=True)
class OwedSend:
    """A send the rules require after a read: ``sender`` sends ``count`` card(s)."""

    sender: str
    count: int


@dataclass(frozen=True)
class ReadClosed:
    """What a closed read did.

    ``event``: the rules event (``kyogi.Read`` / ``goshiki.Read``; its ``send`` is filled in
    once the send is done); ``result``: the rules' per-read result (``None`` while a human's
    send is owed); ``touches``: every judgement of the read, in frame order; ``owed``: a send
    still to be chosen by a human, or ``None``.
    """

    index: int
    poem: int
    event: Any
    result: Any
    touches: tuple[Judgement, ...]
    owed: OwedSend | None = None
    timing: dict = field(default_factory=dict)


class PracticeMatch:
    """One practice match.  See the module docstring for the loop and the timing rules.

    ``deal``: a ``reader.practice.deal.Deal``; ``plan``: the reading plan (its ``order`` is the
    order of reads; kyogi plans read the 100, goshiki the colour's 20); ``seats``: ``{"A": Seat,
    "B": Seat}``; ``rng``: ``random.Random`` for the bots (each read draws from its own
    ``random.Random`` seeded from this one, so a resumed match plays as the whole one would);
    ``voice``: answers ``layout`` for the mora onsets (bots hear morae; ``--hints`` dims by them).
    """

    def __init__(self, deal, plan, seats: dict[str, Seat], rng: random.Random,
                 settings: PracticeSettings | None = None, voice=None):
        raise NotImplementedError

    # --- the board -------------------------------------------------------------------------
    @property
    def board(self) -> dict[str, tuple[int, ...]]:
        """Per player, the cards on the board on their side (kyogi: their territory; goshiki:
        the unread, untaken cards in their rows), sorted."""
        raise NotImplementedError

    @property
    def state(self):
        """The rules state (``KyogiState`` / ``GoshikiState``) after the closed reads."""
        raise NotImplementedError

    def current(self) -> Current | None:
        """The read in progress; ``None`` when the match is over or a send is owed."""
        raise NotImplementedError

    # --- touches ---------------------------------------------------------------------------
    def touch(self, player: str, card: int, frame: int) -> Judgement:
        """A touch by ``player`` on ``card`` heard at plan ``frame``: judged at once, kept
        until the read closes."""
        raise NotImplementedError

    def bot_touches(self) -> list[tuple[str, int, int]]:
        """What every bot seat will touch on the current read: ``(player, card, frame)`` in
        frame order.  Drawn once per read (calling again returns the same list); the loop
        delivers each through ``touch`` when its frame comes."""
        raise NotImplementedError

    def close_read(self, frame: int | None = None) -> ReadClosed:
        """End the current read (at ``frame``; default: when it closes by itself) and apply it
        to the rules.  Bot and empty seats send at once; a human's send stays owed."""
        raise NotImplementedError

    def settled_at(self) -> int | None:
        """The earliest frame the current read may close (kyogi: the take plus the
        simultaneous window), or ``None`` if nobody has taken it yet."""
        raise NotImplementedError

    # --- sends -----------------------------------------------------------------------------
    def owed_send(self) -> OwedSend | None:
        """The send a human still has to choose, or ``None``."""
        raise NotImplementedError

    def suggest_send(self, player: str, count: int = 1) -> tuple[int, ...]:
        """The default cards for ``player`` to send (the bot's choice: split a 友札 pair,
        send an opening sound the other side lacks; late, keep a 1字決まり)."""
        raise NotImplementedError

    def send(self, player: str, cards) -> ReadClosed:
        """Complete the owed send with ``cards`` (from ``player``'s territory)."""
        raise NotImplementedError

    # --- result and log --------------------------------------------------------------------
    def outcome(self):
        """``reader.rules.Outcome`` once the match is over, else ``None``."""
        raise NotImplementedError

    def log_records(self) -> list[dict]:
        """The match log as JSON-ready dicts: the header (deal, ``practice`` settings) and one
        line per closed read, in ``reader.matchlog`` format with the optional ``timing``."""
        raise NotImplementedError
