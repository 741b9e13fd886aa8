"""Shared pygame window helpers for the drills: display detection, a Japanese font, cards.

Who calls what: ``reader.drills.memory_drill`` (memory drill ``--window``) and the speed drill.

  - ``display_available()`` / ``require_display()``: decide *before* importing pygame whether a
    window can be opened; ``require_display`` raises ``DeviceError`` with the one-line message
    ``NO_DISPLAY`` (the CLI prints it and exits 1).
  - ``import_pygame()``: pygame without its greeting on stdout.
  - ``open_window(size, title)``: init pygame's display and return the screen surface
    (a ``DeviceError`` with the same message if SDL still cannot open one).
  - ``font_path()`` / ``load_font(px)``: IPAex Gothic from Debian's fonts-ipaexfont-gothic, else
    the copy bundled with matplotlib-fontja (found without importing matplotlib).
  - cards are drawn by ``reader.ui.torifuda`` (the board, the speed and memory drills).
  - ``draw_text(surface, text, font, rect)``: horizontal text wrapped to a rect (any character
    can break a line: Japanese has no spaces).
  - ``poll_events(clock)``: drain the event queue stamping each event as it is taken off
    (pygame events carry no timestamps).

pygame is imported inside functions so that importing this module stays cheap.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from reader.base.clock import Clock
from reader.base.errors import DeviceError

__all__ = [
    "NO_DISPLAY", "display_available", "require_display", "import_pygame", "open_window", "font_path", "load_font",
    "draw_text", "poll_events", "INK", "PAPER", "BACKGROUND",
]

NO_DISPLAY = "no display for --window: run without --window to drill in the terminal"
IPAEX_PATH = Path("/usr/share/fonts/opentype/ipaexfont-gothic/ipaexg.ttf")

BACKGROUND = (28, 40, 36)
PAPER = (246, 238, 214)
INK = (20, 20, 20)


def display_available(environ: Mapping[str, str] | None = None) -> bool:
    """True if SDL can be expected to open a window.

    On X11/Wayland systems that means ``DISPLAY`` or ``WAYLAND_DISPLAY`` is set, or
    ``SDL_VIDEODRIVER`` names a driver explicitly (``dummy`` in tests).  macOS and Windows always
    have a display.
    """
    env = os.environ if environ is None else environ
    if sys.platform in ("darwin", "win32"):
        return True
    return any(env.get(k) for k in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"))


def require_display(environ: Mapping[str, str] | None = None) -> None:
    if not display_available(environ):
        raise DeviceError(NO_DISPLAY)


#: SDL's drivers that draw into memory and show nothing
_INVISIBLE = ("offscreen", "dummy", "evdev")


def _check_driver(driver: str, environ: Mapping[str, str] | None = None) -> None:
    """When the display named in ``DISPLAY``/``WAYLAND_DISPLAY`` does not answer, SDL falls back
    to a driver that draws into memory: the app would run its whole window loop with nothing on
    the screen.  That is a display that could not be opened (one line), unless the user asked
    for that driver by name (``SDL_VIDEODRIVER``, as the tests' ``dummy``)."""
    import pygame

    env = os.environ if environ is None else environ
    if driver in _INVISIBLE and env.get("SDL_VIDEODRIVER", "").lower() != driver:
        shown = env.get("DISPLAY") or env.get("WAYLAND_DISPLAY") or "?"
        pygame.display.quit()
        raise pygame.error(f"the display {shown} did not answer: SDL fell back to its "
                           f"{driver!r} driver, which shows nothing")


def import_pygame():
    """``import pygame`` without its greeting on stdout (stdout is the drill's transcript)."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    return pygame


def open_window(size: tuple[int, int], title: str, resizable: bool = False):
    """Open the window (``resizable``: the user may resize or maximise it); returns the
    pygame screen surface."""
    require_display()
    # the window's pixels go to X by shared memory, not through an OpenGL texture: where GL is
    # a software rasterizer (Xvfb, VMs, machines without a GPU driver) a 1280x720 flip costs
    # ~7 ms of CPU that way against ~0.5 ms (measured on Xvfb), and input waits for it.  A user
    # can still ask for GL with SDL_FRAMEBUFFER_ACCELERATION=1.
    os.environ.setdefault("SDL_FRAMEBUFFER_ACCELERATION", "software")
    pygame = import_pygame()

    try:
        pygame.display.init()
        _check_driver(pygame.display.get_driver())
        pygame.font.init()
        screen = pygame.display.set_mode(size, pygame.RESIZABLE if resizable else 0)
    except pygame.error as e:
        raise DeviceError(f"{NO_DISPLAY} ({e})") from None
    pygame.display.set_caption(title)
    return screen


def font_path() -> str | None:
    """A font file with Japanese glyphs, or None if neither source is installed."""
    if IPAEX_PATH.is_file():
        return str(IPAEX_PATH)
    import importlib.util

    spec = importlib.util.find_spec("matplotlib_fontja")
    if spec and spec.submodule_search_locations:
        for base in spec.submodule_search_locations:
            p = Path(base) / "fonts" / "ipaexg.ttf"
            if p.is_file():
                return str(p)
    return None


@lru_cache(maxsize=32)
def load_font(px: int):
    """A pygame Font of ``px`` pixels with Japanese glyphs (DeviceError if there is none)."""
    import pygame

    if not pygame.font.get_init():
        pygame.font.init()
    path = font_path()
    if path is None:
        raise DeviceError(
            "no Japanese font for the window: install fonts-ipaexfont-gothic or matplotlib-fontja")
    return pygame.font.Font(path, px)


def draw_text(surface, text: str, font, rect, color=PAPER, *, center: bool = False) -> int:
    """Draw ``text`` wrapped into ``rect``; returns the height used (px)."""
    import pygame

    rect = pygame.Rect(rect)
    lines: list[str] = []
    for para in text.split("\n"):
        cur = ""
        for ch in para:
            if cur and font.size(cur + ch)[0] > rect.width:
                lines.append(cur)
                cur = ch.lstrip("　 ")
            else:
                cur += ch
        lines.append(cur)
    y = rect.top
    for ln in lines:
        img = font.render(ln, True, color)
        x = rect.centerx - img.get_width() // 2 if center else rect.left
        surface.blit(img, (x, y))
        y += font.get_linesize()
    return y - rect.top


def poll_events(clock: Clock) -> list[tuple[float, object]]:
    """Drain pygame's queue: ``[(stamp_ms, event), ...]``, stamped as taken off the queue
    (``clock``: a ``reader.base.clock.Clock``, its ``ms()``)."""
    import pygame

    return [(clock.ms(), ev) for ev in pygame.event.get()]
