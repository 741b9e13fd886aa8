"""Voice packs: a reader's recordings, imported once, read like any other voice.

A **source** is a folder a player already has, in one of three layouts (rules.md §7):

  wasuramoti     ``<reader>/<reader>_<NNN>_<1|2>.<ext>``   1 = 上の句 (kami), 2 = 下の句 (shimo)
  karuta-tools   ``<reader>/<NNN>_<1|2>.<ext>``
  one-file       ``<prefix>_<NNN>.<ext>`` (e.g. ``karuta_000.mp3``): kami and shimo in one file,
                 split at the pause between them

NNN 000 is the jo-ka (key "joka"), 001-100 the poems (keys "1".."100").  Extensions: wav, flac,
ogg, opus, mp3 (in-process) and m4a/aac (ffmpeg); see ``audio.decode``.

An optional ``voice.toml`` in the source folder names the pack and overrides single clips::

    name = "inaba"                 # pack name (default: the reader's / the folder's name)
    reader = "稲葉"                 # who reads
    source = "recorded 2019, club archive"
    licence = "private use only"
    [clips."12"]                   # one-file packs: 下の句 starts here, in ms from file start
    split_ms = 6150
    [clips."12.kami"]              # one clip ("12.kami", "12.shimo") or both ("12")
    gain_db = -2.0                 # extra gain on top of the pack's loudness matching
    trim_start_ms = 120            # cut this much more off the start / end after trimming
    trim_end_ms = 0
    exclude = true                 # do not use this clip (the synthesized voice reads it)

A field of the wrong type is reported (one line) and ignored; the rest of the pack is used.

**Import** (``import_pack``) decodes every clip once into the pack folder
``$KARUTA_DATA_DIR/voices/<name>`` (default ``platformdirs.user_data_dir("karuta")``):
resampled to 48 kHz, trimmed sample-exactly to the first and last sound (encoder padding and
silence go), stored as 24-bit FLAC under ``clips/``.  ``pack.json`` holds, per clip: frames,
gain (loudness matching: every clip is brought to the loudness every voice uses,
``audio.loudness.TARGET_LUFS`` (BS.1770), lowered only where its true peak would pass
``CEILING_DBTP``; a clip too short to measure falls back to its speech-active RMS at -20 dBFS), what was found wrong, and the mora timeline with its confidence
(``audio.align``: 上の句 clips are aligned by DTW with the synthesized reading; 下の句 clips
get the reference layout spread proportionally, method "proportional").  A copy of the source
manifest, with ``imported_from``, is written as ``voice.toml``.

**Reading** (``VoicePack``, the ``audio.voice.Voice`` protocol):

* items: keys "joka", "1".."100", parts "kami" and "shimo".  "whole" items and texts no pack
  has ("announce", "karafuda") raise ``MissingClip``; ``FallbackVoice`` hands them to the
  synthesized voice.
* ``hold_ms`` is **ignored** for recordings: a recorded 下の句 already contains the reader's
  own held last sound (余韻), so it is played as recorded and ``layout().frames`` is the clip's
  length.  (Padding with silence would hold the sound twice.)
* ``speed`` != 1.0 time-stretches the clip without changing its pitch (``audio.stretch``,
  WSOLA); frames = ``round(clip_frames / speed)`` and mora onsets scale with it.
* ``layout().exact`` is False: onsets are estimates.

``resolve_voice(spec, fallback_factory)`` turns a ``--voice`` value into a voice.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path

from audio.voice import Layout, Mora, SpeechItem
from reader.dirs import config_dir, data_dir
from reader.errors import AudioFileError, KarutaError

__all__ = [
    "VoicePack", "FallbackVoice", "MissingClip", "Problem", "import_pack", "resolve_voice",
    "check_pack", "format_problems", "scan_source", "find_split", "list_packs", "data_dir",
    "voices_dir", "config_dir", "default_voice_name", "set_default_voice", "PACK_RATE",
    "KEYS", "PARTS", "clip_label",
]

PACK_RATE = 48000
PARTS = ("kami", "shimo")
KEYS = ("joka",) + tuple(str(n) for n in range(1, 101))
BUILTIN = ("synth", "tone")
PACK_FORMAT = 1
TARGET_RMS_DB = -20.0
PEAK_LIMIT = 10 ** (-0.5 / 20)
MIN_CLIP_S = 1.0
MAX_CLIP_S = 20.0
SILENT_DB = -60.0
MIN_PAUSE_S = 0.15
_PART_JA = {"kami": "上の句", "shimo": "下の句"}


class MissingClip(KarutaError):
    """The pack has no (usable) clip for this item."""


# -------------------------------------------------------------------------------------------
# folders and the default voice




def voices_dir() -> Path:
    return data_dir() / "voices"




def _config_file() -> Path:
    return config_dir() / "voice.toml"


def default_voice_name() -> str | None:
    """The voice chosen with ``karuta voice use`` (None: never chosen, or unreadable)."""
    import tomllib

    try:
        with open(_config_file(), "rb") as f:
            value = tomllib.load(f).get("default")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) and value else None


def set_default_voice(name: str) -> Path:
    path = _config_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(f"# karuta: the voice used when --voice is not given\ndefault = {_toml_str(name)}\n",
                       encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        raise KarutaError(f"cannot write {path}: {e.strerror or e}") from None
    return path


def _toml_str(s: str) -> str:
    return json.dumps(str(s), ensure_ascii=False)  # a JSON string is a valid TOML basic string


# -------------------------------------------------------------------------------------------
# problems (one line each; ``karuta voice check`` prints them as a table)

@dataclass(frozen=True)
class Problem:
    clip: str  # "12 kami", "12", "voice.toml", a file name
    kind: str  # missing | unreadable | silent | clipped | too short | too long | low confidence | ...
    detail: str = ""

    def line(self) -> str:
        return f"{self.clip}: {self.kind}" + (f" ({self.detail})" if self.detail else "")

    def to_json(self):
        return [self.clip, self.kind, self.detail]


def clip_label(key: str, part: str) -> str:
    return f"{key} {part}"


def format_problems(problems: list[Problem]) -> str:
    """A plain text table: clip | problem | detail."""
    if not problems:
        return ""
    rows = [("clip", "problem", "detail")] + [(p.clip, p.kind, p.detail) for p in problems]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return "\n".join(f"{a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows)


def _order(key: str) -> int:
    return 0 if key == "joka" else int(key) if key.isdigit() else 999


# -------------------------------------------------------------------------------------------
# the source folder

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


def read_manifest(path: Path) -> tuple[dict, dict, list[Problem]]:
    """(pack fields, clip overrides, problems).  Never raises for bad content."""
    import tomllib

    problems: list[Problem] = []
    if not path.is_file():
        return {}, {}, problems
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        return {}, {}, [Problem("voice.toml", "bad manifest", f"not valid TOML: {e}")]
    except OSError as e:
        return {}, {}, [Problem("voice.toml", "bad manifest", e.strerror or str(e))]
    fields: dict = {}
    for k in ("name", "reader", "source", "licence", "license", "imported_from"):
        if k in data:
            if isinstance(data[k], str):
                fields["licence" if k == "license" else k] = data[k]
            else:
                problems.append(Problem("voice.toml", "bad manifest",
                                        f"{k} must be a string, not {type(data[k]).__name__}"))
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
            else:
                for p in ((part,) if part else PARTS):
                    overrides.setdefault((key, p), {})[k] = v
                if k == "split_ms":
                    overrides.setdefault((key, "both"), {})[k] = v
    return fields, overrides, problems


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


# -------------------------------------------------------------------------------------------
# analysis of one decoded file

def _frame_rms(x, hop: int):
    import numpy as np

    n = len(x) // hop
    if n == 0:
        return np.zeros(0)
    return np.sqrt(np.mean(x[: n * hop].astype(np.float64).reshape(n, hop) ** 2, axis=1))


def active_rms(x, rate: int) -> float:
    """RMS over the frames where there is speech (louder than 30 dB below the loud frames)."""
    import numpy as np

    r = _frame_rms(x, max(1, rate // 100))
    if len(r) == 0:
        return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if len(x) else 0.0
    loud = np.percentile(r, 95)
    act = r[r > loud * 10 ** (-30 / 20)]
    return float(np.sqrt(np.mean(act ** 2))) if len(act) else 0.0


def find_split(x, rate: int) -> tuple[int, int] | None:
    """Where a one-file recording pauses between 上の句 and 下の句: (pause start, pause end).

    The pauses are runs of 10 ms frames 30 dB below the loud frames (or near the noise
    floor) inside the spoken span.  The longest pause wins; pauses outside the middle of the
    span (20-85 %) count a third of their length.  None when there is no pause of at least
    ``MIN_PAUSE_S``.
    """
    import numpy as np

    hop = max(1, rate // 100)
    r = _frame_rms(x, hop)
    if len(r) < 10:
        return None
    loud = np.percentile(r, 95)
    noise = np.sort(r)[: max(1, len(r) // 10)].mean()
    thr = max(loud * 10 ** (-30 / 20), 3 * noise)
    active = r > thr
    idx = np.flatnonzero(active)
    if len(idx) < 2:
        return None
    first, last = int(idx[0]), int(idx[-1])
    quiet = ~active[first:last + 1]
    best, best_score = None, 0.0
    k = 0
    n = len(quiet)
    span = max(1, last - first)
    while k < n:
        if quiet[k]:
            j = k
            while j < n and quiet[j]:
                j += 1
            length = j - k
            centre = (k + j) / 2 / span
            score = length * (1.0 if 0.2 <= centre <= 0.85 else 1 / 3)
            if length * hop >= MIN_PAUSE_S * rate and score > best_score:
                best, best_score = (first + k, first + j), score
            k = j
        else:
            k += 1
    if best is None:
        return None
    return best[0] * hop, best[1] * hop


# -------------------------------------------------------------------------------------------
# import

def _pack_name(s: str) -> str:
    name = re.sub(r"[^\w.-]+", "-", s.strip(), flags=re.U).strip("-.")
    return name[:64] or "voice"


def _reference(reference):
    """The voice whose layouts (and, for alignment, samples) time the recordings."""
    if reference is not None:
        return reference
    try:
        from audio.synth import SynthVoice

        v = SynthVoice()
        v.check()
        return v
    except Exception:  # no engine, no voice file: timelines fall back to proportional
        return None


def _ref_layout(ref, key: str, part: str) -> Layout:
    item = SpeechItem(key, part)
    if ref is not None:
        try:
            return ref.layout(item)
        except Exception:
            pass
    from audio.voice import ToneVoice

    return ToneVoice(PACK_RATE).layout(item)


def import_pack(src, dest_dir=None, *, name: str | None = None, reference=None,
                align_parts=("kami",), workers: int | None = None, progress=None) -> "VoicePack":
    """Import a source folder (any supported layout) as a pack; returns the ``VoicePack``.

    ``dest_dir``: the pack folder to (re)create (default ``voices_dir() / <name>``).
    ``reference``: the voice to align with (default: ``SynthVoice`` when it can speak; with
    no reference, or ``reference=False``, timelines are proportional).  ``align_parts``: which
    parts are aligned by DTW (the others get proportional timelines).  ``progress(done, total)``
    is called as clips are done.  Problems never raise: they are stored and
    ``VoicePack.problems()`` / ``karuta voice check`` report them.
    """
    import numpy as np
    import soundfile as sf

    from audio.align import align, proportional
    from audio.loudness import CEILING_DBTP, TARGET_LUFS, integrated_lufs, true_peak_db
    from audio.decode import decode, trim_silence

    src = Path(src)
    source = scan_source(src)
    fields, overrides, mproblems = read_manifest(src / "voice.toml")
    if source.layout == "unknown" and not source.files:
        raise KarutaError(f"{src}: no clips found (expected <reader>_NNN_1.ogg, NNN_1.mp3 or name_NNN.mp3 files)")
    pack_name = _pack_name(name or fields.get("name") or source.reader or src.resolve().name)
    if pack_name in BUILTIN:
        pack_name += "-pack"
    dest = Path(dest_dir) if dest_dir is not None else voices_dir() / pack_name
    tmp = dest.with_name(dest.name + f".importing-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / "clips").mkdir(parents=True)
    ref = None if reference is False else _reference(reference)

    problems: list[Problem] = list(source.problems) + mproblems
    clips: dict[str, dict] = {}
    lock = threading.Lock()

    def store(key: str, part: str, y, info: dict, rel: str):
        ov = overrides.get((key, part), {})
        if ov.get("exclude"):
            return [Problem(clip_label(key, part), "excluded", "exclude = true in voice.toml")]
        s, e = trim_silence(y, PACK_RATE)
        if e <= s:
            return [Problem(clip_label(key, part), "silent", f"{rel}: no sound above the noise floor")]
        cut0 = int(round(float(ov.get("trim_start_ms", 0)) * PACK_RATE / 1000))
        cut1 = int(round(float(ov.get("trim_end_ms", 0)) * PACK_RATE / 1000))
        if cut0 or cut1:
            s2, e2 = s + cut0, e - cut1
            if e2 - s2 < PACK_RATE // 10:
                return [Problem(clip_label(key, part), "bad manifest", "trim_start_ms/trim_end_ms leave nothing")]
            s, e = s2, e2
        clip = np.ascontiguousarray(y[s:e], dtype=np.float32)
        peak = float(np.abs(clip).max())
        out: list[Problem] = []
        if 20 * np.log10(max(peak, 1e-12)) < SILENT_DB:
            return [Problem(clip_label(key, part), "silent", f"peak {20 * np.log10(max(peak, 1e-12)):.0f} dBFS")]
        store_gain = 1.0 / peak if peak > 1.0 else 1.0
        fname = f"{key}_{part}.flac"
        sf.write(str(tmp / "clips" / fname), clip * store_gain, PACK_RATE, subtype="PCM_24")
        secs = len(clip) / PACK_RATE
        if info["clipped"] >= 3:
            out.append(Problem(clip_label(key, part), "clipped", f"{info['clipped']} samples at full scale"))
        if secs < MIN_CLIP_S:
            out.append(Problem(clip_label(key, part), "too short", f"{secs:.2f} s"))
        elif secs > MAX_CLIP_S:
            out.append(Problem(clip_label(key, part), "too long", f"{secs:.1f} s"))
        entry = {
            "file": f"clips/{fname}", "frames": len(clip), "source": rel,
            "source_rate": info["rate"], "channels": info["channels"],
            "peak": peak * store_gain, "rms": active_rms(clip, PACK_RATE) * store_gain,
            "lufs": integrated_lufs(clip * store_gain, PACK_RATE),
            "true_peak_db": true_peak_db(clip * store_gain),
            "user_gain_db": float(ov.get("gain_db", 0.0)), "stored_gain": store_gain,
        }
        with lock:
            clips[f"{key}.{part}"] = entry
        return out

    def one(job):
        (key, part), path = job
        rel = path.relative_to(src).as_posix()
        try:
            d = decode(path, PACK_RATE)
        except AudioFileError as e:
            label = clip_label(key, part) if part != "both" else key
            return [Problem(label, "unreadable", str(e))]
        info = {"clipped": d.clipped_samples, "rate": d.source_rate, "channels": d.channels}
        y = d.samples
        if part != "both":
            return store(key, part, y, info, rel)
        ov = overrides.get((key, "both"), {})
        if "split_ms" in ov:
            at = int(round(float(ov["split_ms"]) * PACK_RATE / 1000))
            if not 0 < at < len(y):
                return [Problem(key, "bad manifest", f"split_ms {ov['split_ms']} is outside the file "
                                                     f"({len(y) * 1000 // PACK_RATE} ms)")]
            a, b = at, at
        else:
            found = find_split(y, PACK_RATE)
            if found is None:
                return [Problem(key, "no split", f"no pause between 上の句 and 下の句 in {rel}; "
                                                 f"set clips.\"{key}\".split_ms in voice.toml")]
            a, b = found
        return store(key, "kami", y[:a], info, rel) + store(key, "shimo", y[b:], info, rel)

    jobs = sorted(source.files.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1]))
    from concurrent.futures import ThreadPoolExecutor

    nworkers = workers or min(4, os.cpu_count() or 1)
    done = 0
    with ThreadPoolExecutor(max_workers=nworkers) as ex:
        for res in ex.map(one, jobs):
            problems.extend(res)
            done += 1
            if progress:
                progress(done, len(jobs))

    # loudness matching: every clip to the loudness of every voice, true peaks under the ceiling
    target = 10 ** (TARGET_RMS_DB / 20)
    for c in clips.values():
        if np.isfinite(c["lufs"]):
            g = 10 ** ((TARGET_LUFS - c["lufs"]) / 20)
        else:
            g = target / c["rms"] if c["rms"] > 0 else 1.0
        c["lufs"] = round(c["lufs"], 2) if np.isfinite(c["lufs"]) else None
        g *= 10 ** (c["user_gain_db"] / 20)
        if np.isfinite(c["true_peak_db"]):
            g = min(g, 10 ** ((CEILING_DBTP - c["true_peak_db"]) / 20))
        else:
            g = min(g, PEAK_LIMIT / c["peak"]) if c["peak"] > 0 else g
        c["true_peak_db"] = round(c["true_peak_db"], 2) if np.isfinite(c["true_peak_db"]) else None
        c["gain"] = round(g * c["stored_gain"], 6)

    # mora timelines
    aligned = [k for k in clips if k.split(".")[1] in align_parts] if ref is not None else []
    if aligned and hasattr(ref, "prefetch"):
        try:
            ref.prefetch([SpeechItem(*k.split(".")) for k in aligned])
        except Exception:
            pass

    def timeline(k):
        key, part = k.split(".")
        c = clips[k]
        lay = _ref_layout(ref, key, part)
        if ref is not None and part in align_parts:
            try:
                x, _ = sf.read(str(tmp / c["file"]), dtype="float32")
                return k, align(x, PACK_RATE, ref.samples(SpeechItem(key, part)), lay)
            except Exception as e:  # the reference cannot speak this one: estimate
                t = proportional(c["frames"], lay)
                return k, type(t)(t.morae, 0.0, f"proportional ({' '.join(str(e).split())[:60]})")
        return k, proportional(c["frames"], lay)

    with ThreadPoolExecutor(max_workers=nworkers) as ex:
        for k, t in ex.map(timeline, sorted(clips)):
            clips[k]["timeline"] = t.to_json()
    if ref is not None and hasattr(ref, "close") and reference is None:
        ref.close()

    fields = dict(fields)
    fields["name"] = pack_name
    fields.setdefault("reader", source.reader)
    fields["imported_from"] = str(src.resolve())
    fields["layout"] = source.layout
    for c in clips.values():
        for k in ("stored_gain",):
            c.pop(k, None)
    meta = {
        "format": PACK_FORMAT, "name": pack_name, "sample_rate": PACK_RATE,
        "layout": source.layout, "imported_from": str(src.resolve()),
        "source_signature": _signature(src),
        "reference": getattr(ref, "name", None) if ref is not None else None,
        "align_parts": list(align_parts),
        "clips": {k: clips[k] for k in sorted(clips, key=lambda s: (_order(s.split(".")[0]), s))},
        "problems": [p.to_json() for p in problems],
    }
    (tmp / "pack.json").write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
    (tmp / "voice.toml").write_text(_manifest_text(fields, overrides), encoding="utf-8")
    if dest.exists():
        old = dest.with_name(dest.name + f".old-{os.getpid()}")
        dest.rename(old)
        tmp.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp.rename(dest)
    return VoicePack(dest)


def _signature(src: Path) -> str:
    """Cheap fingerprint of a source folder: names, sizes and mtimes of its files."""
    import hashlib

    h = hashlib.sha1()
    for p in sorted(src.rglob("*")):
        try:
            st = p.lstat()
        except OSError:
            continue
        h.update(f"{p.relative_to(src).as_posix()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


# -------------------------------------------------------------------------------------------
# the imported pack as a voice

def is_pack_folder(path) -> bool:
    return (Path(path) / "pack.json").is_file()


class VoicePack:
    """An imported pack (see the module docstring).  Thread-safe; clips load on first use."""

    sample_rate = PACK_RATE

    def __init__(self, folder):
        self.folder = Path(folder)
        try:
            meta = json.loads((self.folder / "pack.json").read_text(encoding="utf-8"))
            if not isinstance(meta, dict) or not isinstance(meta.get("clips"), dict):
                raise ValueError("no clips table")
        except FileNotFoundError:
            raise KarutaError(f"{self.folder}: not a voice pack (no pack.json; use 'karuta voice add')") from None
        except (OSError, ValueError) as e:
            raise KarutaError(f"{self.folder}: damaged voice pack ({' '.join(str(e).split())[:100]}); "
                              f"add it again with 'karuta voice add'") from None
        fields, _, _ = read_manifest(self.folder / "voice.toml")
        self.meta = meta
        self.name = str(meta.get("name") or self.folder.name)
        self.reader = fields.get("reader", "")
        self.source = fields.get("source", "")
        self.licence = fields.get("licence", "")
        self._clips: dict[str, dict] = meta["clips"]
        from collections import OrderedDict

        #: recently used clips (and stretched versions): bounded, a full reading touches all 202
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self):
        return f"VoicePack({self.name!r}, {len(self._clips)} clips)"

    # ---- what is there ----------------------------------------------------------------------
    def clip_keys(self) -> list[tuple[str, str]]:
        return [tuple(k.split(".")) for k in self._clips]

    def has(self, key: str, part: str) -> bool:
        return f"{key}.{part}" in self._clips

    def _entry(self, item: SpeechItem) -> dict:
        c = self._clips.get(f"{item.key}.{item.part}")
        if c is None:
            what = _PART_JA.get(item.part, item.part)
            raise MissingClip(f"voice {self.name!r} has no clip for {item.key} {what}")
        return c

    def timeline(self, key: str, part: str):
        from audio.align import Timeline

        c = self._clips.get(f"{key}.{part}")
        return Timeline.from_json(c["timeline"]) if c and "timeline" in c else None

    # ---- Voice protocol ---------------------------------------------------------------------
    def layout(self, item: SpeechItem) -> Layout:
        c = self._entry(item)
        n = int(c["frames"])
        speed = float(item.speed)
        frames = n if speed == 1.0 else int(round(n / speed))
        morae = []
        t = c.get("timeline") or {}
        raw = t.get("morae") or []
        if not raw:  # a pack.json without a timeline: spread the text's morae evenly
            from audio.align import proportional

            raw = proportional(n, _ref_layout(None, item.key, item.part)).to_json()["morae"]
        for i, (kana, s, e) in enumerate(raw):
            s2 = int(round(s / speed))
            e2 = frames if i == len(raw) - 1 else int(round(e / speed))
            morae.append(Mora(kana, min(s2, frames), min(e2, frames)))
        return Layout(frames=frames, sample_rate=PACK_RATE, morae=tuple(morae), exact=False)

    CACHE_ITEMS = 16

    def _cached(self, k):
        with self._lock:
            x = self._cache.get(k)
            if x is not None:
                self._cache.move_to_end(k)
            return x

    def _remember(self, k, x):
        with self._lock:
            self._cache[k] = x
            self._cache.move_to_end(k)
            while len(self._cache) > self.CACHE_ITEMS:
                self._cache.popitem(last=False)

    def _clip(self, item: SpeechItem):
        import numpy as np
        import soundfile as sf

        c = self._entry(item)
        base = (item.key, item.part, 1.0)
        x = self._cached(base)
        if x is None:
            path = self.folder / c["file"]
            try:
                x, rate = sf.read(str(path), dtype="float32")
            except Exception as e:
                raise AudioFileError(f"{path.name}: unreadable clip in pack {self.name!r} "
                                     f"({' '.join(str(e).split())[:80]})") from None
            if x.ndim != 1 or rate != PACK_RATE or len(x) != int(c["frames"]):
                raise AudioFileError(f"{path.name}: clip in pack {self.name!r} changed since import "
                                     f"(add the pack again)")
            x = (x * np.float32(c.get("gain", 1.0))).astype(np.float32)
            self._remember(base, x)
        return x

    def samples(self, item: SpeechItem):
        from audio.stretch import stretch

        x = self._clip(item)
        speed = float(item.speed)
        if speed == 1.0:
            return x.copy()
        k = (item.key, item.part, round(speed, 4))
        y = self._cached(k)
        if y is None:
            y = stretch(x, PACK_RATE, speed)
            self._remember(k, y)
        return y.copy()

    # ---- check ------------------------------------------------------------------------------
    def problems(self, *, verify_files: bool = True) -> list[Problem]:
        """Everything ``karuta voice check`` reports, from what the import stored (fast)."""
        from audio.align import LOW_CONFIDENCE

        out = [Problem(*p) for p in self.meta.get("problems", [])]
        named = {(p.clip, p.kind) for p in out}
        reported = {p.clip for p in out}  # "12 kami", or "12" for a one-file recording
        if self._clips and not self.meta.get("reference"):
            out.append(Problem("timelines", "not aligned", "imported without a reference voice: "
                                                          "mora onsets are proportional estimates"))
        gone: dict[str, list[str]] = {}
        for key in KEYS:
            for part in PARTS:
                label = clip_label(key, part)
                if self.has(key, part) or label in reported or key in reported:
                    continue
                gone.setdefault(key, []).append(part)
        out.extend(_missing_rows(gone))
        for k, c in self._clips.items():
            key, part = k.split(".")
            label = clip_label(key, part)
            if verify_files:
                path = self.folder / c["file"]
                try:
                    ok = path.stat().st_size > 0
                except OSError:
                    ok = False
                if not ok:
                    out.append(Problem(label, "missing", f"{c['file']} was deleted from the pack folder"))
            t = c.get("timeline") or {}
            if self.meta.get("reference") and part in self.meta.get("align_parts", ["kami"]):
                conf = float(t.get("confidence", 0.0))
                if conf < LOW_CONFIDENCE and (label, "low confidence") not in named:
                    how = t.get("method", "")
                    out.append(Problem(label, "low confidence",
                                       f"mora timeline {conf:.2f}" + (f", {how}" if how and how != "dtw" else "")))
        return sorted(out, key=_problem_order)


def _missing_rows(gone: dict[str, list[str]]) -> list[Problem]:
    """One row per missing clip; runs of poems missing both halves become one row ("4-100")."""
    rows: list[Problem] = []
    run: list[str] = []

    def flush():
        if len(run) >= 3:
            rows.append(Problem(f"{run[0]}-{run[-1]}", "missing",
                                f"{len(run)} poems, kami and shimo: the synthesized voice reads them"))
        else:
            rows.extend(Problem(clip_label(k, p), "missing", "the synthesized voice reads it")
                        for k in run for p in PARTS)
        run.clear()

    prev = None
    for key in KEYS:
        parts = gone.get(key, [])
        if len(parts) == 2 and key != "joka" and (not run or prev == int(key) - 1):
            run.append(key)
            prev = int(key)
            continue
        flush()
        if len(parts) == 2 and key != "joka":
            run.append(key)
            prev = int(key)
            continue
        rows.extend(Problem(clip_label(key, p), "missing", "the synthesized voice reads it") for p in parts)
    flush()
    return rows


def _problem_order(p: Problem):
    head, _, part = p.clip.partition(" ")
    head = head.split("-")[0]
    if head in KEYS:
        return (1, _order(head), part, p.kind)
    return (0, 0, p.clip, p.kind)  # files and the manifest first


def list_packs() -> list[VoicePack | Path]:
    """Installed packs (a damaged one is listed as its folder path)."""
    out = []
    root = voices_dir()
    if not root.is_dir():
        return out
    for p in sorted(root.iterdir()):
        if not p.is_dir() or ".importing-" in p.name or ".old-" in p.name:
            continue
        try:
            out.append(VoicePack(p))
        except KarutaError:
            out.append(p)
    return out


def check_pack(spec) -> tuple[VoicePack, list[Problem]]:
    """Problems of an installed pack (name), a pack folder, or a source folder (imported into
    a temporary folder first, nothing installed)."""
    path = Path(spec)
    if isinstance(spec, VoicePack):
        return spec, spec.problems()
    if not path.exists() and (voices_dir() / str(spec)).is_dir():
        path = voices_dir() / str(spec)
    if is_pack_folder(path):
        pack = VoicePack(path)
        return pack, pack.problems()
    if path.is_dir():
        import tempfile

        tmpdir = Path(tempfile.mkdtemp(prefix="karuta-check-"))
        try:
            pack = import_pack(path, tmpdir / "pack")
            return pack, pack.problems()
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
    raise KarutaError(_unknown_voice_message(str(spec)))


# -------------------------------------------------------------------------------------------
# fallback

class FallbackVoice:
    """``primary`` where it has the clip, ``fallback`` (a voice, or a function making one
    on first need) where it has not.

    ``missing`` lists the (key, part) items the fallback read.  ``notice_once()`` returns one
    line about them the first time it is called after something was missing, then None: the
    CLI prints it once.  ``on_missing`` (if given) is called once, at the first miss.
    A clip that fails to load after its layout was given (file deleted or damaged since
    import) is read by the fallback too, time-fitted to the promised length.
    """

    def __init__(self, primary, fallback, *, on_missing=None):
        self.primary = primary
        self._fallback = fallback
        self.name = primary.name
        self.sample_rate = primary.sample_rate
        self.on_missing = on_missing
        self._missing: dict[tuple[str, str], str] = {}
        self._noticed = False
        self._called = False
        self._lock = threading.Lock()

    @property
    def fallback(self):
        with self._lock:
            if callable(self._fallback) and not hasattr(self._fallback, "layout"):
                self._fallback = self._fallback()
            return self._fallback

    @property
    def missing(self) -> list[tuple[str, str]]:
        return sorted(self._missing, key=lambda kp: (_order(kp[0]), kp[1]))

    def _record(self, item: SpeechItem, why: str):
        first = False
        with self._lock:
            if (item.key, item.part) not in self._missing:
                self._missing[(item.key, item.part)] = why
            if not self._called:
                self._called = first = True
        if first and self.on_missing is not None:
            self.on_missing(self.notice())

    def notice(self) -> str | None:
        if not self._missing:
            return None
        names = [f"{k} {_PART_JA.get(p, p)}" for k, p in self.missing]
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        fb = getattr(self.fallback, "name", "fallback")
        return f"voice {self.name!r} has no recording of {shown}: the {fb} voice reads {'it' if len(names) == 1 else 'them'}"

    def notice_once(self) -> str | None:
        with self._lock:
            if self._noticed or not self._missing:
                return None
            self._noticed = True
        return self.notice()

    def _fb_layout(self, item: SpeechItem) -> Layout:
        fb = self.fallback
        lay = fb.layout(item)
        if fb.sample_rate == self.sample_rate:
            return lay
        r = self.sample_rate / fb.sample_rate
        return Layout(int(round(lay.frames * r)), self.sample_rate,
                      tuple(Mora(m.kana, int(round(m.start * r)), int(round(m.end * r))) for m in lay.morae),
                      lay.exact)

    def _fb_samples(self, item: SpeechItem, frames: int | None = None):
        import numpy as np

        from audio.decode import resample
        from audio.stretch import stretch

        fb = self.fallback
        x = np.asarray(fb.samples(item), np.float32)
        if fb.sample_rate != self.sample_rate:
            x = resample(x, fb.sample_rate, self.sample_rate)
            want = self._fb_layout(item).frames
            x = np.pad(x, (0, max(0, want - len(x))))[:want]
        if frames is not None and len(x) != frames and len(x) > 0:
            x = stretch(x, self.sample_rate, len(x) / frames)
            x = np.pad(x, (0, max(0, frames - len(x))))[:frames]
        return x

    def layout(self, item: SpeechItem) -> Layout:
        if (item.key, item.part) in self._missing:
            return self._fb_layout(item)
        try:
            return self.primary.layout(item)
        except MissingClip as e:
            self._record(item, str(e))
            return self._fb_layout(item)

    def samples(self, item: SpeechItem):
        if (item.key, item.part) in self._missing:
            return self._fb_samples(item)
        try:
            return self.primary.samples(item)
        except MissingClip as e:
            self._record(item, str(e))
            return self._fb_samples(item)
        except AudioFileError as e:
            frames = self.primary.layout(item).frames
            self._record(item, str(e))
            # the layout promised was the recording's: keep that length
            with self._lock:
                self._missing[(item.key, item.part)] = str(e)
            return self._fb_samples(item, frames)


# -------------------------------------------------------------------------------------------
# --voice NAME|PATH

def _installed_names() -> list[str]:
    return [p.name for p in list_packs() if isinstance(p, VoicePack)]


def _unknown_voice_message(spec: str) -> str:
    names = ", ".join(list(BUILTIN) + _installed_names())
    return f"unknown voice {spec!r} (known: {names}; add a pack with 'karuta voice add PATH')"


def resolve_voice(spec: str | None, fallback_factory, *, on_missing=None):
    """The voice a ``--voice`` value names.

    ``spec``: None (the default chosen with ``karuta voice use``, else "synth"), "synth"
    (``fallback_factory()``), "tone" (``ToneVoice``), an installed pack's name, an imported
    pack folder, or a source folder in a supported layout (imported on first use into the
    data folder; re-imported when its files change).  Packs come wrapped in ``FallbackVoice``
    with ``fallback_factory`` (called only if a clip is missing).  Unknown: ``KarutaError``.
    """
    if spec is None:
        spec = default_voice_name() or "synth"
        if spec not in BUILTIN and not (voices_dir() / spec).is_dir():
            raise KarutaError(f"the default voice {spec!r} is not installed any more "
                              f"(choose another with 'karuta voice use NAME')")
    spec = str(spec)
    if spec == "synth":
        return fallback_factory()
    if spec == "tone":
        from audio.voice import ToneVoice

        return ToneVoice()
    path = Path(spec).expanduser()
    pack = None
    if (voices_dir() / spec).is_dir() and "/" not in spec and spec not in (".", ".."):
        pack = VoicePack(voices_dir() / spec)
    elif path.is_dir():
        if is_pack_folder(path):
            pack = VoicePack(path)
        else:
            pack = _import_cached(path)
    if pack is None:
        raise KarutaError(_unknown_voice_message(spec))
    return FallbackVoice(pack, fallback_factory, on_missing=on_missing)


def _import_cached(src: Path) -> VoicePack:
    """A source folder given as --voice: reuse its import while the files are unchanged."""
    src_real = str(src.resolve())
    sig = _signature(src)
    for p in list_packs():
        if isinstance(p, VoicePack) and p.meta.get("imported_from") == src_real \
                and p.meta.get("source_signature") == sig:
            return p
    source = scan_source(src)
    if not source.files:
        raise KarutaError(f"{src}: not a voice pack and no clips found in it")
    return import_pack(src)
