"""A progress bar for long synthesis (``karuta render`` on a terminal).

``synthesize_ahead(plan, voice)``: when stderr is a terminal and the voice can synthesize
ahead (``prefetch``) and tell what it has cached (``is_cached``), the plan's clips that are
not cached yet are synthesized first while a bar on stderr shows clips done and the time left.
Nothing is printed when stderr is not a terminal, or when every clip is cached already; a clip
that fails is left to the render itself, which reports it in its one line.
"""
from __future__ import annotations

import sys
from concurrent.futures import as_completed

import click


def synthesize_ahead(plan, voice, *, stream=None) -> int:
    """Synthesize the plan's uncached clips with a progress bar; returns how many there were."""
    stream = stream or sys.stderr
    prefetch = getattr(voice, "prefetch", None)
    cached = getattr(voice, "is_cached", None)
    if not (callable(prefetch) and callable(cached)):
        return 0
    try:
        if not stream.isatty():
            return 0
    except (AttributeError, ValueError):
        return 0
    items = list(dict.fromkeys(s.speech for s in plan.segments if s.is_speech))
    todo = [it for it in items if not cached(it)]
    if not todo:
        return 0
    futures = prefetch(todo)
    with click.progressbar(length=len(futures), label="synthesizing the voice", file=stream,
                           show_eta=True, show_pos=True, width=30) as bar:
        for _f in as_completed(futures):
            bar.update(1)
    return len(todo)


class LineProgress:
    """A count on one line of stderr, redrawn in place (``\\r``) while a terminal shows it:
    ``LineProgress("building the pack", "clips")``; ``update(done, total)`` redraws it,
    ``end()`` finishes the line with a newline once something was drawn, so what is printed
    next starts on a line of its own (``voice record`` printed ``1/1 clipsvoice 'mine'``).
    Use as a context manager: the line is ended however the work ends."""

    def __init__(self, label: str, unit: str = "", *, stream=None):
        self.label, self.unit = label, unit
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.shown = self.stream.isatty()
        except (AttributeError, ValueError):
            self.shown = False
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        if not self.shown:
            return
        unit = f" {self.unit}" if self.unit else ""
        click.echo(f"\r{self.label}: {done}/{total}{unit}", nl=False, file=self.stream)
        self.drawn = True

    def end(self) -> None:
        if self.drawn:
            click.echo("", file=self.stream)
            self.drawn = False

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.end()
