"""Memory drill logic: questions, confusable poems, FSRS scheduling, goshiki progression.

Pure: randomness comes in as a ``random.Random``, time as an aware ``datetime``; nothing here
reads a clock, prints, or touches the stats database (``reader.drills.memory_drill`` does that).

Question modes (``MODES``)::

    kami      上の句 (kanji)         -> pick its torifuda (下の句 as printed) among N
    kimariji  kimariji (card form)   -> pick its torifuda among N
    reverse   torifuda               -> pick its 上の句 among N

Distractors: the other poems of the universe (all 100, or one goshiki colour's 20 — the cards
that could be on the table), those sharing the longest opening *as heard* first (友札:
なげき/なげけ, あさぼらけあ/う), ties broken by the rng.  Kimariji are computed within the same
universe, as they would be in a goshiki match.

Scheduling: one FSRS card per poem (``fsrs.Scheduler`` with fuzzing off, so a seed reproduces a
session).  The rating comes from the answer: wrong -> Again; right within ``FAST_MS[mode]`` ->
Easy; within 3x that -> Good; slower -> Hard.

Goshiki progression (``MemoryDeck.open_colors``): new poems are introduced colour by colour
(青 桃 黄 緑 橙, the order of ``poems.COLORS``), and within a colour in ``COLOR_CARD_ORDER``.
The first colour is always open.  A later colour opens when the colour before it is *mostly
learned*: at least ``UNLOCK_LEARNED`` (16) of its 20 poems are in the FSRS Review state, i.e.
have passed the learning steps and are not relearning after a lapse.  Once any poem of a colour
has been introduced the colour stays open (a lapse elsewhere does not hide cards being learned).
Due reviews are always asked, whatever colour they are.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

from fsrs import Card, Rating, Scheduler, State

from poems import COLOR_CARD_ORDER, COLOR_JA, COLORS, poem
from poems.kimariji import kimariji as dynamic_kimariji
from poems.kimariji import kami_heard, shared_opening

__all__ = [
    "MODES", "MODE_LABELS", "FAST_MS", "UNLOCK_LEARNED", "ALL", "Question", "make_question",
    "tomofuda", "confusable_groups", "rank_distractors", "group_order",
    "rating_for", "MemoryDeck", "SessionPlan", "DueCounts", "state_name", "poems_of", "COLOR_ORDER",
]

MODES = ("kami", "kimariji", "reverse")
MODE_LABELS = {"kami": "上の句 → 取り札", "kimariji": "決まり字 → 取り札", "reverse": "取り札 → 上の句"}
#: a right answer within this many ms is rated Easy; within 3x, Good; slower, Hard
FAST_MS = {"kimariji": 2000.0, "kami": 3000.0, "reverse": 4000.0}
#: poems of a colour that must be in the Review state before the next colour opens
UNLOCK_LEARNED = 16
ALL: tuple[int, ...] = tuple(range(1, 101))
COLOR_ORDER: tuple[str, ...] = tuple(COLORS)


# -- confusables -------------------------------------------------------------------------------

def _universe(universe: Iterable[int]) -> tuple[int, ...]:
    u = tuple(sorted(set(universe)))
    bad = [n for n in u if not (isinstance(n, int) and 1 <= n <= 100)]
    if bad:
        raise KeyError(f"no poem number {bad[0]!r} (poems are 1-100)")
    return u


@lru_cache(maxsize=256)
def _lengths(universe: tuple[int, ...]) -> dict[int, int]:
    return {n: k.length for n, k in dynamic_kimariji(universe).items()}


def tomofuda(no: int, universe: Iterable[int] = ALL) -> tuple[int, ...]:
    """友札 of ``no`` within ``universe``: the poems sharing its opening up to (not including)
    the last sound of its kimariji — the ones a player must hear past to tell ``no`` apart.
    Empty for a one-sound kimariji (む す め ふ さ ほ せ)."""
    u = _universe(universe)
    if no not in u:
        raise KeyError(f"poem {no} is not in the universe")
    k = _lengths(u)[no]
    if k < 2:
        return ()
    return tuple(m for m in u if m != no and shared_opening(no, m) >= k - 1)


def confusable_groups(universe: Iterable[int] = ALL) -> list[tuple[int, ...]]:
    """Distinct sets ``{p} ∪ tomofuda(p)`` with two or more poems, sorted by sound.

    Groups nest (あさ: 39 31 64 contains あさぼらけ: 31 64); all are returned.
    """
    u = _universe(universe)
    groups = {tuple(sorted((p, *tomofuda(p, u)), key=kami_heard)) for p in u}
    return sorted((g for g in groups if len(g) > 1), key=lambda g: (kami_heard(g[0]), len(g)))


def rank_distractors(no: int, pool: Iterable[int], rng: random.Random) -> list[int]:
    """The poems of ``pool`` other than ``no``, longest shared opening first, ties shuffled."""
    others = [m for m in sorted(set(pool)) if m != no]
    rng.shuffle(others)
    return sorted(others, key=lambda m: -shared_opening(no, m))  # stable: keeps the shuffle in ties


def group_order(nos: Iterable[int], rng: random.Random) -> list[int]:
    """Order a session so that confusable poems come together.

    Poems are put in blocks by their first sound; the blocks are shuffled, and inside a block
    poems are sorted by sound, so the closest 友札 are next to each other.
    """
    blocks: dict[str, list[int]] = {}
    for n in sorted(set(nos)):
        blocks.setdefault(kami_heard(n)[0], []).append(n)
    keys = sorted(blocks)
    rng.shuffle(keys)
    return [n for k in keys for n in sorted(blocks[k], key=kami_heard)]


# -- questions ---------------------------------------------------------------------------------

def _kami_text(no: int) -> str:
    return "　".join(poem(no).kami_kanji)


@dataclass(frozen=True)
class Question:
    """One question: ``choices`` are poem numbers, ``choice_texts`` what to show for them."""

    poem: int
    mode: str
    prompt: str
    choices: tuple[int, ...]
    choice_texts: tuple[str, ...]
    answer: int  # index into ``choices``
    kimariji: str  # card form, within the question's universe

    def is_correct(self, index: int | None) -> bool:
        return index == self.answer

    @property
    def prompt_is_torifuda(self) -> bool:
        return self.mode == "reverse"

    @property
    def choices_are_torifuda(self) -> bool:
        return self.mode != "reverse"


def make_question(
    no: int, mode: str, rng: random.Random, *, universe: Iterable[int] = ALL, n_choices: int = 4
) -> Question:
    """A question about poem ``no``: the right answer plus ``n_choices - 1`` distractors from
    ``universe`` (fewer if the universe is smaller), confusable poems first, in random order."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (one of {', '.join(MODES)})")
    if n_choices < 2:
        raise ValueError("a question needs at least 2 choices")
    u = _universe(universe)
    if no not in u:
        raise KeyError(f"poem {no} is not in the universe")
    distractors = rank_distractors(no, u, rng)[: n_choices - 1]
    choices = [no, *distractors]
    rng.shuffle(choices)
    p = poem(no)
    kim = dynamic_kimariji(u)[no].card
    if mode == "reverse":
        prompt, texts = p.torifuda, tuple(_kami_text(c) for c in choices)
    else:
        prompt = _kami_text(no) if mode == "kami" else kim
        texts = tuple(poem(c).torifuda for c in choices)
    return Question(no, mode, prompt, tuple(choices), texts, choices.index(no), kim)


# -- FSRS --------------------------------------------------------------------------------------

def rating_for(correct: bool, response_ms: float | None, mode: str) -> Rating:
    if not correct:
        return Rating.Again
    if response_ms is None:
        return Rating.Good
    fast = FAST_MS[mode]
    if response_ms <= fast:
        return Rating.Easy
    if response_ms <= 3 * fast:
        return Rating.Good
    return Rating.Hard


def state_name(state: State) -> str:
    return {State.Learning: "learning", State.Review: "review", State.Relearning: "relearning"}[state]


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"times must be timezone-aware, got {now!r}")
    return now.astimezone(timezone.utc)


@dataclass(frozen=True)
class DueCounts:
    due: int  # introduced poems due now
    due_by_color: dict[str, int]
    introduced: int
    learned: int  # in the Review state
    new_available: int  # not introduced yet, in an open colour
    open_colors: tuple[str, ...]

    def describe(self) -> str:
        """One line: ``due 5 (青 3, 桃 2); learned 12/20 introduced; new available 8``."""
        by = ", ".join(f"{COLOR_JA[c]} {n}" for c, n in self.due_by_color.items() if n)
        return (f"due {self.due}" + (f" ({by})" if by else "")
                + f"; learned {self.learned}/{self.introduced} introduced"
                + f"; new available {self.new_available}"
                + " (" + " ".join(COLOR_JA[c] for c in self.open_colors) + " open)")


@dataclass(frozen=True)
class SessionPlan:
    poems: tuple[int, ...]  # in asking order
    due: int  # how many of them were due
    new: int  # how many are introduced by this session


class MemoryDeck:
    """The FSRS cards of the introduced poems (``poem -> fsrs.Card``) and the scheduler."""

    def __init__(self, cards: dict[int, Card] | None = None, scheduler: Scheduler | None = None):
        self.cards: dict[int, Card] = dict(cards or {})
        self.scheduler = scheduler or Scheduler(enable_fuzzing=False)

    @classmethod
    def from_json(cls, cards: dict[int, str]) -> MemoryDeck:
        """From ``StatsDB.memory_cards()``."""
        return cls({int(n): Card.from_json(j) for n, j in cards.items()})

    def introduced(self, no: int) -> bool:
        return no in self.cards

    def learned(self, no: int) -> bool:
        c = self.cards.get(no)
        return c is not None and c.state == State.Review

    def due(self, now: datetime, pool: Iterable[int] = ALL) -> list[int]:
        """Introduced poems of ``pool`` due at ``now``, most overdue first."""
        now = _utc(now)
        pool = set(pool)
        due = [(c.due, n) for n, c in self.cards.items() if n in pool and c.due <= now]
        return [n for _, n in sorted(due)]

    def next_due(self, pool: Iterable[int] = ALL) -> datetime | None:
        pool = set(pool)
        dues = [c.due for n, c in self.cards.items() if n in pool]
        return min(dues) if dues else None

    def open_colors(self) -> tuple[str, ...]:
        out = []
        for i, color in enumerate(COLOR_ORDER):
            nos = COLORS[color]
            prev_ok = i == 0 or sum(self.learned(n) for n in COLORS[COLOR_ORDER[i - 1]]) >= UNLOCK_LEARNED
            if prev_ok or any(self.introduced(n) for n in nos):
                out.append(color)
            else:
                break
        return tuple(out)

    def new_candidates(self, color: str | None = None) -> list[int]:
        """Poems not introduced yet, in introduction order (colour by colour, card order).

        With ``color``: that colour's poems, open or not (the player asked for it).
        """
        colors = (color,) if color else self.open_colors()
        return [n for c in colors for n in COLOR_CARD_ORDER[c] if not self.introduced(n)]

    def due_counts(self, now: datetime, color: str | None = None) -> DueCounts:
        pool = set(COLORS[color]) if color else set(ALL)
        due = self.due(now, pool)
        by_color = {c: sum(1 for n in due if n in COLORS[c]) for c in COLOR_ORDER}
        return DueCounts(
            due=len(due), due_by_color=by_color,
            introduced=sum(1 for n in self.cards if n in pool),
            learned=sum(1 for n in pool if self.learned(n)),
            new_available=len(self.new_candidates(color)),
            open_colors=(color,) if color else self.open_colors(),
        )

    def plan_session(
        self, now: datetime, rng: random.Random, *, count: int = 20, due_only: bool = False,
        color: str | None = None, max_new: int | None = 10,
    ) -> SessionPlan:
        """Which poems to ask, in order: the due ones (most overdue first), then — unless
        ``due_only`` — new ones (at most ``max_new``) until ``count``; ordered so that
        confusable poems come together."""
        if count < 1:
            raise ValueError("count must be at least 1")
        pool = COLORS[color] if color else ALL
        due = self.due(now, pool)[:count]
        new: list[int] = []
        if not due_only:
            room = count - len(due)
            if max_new is not None:
                room = min(room, max_new)
            new = self.new_candidates(color)[: max(room, 0)]
        return SessionPlan(tuple(group_order(due + new, rng)), len(due), len(new))

    def review(self, no: int, correct: bool, response_ms: float | None, mode: str,
               now: datetime) -> tuple[Card, Rating]:
        """Apply one answer to poem ``no``'s card (created on first sight); returns the new
        card and the rating used.  Nothing is saved here."""
        now = _utc(now)
        card = self.cards.get(no) or Card(card_id=no, due=now)
        rating = rating_for(correct, response_ms, mode)
        card, _log = self.scheduler.review_card(
            card, rating, now, None if response_ms is None else int(response_ms))
        self.cards[no] = card
        return card, rating


def poems_of(color: str | None) -> Sequence[int]:
    """The universe of a drill: one colour's 20 poems, or all 100."""
    return COLORS[color] if color else ALL
