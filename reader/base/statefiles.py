"""Every file karuta reads back (its own state, or a file a user hands it) is read here.

One place: read the bytes, decode, parse, and check the shape against a schema (JSON Schema,
``fastjsonschema``), so a damaged file — truncated, garbage, not UTF-8, absurdly nested, the right
syntax with the wrong shapes or types, numbers out of any sane range — is ONE
``StateFileError`` naming the file and what is wrong, never a traceback further on.  The file
itself is never touched here; callers decide: refuse with that line (a session, a match log,
a deal, a voice pack index), or rebuild (a cache entry).

    kind            file                                            reader
    session         data/sessions/*.json (club reading)             reader.club.SessionFile
    match-line      each line of a match log (.jsonl)               reader.match.log.loads
    deal            --deal FILE (match keep)                        reader.match.keeper._read_deal
    pack-index      data/voices/NAME/pack.json                      audio.pack.VoicePack
    pack-manifest   voice.toml in a source folder or a pack          audio.pack.read_manifest
    default-voice   config/voice.toml (``karuta voice use``)        audio.pack.default_voice_name
    calibration     config/calibration.json                         reader.drills.calibrate
    synth-script    cache/scripts/*.json (synthesized voice)        audio.synth
    stats rows      rows of the stats database's tables             reader.drills.stats_salvage (``STATS_ROWS``)
    tournament-meta the ``meta`` table of a tournament file         reader.tournament.integrity

``tests/test_statefiles.py`` asserts that no other module parses JSON or TOML from a file, so
a new state file cannot skip this.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from reader.base.errors import KarutaError, LogError, OutputError
from reader.base.files import READ_MAX, read_bounded
from reader.base.limits import MAX_CLIP_GAIN, TITLE_MAX

#: the deepest nesting a TOML file may have (karuta's have 2); deeper is damage, refused
#: before parsing (tomllib recurses per level).  JSON too deep for the json module's own
#: recursion guard is refused from its RecursionError; shallower odd nesting fails the schema.
MAX_DEPTH = 32
#: the largest state file read whole (a 100-card session is ~30 kB, a pack index ~400 kB):
#: the bound every file karuta reads whole has
MAX_BYTES = READ_MAX


class StateFileError(LogError):
    """A state file that cannot be used as it is (the message names it; it is left alone)."""


# ---------------------------------------------------------------------------- schemas
_INT = {"type": "integer"}
_POEM = {"type": "integer", "minimum": 1, "maximum": 100}
_SECONDS = {"type": ["number", "null"], "minimum": 0, "maximum": 60}  # limits.MAX_PAUSE_S
_STR_OR_NULL = {"type": ["string", "null"]}
_MS = {"type": "integer", "minimum": 0, "maximum": 60_000}  # limits.MAX_PAUSE_S, in ms
_BOOL_OR_NULL = {"type": ["boolean", "null"]}
#: a game's or reading preset's name: only its shape here; which names exist is the games'
#: (``reader.match.rules.games``, ``reader.reading.settings.READINGS``), checked where read
_NAME = {"type": "string", "maxLength": 40}

SCHEMAS: dict[str, dict] = {
    "session": {
        "type": "object",
        # version 2 saves the reading settings; version 1 (still read) the CLI's option names
        "required": ["kind", "version", "order", "position", "log", "seed"],
        "if": {"properties": {"version": {"const": 1}}},
        "then": {"required": ["options"]},
        "else": {"required": ["reading"]},
        "properties": {
            "kind": {"const": "karuta-club-session"},
            "version": {"enum": [1, 2]},
            "voice_spec": _STR_OR_NULL,
            "reading": {
                "type": "object",
                "required": ["rules"],
                "properties": {
                    "rules": _NAME,
                    "ma_ms": _MS, "yoin_ms": _MS, "take_ms": _MS, "gap_ms": _MS, "joka_gap_ms": _MS,
                    "speed": {"type": "number", "minimum": 0.25, "maximum": 4},
                    "cards": {"type": ["integer", "null"], "minimum": 1, "maximum": 100},
                    "poems": {"type": ["array", "null"], "maxItems": 100, "items": _POEM},
                    "karafuda": {"type": "integer", "minimum": 0, "maximum": 100},
                    "joka": {"type": "boolean"}, "last_shimo": {"type": "boolean"},
                },
            },
            "seed": _INT,
            "rules": _NAME,
            "voice": _STR_OR_NULL,
            "options": {
                "type": "object",
                "required": ["rules", "seed", "cards", "poems_spec", "colors", "karafuda", "ma",
                             "yoin", "take", "gap", "speed", "joka", "last_shimo", "voice_spec"],
                "properties": {
                    "rules": _NAME,
                    "seed": _INT,
                    "cards": {"type": ["integer", "null"], "minimum": 1, "maximum": 100},
                    "poems_spec": _STR_OR_NULL,
                    "colors": {"type": ["array", "null"], "items": {"type": "string"}},
                    "karafuda": {"type": ["integer", "null"], "minimum": 0, "maximum": 100},
                    "ma": _SECONDS, "yoin": _SECONDS, "take": _SECONDS, "gap": _SECONDS,
                    "speed": {"type": ["number", "null"], "minimum": 0.25, "maximum": 4},
                    "joka": _BOOL_OR_NULL, "last_shimo": _BOOL_OR_NULL,
                    "voice_spec": _STR_OR_NULL,
                },
            },
            "order": {"type": "array", "minItems": 1, "maxItems": 100, "items": _POEM},
            "total": _INT,
            "position": {"type": "integer", "minimum": 0},
            "finished": {"type": "boolean"},
            "auto": {"type": "boolean"},
            "memorize_min": {"type": "number", "minimum": 0},
            "log": {"type": "array", "items": {
                "type": "object", "required": ["poem"],  # the card: _session_consistent
                "properties": {"poem": _POEM, "card": {"type": "integer", "minimum": 1},
                               "kimariji": {"type": "string"},
                               "kimariji_sound": {"type": "string"},
                               "karafuda": {"type": "boolean"}, "again": {"type": "boolean"},
                               "time": {"type": "string"}}}},
            "started": _STR_OR_NULL,
            "updated": _STR_OR_NULL,
        },
    },
    # one line of a match log: the header (first line) or a read; the rules' parsers check
    # the meaning (who may take what), this only the shape
    "match-line": {"type": "object"},
    "deal": {
        "type": "object",
        "properties": {
            "rules": _NAME,
            "A": {"type": "array", "items": _POEM}, "B": {"type": "array", "items": _POEM},
            "C": {"type": "array", "items": _POEM}, "color": {"type": "string"},
        },
    },
    "pack-index": {
        "type": "object",
        "required": ["clips"],
        "properties": {
            "name": {"type": "string"},
            "clips": {"type": "object", "additionalProperties": {
                "type": "object", "required": ["frames", "file"],
                "properties": {
                    "frames": {"type": "integer", "minimum": 1, "maximum": 48000 * 600},
                    "gain": {"type": "number", "minimum": 0, "maximum": MAX_CLIP_GAIN},
                    "file": {"type": "string", "minLength": 1},
                    "timeline": {"type": "object", "properties": {
                        "confidence": {"type": "number"}, "method": {"type": "string"},
                        "morae": {"type": "array", "items": {
                            "type": "array", "minItems": 3, "maxItems": 3,
                            "items": [{"type": "string"}, {"type": "integer", "minimum": 0},
                                      {"type": "integer", "minimum": 0}]}}}},
                },
            }},
        },
    },
    "pack-manifest": {"type": "object"},  # fields checked one by one (audio.pack.read_manifest)
    "default-voice": {
        "type": "object",
        "properties": {"default": {"type": "string", "minLength": 1, "maxLength": 200}},
    },
    "calibration": {
        "type": "object",
        "required": ["devices"],
        "properties": {"devices": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["offset_ms"],
            "properties": {"offset_ms": {"type": "number", "minimum": -5000, "maximum": 5000}}}}},
    },
    # a tournament file's settings (its other tables: reader.tournament.integrity)
    "tournament-meta": {
        "type": "object",
        "required": ["format", "version", "rounds", "colors", "mix_groups", "third_place",
                     "seed", "title"],
        "properties": {
            "format": {"const": "karuta-tournament"},
            "version": {"type": "integer", "minimum": 1},
            "rounds": {"type": "integer", "minimum": 1, "maximum": 20},
            "colors": {"type": "array", "minItems": 1, "maxItems": 64, "items": {
                "enum": ["blue", "pink", "yellow", "green", "orange"]}},
            "mix_groups": {"type": "boolean"},
            "third_place": {"type": "boolean"},
            "seed": _INT,
            "title": {"type": "string", "maxLength": TITLE_MAX},
            # (settings added later: a file without them is read with their old defaults)
            "reads": {"type": "integer", "minimum": 1, "maximum": 20},
            "color_policy": {"enum": ["one", "each-round", "given"]},
        },
    },
    "synth-script": {
        "type": "object",
        "required": ["labels", "kana", "mora_phones", "ku_end", "pau_after", "respelled", "seal"],
        "properties": {
            "labels": {"type": "array", "minItems": 2, "items": {"type": "string"}},
            "kana": {"type": "array", "items": {"type": "string"}},
            "mora_phones": {"type": "array", "items": {
                "type": "array", "minItems": 1, "maxItems": 3,
                "items": {"type": "integer", "minimum": 0}}},
            "ku_end": {"type": "array", "items": {"type": "boolean"}},
            "pau_after": {"type": "array", "items": {"type": "integer", "minimum": -1}},
            "respelled": {"type": "integer", "minimum": 0},
            "seal": {"type": "string"},
        },
    },
}


# ---------------------------------------------------------------------------- reading
def read_text(path: Path | str, what: str) -> str:
    """The file's text (UTF-8, a BOM allowed); ``FileNotFoundError`` passes through (callers
    have their own "not there yet" answer); any other failure is one ``StateFileError``."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise StateFileError(f"{what} {path} is {size // 2**20} MiB: too large to be one")
        return read_bounded(path, MAX_BYTES).decode("utf-8-sig")
    except FileNotFoundError:
        raise
    except UnicodeDecodeError as e:
        raise StateFileError(f"{what} {path} is damaged (not UTF-8 text at byte {e.start})") from None
    except IsADirectoryError:
        raise StateFileError(f"{what} {path} is a folder, not a file") from None
    except OSError as e:
        raise StateFileError(f"cannot read {what} {path}: {e.strerror or e}") from None


def decode_json(text: str) -> Any:
    """JSON from ``text``, or ``ValueError`` whose ``msg`` says why (also for nesting deeper
    than ``MAX_DEPTH`` and for NaN/Infinity, which JSON does not have)."""
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise _Bad("nested too deep") from None
    except ValueError as e:
        raise _Bad(" ".join(str(e).split())[:80]) from None
    return obj


class _Bad(ValueError):
    def __init__(self, msg: str):
        super().__init__(msg)
        self.msg = msg
        self.lineno = None


def parse_json(text: str, what: str, name: str) -> Any:
    """JSON from ``text``; damage is one ``StateFileError`` naming ``name`` (file, line)."""
    try:
        return decode_json(text)
    except ValueError as e:
        line = f"line {e.lineno}: " if getattr(e, "lineno", None) else ""
        raise StateFileError(f"{what} {name} is damaged ({line}{getattr(e, 'msg', e)})") from None


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _too_deep(text: str) -> bool:
    """Whether brackets nest deeper than ``MAX_DEPTH`` (strings skipped; a cheap scan)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    depth = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False


_VALIDATORS: dict[str, Any] = {}


def _validator(kind: str):
    """The schema of ``kind`` compiled to Python once (``fastjsonschema``, draft 7)."""
    return compiled(kind, SCHEMAS[kind])


def compiled(name: str, schema: dict):
    """``schema`` compiled to a Python validator once per ``name`` (``fastjsonschema``)."""
    v = _VALIDATORS.get(name)
    if v is None:
        import fastjsonschema

        v = _VALIDATORS[name] = fastjsonschema.compile(schema)
    return v


def check(obj: Any, kind: str, what: str, name: str) -> Any:
    """``obj`` if it has the shape of ``kind``; else one ``StateFileError`` saying where."""
    import fastjsonschema

    try:
        _validator(kind)(obj)
    except fastjsonschema.JsonSchemaValueException as e:
        msg = " ".join(str(e.message).split())
        msg = msg[5:] if msg.startswith("data.") else ("the top level" + msg[4:]
                                                        if msg.startswith("data ") else msg)
        if len(msg) > 100:
            msg = msg[:97] + "..."
        raise StateFileError(f"{what} {name} is damaged ({msg})") from None
    except RecursionError:
        raise StateFileError(f"{what} {name} is damaged (nested too deep)") from None
    extra = _EXTRA.get(kind)
    why = extra(obj) if extra else None
    if why:
        raise StateFileError(f"{what} {name} is damaged ({why})")
    return obj


def seal(d: dict) -> dict:
    """``d`` with a checksum of its content (``"seal"``): a cache entry whose values were
    changed into other valid-looking values is found too (``check`` refuses it).  Tuples
    become lists first, as they will be when the file is read back."""
    d = json.loads(json.dumps(d, ensure_ascii=False))
    return dict(d, seal=_digest(d))


def _digest(d: dict) -> str:
    import hashlib

    body = json.dumps({k: v for k, v in d.items() if k != "seal"}, sort_keys=True,
                      ensure_ascii=False)
    return hashlib.sha1(body.encode()).hexdigest()


def _synth_script_consistent(d: dict) -> str | None:
    if d.get("seal") != _digest(d):
        return "its checksum does not match its content"
    n = len(d["mora_phones"])
    if not (len(d["kana"]) == len(d["ku_end"]) == len(d["pau_after"]) == n):
        return "per-mora lists of different lengths"
    labels = len(d["labels"])
    if any(i >= labels for ph in d["mora_phones"] for i in ph) or \
            any(i >= labels for i in d["pau_after"]):
        return "a phoneme index past the labels"
    return None


def _session_consistent(d: dict) -> str | None:
    if d["position"] > len(d["order"]):
        return "position out of range"
    if "options" in d and d["options"]["seed"] != d["seed"]:
        return "two different seeds"
    order = d["order"]
    for i, e in enumerate(d["log"], 1):  # each line of the read log is a card of the order
        card = e.get("card")
        if card is None:
            return f"read log line {i} has no card number"
        if card > len(order):
            return f"read log line {i}: card {card} of {len(order)}"
        if order[card - 1] != e["poem"]:
            return (f"read log line {i}: card {card} is poem {order[card - 1]}, "
                    f"the log says {e['poem']}")
    return None


_EXTRA = {"synth-script": _synth_script_consistent, "session": _session_consistent}


def load_json(path: Path | str, kind: str, what: str) -> Any:
    """Read, parse and check a JSON state file of ``kind`` (see the module table)."""
    path = Path(path)
    return check(parse_json(read_text(path, what), what, str(path)), kind, what, str(path))


def load_toml(path: Path | str, kind: str, what: str) -> dict:
    """Read, parse and check a TOML file of ``kind``."""
    path = Path(path)
    return parse_toml(read_text(path, what), kind, what, path)


def parse_toml(text: str, kind: str, what: str, path: Path | str) -> dict:
    """Parse and check ``text``, a TOML file of ``kind`` (``path``: its name in the lines)."""
    import tomllib

    if _too_deep(text):
        raise StateFileError(f"{what} {path} is damaged (nested deeper than {MAX_DEPTH} levels)")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StateFileError(f"{what} {path} is damaged ({' '.join(str(e).split())})") from None
    except RecursionError:
        raise StateFileError(f"{what} {path} is damaged (nested too deep)") from None
    return check(data, kind, what, str(path))


# ---------------------------------------------------------------------------- stats rows
#: the stats database's rows: table -> column checks (value -> bool), in column order.
#: SQLite keeps any type in any column, and a damaged page can read back as anything; rows
#: that fail are skipped (``reader.drills.stats_salvage``, ``reader.drills.stats`` readers).
_INT = lambda v: isinstance(v, int)  # noqa: E731
_TEXT = lambda v: isinstance(v, str)  # noqa: E731
_POEM = lambda v: isinstance(v, int) and 1 <= v <= 100  # noqa: E731
_REAL_OR_NULL = lambda v: v is None or (isinstance(v, (int, float)) and v == v)  # noqa: E731
_INT_OR_NULL = lambda v: v is None or isinstance(v, int)  # noqa: E731
_TEXT_OR_NULL = lambda v: v is None or isinstance(v, str)  # noqa: E731


def _ISO(v) -> bool:
    from datetime import datetime

    try:
        return isinstance(v, str) and datetime.fromisoformat(v) is not None
    except ValueError:
        return False


STATS_ROWS = {
    "sessions": {"id": _TEXT, "kind": _TEXT, "started": _ISO, "settings": _TEXT_OR_NULL},
    "taps": {"id": _INT, "session": _TEXT, "poem": _POEM, "ts": _ISO, "kimariji": _TEXT,
             "reaction_ms": _REAL_OR_NULL, "from_kami_ms": _REAL_OR_NULL, "correct": _INT,
             "anticipation": _INT, "fault": _INT},
    "reviews": {"id": _INT, "session": _TEXT, "poem": _POEM, "ts": _ISO, "mode": _TEXT,
                "correct": _INT, "response_ms": _REAL_OR_NULL, "rating": _INT,
                "chosen": _INT_OR_NULL},
    "memory": {"poem": _POEM, "state": _TEXT, "due": _ISO, "stability": _REAL_OR_NULL,
               "card": _TEXT, "updated": _ISO},
}


def row_ok(table: str, row: tuple) -> bool:
    """Whether a row (in ``STATS_ROWS[table]``'s column order) has the types it should."""
    return all(ok(v) for ok, v in zip(STATS_ROWS[table].values(), row))


def remove_quietly(path: Path | str) -> None:
    """Drop a damaged *cache* entry (never a user's file) so it is rebuilt."""
    try:
        os.unlink(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------- outputs
#: the SQLite files karuta keeps, told apart by their tables
_OUR_DATABASES = (
    ({"meta", "players", "rounds", "tables", "seats", "entries"}, "a karuta tournament file"),
    ({"sessions", "taps", "reviews", "memory"}, "a karuta stats database"),
)
#: karuta's text state files, told apart by how they begin (the first 4 KiB)
_OUR_TEXT = (
    (r'^\s*\{\s*"rules"\s*:\s*"(?:kyogi|goshiki)"[^\n]*"practice"\s*:', "a practice log"),
    (r'^\s*\{\s*"rules"\s*:\s*"(?:kyogi|goshiki)"', "a match log"),
    (r'^\s*\{\s*"kind"\s*:\s*"karuta-club-session"', "a club reading session"),
    (r'^\s*\{\s*"karuta_table"\s*:', "a table save"),
    (r"^karuta table \w+, seed ", "a table save's log"),
    (r'^\s*\{\s*"devices"\s*:', "the calibration file"),
    (r'^\s*\{\s*"clips"\s*:', "a voice pack index"),
)
_SQLITE_MAGIC = b"SQLite format 3\x00"


def state_file_kind(path: Path | str) -> str | None:
    """What ``path`` is, if it is one of the files karuta keeps (or any SQLite database, or
    SQLite's journal of one): e.g. "a karuta tournament file"; None for anything else (no
    file, a folder, a file of the user's).  Reads at most 4 KiB and writes nothing (an SQLite
    file is opened immutable: no journal, no WAL switch, no lock)."""
    import re

    p = Path(path)
    try:
        real = p.resolve()
    except (OSError, RuntimeError):  # a loop of links, a name too long
        real = p
    for suffix in ("-wal", "-shm", "-journal"):  # SQLite's own files beside a database
        if real.name.endswith(suffix) and real.name != suffix:
            base = real.with_name(real.name[: -len(suffix)])
            what = state_file_kind(base)
            if what:
                return f"the SQLite journal of {what} ({base.name})"
    head = _head(real)  # None: not there (yet), a folder, a FIFO, a device
    if head is None:
        return None
    if head.startswith(_SQLITE_MAGIC):
        return _sqlite_kind(real)
    text = head.decode("utf-8-sig", "replace")
    for pattern, what in _OUR_TEXT:
        if re.match(pattern, text):
            return what
    return None


def _sqlite_kind(path: Path) -> str:
    import sqlite3
    from urllib.parse import quote

    try:
        conn = sqlite3.connect(f"file:{quote(os.fsencode(path))}?mode=ro&immutable=1", uri=True)
        try:
            names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
        finally:
            conn.close()
    except sqlite3.Error:
        names = set()
    for tables, what in _OUR_DATABASES:
        if tables <= names:
            return what
    return "an SQLite database"


#: what karuta writes into each file it makes FOR the user (an export, a page, a plot, a
#: render, a plan), where the format has room for it: the PNG's and the audio's "software"
#: tag, the page's generator meta.  Such a file can be made again, so it may be replaced.
OUTPUT_MARK = "written by karuta"
#: karuta's outputs told apart by how they begin (the first 4 KiB; the formats without a tag)
_OUR_OUTPUTS = (
    (r"^round,stage,color,table,block,kind,seat,name,group,cards,result,faulted\r?\n",
     "a tournament CSV export"),
    (r"^poem,kimariji,color,taps,correct,median_reaction_ms,", "a stats CSV export"),
    (r'^\{\s*"title":[^\n]*\n?\s*"seed":\s*-?\d+,\s*"settings":\s*\{\s*"rounds":',
     "a tournament JSON export"),
    (r'^\{\s*"sample_rate":\s*\d+,\s*"rules":', "a reading plan"),
    # older pages (before the generator meta) by their style sheet's first comment
    (r"^<!DOCTYPE html>.*?(?:<meta name=\"generator\" content=\"" + OUTPUT_MARK + r"\">"
     r"|/\* IPAex Gothic is installed by scripts/setup)", "a tournament page"),
)
#: the kinds above written through ``write_output_text`` (whole, fingerprinted): replaced only
#: as written
_TEXT_OUTPUTS = ("a tournament CSV export", "a stats CSV export", "a tournament JSON export",
                 "a reading plan")
#: formats that carry the mark in their first 4 KiB: PNG, WAV, RF64, FLAC, Ogg, MP3
_TAGGED = (b"\x89PNG", b"RIFF", b"RF64", b"fLaC", b"OggS", b"ID3")


#: the fingerprints (SHA-256) of the text outputs karuta wrote (exports, plans), newest last,
#: in the data folder: such a file is replaced without ``--replace`` only while it is as karuta
#: wrote it — an export opened in a spreadsheet, corrected and saved keeps its header but is
#: the user's work now
WRITTEN_FILE = "outputs-written.txt"
_WRITTEN_KEEP = 2000


def _fingerprint(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()[:40]


def write_output_text(path: Path | str, text: str) -> None:
    """Write a text output (an export, a plan) whole (``files.atomic_write_text``) and note its
    fingerprint, so the next run may make it again over it while nobody has changed it.  The
    note is best effort: a data folder that cannot be written only means the next run over
    this file asks for ``--replace``."""
    from reader.base.files import atomic_write_text

    atomic_write_text(path, text)
    try:
        from reader.base.dirs import data_dir

        folder = data_dir()
        folder.mkdir(parents=True, exist_ok=True)
        note = folder / WRITTEN_FILE
        with open(note, "a", encoding="ascii") as f:  # one short line: an atomic append
            f.write(_fingerprint(text.encode("utf-8")) + "\n")
        if note.stat().st_size > 2 * _WRITTEN_KEEP * 41:
            keep = note.read_text(encoding="ascii").splitlines()[-_WRITTEN_KEEP:]
            atomic_write_text(note, "\n".join(keep) + "\n")
    except (OSError, KarutaError):
        pass


def _as_written(path: Path | str) -> bool:
    """Whether the file at ``path`` is byte for byte a text output karuta noted writing."""
    try:
        from reader.base.dirs import data_dir

        notes = (data_dir() / WRITTEN_FILE).read_text(encoding="ascii").split()
        data = Path(path).read_bytes()
    except (OSError, KarutaError, UnicodeDecodeError):
        return False
    return _fingerprint(data) in notes


def output_kind(path: Path | str) -> str | None:
    """What ``path`` is, if it is a file karuta wrote for the user (see ``OUTPUT_MARK``):
    e.g. "a tournament CSV export"; None for anything else.  Reads at most 4 KiB."""
    import re

    head = _head(path)
    if head is None:
        return None
    if head.startswith(_TAGGED):
        return "a file karuta wrote" if OUTPUT_MARK.encode() in head else None
    text = head.decode("utf-8-sig", "replace")
    for pattern, what in _OUR_OUTPUTS:
        if re.match(pattern, text, re.DOTALL):
            return what
    return None


def _head(path: Path | str) -> bytes | None:
    """The first 4 KiB of the regular file at the end of ``path``'s links (None: no such
    file, or a folder, a FIFO, a device, unreadable)."""
    import stat as stat_

    try:
        real = Path(path).resolve()
        if not stat_.S_ISREG(real.stat().st_mode):
            return None
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            return os.read(fd, 4096)
        finally:
            os.close(fd)
    except (OSError, RuntimeError):
        return None


def _special(path: Path | str) -> bool:
    """Whether ``path`` (through its links) is there and is neither a file nor a folder."""
    import stat as stat_

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat_.S_ISREG(mode) or stat_.S_ISDIR(mode))


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether ``a`` and ``b`` name one file: the same path once links are followed, or two
    names (a hard link) of one file that is there."""
    try:
        return Path(a).resolve() == Path(b).resolve() or (
            os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b))
    except (OSError, ValueError):
        return False


def check_distinct(*named: tuple[str, Path | str | None]) -> None:
    """Refuse one file given to two options of one command (``("--plot", p), ("--out", o)``;
    None: not given): the second write would replace the first, or a log would be written
    into a plan.  One ``OutputError`` line, before anything is written."""
    given = [(opt, path) for opt, path in named if path is not None and str(path) != ""]
    for i, (opt_a, a) in enumerate(given):
        for opt_b, b in given[i + 1:]:
            if same_file(a, b):
                raise OutputError(f"{opt_a} and {opt_b} are the same file ({b}): give each "
                                  "its own")


def check_output(path: Path | str, option: str | None, same_kind: str | None = None, *,
                 replace: bool | None = False, resume: str | None = None) -> None:
    """Refuse an output path (``--out``, ``--csv``, ``--plot``, a log to start, a page) where
    writing would replace what the user made; one ``OutputError`` line, nothing written.
    Every command calls this before it changes anything (tests/test_faults_outputs.py).

    * one of karuta's own state files — a tournament, the stats database, a match or practice
      log, a session, a table save, the calibration — or any SQLite database: always refused
      (``same_kind``: a kind the caller answers itself, e.g. a table save to go on with);
    * ``resume`` (a new log: "--resume"): any file already there is refused, one of
      ``same_kind`` with "continue it with --resume";
    * another existing file: replaced only if karuta wrote it (``output_kind``: an export, a
      page, a plot, a render — made again at will), if it is empty, or if ``replace`` (the
      command's ``--replace``) is True; else refused, the line naming ``--replace`` unless
      ``replace`` is None (a command without it).
    """
    opt = f"{option} " if option else ""
    what = state_file_kind(path)
    if what and what != same_kind:
        raise OutputError(f"{opt}{path} is {what}: writing there would replace it; "
                          "give another file name")
    if resume:
        if what:
            raise OutputError(f"{path} exists: continue it with {resume}, or give another "
                              "file name")
        if os.path.isdir(path):
            raise OutputError(f"{opt}{path} is a folder: give a file name")
        if os.path.exists(path):
            raise OutputError(f"{opt}{path} exists and is not {same_kind}: give another "
                              "file name")
        return
    if _special(path):  # a device or a pipe: a rename would put a file in its place
        raise OutputError(f"{opt}{path} is not a regular file (a device or a pipe): give a "
                          "file name")
    if what or replace:
        return
    if not _head(path):  # no file (or not a regular one), or empty
        return
    kind = output_kind(path)
    other = " or add --replace to replace it" if replace is False else " or move it away"
    if kind in _TEXT_OUTPUTS and not _as_written(path):
        raise OutputError(f"{opt}{path} looks like {kind} but is not as karuta wrote it "
                          "(changed since, or written with another data folder): give another "
                          "file name" + other)
    if kind:  # karuta's own, as it wrote it: made again at will
        return
    raise OutputError(f"{opt}{path} exists and karuta did not write it: give another file name"
                      + other)
