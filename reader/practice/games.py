"""The two games a practice match can be, as objects: ``KYOGI`` and ``GOSHIKI`` (``game(name)``).

One object per game holds everything that differs between them — the deal, the reading
plan's preset, how touches are judged, what a read's event is, whether a take settles the
read, where cards lie, what the board and the end screen count — the way python-chess keeps
each variant in a ``Board`` subclass instead of testing a variant's name everywhere.  The rest
of practice (``match``, ``session``, ``bot``, ``window``, ``report``) asks the game; the name
(``game.name``, as in a log's ``"rules"``) is only read and written at the edges.

Nothing here reads a clock or the global random generator.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from reader.base.errors import KarutaError

__all__ = ["MAX_KYOGI_CARDS", "Game", "Kyogi", "Goshiki", "KYOGI", "GOSHIKI", "GAMES", "game", "Judged"]

#: kyogi: the most cards a side can hold (50 + 50 = all 100, no karafuda)
MAX_KYOGI_CARDS = 50


@dataclass(frozen=True)
class Judged:
    """The current read's touches judged in frame order: ``judgements``; ``took``: who has the
    card so far; ``extra``: what the game's event needs besides (kyogi: the sides each player
    touched; goshiki: (faults, lost)); ``take_frame``: the frame of the standing take."""

    judgements: tuple
    took: str | None
    extra: Any
    take_frame: int | None


class Game:
    """What a practice game is; ``Kyogi`` and ``Goshiki`` fill it in."""

    #: the name in logs and on the command line
    name: str = ""
    #: memorisation, minutes (rules.md: kyogi 15 min; goshiki about 30 s, seed 004)
    memorize_min: float = 0.0
    #: kyogi: cards lie in territories that the players arrange and that sends change
    territories: bool = False
    #: goshiki: a player may sit out a read (1回休み)
    sits_out: bool = False
    #: what a player's count on the panels and the end screen is ("left" / "taken")
    count_word: str = ""
    #: goshiki: the cards' backs show the 上の句 (the window turns them over on u)
    card_backs: bool = False

    def __repr__(self) -> str:
        return f"<practice game {self.name}>"

    # -- the deal and the plan ---------------------------------------------------------------
    def readable(self, deal) -> range | tuple[int, ...]:
        """The cards this game's plan may read."""
        raise NotImplementedError

    def deal_hands(self, rng: random.Random, cards: int | None, color: str | None,
                   solo: bool) -> tuple[tuple, tuple, str | None]:
        """(A's cards, B's cards, colour) drawn from ``rng``."""
        raise NotImplementedError

    def check_hands(self, a: tuple, b: tuple) -> None:
        """``KarutaError`` if hands of these sizes cannot be this game's."""

    def initial_state(self, deal):
        raise NotImplementedError

    def color_of(self, state, given: str | None) -> str | None:
        """The deal's colour once the rules have its state (goshiki: the cards' colour)."""
        return given

    def reading_settings(self, deal, over: dict):
        """The reading settings of a match of this deal (``over``: overrides, e.g. ``ma_ms``)."""
        raise NotImplementedError

    def rules_match(self, initial):
        """The rules' undoable match (``reader.match.rules``) from ``initial``."""
        raise NotImplementedError

    def check_order(self, deal, order) -> None:
        """``KarutaError`` if a plan reading ``order`` cannot play this deal."""

    # -- the board ---------------------------------------------------------------------------
    def board(self, state, deal, players) -> dict[str, tuple[int, ...]]:
        raise NotImplementedError

    def where(self, state, deal, card: int) -> str | None:
        raise NotImplementedError

    def sitting_out(self, state) -> frozenset[str]:
        return frozenset()

    def left_alone(self, state, deal) -> int:
        """Alone: A's cards still to be read."""
        raise NotImplementedError

    # -- a read ------------------------------------------------------------------------------
    def judge(self, touches, cur, *, where, window: int, owner, sitting, players,
              judgement) -> Judged:
        """Judge ``touches`` (frame order) of read ``cur``: ``where(card)`` the side a card
        lies on, ``window`` the simultaneous window (frames), ``owner(card)`` whose rows,
        ``judgement(touch, verdict, reason)`` makes a ``Judgement``."""
        raise NotImplementedError

    def settled_at(self, take_frame: int | None, window: int) -> int | None:
        """The frame from which a read may close because its take is settled, or ``None``
        (no take yet, or a game where a take does not end the read)."""
        return None

    def read_event(self, poem: int, judged: Judged, players):
        """The rules event of a read (before any send)."""
        raise NotImplementedError

    def owed_send(self, state, event) -> tuple[str, int] | None:
        """(sender, count) of the send the rules want after ``event`` from ``state``, or
        ``None``."""
        return None

    def sent(self, event) -> tuple[int, ...]:
        """The cards an event sent (none in a game without sends)."""
        return ()

    def moved(self, result) -> tuple[int, ...]:
        """The cards a read's result moved across (sends)."""
        return ()

    def reads_due(self, state, order_len: int, index: int) -> int:
        """How many reads the match has, as "read 4/N" counts them (kyogi: the plan's)."""
        return order_len

    def viewport(self, size, solo: bool):
        raise NotImplementedError


class Kyogi(Game):
    name = "kyogi"
    memorize_min = 15.0
    territories = True
    count_word = "left"

    def readable(self, deal):
        return range(1, 101)

    def deal_hands(self, rng, cards, color, solo):
        from reader.match.rules import kyogi

        n = kyogi.HAND if cards is None else cards
        drawn = rng.sample(range(1, 101), 2 * n) if _cards_ok(n) else []
        return tuple(drawn[:n]), () if solo else tuple(drawn[n:]), None

    def check_hands(self, a, b):
        if len(a) != len(b) and b:
            raise KarutaError(f"A has {len(a)} cards and B {len(b)}: kyogi deals the same number")
        _cards_ok(len(a))

    def initial_state(self, deal):
        from reader.match.rules import kyogi

        return kyogi.new_state(deal.hands["A"], deal.hands["B"], hand=deal.cards)

    def reading_settings(self, deal, over):
        from reader.reading.settings import preset

        return preset("kyogi", **over)

    def rules_match(self, initial):
        from reader.match.rules import kyogi

        return kyogi.KyogiMatch(initial)

    def check_order(self, deal, order):
        unread = sorted(set(deal.hands["A"] + deal.hands["B"]) - set(order))
        if unread:
            raise KarutaError(f"the reading plan never reads poem {unread[0]}, which is "
                              "dealt: a kyogi match must be able to read every card")

    def board(self, state, deal, players):
        return {p: state.cards(p) for p in players}

    def where(self, state, deal, card):
        return state.where(card)

    def left_alone(self, state, deal):
        return state.count("A")

    def judge(self, touches, cur, *, where, window, owner, sitting, players, judgement):
        out = []
        take_frame: int | None = None
        takers: list[str] = []
        touched = {p: set() for p in players}
        for t in touches:
            p, c, f = t.player, t.card, t.frame
            terr = where(c)
            early_late = _early_late_out(cur, f, terr, c)
            if early_late:
                out.append(judgement(t, *early_late))
                continue
            if take_frame is not None and f > take_frame + window:
                out.append(judgement(t, "dead", "the card was already taken"))
                continue
            touched[p].add("own" if terr == p else "opp")
            if c == cur.poem:
                if take_frame is None:
                    take_frame = f
                if p not in takers:
                    takers.append(p)
                out.append(judgement(t, "take", "took it" if len(takers) == 1
                                     else "simultaneous touch"))
            elif cur.where is None or terr != cur.where:
                out.append(judgement(t, "fault", "karafuda: お手つき" if cur.where is None
                                     else "wrong territory: お手つき"))
            else:
                out.append(judgement(t, "miss", "another card of the right territory (no fault)"))
        took = None if not takers else ("both" if len(takers) == 2 else takers[0])
        return Judged(tuple(out), took, touched, take_frame)

    def settled_at(self, take_frame, window):
        return None if take_frame is None else take_frame + window

    def read_event(self, poem, judged, players):
        from reader.match.rules import kyogi

        return kyogi.Read(poem, judged.took, {p: sorted(judged.extra[p], key=kyogi.SIDES.index)
                                              for p in players})

    def owed_send(self, state, event):
        from reader.match.rules import kyogi

        trial = kyogi.apply(state, event).results[-1]
        return (trial.sender, len(trial.sent)) if trial.sent else None

    def sent(self, event):
        return tuple(event.send or ())

    def moved(self, result):
        return tuple(result.sent or ())

    def viewport(self, size, solo):
        from reader.practice import board as B

        return B.kyogi_viewport(size, solo=solo)


class Goshiki(Game):
    name = "goshiki"
    memorize_min = 0.5
    sits_out = True
    count_word = "taken"
    card_backs = True

    def readable(self, deal):
        from poems import COLORS

        return COLORS[deal.color]

    def deal_hands(self, rng, cards, color, solo):
        from reader.match.rules import goshiki

        if cards not in (None, 10):
            raise KarutaError("goshiki deals 10 cards each: --cards does not apply")
        st = goshiki.deal(rng, color)  # (alone: A's 10 are the ones A would get)
        a, b = st.deal
        return a, () if solo else b, st.color

    def color_of(self, state, given):
        return state.color

    def initial_state(self, deal):
        from reader.match.rules import goshiki

        return goshiki.new_state(deal.color, [deal.hands["A"], deal.hands["B"]],
                                 goshiki.Settings())

    def reading_settings(self, deal, over):
        from poems import COLORS
        from reader.reading.settings import preset

        return preset("goshiki", poems=COLORS[deal.color], cards=20, **over)

    def rules_match(self, initial):
        from reader.match.rules import goshiki

        return goshiki.GoshikiMatch(initial)

    def check_order(self, deal, order):
        from poems import COLORS

        stray = [n for n in order if n not in COLORS[deal.color]]
        if stray:
            raise KarutaError(f"the reading plan reads poem {stray[0]}, not a card of this "
                              "goshiki deal")

    def board(self, state, deal, players):
        return {p: tuple(c for c in deal.hands[p] if c in state.board) for p in players}

    def where(self, state, deal, card):
        return deal.owner(card) if card in state.board else None

    def sitting_out(self, state):
        return frozenset(state.sitting_out)

    def left_alone(self, state, deal):
        return sum(1 for c in deal.hands["A"] if c not in state.read_poems)

    def judge(self, touches, cur, *, where, window, owner, sitting, players, judgement):
        out = []
        take_frame: int | None = None
        faults: list[str] = []
        lost = None
        holder: str | None = None
        for t in touches:
            p, c, f = t.player, t.card, t.frame
            early_late = _early_late_out(cur, f, where(c), c)
            if early_late:
                out.append(judgement(t, *early_late))
                continue
            if p in sitting:
                out.append(judgement(t, "out", f"{p} sits out this read (1回休み)"))
                continue
            if c == cur.poem:
                if p in faults:
                    out.append(judgement(t, "dead", "faulted on this read: cannot take it"))
                elif holder is None:
                    holder, take_frame = p, f
                    out.append(judgement(t, "take", "took it"))
                elif p != holder and f <= take_frame + window:
                    if owner(c) == p:
                        holder = p
                    out.append(judgement(t, "take" if holder == p else "dead",
                                         "simultaneous touch: to the player in whose rows it lies"))
                else:
                    out.append(judgement(t, "dead", "the card was already taken"))
            else:
                if p not in faults:
                    faults.append(p)
                if holder == p:
                    lost, holder, take_frame = p, None, None
                    out.append(judgement(t, "fault", "a wrong card after the right one: お手つき, "
                                         "the card is lost"))
                else:
                    out.append(judgement(t, "fault", "karafuda: お手つき" if cur.where is None
                                         else "a wrong card: お手つき"))
        return Judged(tuple(out), holder, (tuple(faults), lost), take_frame)

    def reads_due(self, state, order_len, index):
        # 17 of the colour's 20 (a deciding tie in finals reads on, one card at a time)
        return min(order_len, max(state.reads_due, index + 1))

    def read_event(self, poem, judged, players):
        from reader.match.rules import goshiki

        faults, lost = judged.extra
        return goshiki.Read(poem, judged.took, faults, lost)

    def viewport(self, size, solo):
        from reader.practice import board as B

        return B.goshiki_viewport(size, solo=solo)


def _early_late_out(cur, frame: int, where: str | None, card: int) -> tuple[str, str] | None:
    """The verdicts every game gives alike: before the 上の句, after the next one starts, a
    card not on the board."""
    if frame < cur.start:
        return "early", "the 上の句 has not started"
    if cur.closes is not None and frame >= cur.closes:
        return "late", "the next 上の句 has started"
    if where is None:
        return "out", f"poem {card} is not on the board"
    return None


def _cards_ok(n) -> bool:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_KYOGI_CARDS:
        raise KarutaError(f"--cards {n} is out of range: kyogi deals 1-{MAX_KYOGI_CARDS} "
                          "cards a side")
    return True


KYOGI = Kyogi()
GOSHIKI = Goshiki()
GAMES: dict[str, Game] = {g.name: g for g in (KYOGI, GOSHIKI)}


def game(name: str) -> Game:
    """The game called ``name`` (``KarutaError`` for another name)."""
    try:
        return GAMES[name]
    except (KeyError, TypeError):
        raise KarutaError(f"unknown rules {name!r}: practice plays kyogi or goshiki") from None
