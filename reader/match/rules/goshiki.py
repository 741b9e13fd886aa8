"""Goshiki (五色百人一首) scoring as a state machine (docs/rules.md §4, Hiroshima official rules).

The 20 cards of one colour are dealt 10 + 10 (players ``"A"``, ``"B"``); with three players
(``"C"`` too) the 20 are dealt 7 + 7 + 6 by ``deal`` (any split that uses all 20 is accepted
from a given deal — only the board as a whole matters, since anyone may take any card).
Only the colour's cards are read, each at most once; ``settings.reads`` (default 17) are read.

One event per read: ``Read(poem, took, faults, lost)``.

``took``
    the player who took the read card, or ``None`` (nobody found it: it stays on the board,
    dead — "次の札を読み始めたら、それ以前の札を取ることはできません").  On a simultaneous
    touch the referee decides (hand underneath, else janken) and logs that player: there is
    no ``"both"`` in goshiki.
``faults``
    players who faulted on this read (at most once each: one fault per read however many cards
    were touched).  A fault puts the faulter's most recently taken card into the ba (場); with
    no cards taken, the faulter instead sits out the next read (1回休み): they may neither take
    nor fault on it.
``lost``
    optional, a player from ``faults``: that player touched the right card *first* and then a
    wrong one.  It is a fault and the right card is not theirs, so ``took`` is the other player
    (who may still take it) or ``None``.  ``lost`` changes no score — the same read is fully
    described by ``faults`` and ``took`` — it only records why, for the table.  A player can
    never both take and fault on one read; such an event is refused with a hint to use this.

The ba: whoever takes a card also receives one card from the ba (its top: the most recently
put card) if it has any, read after read while it lasts.  A fault's card put into the ba on
the same read is not available to that read's taker (the taker draws first, faults add after).
Cards may remain in the ba at the end.

End: after ``settings.reads`` reads the player(s) with more cards taken win; equal is a draw.
With ``settings.finals`` a tie that decides the result (two players: a tie; three players: a
tie for 2nd/3rd, or all three equal) reads one more card at a time, until it is broken or
all 20 cards are read (then it is a draw).  Three players: the top two win; a tie for
2nd/3rd: the 1st wins and the 2nd and 3rd draw; a tie for 1st/2nd above the 3rd: both win.

Alone (``karuta practice --rules goshiki --vs none``): a deal of two hands with B's empty is a
*solo* match.  A is dealt 10 of the colour; the other 10 are read as usual but lie nowhere
(karafuda).  B never touches or takes.  A touch on a wrong card is still a fault (お手つき),
counted in the result, but it moves nothing: no card into the ba, no sitting out (there is no
one to gain from it).  A card of A's read and not taken stays on the board, dead (a miss).  The
match ends after ``settings.reads`` reads, or earlier once every card of A's has been read;
the outcome names A and says how many cards were taken, missed and faulted.

Invariant: every card of the colour is in exactly one place — someone's taken cards, the ba,
or the board (unread, or read and not taken): taken + ba + board = 20.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from poems import COLORS
from reader.base import seeds
from reader.match.rules import BadDeal, IllegalEvent, Match, MatchOver, Outcome

__all__ = ["Settings", "Read", "ReadResult", "GoshikiState", "GoshikiMatch", "apply", "deal",
           "new_state", "outcome_of", "DEFAULT_READS"]

DEFAULT_READS = 17
CARDS = 20


@dataclass(frozen=True)
class Settings:
    #: number of reads in a match (the Hiroshima rules: 17 of the 20)
    reads: int = DEFAULT_READS
    #: finals: a deciding tie reads one more card (until broken or the 20 are read)
    finals: bool = False

    def __post_init__(self):
        if isinstance(self.reads, bool) or not isinstance(self.reads, int) \
                or not 1 <= self.reads <= CARDS:
            raise BadDeal(f"reads must be a whole number 1-{CARDS}, not {self.reads!r}")
        if not isinstance(self.finals, bool):
            raise BadDeal(f"finals must be true or false, not {self.finals!r}")


@dataclass(frozen=True)
class Read:
    poem: int
    took: str | None = None
    faults: tuple[str, ...] = ()
    lost: str | None = None

    def __post_init__(self):
        if isinstance(self.poem, bool) or not isinstance(self.poem, int):
            raise IllegalEvent(f"read must be a poem number, not {self.poem!r}")
        if self.took == "both":
            raise IllegalEvent("took \"both\" does not exist in goshiki: on a simultaneous touch "
                               "the referee decides (hand underneath, else janken)")
        object.__setattr__(self, "faults", tuple(self.faults))

    def to_json(self) -> dict:
        out: dict = {"read": self.poem, "took": self.took, "faults": list(self.faults)}
        if self.lost is not None:
            out["lost"] = self.lost
        return out


@dataclass(frozen=True)
class ReadResult:
    poem: int
    took: str | None
    faults: tuple[str, ...]
    lost: str | None
    #: card the taker received from the ba, if any
    from_ba: int | None
    #: (player, card) put into the ba by each fault; players who must sit out the next read
    into_ba: tuple[tuple[str, int], ...]
    sit_out: tuple[str, ...]
    counts: tuple[int, ...]
    ba: int


@dataclass(frozen=True)
class GoshikiState:
    color: str
    deal: tuple[tuple[int, ...], ...]
    settings: Settings = field(default_factory=Settings)
    board: frozenset[int] = frozenset()
    #: per player, the cards taken in the order they came
    taken: tuple[tuple[int, ...], ...] = ()
    #: the ba, bottom first
    ba: tuple[int, ...] = ()
    #: players who must sit out the next read
    sitting_out: frozenset[str] = frozenset()
    results: tuple[ReadResult, ...] = ()

    @property
    def players(self) -> tuple[str, ...]:
        return ("A", "B", "C")[: len(self.deal)]

    def _i(self, player: str) -> int:
        return self.players.index(player)

    def cards(self, player: str) -> tuple[int, ...]:
        """Cards ``player`` has taken (including cards received from the ba), sorted."""
        return tuple(sorted(self.taken[self._i(player)]))

    def count(self, player: str) -> int:
        return len(self.taken[self._i(player)])

    @property
    def read_poems(self) -> tuple[int, ...]:
        return tuple(r.poem for r in self.results)

    @property
    def reads_due(self) -> int:
        return self.settings.reads

    @property
    def solo(self) -> bool:
        """A match alone: two hands, B's empty (see the module docstring)."""
        return len(self.deal) == 2 and not self.deal[1]

    def solo_score(self) -> tuple[int, int, int]:
        """(taken, missed, faults) of A so far (any match; meant for solo ones): a miss is a
        card of A's read and not taken."""
        mine = set(self.deal[0])
        taken = sum(1 for r in self.results if r.took == "A")
        missed = sum(1 for r in self.results if r.poem in mine and r.took is None)
        return taken, missed, sum(1 for r in self.results if "A" in r.faults)

    def outcome(self) -> Outcome | None:
        if self.solo:
            n = len(self.results)
            if n < self.settings.reads and not set(self.deal[0]) <= set(self.read_poems):
                return None
            taken, missed, faults = self.solo_score()
            return Outcome(("A",), (), f"alone, {taken} taken, {missed} missed, {faults} "
                                       f"fault{'s' if faults != 1 else ''} in {n} "
                                       f"read{'s' if n != 1 else ''}")
        return outcome_of({p: self.count(p) for p in self.players}, len(self.results),
                          self.settings)


def outcome_of(counts: dict[str, int], reads_done: int,
               settings: Settings | None = None) -> Outcome | None:
    """The result of a goshiki match from the cards each player has taken after
    ``reads_done`` reads (``None`` while it goes on).  ``counts`` in seat order: two or three
    players.  The match state uses it, and so does a tournament that is given only the counts
    written on the score sheet."""
    settings = settings or Settings()
    n = reads_done
    if n < settings.reads:
        return None
    players = tuple(counts)
    ranked = sorted(players, key=lambda p: -counts[p])
    tally = ", ".join(f"{p} took {counts[p]}" for p in players)
    if len(players) == 2:
        a, b = ranked
        if counts[a] > counts[b]:
            return Outcome((a,), (), f"after {n} reads {tally}")
        if settings.finals and n < CARDS:
            return None
        return Outcome((), (a, b), f"draw: after {n} reads {tally}")
    first, second, third = ranked
    c1, c2, c3 = (counts[p] for p in ranked)
    if c2 > c3:
        return Outcome(tuple(sorted((first, second))), (), f"top two after {n} reads: {tally}")
    if settings.finals and n < CARDS:
        return None
    if c1 > c2:
        return Outcome((first,), tuple(sorted((second, third))),
                       f"after {n} reads {tally}: {first} wins, 2nd and 3rd draw")
    return Outcome((), tuple(players), f"draw: after {n} reads {tally}")


def new_state(color: str | None, hands: Sequence[Iterable[int]],
              settings: Settings | None = None) -> GoshikiState:
    """A match from a given deal: ``hands`` are A's, B's (and C's) cards, which together must
    be exactly the 20 cards of ``color`` (with ``color=None`` the colour is inferred).  Two
    hands with B's empty: a match alone (A's 10 of the colour; the other 10 are karafuda)."""
    hands = [list(h) for h in hands]
    if len(hands) not in (2, 3):
        raise BadDeal(f"goshiki is played by 2 or 3 players, not {len(hands)}")
    names = ("A", "B", "C")
    every = [c for h in hands for c in h]
    for name, h in zip(names, hands):
        if any(isinstance(c, bool) or not isinstance(c, int) for c in h):
            raise BadDeal(f"{name} must list poem numbers")
        bad = [c for c in h if not 1 <= c <= 100]
        if bad:
            raise BadDeal(f"poem {bad[0]} in {name} is outside 1-100")
    solo = len(hands) == 2 and not hands[1]
    if len(set(every)) != len(every):
        dup = next(c for c in every if every.count(c) > 1)
        raise BadDeal(f"poem {dup} is dealt twice")
    if color is None:
        found = {col for col, nos in COLORS.items() if set(every) <= set(nos)}
        if not found:
            raise BadDeal("the dealt cards are not all of one colour")
        color = found.pop()
    if color not in COLORS:
        raise BadDeal(f"unknown colour {color!r} (one of {', '.join(COLORS)})")
    colour_cards = set(COLORS[color])
    stray = sorted(set(every) - colour_cards)
    if stray:
        raise BadDeal(f"poem {stray[0]} is not a {color} card")
    missing = sorted(colour_cards - set(every))
    if solo:
        if len(hands[0]) != CARDS // 2:
            raise BadDeal(f"alone, A gets {CARDS // 2} cards (B none), not {len(hands[0])}")
    elif missing:
        raise BadDeal(f"the deal leaves out {color} poem {missing[0]}: all {CARDS} are dealt")
    if len(hands) == 2 and not solo and any(len(h) != CARDS // 2 for h in hands):
        raise BadDeal(f"two players get {CARDS // 2} cards each")
    return GoshikiState(
        color=color, deal=tuple(tuple(sorted(h)) for h in hands),
        settings=settings or Settings(), board=frozenset(every),
        taken=tuple(() for _ in hands),
    )


def deal(rng: random.Random, color: str | None = None, players: int = 2,
         settings: Settings | None = None) -> GoshikiState:
    """A random deal with ``rng``: the colour (if not given) and 10 + 10 (or 7 + 7 + 6)."""
    if color is None:
        color = rng.choice(sorted(COLORS))
    if color not in COLORS:
        raise BadDeal(f"unknown colour {color!r} (one of {', '.join(COLORS)})")
    cards = list(COLORS[color])
    rng.shuffle(cards)
    if players == 2:
        hands = [cards[:10], cards[10:]]
    elif players == 3:
        hands = [cards[:7], cards[7:14], cards[14:]]
    else:
        raise BadDeal(f"goshiki is played by 2 or 3 players, not {players}")
    return new_state(color, hands, settings)


def apply(state: GoshikiState, ev: Read) -> GoshikiState:
    """The state after read ``ev``; ``IllegalEvent`` if the rules do not allow it."""
    done = state.outcome()
    if done is not None:
        raise MatchOver(f"the match is over ({done.reason})")
    players = state.players
    n = ev.poem
    if not 1 <= n <= 100:
        raise IllegalEvent(f"poem {n} is outside 1-100")
    if n in state.read_poems:
        raise IllegalEvent(f"poem {n} was already read (read {state.read_poems.index(n) + 1})")
    if n not in COLORS[state.color]:
        raise IllegalEvent(f"poem {n} is not on the board (not a {state.color} card)")
    if ev.took is not None and ev.took not in players:
        raise IllegalEvent(f"unknown player {ev.took!r} in took ({', '.join(players)} or null)")
    for p in ev.faults:
        if p not in players:
            raise IllegalEvent(f"unknown player {p!r} in faults ({', '.join(players)})")
    if len(set(ev.faults)) != len(ev.faults):
        raise IllegalEvent("a player is listed twice in faults (one fault per read)")
    if ev.took is not None and ev.took in ev.faults:
        raise IllegalEvent(f"{ev.took} cannot both take and fault on one read (a fault after "
                           f"the right card loses it: log took as the other player or null, "
                           f"{ev.took} in faults, and \"lost\": \"{ev.took}\")")
    if ev.lost is not None:
        if ev.lost not in players:
            raise IllegalEvent(f"unknown player {ev.lost!r} in lost")
        if ev.lost not in ev.faults:
            raise IllegalEvent(f"lost names {ev.lost}, who must also be listed in faults")
    if state.solo and (ev.took == "B" or "B" in ev.faults):
        raise IllegalEvent("a match alone has no player B: only A touches and takes")
    if ev.took is not None and n not in state.board:
        raise IllegalEvent(f"poem {n} is not on the board (a karafuda): nobody can take it")
    for p in ([ev.took] if ev.took else []) + list(ev.faults):
        if p in state.sitting_out:
            raise IllegalEvent(f"{p} must sit out this read (faulted with no cards taken on "
                               f"the read before)")

    board = set(state.board)
    taken = [list(t) for t in state.taken]
    ba = list(state.ba)
    from_ba = None
    if ev.took is not None:
        i = players.index(ev.took)
        board.discard(n)
        taken[i].append(n)
        if ba:  # the ba as it was before this read's faults
            from_ba = ba.pop()
            taken[i].append(from_ba)
    into_ba = []
    sit_out = []
    for p in () if state.solo else ev.faults:  # alone: a fault is counted, nothing moves
        i = players.index(p)
        if taken[i]:
            card = taken[i].pop()
            ba.append(card)
            into_ba.append((p, card))
        else:
            sit_out.append(p)
    counts = tuple(len(t) for t in taken)
    result = ReadResult(poem=n, took=ev.took, faults=ev.faults, lost=ev.lost, from_ba=from_ba,
                        into_ba=tuple(into_ba), sit_out=tuple(sit_out), counts=counts,
                        ba=len(ba))
    return GoshikiState(
        color=state.color, deal=state.deal, settings=state.settings, board=frozenset(board),
        taken=tuple(tuple(t) for t in taken), ba=tuple(ba), sitting_out=frozenset(sit_out),
        results=state.results + (result,),
    )


class GoshikiMatch(Match[GoshikiState, Read]):
    """Undoable goshiki match: ``push(Read(...))``, ``pop()``, ``state``, ``outcome()``."""

    def __init__(self, initial: GoshikiState):
        super().__init__(initial, apply)

    @classmethod
    def from_seed(cls, seed: int, color: str | None = None, players: int = 2,
                  settings: Settings | None = None) -> "GoshikiMatch":
        return cls(deal(seeds.rng(seed), color, players, settings))
