"""Bounds on the numbers a user can give (options, saved files): one place, so nothing forgets
them.  ``MAX_PAUSE_S`` is the longest silence a reading may ask for: the command line's types
(``reader.cli.bounds``) and ``ReadingSettings`` both check against it, so a session file or a
caller that bypasses the command line meets the same bound."""
from __future__ import annotations

#: the longest 間, 余韻, take or gap, seconds: longer than any club or classroom uses (間 is 1 s
#: in kyogi, 2 s for beginners; a take in --auto mode a few seconds), short enough that a
#: 100-card file stays a few GB at most
MAX_PAUSE_S = 60.0
#: no option of karuta means anything beyond this magnitude
HUGE = 1e9
#: the longest memorisation, minutes (kyogi uses 15)
MAX_MEMORIZE_MIN = 60.0
#: the largest gain a user may ask for a voice pack's clip (``gain_db`` in its voice.toml), in
#: dB either way: 40 dB is 100 times the amplitude, past any level difference between two
#: recordings of one reader (the import brings every clip to one loudness first)
MAX_GAIN_DB = 40.0
#: the largest linear gain a pack's index may store for a clip (loudness matching and the
#: user's gain together): +80 dB lifts a clip 10,000 times, a whisper at the noise floor to
#: speech; past that the index was edited or damaged
MAX_CLIP_GAIN = 1e4


def gain_db_problem(value) -> str | None:
    """Why ``value`` cannot be a gain in dB (None: it can): a finite number within
    ``MAX_GAIN_DB`` either way."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value!r} is not a number"
    if not -MAX_GAIN_DB <= value <= MAX_GAIN_DB:  # nan and inf too
        return (f"{value!r} is out of range (a gain is {-MAX_GAIN_DB:g} to "
                f"+{MAX_GAIN_DB:g} dB)")
    return None


def check_pause_ms(name: str, ms) -> None:
    """A pause in ms must be an integer in [0, MAX_PAUSE_S]; ``KarutaError`` otherwise."""
    from reader.base.errors import KarutaError

    if isinstance(ms, bool) or not isinstance(ms, int):
        raise KarutaError(f"{name} must be a whole number of milliseconds, not {ms!r}")
    if ms < 0:
        raise KarutaError(f"{name} must not be negative")
    if ms > MAX_PAUSE_S * 1000:
        raise KarutaError(f"{name} {ms / 1000:g} s is longer than any reading uses "
                          f"(at most {MAX_PAUSE_S:g} s)")


#: the longest name a person may have (a tournament's player or group, a table's player or
#: NPC), in characters: a full name with a class or school beside it fits ("山田 太郎 (3年2組)"
#: is 13), and so does every sheet, the pairing list, the projector's standings column and a
#: table's lines
NAME_MAX = 40
#: a tournament's title (printed on every page)
TITLE_MAX = 1000


#: how much of a word the user typed a one-line error quotes back
SHOWN_MAX = 40


def shown(word: str) -> str:
    """``word`` quoted for a one-line error: as ``repr`` shows it (a control character as its
    escape), cut after ``SHOWN_MAX`` characters with its length said, so a pasted page or a
    runaway key stays one line."""
    if len(word) <= SHOWN_MAX:
        return repr(word)
    return f"{word[:SHOWN_MAX - 10]!r}… ({len(word)} characters)"


#: the longest run of characters without a space a one-line message shows whole (a path)
RUN_MAX = 300


def bounded(message: str) -> str:
    """``message`` with every run of more than ``RUN_MAX`` characters without a space (a
    value pasted into an option, echoed back) cut, its length said: one line stays a line."""
    import re

    def cut(m: re.Match) -> str:
        run = m.group(0)
        return f"{run[:SHOWN_MAX]}… ({len(run)} characters)"

    return re.sub(r"\S{%d,}" % (RUN_MAX + 1), cut, message)


def check_name(name: str, what: str, where: str = "", error: type | None = None, *,
               limit: int = NAME_MAX) -> str:
    """``name`` as a person's ``what`` ("name", "group"), or one line (``error``, default
    ``KarutaError``; ``where`` it came from, if given, first): no longer than ``NAME_MAX``, no
    control or format characters (an escape sequence would reach the terminal, a bidi
    override the sheets)."""
    import unicodedata

    from reader.base.errors import KarutaError

    error = error or KarutaError
    at = f"{where}: " if where else ""
    if len(name) > limit:
        raise error(f"{at}the {what} {shown(name[:20])}… is {len(name)} characters long "
                    f"(at most {limit})")
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in name):
        raise error(f"{at}the {what} {shown(name)} has a control character in it")
    return name
