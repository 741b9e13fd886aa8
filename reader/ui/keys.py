"""Single-key input from the terminal, without blocking the caller for long.

``KeyReader`` puts a tty into cbreak mode (keys arrive one at a time, no echo) and restores it
on exit, also on Ctrl-C.  On a pipe (tests, scripts) it reads characters as they come.  Each key
is stamped with the clock's ``ns()`` as it is taken in (grab timing needs that; the clock is
passed in, ``reader.base.clock.SYSTEM_CLOCK`` by default: the monotonic clock input is stamped on).

    with KeyReader() as keys:
        key = keys.get(timeout=0.02)   # -> Key(char, ns) or None
"""
from __future__ import annotations

import os
import select
import sys
import time
from dataclasses import dataclass

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.errors import KarutaError


@dataclass(frozen=True)
class Key:
    char: str
    ns: int  # the clock's ns() when taken in


class KeyReader:
    def __init__(self, stream=None, clock: Clock = SYSTEM_CLOCK):
        self.clock = clock
        self.stream = stream if stream is not None else sys.stdin
        self.fd: int | None = None
        self._saved = None
        self.closed = False
        self._pending = b""

    def __enter__(self) -> "KeyReader":
        try:
            self.fd = self.stream.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None  # an in-memory stream: read line by line (``_from_lines``)
            self.closed = not hasattr(self.stream, "readline")
            return self
        if os.isatty(self.fd):
            import termios
            import tty

            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            self._saved = None

    def get(self, timeout: float = 0.0) -> Key | None:
        """The next key, or None after ``timeout`` seconds (0 = just look)."""
        if self.fd is None and not self.closed and hasattr(self.stream, "readline"):
            return self._from_lines()
        if self.closed or self.fd is None:
            if timeout:
                time.sleep(timeout)
            return None
        if not self._pending:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                return None
            data = os.read(self.fd, 64)
            if not data:  # end of input (a pipe closed): no more keys
                self.closed = True
                return None
            self._pending = data
        ns = self.clock.ns()
        # decode one UTF-8 character
        for n in range(1, 5):
            try:
                ch = self._pending[:n].decode("utf-8")
            except UnicodeDecodeError:
                continue
            self._pending = self._pending[n:]
            return Key(ch, ns)
        self._pending = self._pending[1:]
        return None


    def _from_lines(self) -> Key | None:
        """Keys from a stream without a file descriptor (tests): one line at a time."""
        if not self._pending:
            line = self.stream.readline()
            if not line:
                self.closed = True
                return None
            self._pending = line.encode("utf-8")
        ch = self._pending.decode("utf-8")[0]
        self._pending = self._pending[len(ch.encode("utf-8")):]
        return Key(ch, self.clock.ns())


# ---------------------------------------------------------------------------- key names and bindings
#: named keys for ``--next-keys`` / ``--back-keys`` (any other key: its one character) and
#: how the screen shows them
KEY_NAMES = {"space": "space", "enter": "Enter", "tab": "Tab", "backspace": "BS",
             "pagedown": "PgDn", "pageup": "PgUp", "right": "→", "left": "←", "up": "↑",
             "down": "↓", "comma": ","}
KEY_ALIASES = {"return": "enter", "pgdn": "pagedown", "pgup": "pageup", "bs": "backspace",
               ",": "comma", " ": "space"}
DEFAULT_NEXT_KEYS = "space,enter,pagedown,right"
DEFAULT_BACK_KEYS = "b,left,backspace,pageup"
#: keys whose meaning is fixed (the pedal options cannot take them)
FIXED_KEYS = {"p": "hold", "h": "hold", "r": "repeat", "q": "quit", "s": "skip"}

#: terminal input -> key name (characters; escape sequences after ESC)
_CHAR_NAMES = {" ": "space", "\r": "enter", "\n": "enter", "\t": "tab", "\x7f": "backspace",
               "\x08": "backspace", ",": "comma", "\x03": "ctrl-c", "\x04": "ctrl-d"}
_ESCAPE_NAMES = {"[C": "right", "OC": "right", "[D": "left", "OD": "left", "[A": "up",
                 "OA": "up", "[B": "down", "OB": "down", "[6~": "pagedown", "[5~": "pageup"}


def parse_keys(spec: str, option: str) -> tuple[str, ...]:
    """``"space,enter,n"`` -> canonical key names (a letter stands for both cases).  One-line
    ``KarutaError`` for an unknown name or an empty list."""
    out: list[str] = []
    for raw in spec.split(","):
        word = raw.strip()
        if not word:
            continue
        name = KEY_ALIASES.get(word.lower(), word.lower())
        if name not in KEY_NAMES and not (len(name) == 1 and name.isprintable()):
            raise KarutaError(f"{option} {spec!r}: unknown key {word!r} (use "
                              f"{', '.join(KEY_NAMES)} or one character)")
        if name not in out:
            out.append(name)
    if not out:
        raise KarutaError(f"{option} {spec!r}: name at least one key, e.g. {option} space,n")
    return tuple(out)


@dataclass(frozen=True)
class KeyBindings:
    """Which keys mean next and back (the other commands have fixed keys: ``FIXED_KEYS``)."""

    next: tuple[str, ...]
    back: tuple[str, ...]

    def command(self, name: str | None) -> str | None:
        """A key name (``_CHAR_NAMES`` / ``_ESCAPE_NAMES`` / one lower-case character) ->
        the command, or None."""
        if name is None:
            return None
        if name in self.next:
            return "next"
        if name in self.back:
            return "back"
        return FIXED_KEYS.get(name)

    def to_dict(self) -> dict:
        """The saved form (a club session keeps its pedal's keys for ``--resume``)."""
        return {"next": list(self.next), "back": list(self.back)}

    @classmethod
    def from_dict(cls, data) -> KeyBindings:
        """Bindings saved by ``to_dict``, checked as the options are (one-line
        ``KarutaError``)."""
        if not isinstance(data, dict) or not all(
                isinstance(data.get(k), list) and all(isinstance(n, str) for n in data[k])
                for k in ("next", "back")):
            raise KarutaError("saved keys: not a next/back list")
        return key_bindings(",".join(data["next"]), ",".join(data["back"]))

    def help(self) -> str:
        def show(names):
            return "/".join(KEY_NAMES.get(n, n) for n in names)

        return (f"{show(self.next)} next · p/h hold · r repeat 下の句 · {show(self.back)} back a "
                f"card · q quit (saved)")


def key_bindings(next_spec: str | None = None, back_spec: str | None = None) -> KeyBindings:
    """The bindings from ``--next-keys`` / ``--back-keys`` (None: the default set).  A key in
    both sets given explicitly is refused (one line); a set left at its default gives up the
    keys the other option names (``--next-keys b`` frees ``b`` from back).  The fixed keys
    (p h r q s) cannot be taken."""
    nxt = parse_keys(next_spec if next_spec is not None else DEFAULT_NEXT_KEYS, "--next-keys")
    back = parse_keys(back_spec if back_spec is not None else DEFAULT_BACK_KEYS, "--back-keys")
    both = [k for k in nxt if k in back]
    if both and next_spec is not None and back_spec is not None:
        raise KarutaError(f"key {both[0]!r} is in both --next-keys and --back-keys: give each "
                          "key one meaning")
    if next_spec is None:
        nxt = tuple(k for k in nxt if k not in back)
    else:
        back = tuple(k for k in back if k not in nxt)
    for option, other, keys in (("--next-keys", "--back-keys", nxt),
                                ("--back-keys", "--next-keys", back)):
        taken = [k for k in keys if k in FIXED_KEYS]
        if taken:
            raise KarutaError(f"{option}: {taken[0]!r} already means {FIXED_KEYS[taken[0]]}")
        if not keys:
            raise KarutaError(f"{other} took every default key of {option}: give {option} too")
    return KeyBindings(nxt, back)


DEFAULT_KEYS = key_bindings()


def key_name(char: str) -> str | None:
    """A character from the terminal -> its key name (None for ESC or a control key)."""
    if char in _CHAR_NAMES:
        return _CHAR_NAMES[char]
    if len(char) == 1 and char.isprintable():
        return char.lower()
    return None


def read_key_name(keys, timeout: float = 0.01) -> str | None:
    """The next key from a ``KeyReader`` as a key name: ``space``, ``enter``, ``right``,
    ``pagedown`` (escape sequences decoded), ``ctrl-c``, or the lower-case character; None
    when no key came (or a lone ESC / an unknown sequence).  The one escape decoder."""
    key = keys.get(timeout=timeout)
    if key is None:
        return None
    if key.char != "\x1b":
        return key_name(key.char)
    seq = ""
    while len(seq) < 6:
        nxt = keys.get(timeout=0.03)
        if nxt is None:
            break
        seq += nxt.char
        if len(seq) >= 2 and (seq[-1].isalpha() or seq[-1] == "~"):
            break
    return _ESCAPE_NAMES.get(seq)


def read_command(keys, timeout: float = 0.01, bindings: KeyBindings = DEFAULT_KEYS) -> str | None:
    """The next key from a ``KeyReader`` as a club command (``bindings``)."""
    return bindings.command(read_key_name(keys, timeout))
