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


#: how many set-aside sessions a sessions folder keeps (the newest; an older one is removed,
#: and the line that sets a session aside says which)
KEEP_SET_ASIDE = 10


def _aside_prefix(path: Path) -> str:
    """``previous-`` beside the default ``last.json``; ``NAME-previous-`` beside ``NAME.json``."""
    return "previous-" if path.name == "last.json" else f"{path.stem}-previous-"


def set_aside_sessions(path: Path) -> list[Path]:
    """The sessions set aside beside ``path``, newest first (the old single ``previous.json``
    too, beside the default session)."""
    folder = path.parent
    try:
        found = [p for p in folder.glob(_aside_prefix(path) + "*.json") if p.is_file()]
        if path.name == "last.json" and (folder / "previous.json").is_file():
            found.append(folder / "previous.json")
    except OSError:
        return []
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name), reverse=True)


def describe_session(path: Path) -> str:
    """One line on a saved session: where it stands, its rules, seed and last save; a damaged
    one says so (it is left as it is)."""
    try:
        saved = SessionFile(path).load()
    except KarutaError as e:
        return f"damaged ({str(e).split(' is ', 1)[-1][:80]})"
    n = len(saved["order"])
    state = "finished" if saved["position"] >= n else f"stopped before card {saved['position'] + 1}/{n}"
    rules = saved.get("reading", {}).get("rules", "?")
    when = str(saved.get("updated") or saved.get("started") or "?")[:16].replace("T", " ")
    return f"{state} · {rules} · seed {saved['seed']} · last saved {when}"


def keep_previous(path: Path) -> str:
    """A new session sets the last one aside (an unfinished one is not lost) as
    ``previous-YYYY-MM-DD-HHMMSS.json`` beside it (the time of its last save), keeping the
    newest ``KEEP_SET_ASIDE``; returns the line that says so ("" when nothing was there).  A
    session file that is a link stays in place (the new session is written through it): the
    set-aside file is a copy of what it held."""
    import time

    try:
        mtime = path.stat().st_mtime
    except OSError:
        return ""
    about = describe_session(path)
    stamp = time.strftime("%Y-%m-%d-%H%M%S", time.localtime(mtime))
    target = path.with_name(f"{_aside_prefix(path)}{stamp}.json")
    n = 2
    while target.exists():
        target = path.with_name(f"{_aside_prefix(path)}{stamp}-{n}.json")
        n += 1
    try:
        if os.path.islink(path):
            from reader.base.files import atomic_write_text

            atomic_write_text(target, path.read_text(encoding="utf-8"))
        else:
            os.replace(path, target)
    except (OSError, UnicodeDecodeError, KarutaError):
        return ""
    removed = []
    for old in set_aside_sessions(path)[KEEP_SET_ASIDE:]:
        if old.name == "previous.json":
            continue  # (an older karuta's: the user's to remove)
        try:
            old.unlink()
            removed.append(old.name)
        except OSError:
            pass
    line = (f"the last session ({about}) was set aside as {target}: `karuta read --resume "
            f"--session {target}` continues it; `karuta read --list-sessions` lists them")
    if removed:
        line += (f" (the oldest, {', '.join(removed)}, was removed: the newest "
                 f"{KEEP_SET_ASIDE} are kept)")
    return line
