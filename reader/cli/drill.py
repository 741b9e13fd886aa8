"""``karuta drill``: the drill group.  Each drill is its own module, loaded when invoked.

To add a drill, add one row to ``_DRILLS`` (``name -> ("module:attribute", short help)``); the
attribute is a click command.  ``karuta drill --help`` lists them without importing any.
"""
from __future__ import annotations

import click

from reader.cli import LazyGroup

_DRILLS: dict[str, tuple[str, str]] = {
    "memory": ("reader.drills.memory_drill:memory",
               "Pick the torifuda for a 上の句 or kimariji (and the reverse), FSRS-scheduled."),
    "speed": ("reader.drills.speed:speed",
              "Tap as soon as you know the card; reaction timed from its kimariji, as heard."),
}


@click.group(cls=LazyGroup, table=_DRILLS)
def drill():
    """Drills: memorise the cards, train your reactions.  Answers are saved for 'karuta stats'."""
