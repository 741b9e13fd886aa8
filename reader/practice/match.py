"""``PracticeMatch``: a match driven by timed touches, judged by the existing rules machines.

The practice session (``reader.practice.session``, driven by the board window's live loop or
by the headless player's virtual clock) drives one object:

    m = PracticeMatch(deal, plan, seats, rng, settings, voice=voice)
    while (cur := m.current()) is not None:          # the card being read
        for player, card, frame in m.bot_touches():  # what the bots will do on this read
            ...                                      # (the loop delivers them when their frame comes)
        m.touch("A", 37, frame)                      # -> Judgement, as each touch happens
        res = m.close_read(frame)                    # when the read is over -> ReadClosed
        if (owed := m.owed_send()) is not None:      # a human owes a send: pick on the board
            m.send(owed.sender, m.suggest_send(owed.sender, owed.count))
    m.outcome(); m.log_records()

Time: every ``frame`` is a sample frame of the reading plan (``audio.plan.Plan``, 48 kHz), the
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

Places (``layout``): where every card lies, as ``reader.practice.board`` lays it out — laid
out once from the seed (``seeds.rng(seed, "place")``; ``arrange``: the player's own drags
before the first read), then followed read by read: a taken card leaves its place empty and no
other card moves; a sent card goes into a free place on the other side (drawn from the match's
own stream: the same log, the same places).  So a resumed match lays the board out exactly as
it stood: from the seed, or — when the player arranged their side — from the layout the log's
header keeps (``practice.layout``), each read line where a card was sent keeping where it went
(``timing.placed``).  A log without them (older, or bots alone) is laid out from its seed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from reader.base import seeds
from reader.base.errors import KarutaError

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
    #: what the front end said of the touch, written beside it in the log's ``timing``
    #: (a phone's page: ``calibration_ms``, null when its device is not calibrated; ``name``)
    note: dict | None = field(default=None, compare=False)


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


@dataclass
class _Touch:
    player: str
    card: int
    frame: int
    seq: int
    note: dict | None = None


def _places(obj: dict) -> dict[int, tuple[str, int, int, int]]:
    """A log's ``timing.placed`` ({"37": ["B", row, side, index]}) as card -> place; entries
    that are not places are left out (the card is then placed as a new match would)."""
    out = {}
    for k, v in obj.items():
        if (isinstance(k, str) and k.isdigit() and isinstance(v, list) and len(v) == 4
                and v[0] in ("A", "B") and all(isinstance(x, int) and not isinstance(x, bool)
                                               for x in v[1:])):
            out[int(k)] = (v[0], v[1], v[2], v[3])
    return out


class PracticeMatch:
    """One practice match.  See the module docstring for the loop and the timing rules.

    ``deal``: a ``reader.practice.deal.Deal``; ``plan``: the reading plan (its ``order`` is the
    order of reads; kyogi plans read the 100, goshiki the colour's 20); ``seats``: ``{"A": Seat,
    "B": Seat}``; ``rng``: ``random.Random`` for the bots (each read draws from its own
    ``random.Random`` seeded from this one, so a resumed match plays as the whole one would);
    ``voice``: answers ``layout`` for the mora onsets (bots hear morae; ``--hints`` dims by them).
    ``extra``: header keys for the log (``seed``, ``practice``).
    """

    def __init__(self, deal, plan, seats: dict[str, Seat], rng: random.Random,
                 settings: PracticeSettings | None = None, voice=None,
                 extra: dict | None = None):
        self.deal = deal
        self.plan = plan
        #: the game (``reader.practice.games``): everything that differs between kyogi and goshiki
        self.game = deal.game
        #: its name, as logs and the command line say it
        self.rules = deal.rules
        self.seats = dict(seats)
        self.settings = settings or PracticeSettings()
        self.voice = voice
        self.extra = dict(extra or {})
        self.players = ("A", "B")
        for p in self.players:
            if p not in self.seats:
                raise KarutaError(f"no seat for player {p}")
        if not deal.hands["B"] and self.seats["B"].kind != "none":
            raise KarutaError("this is a match alone (B was dealt no cards): player B cannot "
                              "sit at it (resume it without --vs or --bot-vs-bot)")
        self._base = rng.getrandbits(63)
        initial = deal.initial_state()
        self._match = self.game.rules_match(initial)
        self._kami = {s.poem: s for s in plan.segments
                      if s.kind == "kami" and isinstance(s.poem, int)}
        self.order = tuple(n for n in plan.order if n in self._kami)
        self.game.check_order(deal, self.order)
        self._rate = plan.sample_rate
        self._window = round(self.settings.simultaneous_ms * self._rate / 1000)
        self._touches: list[_Touch] = []
        self._seq = 0
        self._bots: list[tuple[str, int, int]] | None = None
        self._pending: tuple[Any, OwedSend, ReadClosed] | None = None
        self._timings: list[dict] = []
        self._closed: list[ReadClosed] = []
        #: read index -> cards that moved (were sent) on that read
        self._moved: dict[int, tuple[int, ...]] = {}
        self._cur: Current | None = None
        #: each bot's form this match (``bot.match_skill``), from a stream of its own
        from reader.practice import bot

        self.skill = {p: bot.match_skill(bot.level(s.level), self.read_rng(-1 - i))
                      for i, (p, s) in enumerate(sorted(self.seats.items())) if s.kind == "bot"}
        #: the places (``layout``): the board after each read (taken as the read closes; the
        #: layouts are worked out from them only when asked), the layouts worked out so far,
        #: and where a resumed log says sent cards went (read index -> card -> place)
        self._boards: list[dict[str, tuple[int, ...]]] = [self.board]
        self._layouts: list[dict] = []
        self._placed: dict[int, dict[int, tuple[str, int, int, int]]] = {}
        self._went: dict[int, dict[int, tuple[str, int, int, int]]] = {}
        self._logged_layout = False

    # --- the board -------------------------------------------------------------------------
    @property
    def state(self):
        return self._match.state

    @property
    def match(self):
        """The rules' undoable match (``KyogiMatch`` / ``GoshikiMatch``)."""
        return self._match

    @property
    def index(self) -> int:
        """Reads closed so far (the current read's 0-based number)."""
        return len(self._match)

    @property
    def board(self) -> dict[str, tuple[int, ...]]:
        """Per player, the cards on the board on their side (kyogi: their territory; goshiki:
        the cards still lying in their rows — a read card nobody took stays, dead), sorted."""
        return self.game.board(self.state, self.deal, self.players)

    def where(self, card: int) -> str | None:
        """The side a card lies on now, or ``None`` (karafuda, taken, or in transit)."""
        return self.game.where(self.state, self.deal, card)

    def _segment_current(self, i: int) -> Current:
        poem = self.order[i]
        seg = self._kami[poem]
        closes = self._kami[self.order[i + 1]].start if i + 1 < len(self.order) else None
        morae: tuple[int, ...] = ()
        if self.voice is not None and seg.speech is not None:
            morae = tuple(seg.start + m.start for m in self.voice.layout(seg.speech).morae)
        decisive = seg.decisive if seg.decisive is not None else seg.start
        return Current(index=i, poem=poem, kami=seg, kimariji=seg.kimariji or "",
                       kimariji_sound=seg.kimariji_sound or "", start=seg.start,
                       decisive=decisive, closes=closes, where=self.where(poem), morae=morae)

    def current(self) -> Current | None:
        """The read in progress; ``None`` when the match is over or a send is owed."""
        if self._pending is not None or self.outcome() is not None:
            return None
        if self.index >= len(self.order):
            return None
        if self._cur is None or self._cur.index != self.index:
            self._cur = self._segment_current(self.index)  # changes only when a read closes
        return self._cur

    def first_frame(self) -> int:
        """Where the reading starts: the plan's start, or (a resumed match, reads done) the 間
        before the current read's 上の句 (the 上の句 itself when no 間 comes before it)."""
        cur = self.current() if self.index > 0 else None
        if cur is None:
            return 0
        segs = self.plan.segments
        k = next(i for i, s in enumerate(segs) if s.kind == "kami" and s.poem == cur.poem)
        return segs[k - 1].start if k > 0 and segs[k - 1].kind == "ma" else segs[k].start

    # --- touches ---------------------------------------------------------------------------
    def _reaction(self, cur: Current, frame: int) -> float:
        return round((frame - cur.decisive) * 1000.0 / self._rate, 3) + 0.0

    def touch(self, player: str, card: int, frame: int, note: dict | None = None) -> Judgement:
        """A touch by ``player`` on ``card`` heard at plan ``frame``: judged at once, kept
        until the read closes.  ``note``: logged beside it (``Judgement.note``)."""
        if player not in self.players:
            raise KarutaError(f"unknown player {player!r} (A or B)")
        if self._pending is not None:
            return Judgement(player, card, frame, "moving", "cards are being sent: wait")
        cur = self.current()
        if cur is None:
            return Judgement(player, card, frame, "late", "the match is over")
        self._touches.append(_Touch(player, card, int(frame), self._seq, note))
        self._seq += 1
        judgements = self._judge(cur).judgements
        return judgements[self._order_of(self._seq - 1)]

    def _order_of(self, seq: int) -> int:
        ranked = sorted(self._touches, key=lambda t: (t.frame, t.seq))
        return next(i for i, t in enumerate(ranked) if t.seq == seq)

    def _judge(self, cur: Current):
        """Judge the current read's touches in frame order (``games.Judged``)."""
        def judgement(t, verdict, reason):
            return Judgement(t.player, t.card, t.frame, verdict, reason, self.where(t.card),
                             self._reaction(cur, t.frame), t.note)

        return self.game.judge(sorted(self._touches, key=lambda t: (t.frame, t.seq)), cur,
                               where=self.where, window=self._window, owner=self.deal.owner,
                               sitting=self.game.sitting_out(self.state), players=self.players,
                               judgement=judgement)

    def settled_at(self) -> int | None:
        """The earliest frame the current read may close (kyogi: the take plus the
        simultaneous window), or ``None`` if nobody has taken it yet (goshiki: always
        ``None``, since a wrong touch after the take still counts until the next 上の句)."""
        cur = self.current()
        if cur is None:
            return None
        return self.game.settled_at(self._judge(cur).take_frame, self._window)

    def _view(self, cur: Current):
        from poems.kimariji import kimariji_length

        from reader.practice.bot import ReadView

        k = next((i + 1 for i, f in enumerate(cur.morae) if f == cur.decisive), None)
        if k is None:  # no mora timeline: count it (the plan's kimariji at read time)
            k = kimariji_length(self.plan.universe, self.order[: cur.index])[cur.poem]
        moved = set()
        for i in range(max(0, cur.index - self.settings.recent_reads), cur.index):
            moved.update(self._moved.get(i, ()))
        morae = cur.morae
        if not morae:  # no voice layout: spread the kimariji evenly up to the decisive onset
            step = (cur.decisive - cur.start) // max(1, k - 1) if k > 1 else 0
            morae = tuple(cur.start + step * i for i in range(k))
        return ReadView(game=self.game, poem=cur.poem, where=cur.where, board=self.board,
                        start=cur.start, decisive=cur.decisive, kami_end=cur.kami.end,
                        morae=morae, kimariji_len=k, moved=frozenset(moved),
                        sitting_out=self.game.sitting_out(self.state),
                        sample_rate=self._rate)

    def read_rng(self, index: int | None = None) -> random.Random:
        """The random stream of read ``index`` (default: the current one)."""
        i = self.index if index is None else index
        return seeds.rng(self._base * 1009 + i)

    def bot_touches(self) -> list[tuple[str, int, int]]:
        """What every bot seat will touch on the current read: ``(player, card, frame)`` in
        frame order.  Drawn once per read (calling again returns the same list); the loop
        delivers each through ``touch`` when its frame comes."""
        from reader.practice import bot

        if self._bots is not None:
            return list(self._bots)
        cur = self.current()
        if cur is None:
            return []
        view = self._view(cur)
        rng = self.read_rng()
        out = []
        for p in self.players:
            seat = self.seats[p]
            if seat.kind == "bot":
                for card, frame in bot.plan_touches(p, bot.level(seat.level), view, rng,
                                                    self.skill.get(p)):
                    out.append((p, card, frame))
        self._bots = sorted(out, key=lambda t: (t[2], t[0]))
        return list(self._bots)

    def fault_opportunity(self):
        """For measuring bots: the 友札 a bot could fault on in the current read, or None."""
        from reader.practice import bot

        cur = self.current()
        return None if cur is None else bot.fault_opportunity(self._view(cur))

    def close_read(self, frame: int | None = None) -> ReadClosed:
        """End the current read (at ``frame``; touches after it are not counted) and apply it to
        the rules.  Bot and empty seats send at once; a human's send stays owed."""
        cur = self.current()
        if cur is None:
            raise KarutaError("no read in progress (the match is over or a send is owed)")
        if frame is not None:
            self._touches = [t for t in self._touches if t.frame < frame]
        judged = self._judge(cur)
        timing = self._timing(cur, judged.judgements)
        ev = self.game.read_event(cur.poem, judged, self.players)
        owing = self.game.owed_send(self.state, ev)
        owed = OwedSend(*owing) if owing is not None else None
        closed = ReadClosed(cur.index, cur.poem, ev, None, judged.judgements, owed, timing)
        self._touches, self._bots = [], None
        if owed is not None:
            if self.seats[owed.sender].kind == "human":
                self._pending = (ev, owed, closed)
                return closed
            from reader.practice import bot

            other = self._other(owed.sender)
            unread = self.order[cur.index + 1:]
            cards = bot.choose_send(self._after_take(owed.sender, cur.poem),
                                    self._after_take(other, cur.poem), owed.count, unread,
                                    self.read_rng(cur.index + 10_000))
            return self._push(ev, closed, cards)
        return self._push(ev, closed, None)

    def _other(self, player: str) -> str:
        return next(p for p in self.players if p != player)

    def _after_take(self, player: str, poem: int) -> tuple[int, ...]:
        return tuple(c for c in self.state.cards(player) if c != poem)

    def _push(self, ev, closed: ReadClosed, send) -> ReadClosed:
        from dataclasses import replace

        if send is not None:
            ev = replace(ev, send=tuple(send))
        self._match.push(ev)
        self._boards.append(self.board)
        result = self.state.results[-1]
        if self.game.moved(result):
            self._moved[closed.index] = self.game.moved(result)
        done = replace(closed, event=ev, result=result, owed=None)
        self._timings.append(closed.timing)
        self._closed.append(done)
        self._pending = None
        return done

    def _timing(self, cur: Current, judgements) -> dict:
        ms = lambda f: round(f * 1000.0 / self._rate, 1) + 0.0  # noqa: E731
        return {
            "kami_ms": ms(cur.start), "decisive_ms": ms(cur.decisive),
            "kimariji": cur.kimariji,
            "touches": [{"player": j.player, "card": j.card, "ms": ms(j.frame),
                         "reaction_ms": round(j.reaction_ms, 1) + 0.0, "verdict": j.verdict,
                         **(j.note or {})}
                        for j in judgements],
        }

    # --- sends -----------------------------------------------------------------------------
    def owed_send(self) -> OwedSend | None:
        """The send a human still has to choose, or ``None``."""
        return None if self._pending is None else self._pending[1]

    def suggest_send(self, player: str, count: int = 1) -> tuple[int, ...]:
        """The default cards for ``player`` to send (the bot's choice: split a 友札 pair,
        send an opening sound the other side lacks; late, keep a 1字決まり)."""
        from reader.practice import bot

        if not self.game.territories:
            return ()
        poem = self._pending[2].poem if self._pending is not None else None
        own = self._after_take(player, poem)
        other = self._after_take(self._other(player), poem)
        i = self.index
        return bot.choose_send(own, other, count, self.order[i + 1:], self.read_rng(i + 10_000))

    def send(self, player: str, cards) -> ReadClosed:
        """Complete the owed send with ``cards`` (from ``player``'s territory)."""
        if self._pending is None:
            raise KarutaError("no send is owed")
        ev, owed, closed = self._pending
        if player != owed.sender:
            raise KarutaError(f"{owed.sender} sends on this read, not {player}")
        cards = tuple(cards)
        if len(cards) != owed.count:
            raise KarutaError(f"{player} sends {owed.count} card(s), not {len(cards)}")
        mine = set(self._after_take(player, closed.poem))
        bad = [c for c in cards if c not in mine]
        if bad:
            raise KarutaError(f"poem {bad[0]} is not in {player}'s territory")
        return self._push(ev, closed, cards)

    # --- result and log --------------------------------------------------------------------
    def outcome(self):
        """``reader.match.rules.Outcome`` once the match is over, else ``None``."""
        return self.state.outcome()

    @property
    def closed(self) -> tuple[ReadClosed, ...]:
        return tuple(self._closed)

    def log_records(self) -> list[dict]:
        """The match log as JSON-ready dicts: the header (deal, ``practice`` settings) and one
        line per closed read, in ``reader.match.log`` format with the optional ``timing``."""
        from reader.match import log as matchlog

        if self._logged_layout:  # the places, when they are not the seed's: the header's
            self.layout()  # layout and where each sent card went (else derived from the seed)
        out = [matchlog.header_of(self._match, self.extra)]
        for i, (ev, timing) in enumerate(zip(self._match.events, self._timings)):
            went = self._went.get(i) if self._logged_layout else None
            if went:
                timing = {**timing, "placed": {str(c): list(w) for c, w in went.items()}}
            out.append({**ev.to_json(), **({"timing": timing} if timing else {})})
        return out

    # --- places ----------------------------------------------------------------------------
    def layout(self) -> dict:
        """Where every card lies now (see the module docstring): kyogi, each player's
        ``board.Territory`` (a taken card's place left empty); goshiki, each player's ten in
        the order laid out (``board.goshiki_board``: the first five the front row; the cards
        still on the board are ``board``)."""
        if not self._layouts:
            self._set_initial(self._lay_out())
        from reader.practice import board as B

        while len(self._layouts) <= self.index:
            i = len(self._layouts) - 1  # read i closed: follow its takes and sends
            before = self._layouts[i]
            if self.game.territories:
                after, went = B.follow(before, self._boards[i + 1], self.read_rng(i + 20_000),
                                       universe=self.plan.universe, read=self.order[:i + 1],
                                       placed=self._placed.get(i))
                if went:
                    self._went[i] = went
            else:
                after = before
            self._layouts.append(after)
        return dict(self._layouts[self.index])

    def _lay_out(self) -> dict:
        """The layout before the first read, from the seed: as players lay cards out (kyogi,
        ``board.place``), goshiki's ten shuffled into their two rows."""
        from reader.practice import board as B

        rng = seeds.rng(self.extra.get("seed", 0), "place")
        board = self._boards[0]
        if self.game.territories:
            return {p: B.place(board[p], rng, universe=self.plan.universe) for p in self.players}
        out = {}
        for p in self.players:
            hand = list(self.deal.hands[p])
            rng.shuffle(hand)
            out[p] = tuple(hand)
        return out

    def _set_initial(self, layout: dict, logged: bool = False) -> None:
        """The layout before the first read; ``logged``: it is not the seed's (arranged, or
        a log's), so the log keeps it (a log without one is laid out from its seed)."""
        self._layouts = [dict(layout)]
        self._went = {}
        self._logged_layout = logged
        if logged and "practice" in self.extra:  # (with a practice log's settings)
            practice = dict(self.extra["practice"])
            practice["layout"] = {p: (t.to_json() if self.game.territories else list(t))
                                  for p, t in layout.items()}
            self.extra["practice"] = practice

    def arrange(self, player: str, territory) -> None:
        """``player`` rearranged their own side before the first read (a drag): it lies so
        from now on (and in the log).  Kyogi only; the cards must be the same."""
        from reader.practice import board as B

        if not self.game.territories:
            raise KarutaError("goshiki cards are not rearranged")
        if self.index > 0 or self._pending is not None:
            raise KarutaError("the cards are arranged before the first read")
        lay = self.layout()
        if not isinstance(territory, B.Territory) or sorted(territory.cards) != sorted(
                lay[player].cards):
            raise KarutaError(f"{player}'s side holds other cards")
        lay[player] = territory
        self._set_initial(lay, logged=True)

    def lay_out_from(self, obj, where: str = "the log") -> None:
        """Start from the layout a log's header keeps (``practice.layout``; ``KarutaError``
        naming ``where`` if it does not fit the deal).  Call before ``replay``."""
        from reader.practice import board as B

        if not isinstance(obj, dict) or set(obj) != set(self.players):
            raise KarutaError(f"{where}: the \"layout\" must name players A and B")
        out = {}
        for p in self.players:
            want = sorted(self._boards[0][p] if self.game.territories else self.deal.hands[p])
            try:
                if self.game.territories:
                    t = B.Territory.from_json(obj[p])
                    got = sorted(t.cards)
                else:
                    if not isinstance(obj[p], list) or not all(
                            isinstance(c, int) and not isinstance(c, bool) for c in obj[p]):
                        raise ValueError("a list of poems")
                    t = tuple(obj[p])
                    got = sorted(t)
            except ValueError as e:
                raise KarutaError(f"{where}: bad \"layout\" of {p} ({e})") from None
            if got != want:
                raise KarutaError(f"{where}: the \"layout\" of {p} holds other cards than "
                                  f"the deal")
            out[p] = t
        self._set_initial(out, logged=True)

    def log_text(self) -> str:
        import json

        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.log_records())

    def replay(self, events, timings=None) -> None:
        """Apply already-logged reads (``--resume``): each must be the next read of the plan.
        ``timings``: their logged ``timing`` objects, kept for the rewritten log."""
        timings = list(timings) if timings is not None else []
        for k, ev in enumerate(events):
            cur = self.current()
            if cur is None:
                raise KarutaError("the log has more reads than the match")
            if ev.poem != cur.poem:
                raise KarutaError(f"read {cur.index + 1} of the log is poem {ev.poem}, but this "
                                  f"match reads poem {cur.poem} there: not this match's log")
            self._match.push(ev)
            self._boards.append(self.board)
            result = self.state.results[-1]
            if self.game.moved(result):
                self._moved[cur.index] = self.game.moved(result)
            timing = dict(timings[k]) if k < len(timings) else {}
            placed = timing.pop("placed", None)
            if isinstance(placed, dict):
                self._placed[cur.index] = _places(placed)
            self._timings.append(timing)
            self._closed.append(ReadClosed(cur.index, cur.poem, ev, result, ()))
            self._touches, self._bots = [], None  # (the next read's bots are drawn afresh)
