"""A source folder: which files are which clip (``scan_source``), and its ``voice.toml``
manifest (``read_manifest``)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from reader.base.errors import KarutaError
from reader.base.limits import MAX_GAIN_DB, gain_db_problem
from audio.pack.common import _order, _toml_str, KEYS, PACK_FORMAT, PARTS, Problem


_AUDIO_RE = r"(?P<ext>wav|wave|flac|ogg|oga|opus|mp3|m4a|aac|mp4|aif|aiff)"
_LAYOUTS = {
    "wasuramoti": re.compile(rf"^(?P<reader>.+)_(?P<nnn>\d{{3}})_(?P<half>[12])\.{_AUDIO_RE}$", re.I),
    "karuta-tools": re.compile(rf"^(?P<nnn>\d{{3}})_(?P<half>[12])\.{_AUDIO_RE}$", re.I),
    "one-file": re.compile(rf"^(?:(?P<reader>.*?)[_-]?)(?P<nnn>\d{{3}})\.{_AUDIO_RE}$", re.I),
}


@dataclass
class Source:
    root: Path
    layout: str
    reader: str
    #: (key, part) -> file for two-file layouts; (key, "both") -> file for one-file packs
    files: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)


def _nnn_key(nnn: str) -> str | None:
    n = int(nnn)
    if n == 0:
        return "joka"
    return str(n) if 1 <= n <= 100 else None


def scan_source(src) -> Source:
    """Find the clips of a source folder and which layout it uses.

    Files two folders deep are seen (``<reader>/<file>``).  A file (or folder) that is a link
    to somewhere outside ``src`` is refused and reported.
    """
    root = Path(src)
    if not root.is_dir():
        raise KarutaError(f"{src}: not a folder")
    real_root = root.resolve()
    candidates: list[tuple[Path, str]] = []
    problems: list[Problem] = []

    def walk(folder: Path, depth: int):
        try:
            entries = sorted(folder.iterdir())
        except OSError as e:
            problems.append(Problem(folder.name, "unreadable", e.strerror or str(e)))
            return
        for p in entries:
            rel = p.relative_to(root).as_posix()
            if p.is_symlink() or p.is_dir() or p.is_file():
                try:
                    real = p.resolve(strict=False)
                except (OSError, RuntimeError):
                    problems.append(Problem(rel, "unreadable", "broken link"))
                    continue
                if not real.is_relative_to(real_root):
                    if re.search(_AUDIO_RE + "$", p.name, re.I) or p.is_dir():
                        problems.append(Problem(rel, "link outside the pack", f"points to {real}"))
                    continue
            if p.is_dir():
                if depth < 2:
                    walk(p, depth + 1)
            elif p.is_symlink() and not p.exists():
                problems.append(Problem(rel, "unreadable", "broken link"))
            elif p.is_file():
                candidates.append((p, rel))

    walk(root, 0)
    best, best_n = "one-file", 0
    for name in ("wasuramoti", "karuta-tools", "one-file"):
        n = sum(1 for p, _ in candidates if _LAYOUTS[name].match(p.name))
        if n > best_n:
            best, best_n = name, n
    files: dict = {}
    reader = ""
    rx = _LAYOUTS[best]
    for p, rel in candidates:
        m = rx.match(p.name)
        if not m:
            continue
        key = _nnn_key(m["nnn"])
        if key is None:
            problems.append(Problem(rel, "ignored", f"number {m['nnn']} is not 000-100"))
            continue
        part = "both" if best == "one-file" else ("kami" if m["half"] == "1" else "shimo")
        if (key, part) in files:
            problems.append(Problem(rel, "ignored", f"a second file for {key} {part}"))
            continue
        files[(key, part)] = p
        if not reader:
            reader = (m.groupdict().get("reader") or "") or (p.parent.name if p.parent != root else "")
    return Source(root, best if best_n else "unknown", reader or root.name, files, problems)


# -------------------------------------------------------------------------------------------
# the manifest

_NUM = (int, float)
#: a manifest's problem that refuses the whole manifest (``refuse_out_of_range``): a number
#: out of its bounds is a mistake to mend, not a field to drop and go on without
OUT_OF_RANGE = "out of range"
#: the largest magnitude a manifest field may have: gain in dB, the rest in ms (a clip is at
#: most MAX_CLIP_S long; a one-file poem at most a minute)
MANIFEST_LIMITS = {"gain_db": MAX_GAIN_DB, "split_ms": 60_000.0, "trim_start_ms": 60_000.0,
                   "trim_end_ms": 60_000.0}


#: the top-level fields a manifest may have (``format`` and ``layout``: written by the import)
_MANIFEST_KEYS = {"name", "reader", "source", "licence", "license", "imported_from", "clips",
                  "format", "layout"}


def read_manifest(path: Path) -> tuple[dict, dict, list[Problem]]:
    """(pack fields, clip overrides, problems).  Never raises for bad content."""
    from reader.base.statefiles import StateFileError, load_toml

    problems: list[Problem] = []
    if not path.is_file():
        return {}, {}, problems
    try:
        data = load_toml(path, "pack-manifest", "manifest")
    except (StateFileError, OSError) as e:
        return {}, {}, [Problem("voice.toml", "bad manifest", str(e))]
    fields: dict = {}
    for k in ("name", "reader", "source", "licence", "license", "imported_from"):
        if k in data:
            if isinstance(data[k], str):
                fields["licence" if k == "license" else k] = data[k]
            else:
                problems.append(Problem("voice.toml", "bad manifest",
                                        f"{k} must be a string, not {type(data[k]).__name__}"))
    for k in data:
        if k == "gain_db" and gain_db_problem(data[k]):
            problems.append(Problem("voice.toml", OUT_OF_RANGE,
                                    f"gain_db = {gain_db_problem(data[k])}"))
        elif k in MANIFEST_LIMITS or k == "exclude":  # a clip's field at the top: applies to nothing
            problems.append(Problem("voice.toml", "bad manifest",
                                    f"{k} = {data[k]!r} applies to one clip: put it under "
                                    f"[clips.\"N\"] (ignored)"))
        elif k not in _MANIFEST_KEYS:
            problems.append(Problem("voice.toml", "bad manifest", f"{k}: unknown field (ignored)"))
    overrides: dict = {}
    clips = data.get("clips", {})
    if not isinstance(clips, dict):
        problems.append(Problem("voice.toml", "bad manifest", "clips must be a table"))
        clips = {}
    kinds = {"split_ms": _NUM, "gain_db": _NUM, "trim_start_ms": _NUM, "trim_end_ms": _NUM,
             "exclude": (bool,)}
    for name, table in clips.items():
        key, _, part = str(name).partition(".")
        key = "joka" if key in ("0", "000") else key.lstrip("0") or key
        if key not in KEYS or part not in ("", "kami", "shimo"):
            problems.append(Problem("voice.toml", "bad manifest", f"clips.{name}: no such clip"))
            continue
        if not isinstance(table, dict):
            problems.append(Problem("voice.toml", "bad manifest", f"clips.{name} must be a table"))
            continue
        for k, v in table.items():
            want = kinds.get(k)
            if want is None:
                problems.append(Problem("voice.toml", "bad manifest", f"clips.{name}.{k}: unknown field"))
            elif isinstance(v, bool) and bool not in want or not isinstance(v, want):
                what = "true/false" if want == (bool,) else "a number"
                problems.append(Problem("voice.toml", "bad manifest",
                                        f"clips.{name}.{k} must be {what}, not {v!r}"))
            elif k == "split_ms" and part:
                problems.append(Problem("voice.toml", "bad manifest",
                                        f"clips.{name}.split_ms belongs to clips.{key}"))
            elif k != "exclude" and k != "gain_db" and v < 0:
                problems.append(Problem("voice.toml", "bad manifest", f"clips.{name}.{k} must be >= 0"))
            elif k == "gain_db" and gain_db_problem(v):
                problems.append(Problem("voice.toml", OUT_OF_RANGE,
                                        f"clips.\"{name}\".gain_db = {gain_db_problem(v)}"))
            elif k != "exclude" and not -MANIFEST_LIMITS[k] <= v <= MANIFEST_LIMITS[k]:  # nan too
                problems.append(Problem("voice.toml", OUT_OF_RANGE,
                                        f"clips.\"{name}\".{k} = {v!r} is out of range "
                                        f"(at most {MANIFEST_LIMITS[k]:g})"))
            else:
                for p in ((part,) if part else PARTS):
                    overrides.setdefault((key, p), {})[k] = v
                if k == "split_ms":
                    overrides.setdefault((key, "both"), {})[k] = v
    return fields, overrides, problems


def refuse_out_of_range(problems: list[Problem], path: Path, then: str) -> None:
    """One ``KarutaError`` for the first number of ``path`` (a voice.toml) out of its bounds
    (``read_manifest``'s ``OUT_OF_RANGE`` problems), ``then`` saying what was (not) done."""
    bad = [p for p in problems if p.kind == OUT_OF_RANGE]
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise KarutaError(f"{path}: {bad[0].detail}{more}; {then}")


def _manifest_text(fields: dict, overrides: dict) -> str:
    lines = ["# karuta voice pack (written by karuta voice add; edit and re-add to change)",
             f"format = {PACK_FORMAT}"]
    for k in ("name", "reader", "source", "licence", "imported_from", "layout"):
        if fields.get(k):
            lines.append(f"{k} = {_toml_str(fields[k])}")
    by_clip: dict[str, dict] = {}
    for (key, part), table in sorted(overrides.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1])):
        for k, v in table.items():
            name = key if k == "split_ms" else f"{key}.{part}"
            if part == "both" and k != "split_ms":
                continue
            by_clip.setdefault(name, {})[k] = v
    for name, table in by_clip.items():
        lines.append("")
        lines.append(f"[clips.{_toml_str(name)}]")
        for k, v in table.items():
            lines.append(f"{k} = {str(v).lower() if isinstance(v, bool) else v}")
    return "\n".join(lines) + "\n"


# the other parts of the package (imported last: they import this one too)
