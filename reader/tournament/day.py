"""The day's shape (pure): the settings chosen at ``new``, which stage each round is, and the
colour each round reads.

Rounds::

    1 .. R        preliminary rounds (R = 6 by default), paired inside each block
    R + 1         semi-finals: per block 1 v 4 and 2 v 3 (after lots for ties, recorded)
    R + 2         final per block (and the third-place match, a setting)
"""
from __future__ import annotations

from reader.base import seeds
from dataclasses import dataclass

import poems
from reader.tournament import scoring
from reader.tournament.errors import TournamentError

__all__ = ["Settings", "COLOR_POLICIES", "default_colors", "parse_color", "stage_of",
           "round_colors"]

#: colour policies: one colour all day (seed 004: from round 2 on, each table plays on the 20
#: cards the players before laid out, so the reader reads that colour), or a new colour each
#: round (a seeded order of the five), or the list given with --colors
COLOR_POLICIES = ("one", "each-round", "given")


def default_colors(seed: int, n: int, policy: str = "one") -> list[str]:
    """The colour of each of ``n`` rounds: one seeded colour throughout (``one``), or a
    different colour each round (``each-round``: a seeded order of the five, repeated, so two
    rounds in a row never share a colour)."""
    names = sorted(poems.COLORS)
    seeds.rng(seed, "colors").shuffle(names)
    if policy == "one":
        return [names[0]] * n
    return [names[i % len(names)] for i in range(n)]


def parse_color(name: str) -> str:
    ja = {v: k for k, v in poems.COLOR_JA.items()}
    key = ja.get(name.strip(), name.strip().lower())
    if key not in poems.COLORS:
        raise TournamentError(f"unknown colour {name!r}: one of {', '.join(poems.COLORS)} "
                              f"(or {' '.join(poems.COLOR_JA.values())})")
    return key


@dataclass(frozen=True)
class Settings:
    rounds: int = 6
    colors: tuple[str, ...] = ()
    mix_groups: bool = True
    third_place: bool = False
    seed: int = 0
    title: str = "五色百人一首大会"
    #: cards read in a match (seed 004: 17 of the colour's 20); a result's cards add up to
    #: at most this, plus the tie-break cards read in a knock-out match
    reads: int = scoring.DEFAULT_READS
    #: ``one`` colour all day (the default), ``each-round``, or ``given`` (``colors``)
    color_policy: str = "one"

    def validate(self) -> None:
        if not 1 <= self.rounds <= 20:
            raise TournamentError(f"--rounds {self.rounds}: between 1 and 20 preliminary rounds")
        if isinstance(self.reads, bool) or not 1 <= self.reads <= scoring.MAX_CARDS:
            raise TournamentError(f"--reads {self.reads}: between 1 and {scoring.MAX_CARDS} "
                                  "cards (a colour has 20)")
        if self.color_policy not in COLOR_POLICIES:
            raise TournamentError(f"colour policy {self.color_policy!r}: one of "
                                  f"{', '.join(COLOR_POLICIES)}")

    def stage_of(self, round_no: int) -> str | None:
        return stage_of(self.rounds, round_no)

    def color_of(self, round_no: int) -> str:
        """The colour set at the start for a round (``pair --color`` may choose another)."""
        if round_no - 1 < len(self.colors):
            return self.colors[round_no - 1]
        return default_colors(self.seed, round_no, self.color_policy)[-1]

    def to_meta(self) -> dict:
        return {"rounds": self.rounds, "colors": list(self.colors),
                "mix_groups": self.mix_groups, "third_place": self.third_place,
                "seed": self.seed, "title": self.title, "reads": self.reads,
                "color_policy": self.color_policy}

    @classmethod
    def from_meta(cls, meta: dict) -> "Settings":
        return cls(rounds=meta["rounds"], colors=tuple(meta["colors"]),
                   mix_groups=meta["mix_groups"], third_place=meta["third_place"],
                   seed=meta["seed"], title=meta["title"],
                   # files written before these settings: 17 read, and the colours they
                   # recorded, round by round
                   reads=meta.get("reads", scoring.DEFAULT_READS),
                   color_policy=meta.get("color_policy", "given"))


def round_colors(settings: Settings) -> Settings:
    """``settings`` with the colour of every round filled in (``--colors`` repeated over the
    day, or the seeded default of its policy)."""
    need = settings.rounds + 2
    colors = [parse_color(c) for c in settings.colors]
    policy = settings.color_policy
    if colors:
        colors = [colors[i % len(colors)] for i in range(need)]
        policy = "one" if len(set(colors)) == 1 else "given"
    else:
        colors = default_colors(settings.seed, need, policy)
    return Settings(**dict(settings.__dict__, colors=tuple(colors), color_policy=policy))


def stage_of(rounds: int, round_no: int) -> str | None:
    """``prelim`` for rounds 1..rounds, then ``semi``, then ``final``; None after."""
    if 1 <= round_no <= rounds:
        return "prelim"
    return {rounds + 1: "semi", rounds + 2: "final"}.get(round_no)
