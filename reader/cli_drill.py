"""``karuta drill``: the drill group.  Each drill is its own module, loaded when invoked.

To add a drill, add one row to ``_DRILLS`` (``name -> ("module:attribute", short help)``); the
attribute is a click command.  ``karuta drill --help`` lists them without importing any.
"""
from __future__ import annotations

import importlib

import click

_DRILLS: dict[str, tuple[str, str]] = {
    "memory": ("reader.drill_memory:memory",
               "Pick the torifuda for a 上の句 or kimariji (and the reverse), FSRS-scheduled."),
    "speed": ("reader.drill_speed:speed",
              "Tap as soon as you know the card; reaction timed from its kimariji, as heard."),
}


class _LazyDrills(click.Group):
    def list_commands(self, ctx):
        return sorted(set(_DRILLS) | set(self.commands))

    def get_command(self, ctx, name):
        if name in self.commands:
            return self.commands[name]
        if name not in _DRILLS:
            return None
        module, attr = _DRILLS[name][0].split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, _DRILLS[name][1]) for name in sorted(_DRILLS)]
        rows += [(n, c.get_short_help_str()) for n, c in sorted(self.commands.items()) if n not in _DRILLS]
        if rows:
            with formatter.section("Drills"):
                formatter.write_dl(rows)


@click.group(cls=_LazyDrills)
def drill():
    """Drills: memorise the cards, train your reactions.  Answers are saved for 'karuta stats'."""
