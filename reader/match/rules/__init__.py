"""Match rules as pure state machines: kyogi (競技かるた) and goshiki (五色百人一首).

Each rules module has

- a frozen *state* dataclass (``KyogiState``, ``GoshikiState``) and a frozen *event*
  (one read and what happened on it: ``kyogi.Read``, ``goshiki.Read``);
- ``apply(state, event) -> state``: a new state, or ``IllegalEvent`` (the state is untouched);
- ``state.outcome() -> Outcome | None``: who won (or a draw) and why; ``None`` while running;
- a ``Match`` history wrapper with ``push(event)`` / ``pop()`` (undo of the last event),
  in the style of python-chess's ``Board.push`` / ``Board.pop``.

Nothing here reads a clock, a config file or the global random generator: a deal comes from
a ``random.Random`` passed in (see ``kyogi.deal`` / ``goshiki.deal``) or is given.
The scoring follows ``docs/rules.md`` §3 (kyogi) and §4 (goshiki); the module docstrings
spell out every design choice where the rules leave room.

``reader.match.rules.games`` holds one object per game (``KYOGI``, ``GOSHIKI``): the only place
a game's name is written; the log, the keeper, the reading engine and practice ask the object.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

from reader.base.errors import KarutaError

__all__ = ["IllegalEvent", "MatchOver", "BadDeal", "EntryError", "Outcome", "Match"]


class IllegalEvent(KarutaError):
    """An event the rules do not allow in this state (a poem read twice, a take of a karafuda…)."""


class MatchOver(IllegalEvent):
    """An event after the match has ended."""


class BadDeal(KarutaError):
    """A deal that does not fit the rules (wrong number of cards, overlap, wrong colour)."""


class EntryError(KarutaError):
    """A keeper's entry line a game's grammar cannot understand (``games.Rules.parse_entry``;
    shown on screen, the match goes on)."""


@dataclass(frozen=True)
class Outcome:
    """The result of a finished match.

    ``winners``: players who won (kyogi: exactly one; goshiki with three players: up to two).
    ``drawn``: players who drew with each other (empty when the result is clear).
    ``reason``: one human sentence, e.g. "A's territory is empty after read 41".
    """

    winners: tuple[str, ...]
    drawn: tuple[str, ...]
    reason: str

    @property
    def winner(self) -> str:
        """Two-player shorthand: the winner's name, or ``"draw"``."""
        if len(self.winners) == 1 and not self.drawn:
            return self.winners[0]
        if not self.winners:
            return "draw"
        return ",".join(self.winners)


S = TypeVar("S")
E = TypeVar("E")


class Match(Generic[S, E]):
    """An undoable history: the states after each event, like python-chess's push/pop.

    ``push(event)`` applies the event (raising ``IllegalEvent`` and changing nothing if the
    rules refuse it) and returns what happened on it: the new state's last result (a
    ``ReadResult``: who took, faults, the cards sent).  The event is recorded as the rules
    settled it (``settle(new_state, event)``: e.g. a kyogi read that left the send to the
    default is recorded with the cards actually sent), so ``events`` replay to the same states
    whatever defaults a later version chooses.  ``pop()`` undoes the last event and returns it.
    """

    def __init__(self, initial: S, apply: Callable[[S, E], S],
                 settle: Callable[[S, E], E] | None = None):
        self._apply = apply
        self._settle = settle
        self._states: list[S] = [initial]
        self._events: list[E] = []

    @property
    def initial(self) -> S:
        return self._states[0]

    @property
    def state(self) -> S:
        return self._states[-1]

    @property
    def events(self) -> tuple[E, ...]:
        return tuple(self._events)

    def push(self, event: E) -> Any:
        new = self._apply(self._states[-1], event)
        self._states.append(new)
        self._events.append(self._settle(new, event) if self._settle else event)
        return new.results[-1]  # type: ignore[attr-defined]

    def pop(self) -> E:
        if not self._events:
            raise IllegalEvent("nothing to undo")
        self._states.pop()
        return self._events.pop()

    def outcome(self) -> Any:
        return self.state.outcome()  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self._events)
