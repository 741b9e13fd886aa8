"""The deal of a practice match: who gets which cards, from a ``random.Random``.

- kyogi: ``cards`` each (default 25, ``--cards N`` for a short game, 1-50), drawn from the 100;
  the other ``100 - 2N`` are karafuda (read, never on the board).
- kyogi alone (``solo``, ``--vs none``): A is dealt the cards A would get against an opponent
  (the same seed, the same hand); B's side is empty and B's would-be cards are karafuda too.
- goshiki: the 20 cards of one colour (given, or drawn), 10 each.
- goshiki alone (``solo``): A gets the 10 A would get against an opponent; the colour's other
  10 are read but lie nowhere (karafuda).

The reading order is not part of the deal: it comes from the reading plan (``reader.reading.engine``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from poems import COLORS
from reader.base.errors import KarutaError
from reader.match.rules import goshiki, kyogi

__all__ = ["Deal", "deal", "from_hands", "MAX_KYOGI_CARDS"]

#: kyogi: the most cards a side can hold (50 + 50 = all 100, no karafuda)
MAX_KYOGI_CARDS = 50


@dataclass(frozen=True)
class Deal:
    rules: str
    #: player -> the cards dealt to them, sorted
    hands: dict[str, tuple[int, ...]]
    #: cards per side
    cards: int
    color: str | None = None

    @property
    def karafuda(self) -> tuple[int, ...]:
        """Cards that can be read but are on nobody's side (kyogi; goshiki alone: the colour's
        cards not dealt to A); none in a two-player goshiki match."""
        dealt = {c for h in self.hands.values() for c in h}
        readable = range(1, 101) if self.rules == "kyogi" else COLORS[self.color]
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
        if self.rules == "kyogi":
            return kyogi.new_state(self.hands["A"], self.hands["B"], hand=self.cards)
        return goshiki.new_state(self.color, [self.hands["A"], self.hands["B"]],
                                 goshiki.Settings())


def deal(rules: str, rng: random.Random, cards: int | None = None,
         color: str | None = None, solo: bool = False) -> Deal:
    """A random deal for ``rules`` (``kyogi`` / ``goshiki``); ``solo``: alone (B dealt nothing)."""
    if rules == "kyogi":
        n = kyogi.HAND if cards is None else cards
        _check_cards(n)
        drawn = rng.sample(range(1, 101), 2 * n)
        return from_hands("kyogi", drawn[:n], () if solo else drawn[n:])
    if rules == "goshiki":
        if cards not in (None, 10):
            raise KarutaError("goshiki deals 10 cards each: --cards does not apply")
        if color is None:
            color = rng.choice(sorted(COLORS))
        if color not in COLORS:
            raise KarutaError(f"unknown colour {color!r} (one of {', '.join(COLORS)})")
        pool = list(COLORS[color])
        rng.shuffle(pool)
        return from_hands("goshiki", pool[:10], () if solo else pool[10:], color=color)
    raise KarutaError(f"unknown rules {rules!r}: practice plays kyogi or goshiki")


def from_hands(rules: str, a, b, color: str | None = None) -> Deal:
    """A deal from given hands (checked by the rules: ``BadDeal`` if they do not fit)."""
    a, b = tuple(sorted(a)), tuple(sorted(b))
    if rules == "kyogi":
        if len(a) != len(b) and b:
            raise KarutaError(f"A has {len(a)} cards and B {len(b)}: kyogi deals the same number")
        _check_cards(len(a))
    d = Deal(rules, {"A": a, "B": b}, len(a), color)
    st = d.initial_state()  # the rules check the cards
    if rules == "goshiki":
        d = Deal(rules, {"A": a, "B": b}, len(a), st.color)
    return d


def _check_cards(n) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_KYOGI_CARDS:
        raise KarutaError(f"--cards {n} is out of range: kyogi deals 1-{MAX_KYOGI_CARDS} "
                          "cards a side")
