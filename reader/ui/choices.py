"""The drills' torifuda to pick from, and how a pick is shown: one way for both drills.

The memory drill and the speed drill's window both lay out a few torifuda, numbered below (the
key that picks each); once a pick is made the right card is framed green and a wrong pick red
(``answer_frames``), and a line says ○ or × in the same colours (``draw_verdict``).  The frames
are the card painter's (``reader.ui.torifuda``), so they are the same width on every card of a
size.
"""
from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RIGHT", "WRONG", "answer_frames", "draw_choices", "draw_verdict"]

#: a pick's frames (and its ○ / ×): the right card, a wrong pick
RIGHT = (60, 170, 90)
WRONG = (200, 60, 50)


def answer_frames(n: int, right: int | None, chosen: int | None) -> list[tuple | None]:
    """The frame of each of ``n`` choices once a pick is made: the right one (index
    ``right``) ``RIGHT``, a wrong pick (index ``chosen``) ``WRONG``, the others none.
    ``right``/``chosen`` None: not among the choices."""
    return [RIGHT if i == right else WRONG if i == chosen else None for i in range(n)]


def draw_choices(surface, rects: Sequence, poems: Sequence[int], font,
                 frames: Sequence | None = None) -> None:
    """The torifuda of ``poems`` in ``rects``, each numbered below in ``font``, framed by
    ``frames`` (``answer_frames``; None: no pick yet)."""
    import pygame

    from reader.ui.torifuda import draw_torifuda
    from reader.ui.window import draw_text

    frames = frames or [None] * len(poems)
    for i, (r, poem, frame) in enumerate(zip(rects, poems, frames)):
        r = pygame.Rect(r)
        draw_torifuda(surface, r, poem, frame=frame)
        draw_text(surface, str(i + 1), font,
                  pygame.Rect(r.left, r.bottom + 6, r.width, font.get_linesize()), center=True)


def draw_verdict(surface, correct: bool, text: str, font, rect) -> None:
    """``○ text`` in ``RIGHT`` or ``× text`` in ``WRONG``, centred in ``rect``."""
    from reader.ui.window import draw_text

    draw_text(surface, f"{'○' if correct else '×'}  {text}".rstrip(), font, rect,
              color=RIGHT if correct else WRONG, center=True)
