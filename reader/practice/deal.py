"""The deal of a practice match: who gets which cards, from a ``random.Random``.

- kyogi: ``cards`` each (default 25, ``--cards N`` for a short game, 1-50), drawn from the 100;
  the other ``100 - 2N`` are karafuda (read, never on the board).
- kyogi alone (``solo``, ``--vs none``): A is dealt the cards A would get against an opponent
  (the same seed, the same hand); B's side is empty and B's would-be cards are karafuda too.
- goshiki: the 20 cards of one colour (given, or drawn), 10 each.
- goshiki alone (``solo``): A gets the 10 A would get against an opponent; the colour's other
  10 are read but lie nowhere (karafuda).

- kyogi with 友札 together (``tomo``, ``--tomofuda``: a short game on a phone that stays as hard
  as a full one to tell apart): the cards are drawn a group at a time -- a card, and with it
  its 友札 among the 100 (``reader.memory.deck.tomofuda``: the poems sharing its opening up to
  the last sound of its kimariji) not drawn yet, as many as still fit -- then shuffled
  and dealt half each, so each pair lies on the board (on one side or across).

The reading order is not part of the deal: it comes from the reading plan (``reader.reading.engine``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from reader.practice.games import MAX_KYOGI_CARDS, Game, game

__all__ = ["Deal", "deal", "from_hands", "tomo_draw", "MAX_KYOGI_CARDS"]


@dataclass(frozen=True)
class Deal:
    rules: str
    #: player -> the cards dealt to them, sorted
    hands: dict[str, tuple[int, ...]]
    #: cards per side
    cards: int
    color: str | None = None

    @property
    def game(self) -> Game:
        """The game (``reader.practice.games``) whose name is ``rules``."""
        return game(self.rules)

    @property
    def karafuda(self) -> tuple[int, ...]:
        """Cards that can be read but are on nobody's side (kyogi; goshiki alone: the colour's
        cards not dealt to A); none in a two-player goshiki match."""
        dealt = {c for h in self.hands.values() for c in h}
        readable = self.game.readable(self)
        return tuple(n for n in readable if n not in dealt)

    @property
    def solo(self) -> bool:
        """A match alone: B was dealt nothing."""
        return not self.hands["B"]

    def owner(self, card: int) -> str | None:
        for p, h in self.hands.items():
            if card in h:
                return p
        return None

    def initial_state(self):
        """The rules state this deal starts (``KyogiState`` / ``GoshikiState``)."""
        return self.game.initial_state(self)


def deal(rules: str, rng: random.Random, cards: int | None = None,
         color: str | None = None, solo: bool = False, tomo: bool = False) -> Deal:
    """A random deal for ``rules`` (``kyogi`` / ``goshiki``); ``solo``: alone (B dealt
    nothing); ``tomo``: kyogi's cards drawn with their 友札 (the module doc)."""
    if tomo:
        from reader.base.errors import KarutaError

        if "cards" not in game(rules).deal_options:
            raise KarutaError(f"--tomofuda deals kyogi's cards: {rules} deals its own")
        from reader.match.rules import kyogi

        n = kyogi.HAND if cards is None else cards
        drawn = tomo_draw(rng, n if solo else 2 * n)
        return from_hands(rules, drawn[:n], () if solo else drawn[n:])
    a, b, color = game(rules).deal_hands(rng, cards, color, solo)
    return from_hands(rules, a, b, color=color)


def tomo_draw(rng: random.Random, count: int) -> list[int]:
    """``count`` of the 100 poems, each drawn with its 友札 (as many of them as fit), in a
    random order."""
    from reader.memory.deck import tomofuda

    picked: list[int] = []
    for c in rng.sample(range(1, 101), 100):
        if len(picked) >= count:
            break
        if c in picked:
            continue
        group = [c, *(t for t in tomofuda(c) if t not in picked)]
        picked += group[:count - len(picked)]
    rng.shuffle(picked)
    return picked


def from_hands(rules: str, a, b, color: str | None = None) -> Deal:
    """A deal from given hands (checked by the rules: ``BadDeal`` if they do not fit)."""
    a, b = tuple(sorted(a)), tuple(sorted(b))
    game(rules).check_hands(a, b)
    d = Deal(rules, {"A": a, "B": b}, len(a), color)
    st = d.initial_state()  # the rules check the cards
    return Deal(rules, {"A": a, "B": b}, len(a), d.game.color_of(st, color))
