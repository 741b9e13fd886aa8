"""A bot is a model of a player, levels 1-5 — not a timer.

**Form.**  A player does not play every match at their level: a bot's skill for one match is
drawn once (``match_skill``: its level plus a normal spread of ``FORM_SD`` levels, never more
than ``FORM_MAX`` from it, kept within ``LOW_SKILL``-``TOP_SKILL``; level 1 at most
``TOP_SKILL_1``, and it never recognises a kimariji), and its speed and how many kimariji it recognises follow that skill
(``recognise_rate``, ``known_median_ms``, ``late_median_ms``).  ``PracticeMatch`` draws it from
a stream of its own, so a resumed match has the same form.  So a level-3 bot plays
some matches like a 2 and some like a 4, and a weaker bot wins some whole matches, as in a
club.  Faults, misses and the slowness on moved cards stay those of the level.

What a bot does on one read (``plan_touches``), all drawn from the ``random.Random`` passed in:

- **Reaction.**  If it recognises the card at its kimariji (``recognise_rate`` of its skill),
  it goes for it at the onset of the kimariji's last mora at that moment (the decisive onset,
  as the grab timer measures) plus a log-normal reaction (``known_median_ms`` of its skill,
  the level's spread); level 5 sometimes goes on the consonant, a little *before* the
  decisive vowel (``early_rate``, up to ``early_ms`` ahead).  Otherwise it waits for the
  whole 上の句 and goes after its end (``late_median_ms``) — level 1 always does.
- **Nearer is quicker** (kyogi): the reaction is 8 % shorter for a card in its own territory
  and 8 % longer across the board.
- **Slower on a card just sent**: a card that moved (a send) within the last few reads lies in
  a new place: ``moved_penalty_ms`` is added.
- **Forgetting**: with ``miss_rate`` it does not find the card at all.
- **Faults on 友札.**  On a read where a card sharing a *shorter prefix* than the kimariji lies
  where touching it is a fault (kyogi: a territory not holding the read card, or any on a
  karafuda; goshiki: any other card), the bot commits on that prefix with probability
  ``fault_rate`` (never zero): it touches the 友札 sharing the longest prefix, as early as it
  would have touched the right card had that prefix been decisive.  In kyogi it still goes for
  the right card afterwards (``recover_ms`` later); in goshiki a faulter cannot take.
  ``fault_rate`` is the rate per such read: the benchmark measures it.

Sends (``choose_send``), by what players do: early in the match split a pair of 友札 in its own
territory, else send a card whose opening sound has no card on the other side; late (few cards
left), keep 1字決まり (kimariji of one sound) for 運命戦.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from poems.kimariji import kami_heard, shared_opening
from reader.base.errors import KarutaError

__all__ = ["Level", "LEVELS", "level", "parse_level", "plan_touches", "choose_send",
           "fault_opportunity", "ReadView", "match_skill",
           "recognise_rate", "known_median_ms", "late_median_ms", "FORM_SD", "FORM_MAX"]


@dataclass(frozen=True)
class Level:
    level: int
    #: "decisive" (the kimariji's last mora onset) or "kami_end" (after the 上の句)
    anchor: str
    #: median reaction after the anchor, ms, and the log-normal sigma
    median_ms: float
    sigma: float
    #: per read with a fault opportunity: commit on a shorter prefix and touch the 友札
    fault_rate: float
    #: the card is not found at all
    miss_rate: float
    #: added when the card moved (was sent) within the last few reads
    moved_penalty_ms: float
    #: goes before the decisive vowel (on the consonant), up to early_ms ahead
    early_rate: float = 0.0
    early_ms: float = 0.0
    #: after a fault, how much later it reaches the right card
    recover_ms: float = 250.0


#: the five levels.  ``median_ms`` is what a bot does at its own level's skill (the reaction
#: itself follows the match's skill: ``known_median_ms``, ``late_median_ms``): level 5 ~0.15 s
#: after the decisive onset (sometimes on the consonant), 4 ~0.24 s, 3 ~0.38 s, 2 ~0.6 s
#: (recognising 20 % of the cards at their kimariji, 3 70 %, 4 and 5 all), level 1 ~0.3 s
#: after the whole 上の句.  Faults, misses and the moved-card penalty are the level's own.
LEVELS: dict[int, Level] = {
    1: Level(1, "kami_end", 300.0, 0.60, fault_rate=0.11, miss_rate=0.05, moved_penalty_ms=450.0),
    2: Level(2, "decisive", 600.0, 0.60, fault_rate=0.09, miss_rate=0.04, moved_penalty_ms=350.0),
    3: Level(3, "decisive", 378.0, 0.60, fault_rate=0.07, miss_rate=0.02, moved_penalty_ms=250.0),
    4: Level(4, "decisive", 238.0, 0.55, fault_rate=0.05, miss_rate=0.01, moved_penalty_ms=180.0),
    5: Level(5, "decisive", 150.0, 0.45, fault_rate=0.03, miss_rate=0.005, moved_penalty_ms=120.0,
             early_rate=0.15, early_ms=60.0),
}

#: a bot's form: the spread (sd, in levels) of its skill from one match to the next, and how
#: far from its level it may go (a level feels like its number: a level-2 bot never plays like
#: a 4)
FORM_SD = 0.6
FORM_MAX = 1.0
#: the best a bot plays on its best day (skill)
TOP_SKILL = 6.0
#: the worst a bot plays on its worst day, and the best level 1 plays (it never recognises a
#: kimariji, whatever its form: only how quickly it finds the card after the 上の句 changes)
LOW_SKILL, TOP_SKILL_1 = 0.4, 2.2


def match_skill(lv: Level, rng: random.Random) -> float:
    """How well a bot of level ``lv`` plays this match (its form): its level plus a normal
    spread of ``FORM_SD``, at most ``FORM_MAX`` from its level, within
    ``LOW_SKILL``-``TOP_SKILL`` (level 1: up to ``TOP_SKILL_1``)."""
    top = TOP_SKILL_1 if lv.anchor == "kami_end" else TOP_SKILL
    off = max(-FORM_MAX, min(FORM_MAX, rng.gauss(0.0, FORM_SD)))
    return min(top, max(LOW_SKILL, lv.level + off))


def recognise_rate(skill: float) -> float:
    """Share of reads on which a bot of this skill knows the card at its kimariji (up to 1.6:
    none, 2: 20 %, 3: 70 %, from 3.6: all)."""
    return min(1.0, max(0.0, 0.5 * (skill - 1.6)))


def known_median_ms(skill: float) -> float:
    """Median reaction after the decisive onset on a recognised card: 0.6 s at skill 2 down to
    0.15 s at skill 5 (log-linear: x0.63 a level)."""
    return 600.0 * (150.0 / 600.0) ** ((skill - 2.0) / 3.0)


def late_median_ms(skill: float) -> float:
    """Median reaction after the 上の句's end on a card not recognised (skill 1: 0.3 s, x0.75
    a level)."""
    return 300.0 * 0.75 ** (skill - 1.0)


#: kyogi: a card in your own territory is nearer the hand than one across the board
OWN_SIDE, OTHER_SIDE = 0.92, 1.08


def level(n: int) -> Level:
    if n not in LEVELS:
        raise KarutaError(f"unknown bot level {n!r}: levels are 1-5")
    return LEVELS[n]


def parse_level(text: str) -> int:
    """``"3"`` -> 3; anything else -> ``KarutaError`` (one line for the CLI)."""
    t = str(text).strip()
    if not t.isdigit() or int(t) not in LEVELS:
        raise KarutaError(f"unknown bot level {text!r}: levels are 1-5")
    return int(t)


@dataclass(frozen=True)
class ReadView:
    """What a bot knows about one read (``PracticeMatch`` builds it).

    ``where``: the territory holding the read card (kyogi), its rows' owner (goshiki), or
    ``None`` (karafuda).  ``board``: player -> cards on their side.  ``morae``: plan frames of
    the 上の句's mora onsets; ``kimariji_len``: morae in the kimariji at read time.
    ``moved``: cards sent within the last few reads.  ``sitting_out``: goshiki players who may
    not touch.  ``game``: ``reader.practice.games.KYOGI`` / ``GOSHIKI``.
    """

    game: Any
    poem: int
    where: str | None
    board: dict
    start: int
    decisive: int
    kami_end: int
    morae: tuple[int, ...]
    kimariji_len: int
    moved: frozenset = frozenset()
    sitting_out: frozenset = frozenset()
    sample_rate: int = 48000


def fault_opportunity(view: ReadView) -> tuple[int, int] | None:
    """The 友札 a bot could fault on, and the prefix it shares: ``(card, prefix)``, or None.

    A card on the board sharing a shorter prefix than the kimariji with the read card, lying
    where touching it is a fault.  Among several, the longest shared prefix (then the lowest
    number, so the choice is deterministic).
    """
    best: tuple[int, int] | None = None
    for owner, cards in view.board.items():
        if view.game.territories and view.where is not None and owner == view.where:
            continue  # a wrong card in the right territory is no fault
        for c in cards:
            if c == view.poem:
                continue
            k = shared_opening(view.poem, c)
            if 1 <= k < view.kimariji_len:
                if best is None or k > best[1] or (k == best[1] and c < best[0]):
                    best = (c, k)
    return best


def _ms(view: ReadView, ms: float) -> int:
    return round(ms * view.sample_rate / 1000)


def plan_touches(player: str, lv: Level, view: ReadView, rng: random.Random,
                 skill: float | None = None) -> list[tuple[int, int]]:
    """``(card, frame)`` touches this bot makes on this read, in frame order; ``skill``: its
    form this match (``match_skill``; default: its level).

    The fault, miss and recognition draws are made whatever happens; each read has its own
    random stream (``PracticeMatch.read_rng``), so nothing on one read shifts the draws of the
    next.
    """
    if skill is None:
        skill = float(lv.level)
    u_fault, u_miss, u_know = rng.random(), rng.random(), rng.random()
    known = lv.anchor != "kami_end" and u_know < recognise_rate(skill)
    if known:
        if lv.early_rate and rng.random() < lv.early_rate:
            reaction = -rng.uniform(0.0, lv.early_ms)
        else:
            reaction = rng.lognormvariate(math.log(known_median_ms(skill)), lv.sigma)
    else:
        reaction = rng.lognormvariate(math.log(late_median_ms(skill)), lv.sigma)
    if view.game.sits_out and player in view.sitting_out:
        return []
    anchor = view.decisive if known else view.kami_end
    penalty = lv.moved_penalty_ms if view.poem in view.moved else 0.0
    if view.game.territories and view.where is not None and reaction > 0:
        reaction *= OWN_SIDE if view.where == player else OTHER_SIDE
    right_at = anchor + _ms(view, reaction + penalty)
    right_at = max(right_at, view.start + _ms(view, 50))  # it has heard something
    touches: list[tuple[int, int]] = []
    opp = fault_opportunity(view)
    faulted = False
    if opp is not None and u_fault < lv.fault_rate:
        card, k = opp
        prefix_onset = view.morae[k - 1] if len(view.morae) >= k else view.start
        early_by = max(0, view.decisive - prefix_onset)
        at = max(right_at - early_by, prefix_onset + _ms(view, 80))
        touches.append((card, at))
        faulted = True
    on_board = any(view.poem in cards for cards in view.board.values())
    if on_board and u_miss >= lv.miss_rate and not (faulted and view.game.sits_out):
        at = right_at + (_ms(view, lv.recover_ms) if faulted else 0)
        if faulted:
            at = max(at, touches[0][1] + _ms(view, lv.recover_ms))
        touches.append((view.poem, at))
    return sorted(touches, key=lambda t: t[1])


# --- sends ----------------------------------------------------------------------------------

#: with this many cards or fewer left in its territory a bot plays for 運命戦
LATE = 5


def choose_send(own: tuple[int, ...], other: tuple[int, ...], count: int, unread,
                rng: random.Random) -> tuple[int, ...]:
    """The ``count`` cards to send from ``own`` to the other side, by what players do.

    ``unread``: poems not read yet (kimariji are counted among them).
    Early: split a pair of 友札 lying together in ``own``; else send a card whose opening sound
    has no card on ``other``.  Late (``LATE`` cards or fewer): keep 1字決まり for 運命戦.
    Ties are broken by ``rng``.
    """
    from poems.kimariji import kimariji_length

    own = tuple(sorted(own))
    if count >= len(own):
        return own
    lengths = kimariji_length(set(unread) | set(own) | set(other))
    chosen: list[int] = []
    pool = list(own)
    for _ in range(count):
        scores = {}
        for c in pool:
            score = 0.0
            ones = lengths.get(c, 6) == 1
            if len(own) <= LATE:
                score += -10.0 if ones else 0.0
            else:
                # split a 友札 pair: another card of ours shares all but the kimariji's last sound
                pair = any(d != c and shared_opening(c, d) >= max(1, lengths.get(c, 1) - 1)
                           and shared_opening(c, d) >= 1 for d in pool)
                if pair:
                    score += 3.0
                if not any(kami_heard(d)[0] == kami_heard(c)[0] for d in other):
                    score += 2.0
                if ones:
                    score -= 1.0
            scores[c] = score + rng.random() * 0.5
        best = max(pool, key=lambda c: scores[c])
        chosen.append(best)
        pool.remove(best)
    return tuple(chosen)
