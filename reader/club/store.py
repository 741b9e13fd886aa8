"""The saved club session: one JSON file, written atomically after every card.

``SessionFile`` saves and loads it; ``validate_session`` checks a loaded one and upgrades an
older version, so a session saved by an earlier karuta still resumes.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from reader.base.clock import SYSTEM_CLOCK, Clock
from reader.base.dirs import data_dir as default_data_dir
from reader.base.errors import KarutaError, LogError
from reader.reading.settings import settings_from_dict, settings_from_options

SESSION_KIND = "karuta-club-session"
SESSION_VERSION = 2


class SessionError(LogError):
    """A missing, corrupt or mismatched session file (one line; the file is left alone)."""


def default_session_path() -> Path:
    return default_data_dir() / "sessions" / "last.json"


def now_iso(clock: Clock = SYSTEM_CLOCK) -> str:
    return clock.now().astimezone().isoformat(timespec="seconds")


class SessionFile:
    """The saved session: JSON, written atomically (``reader.base.files.atomic_write_text``).

    Version 2: ``{"kind", "version", "reading" (``ReadingSettings.to_dict()``), "seed",
    "voice_spec" (the voice asked for: a pack name, ``synth``, ``tone`` or null for the
    default), "rules", "order", "total", "position", "finished", "log": [{"card", "poem",
    "kimariji", "kimariji_sound", "karafuda", "again", "time"}], "voice" (the voice's name),
    "memorize_min", "auto", "started", "updated"}`` and, when ``--next-keys`` / ``--back-keys``
    were given, ``"keys": {"next": [key names], "back": [key names]}`` (a pedal's mapping
    resumes with the session; absent: the default keys).  The reading is saved as settings, not as
    command-line option names, so renaming an option never breaks ``--resume``.  Version 1
    (``"options"``: the option names of the first release) is still read: ``upgrade_v1``.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def save(self, data: dict) -> None:
        from reader.base.errors import OutputError
        from reader.base.files import atomic_write_text

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"cannot write session {self.path}: {e.strerror or e}") from None
        atomic_write_text(self.path, json.dumps(data, ensure_ascii=False, indent=1))

    def load(self) -> dict:
        from reader.base.statefiles import StateFileError, parse_json, read_text

        p = self.path
        if not p.exists():
            raise SessionError(f"no saved session at {p}: start one with `karuta read --live`")
        try:
            data = parse_json(read_text(p, "session"), "session", str(p))
        except FileNotFoundError:
            raise SessionError(f"no saved session at {p}: start one with `karuta read --live`") from None
        except StateFileError as e:
            raise SessionError(f"{e}; it was left as it is") from None
        return validate_session(data, p)


def validate_session(data, p) -> dict:
    """A loaded session, checked and upgraded to the current version (one-line
    ``SessionError`` naming the file otherwise; the file itself is never changed here)."""
    def bad(why: str):
        raise SessionError(f"session {p} is corrupt ({why}); it was left as it is")

    from reader.base.statefiles import StateFileError, check

    if not isinstance(data, dict) or data.get("kind") != SESSION_KIND:
        bad("not a karuta session")
    if data.get("version") not in (1, SESSION_VERSION):
        raise SessionError(f"session {p} has version {data.get('version')!r}; this karuta reads "
                           f"versions 1 and {SESSION_VERSION}")
    if data.get("version") == 1 and not isinstance(data.get("options"), dict):
        bad("options missing")
    try:
        check(data, "session", "session", str(p))  # every field's shape (reader.base.statefiles)
    except StateFileError as e:
        raise SessionError(f"{e}; it was left as it is") from None
    if data.get("version") == 1:
        data = upgrade_v1(data, bad)
    reading, order, pos, log = data.get("reading"), data.get("order"), data.get("position"), data.get("log")
    if not isinstance(reading, dict):
        bad("reading settings missing")
    try:
        settings_from_dict(reading)
    except KarutaError as e:
        bad(str(e))
    if not isinstance(order, list) or not order or not all(isinstance(n, int) and 1 <= n <= 100 for n in order):
        bad("order missing")
    if not isinstance(pos, int) or not 0 <= pos <= len(order):
        bad("position out of range")
    if not isinstance(log, list) or not all(isinstance(e, dict) and isinstance(e.get("poem"), int) for e in log):
        bad("read log")
    if not isinstance(data.get("seed"), int):
        bad("seed missing")
    if data.get("voice_spec") is not None and not isinstance(data["voice_spec"], str):
        bad("voice")
    if data.get("keys") is not None:
        from reader.ui.keys import KeyBindings

        try:
            KeyBindings.from_dict(data["keys"])
        except KarutaError as e:
            bad(str(e))
    return data


#: the reading options a version-1 session saved (the first release's option names)
V1_OPTION_NAMES = ("rules", "seed", "cards", "poems_spec", "colors", "karafuda", "ma", "yoin",
                   "take", "gap", "speed", "joka", "last_shimo", "voice_spec")


def upgrade_v1(data: dict, bad) -> dict:
    """A version-1 session as version 2: its option values become reading settings the same
    way the command line's do."""
    opts = data.get("options")
    if not isinstance(opts, dict) or any(k not in opts for k in V1_OPTION_NAMES):
        bad("options missing")
    values = {k: opts[k] for k in V1_OPTION_NAMES if k not in ("seed", "voice_spec")}
    values["colors"] = tuple(values["colors"] or ())
    try:
        settings = settings_from_options(**values)
    except (KarutaError, TypeError, ValueError) as e:
        bad(f"options: {e}")
    out = {k: v for k, v in data.items() if k != "options"}
    out.update(version=SESSION_VERSION, reading=settings.to_dict(), voice_spec=opts["voice_spec"])
    return out


def load_session(path: Path | str | None) -> tuple[SessionFile, dict]:
    sf = SessionFile(path or default_session_path())
    return sf, sf.load()


def keep_previous(path: Path) -> None:
    """A new session keeps the last one as previous.json (an unfinished one is not lost).
    A session file that is a link stays in place (the new session is written through it):
    previous.json gets a copy of what it held."""
    previous = path.with_name("previous.json")
    if os.path.islink(path):
        from reader.base.files import atomic_write_text

        try:
            atomic_write_text(previous, path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, KarutaError):
            pass
        return
    try:
        os.replace(path, previous)
    except OSError:
        pass
