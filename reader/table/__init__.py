"""Table helpers for the two card-driven role-playing systems (``karuta table``).

- ``reader.table.genkan``: 現幻, played with the Hyakunin Isshu deck itself (seed 000).
- ``reader.table.cards``: the playing-card judgement rules (two packs and jokers, seed 001).
- ``reader.table.store``: the shared undoable history, the save file and the GM's log.

Each rules module keeps its *state as data* (plain JSON: lists, dicts, strings, numbers) and
offers ``new_state(settings)`` and ``apply(state, action, rng, settings) -> (state, result)``.
``apply`` never changes the state it is given: a refused action raises ``ActionError`` (one
line saying why) and the table is as it was.  Randomness comes only from the ``random.Random``
passed in (the store derives one per action from the table's seed and the action's number, so
a replayed save deals the same cards); nothing here reads a clock or prints.
"""
from __future__ import annotations

import random

from reader.base import seeds
from reader.base.errors import KarutaError

__all__ = ["ActionError", "rng_for"]


class ActionError(KarutaError):
    """An action the rules refuse (an unknown card, a card not in the hand, a difficulty too
    low, an impossible 5-7-5-7-7 …): nothing was changed."""


def rng_for(seed: int, n: int) -> random.Random:
    """The random generator of action ``n`` (0 = setting up) of a table seeded ``seed``."""
    return seeds.rng(f"karuta-table:{seed}:{n}")  # saves replay their actions: kept as it was
