"""Kyogi (競技かるた) scoring as a state machine (docs/rules.md §3).

Players are ``"A"`` and ``"B"``.  Each has 25 of the 100 cards in their own territory (自陣);
the other 50 are karafuda (空札).  All 100 may be read, each once.  First to empty their own
territory wins.

One event per read: ``Read(poem, took, touched, send)``.

``took``
    ``"A"`` / ``"B"``: that player took the card (touched it first, or pushed it out);
    ``"both"``: simultaneous touch — the card goes to the owner of the territory it lies in;
    ``None``: nobody took it.  On a karafuda ``took`` must be ``None``.  A card on the board
    that nobody takes is removed by the owner of its territory (as if they took it; no send).
``touched``
    ``{"A": [...], "B": [...]}``: the territories each player touched on this read, the taking
    touch included, as ``"own"`` / ``"opp"`` from that player's seat.  Any number of cards in one
    territory is one touch.  A taker must have touched the territory holding the card.
``send``
    Optional: the cards sent on this read, all from the one player who ends up sending.
    Without it the sender sends their **lowest-numbered** cards (a deterministic default; real
    players choose freely, so a referee enters the real cards when it matters).

Scoring of one read (rules.md §3):

- The read card leaves its territory (whoever takes it).
- A fault (お手つき) is a touched territory that does not hold the read card; on a karafuda
  every touched territory is a fault (so at most two per player per read).
- Sends owed: a take from the opponent's side owes the opponent one card; each fault of the
  opponent owes them one card.  Sends in opposite directions cancel (共お手, 取り損); the
  difference is sent.  So: 片お手 = receive 1; 空ダブ = receive 2; セミダブ = the taker −1 and
  the faulter +1; ダブ = the owner whose card was taken from their side receives 2.
- A player who owes more cards than they have sends what they have: sending the last card
  reaches 0 and wins (a fault that makes the opponent send their last card makes them win).
- A win needs a real 0 *after* the read's sends: taking your last card while faulting on the
  same read (取り損) brings a card back and is not a win.  Both players can never reach 0 on
  the same read, so a finished match has exactly one winner.

Alone (``karuta practice --vs none``): a deal with B's side empty is a *solo* match.  All the
cards on the board are A's; B never touches or takes, and A has no other territory to touch
(``"opp"`` is refused).  A touch on a karafuda is still a fault (お手つき), counted in the
result, but nobody is there to send a card to A, so nothing moves.  A card A does not take is
removed (a miss).  The match ends when A's territory is empty; the outcome names A and says how
many cards were taken, missed and faulted.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

from reader.base import seeds
from reader.match.rules import BadDeal, IllegalEvent, Match, MatchOver, Outcome

__all__ = [
    "PLAYERS", "HAND", "Read", "ReadResult", "KyogiState", "KyogiMatch", "apply", "deal",
    "new_state", "other",
]

PLAYERS = ("A", "B")
#: cards per player
HAND = 25
SIDES = ("own", "opp")
TOOK = ("A", "B", "both", None)


def other(player: str) -> str:
    return "B" if player == "A" else "A"


def _territory(player: str, side: str) -> str:
    """The territory owner a player's ``own``/``opp`` touch refers to."""
    return player if side == "own" else other(player)


def _side(player: str, territory: str) -> str:
    return "own" if territory == player else "opp"


@dataclass(frozen=True)
class Read:
    """What happened on one read.  ``touched`` may be given as a dict of lists.

    ``touched`` is normalised to ``(("A", frozenset), ("B", frozenset))``; use ``touches(p)``.
    """

    poem: int
    took: str | None = None
    touched: Mapping[str, Iterable[str]] | tuple = field(default_factory=dict)
    send: tuple[int, ...] | None = None

    def __post_init__(self):
        if isinstance(self.poem, bool) or not isinstance(self.poem, int):
            raise IllegalEvent(f"read must be a poem number, not {self.poem!r}")
        if self.took not in TOOK:
            raise IllegalEvent(f"unknown player {self.took!r} in took (A, B, both or null)")
        raw = dict(self.touched)
        for p in raw:
            if p not in PLAYERS:
                raise IllegalEvent(f"unknown player {p!r} in touched (A or B)")
        norm = []
        for p in PLAYERS:
            sides = list(raw.get(p, ()) or ())
            for s in sides:
                if s not in SIDES:
                    raise IllegalEvent(f"{p} touched {s!r}: a touch is \"own\" or \"opp\"")
            if len(set(sides)) != len(sides):
                raise IllegalEvent(f"{p} touched the same territory twice in one read "
                                   "(list each territory once: any number of cards is one touch)")
            norm.append((p, frozenset(sides)))
        object.__setattr__(self, "touched", tuple(norm))
        if self.send is not None:
            send = tuple(self.send)
            if any(isinstance(c, bool) or not isinstance(c, int) for c in send):
                raise IllegalEvent(f"send must list poem numbers, not {list(self.send)!r}")
            object.__setattr__(self, "send", send)

    def touches(self, player: str) -> frozenset[str]:
        return dict(self.touched)[player]

    def to_json(self) -> dict:
        out: dict = {
            "read": self.poem,
            "took": self.took,
            "touched": {p: [s for s in SIDES if s in t] for p, t in self.touched},
        }
        if self.send is not None:
            out["send"] = list(self.send)
        return out


@dataclass(frozen=True)
class ReadResult:
    """What one read did (kept in the state, for tables and the outcome's reason)."""

    poem: int
    #: owner of the territory holding the card, or None for a karafuda
    where: str | None
    took: str | None
    #: who got the card: the taker, the owner on a simultaneous touch or when nobody took it
    taker: str | None
    faults: tuple[int, int]
    sender: str | None
    sent: tuple[int, ...]
    counts: tuple[int, int]
    #: named cases: 片お手, 空ダブ, セミダブ, ダブ, 共お手, 取り損, お手つき
    cases: tuple[str, ...]

    def fault_count(self, player: str) -> int:
        return self.faults[PLAYERS.index(player)]


@dataclass(frozen=True)
class KyogiState:
    deal: tuple[tuple[int, ...], tuple[int, ...]]
    sides: tuple[frozenset[int], frozenset[int]]
    results: tuple[ReadResult, ...] = ()

    # --- queries -------------------------------------------------------------------------
    def cards(self, player: str) -> tuple[int, ...]:
        """Cards still in ``player``'s territory, sorted."""
        return tuple(sorted(self.sides[PLAYERS.index(player)]))

    def count(self, player: str) -> int:
        return len(self.sides[PLAYERS.index(player)])

    @property
    def karafuda(self) -> frozenset[int]:
        return frozenset(range(1, 101)) - set(self.deal[0]) - set(self.deal[1])

    @property
    def read_poems(self) -> tuple[int, ...]:
        return tuple(r.poem for r in self.results)

    @property
    def solo(self) -> bool:
        """A match alone: B's side was dealt no cards (see the module docstring)."""
        return not self.deal[1]

    def solo_score(self) -> tuple[int, int, int]:
        """(taken, missed, faults) of A so far (any match; meant for solo ones)."""
        taken = sum(1 for r in self.results if r.took == "A")
        missed = sum(1 for r in self.results if r.where == "A" and r.took is None)
        return taken, missed, sum(r.faults[0] for r in self.results)

    def where(self, poem: int) -> str | None:
        """``"A"``/``"B"`` if the card lies in that territory now, else ``None``."""
        for p, side in zip(PLAYERS, self.sides):
            if poem in side:
                return p
        return None

    def outcome(self) -> Outcome | None:
        if self.solo:
            if self.count("A"):
                return None
            taken, missed, faults = self.solo_score()
            return Outcome(("A",), (), f"A's territory is empty after read {len(self.results)} "
                                       f"(alone): {taken} taken, {missed} missed, {faults} "
                                       f"fault{'s' if faults != 1 else ''}")
        for p in PLAYERS:
            if self.count(p) == 0:
                last = self.results[-1] if self.results else None
                if last is None:
                    return Outcome((p,), (), f"{p}'s territory is empty")
                how = "sent their last card" if last.sender == p else "took their last card"
                return Outcome((p,), (), f"{p}'s territory is empty: {p} {how} on read "
                                         f"{len(self.results)} (poem {last.poem})")
        return None


def new_state(a: Iterable[int], b: Iterable[int], hand: int = HAND) -> KyogiState:
    """A match from a given deal (25 + 25 distinct poem numbers 1–100; ``hand`` other than 25:
    a short practice game, ``hand`` cards a side, the log's ``"cards"``; ``b`` empty: a solo
    match, ``hand`` cards for A alone)."""
    a, b = list(a), list(b)
    for name, cards in (("A", a), ("B", b)):
        if any(isinstance(c, bool) or not isinstance(c, int) for c in cards):
            raise BadDeal(f"{name} must list poem numbers")
        bad = [c for c in cards if not 1 <= c <= 100]
        if bad:
            raise BadDeal(f"poem {bad[0]} in {name} is outside 1-100")
        if len(set(cards)) != len(cards):
            raise BadDeal(f"{name} lists a poem twice")
        if len(cards) != hand and not (name == "B" and not cards):
            raise BadDeal(f"{name} has {len(cards)} cards; kyogi deals {hand} each")
    both = set(a) & set(b)
    if both:
        raise BadDeal(f"poem {min(both)} is dealt to both A and B")
    return KyogiState(deal=(tuple(sorted(a)), tuple(sorted(b))), sides=(frozenset(a), frozenset(b)))


def deal(rng: random.Random) -> KyogiState:
    """A random deal: 25 + 25 of the 100 drawn with ``rng`` (the other 50 are karafuda)."""
    drawn = rng.sample(range(1, 101), 2 * HAND)
    return new_state(drawn[:HAND], drawn[HAND:])


def apply(state: KyogiState, ev: Read) -> KyogiState:
    """The state after read ``ev``; ``IllegalEvent`` if the rules do not allow it."""
    done = state.outcome()
    if done is not None:
        raise MatchOver(f"the match is over ({done.reason})")
    n = ev.poem
    if not 1 <= n <= 100:
        raise IllegalEvent(f"poem {n} is outside 1-100")
    if n in state.read_poems:
        raise IllegalEvent(f"poem {n} was already read (read {state.read_poems.index(n) + 1})")
    where = state.where(n)
    touched = {p: ev.touches(p) for p in PLAYERS}
    if state.solo:
        if ev.took in ("B", "both") or touched["B"]:
            raise IllegalEvent("a match alone has no player B: only A touches and takes")
        if "opp" in touched["A"]:
            raise IllegalEvent("a match alone has one territory: A can only touch \"own\"")

    # who gets the card
    if ev.took is None:
        taker = where
    elif where is None:
        raise IllegalEvent(f"poem {n} is karafuda: nobody can take it (took must be null)")
    elif ev.took == "both":
        taker = where
        for p in PLAYERS:
            if _side(p, where) not in touched[p]:
                raise IllegalEvent(f"took both, but {p} did not touch {where}'s territory "
                                   f"(\"{_side(p, where)}\" for {p}), where poem {n} lies")
    else:
        taker = ev.took
        if _side(taker, where) not in touched[taker]:
            raise IllegalEvent(f"{taker} took poem {n} from {where}'s territory but touched "
                               f"lacks \"{_side(taker, where)}\" for {taker}")

    faults = {p: sum(1 for s in touched[p] if _territory(p, s) != where) for p in PLAYERS}

    sides = {p: set(state.sides[i]) for i, p in enumerate(PLAYERS)}
    if where is not None:
        sides[where].discard(n)

    # sends: a take from the other side owes one; each fault of the other player owes one
    owes = {p: faults[other(p)] + (1 if ev.took in PLAYERS and taker == p and where == other(p)
                                   else 0)
            for p in PLAYERS}
    net = owes["A"] - owes["B"]
    if state.solo:
        net = 0  # alone: a fault is counted, but nobody is there to send a card
    sender = "A" if net > 0 else "B" if net < 0 else None
    sent: tuple[int, ...] = ()
    if sender is not None:
        k = min(abs(net), len(sides[sender]))
        if ev.send is not None:
            if len(ev.send) != k:
                raise IllegalEvent(f"send lists {len(ev.send)} card(s) but {sender} sends {k} "
                                   "on this read")
            if len(set(ev.send)) != len(ev.send):
                raise IllegalEvent("send lists a card twice")
            for c in ev.send:
                if c not in sides[sender]:
                    raise IllegalEvent(f"{sender} cannot send poem {c}: it is not in "
                                       f"{sender}'s territory")
            sent = tuple(ev.send)
        else:
            sent = tuple(sorted(sides[sender])[:k])
        for c in sent:
            sides[sender].discard(c)
            sides[other(sender)].add(c)
    elif ev.send:
        raise IllegalEvent("send names cards but no card is sent on this read")

    counts = (len(sides["A"]), len(sides["B"]))
    result = ReadResult(
        poem=n, where=where, took=ev.took, taker=taker,
        faults=(faults["A"], faults["B"]), sender=sender, sent=sent, counts=counts,
        cases=(("お手つき",) if faults["A"] else ()) if state.solo
        else _cases(where, ev.took, taker, faults),
    )
    return KyogiState(
        deal=state.deal,
        sides=(frozenset(sides["A"]), frozenset(sides["B"])),
        results=state.results + (result,),
    )


def _cases(where, took, taker, faults) -> tuple[str, ...]:
    """Name the read, as players do (rules.md §3 named cases)."""
    names: list[str] = []
    both_fault = faults["A"] > 0 and faults["B"] > 0
    if where is None:
        for p in PLAYERS:
            if faults[p] == 2:
                names.append("空ダブ")
            elif faults[p] == 1 and not both_fault:
                names.append("片お手")
    elif took in PLAYERS:
        owner, t = where, taker
        if t != owner:
            if faults[owner]:
                names.append("ダブ")
            if faults[t]:
                names.append("取り損")
        else:
            if faults[other(owner)]:
                names.append("セミダブ")
            if faults[owner]:
                names.append("取り損")
    elif any(faults.values()) and not both_fault:
        names.append("お手つき")
    if both_fault:
        names.append("共お手")
    return tuple(names)


def settle(state: KyogiState, ev: Read) -> Read:
    """``ev`` as applied: a default send is written out as the cards actually sent."""
    sent = state.results[-1].sent
    return replace(ev, send=sent) if ev.send is None and sent else ev


class KyogiMatch(Match[KyogiState, Read]):
    """Undoable kyogi match: ``push(Read(...))``, ``pop()``, ``state``, ``outcome()``."""

    def __init__(self, initial: KyogiState):
        super().__init__(initial, apply, settle)

    @classmethod
    def from_seed(cls, seed: int) -> "KyogiMatch":
        return cls(deal(seeds.rng(seed)))
