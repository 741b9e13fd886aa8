"""An installed pack: read as a voice (``VoicePack``), checked (``check_pack``, ``verify_clip``),
listed (``list_packs``)."""
from __future__ import annotations

import shutil
import threading
from pathlib import Path

from audio.voice import Layout, Mora, SpeechItem
from reader.base.errors import AudioFileError, KarutaError
from audio.pack.common import (
    _order, _PART_JA, _ref_layout, clip_label, KEYS, MissingClip, PACK_RATE, PARTS, Problem,
    voices_dir,
)
from audio.pack.scan import read_manifest, refuse_out_of_range


def _check_gains(meta: dict, path: Path) -> None:
    """Each clip's stored gain within bounds (``pack-index``'s schema holds it to
    ``MAX_CLIP_GAIN``) and, where the import stored the clip's peak, not lifting that peak past
    full scale (the import keeps it under the true-peak ceiling): ``KarutaError`` otherwise."""
    for k, c in meta["clips"].items():
        gain, peak = c.get("gain", 1.0), c.get("peak")
        if isinstance(peak, (int, float)) and not isinstance(peak, bool) and \
                0 < peak <= 1 and gain * peak > 1.01:
            raise KarutaError(f"{path} is damaged (clip {k}: gain {gain:g} would lift its peak "
                              f"{peak:g} to {gain * peak:.3g}, past full scale): add the pack "
                              "again with 'karuta voice add'")


def is_pack_folder(path) -> bool:
    return (Path(path) / "pack.json").is_file()


class VoicePack:
    """An imported pack (see the module docstring).  Thread-safe; clips load on first use."""

    sample_rate = PACK_RATE

    def __init__(self, folder):
        self.folder = Path(folder)
        from reader.base.statefiles import StateFileError, load_json

        try:
            meta = load_json(self.folder / "pack.json", "pack-index", "voice pack index")
        except FileNotFoundError:
            raise KarutaError(f"{self.folder}: not a voice pack (no pack.json; use 'karuta voice add')") from None
        except StateFileError as e:
            raise KarutaError(f"{e}: add the pack again with 'karuta voice add'") from None
        fields, _, mproblems = read_manifest(self.folder / "voice.toml")
        refuse_out_of_range(mproblems, self.folder / "voice.toml",
                            "the pack was not used: edit it back, or add the pack again")
        _check_gains(meta, self.folder / "pack.json")
        self.meta = meta
        self.name = str(meta.get("name") or self.folder.name)
        self.reader = fields.get("reader", "")
        self.source = fields.get("source", "")
        self.licence = fields.get("licence", "")
        self._clips: dict[str, dict] = meta["clips"]
        #: the reader's own repeat of a 下の句 the reading says twice (the jo-ka's): read the
        #: second time, the held one (``hold_ms`` > 0)
        self._again: dict[str, dict] = meta.get("again") or {}
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

    def _again_for(self, item: SpeechItem) -> bool:
        return item.hold_ms > 0 and f"{item.key}.{item.part}" in self._again

    def _entry(self, item: SpeechItem) -> dict:
        if self._again_for(item):
            return self._again[f"{item.key}.{item.part}"]
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
        base = (item.key, item.part, 1.0, self._again_for(item))
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
        k = (item.key, item.part, round(speed, 4), self._again_for(item))
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
        absent = [k for k, parts in gone.items() if len(parts) == 2]
        if self._clips and absent:  # a partial pack: valid for readings of the poems it has
            out.append(_partial_row(absent))
            gone = {k: v for k, v in gone.items() if k not in absent}
        out.extend(_missing_rows(gone))
        for k, c, again in [(k, c, False) for k, c in self._clips.items()] + \
                [(k, c, True) for k, c in self._again.items()]:
            key, part = k.split(".")
            label = clip_label(key, part) + (" again" if again else "")
            if verify_files:
                path = self.folder / c["file"]
                try:
                    ok = path.stat().st_size > 0
                except OSError:
                    ok = False
                if not ok:
                    out.append(Problem(label, "missing", f"{c['file']} was deleted from the pack folder"))
                else:
                    why = verify_clip(path, c)
                    if why:
                        out.append(Problem(label, "damaged", f"{c['file']}: {why}"))
            t = c.get("timeline") or {}
            if self.meta.get("reference") and part in self.meta.get("align_parts", ["kami"]):
                conf = float(t.get("confidence", 0.0))
                if conf < LOW_CONFIDENCE and (label, "low confidence") not in named:
                    how = t.get("method", "")
                    like = t.get("sounds_like")
                    out.append(Problem(label, "low confidence",
                                       f"mora timeline {conf:.2f}" + (f", {how}" if how and how != "dtw" else "")
                                       + (f"; sounds like poem {like}: files swapped or misnumbered?"
                                          if like else "")))
        return sorted(out, key=_problem_order)

    def notes(self) -> list[str]:
        """What the import found and did in one-file recordings (a 下の句 read twice, a breath
        or a click left out), one line each; [] when nothing."""
        notes = self.meta.get("split_notes") or {}
        out = []
        rep = [k for k, n in notes.items() if n.get("repeat")]
        if rep:
            copies = [k for k in rep if notes[k]["repeat"] == "copy"]
            out.append(f"{len(rep)} file{'' if len(rep) == 1 else 's'} read the 下の句 twice: the repeat "
                       f"was dropped ({_keys_text(rep)})"
                       + (f"; {len(copies)} of the repeats a digital copy ({_keys_text(copies)})" if copies else "")
                       + ("; the jo-ka's repeat is kept: the reading says its 下の句 twice, the "
                          "second time as the reader did" if "joka.shimo" in self._again else
                          "; the reading says the jo-ka's 下の句 twice itself" if "joka" in rep else ""))
        once = [k for k, n in notes.items() if n.get("repeat") == ""]
        if once:
            out.append(f"{len(once)} file{'' if len(once) == 1 else 's'} read the 下の句 once: split at "
                       f"the pause after the 上の句" + (f" ({_keys_text(once)})" if rep else ""))
        bursts = [k for k, n in notes.items() if n.get("bursts")]
        if bursts:
            n = sum(int(notes[k]["bursts"]) for k in bursts)
            out.append(f"{n} breath{'' if n == 1 else 's'} or click{'' if n == 1 else 's'} apart from the voice "
                       f"left out of the clips ({_keys_text(bursts)})")
        return out


def _keys_text(keys: list[str], most: int = 8) -> str:
    names = ["jo-ka" if k == "joka" else k for k in keys]
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _partial_row(absent: list[str]) -> Problem:
    """One row for the poems a partial pack does not have (the synthesized voice reads them)."""
    nums = [int(k) for k in absent if k != "joka"]
    spans: list[list[int]] = []
    for n in nums:
        if spans and spans[-1][1] == n - 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    runs = [f"{a}" if a == b else f"{a}-{b}" for a, b in spans]
    have = 100 - len(nums)
    what = f"{have} of 100 poems" + ("" if "joka" in absent else " and the jo-ka")
    lacks = ", ".join((["jo-ka"] if "joka" in absent else []) + runs)
    return Problem("pack", "partial", f"{what}; the synthesized voice reads the others ({lacks})")


def file_sha1(path: Path) -> str:
    import hashlib

    h = hashlib.sha1()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_clip(path: Path, entry: dict) -> str | None:
    """Why a stored clip cannot be played as imported (None: it can).  The header must give
    48 kHz mono and the stored length, the file's SHA-1 must match the one stored at import
    (packs imported before karuta stored it: the last block must decode instead)."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception:
        return "not a readable audio file"
    frames = int(entry["frames"])
    if info.samplerate != PACK_RATE or info.channels != 1 or info.frames != frames:
        return (f"{info.frames} frames at {info.samplerate} Hz, {info.channels} channel(s); "
                f"the import stored {frames} at {PACK_RATE} Hz: replaced after import")
    want = entry.get("sha1")
    if want:
        try:
            if file_sha1(path) != want:
                return "its bytes changed after import (replaced or damaged)"
        except OSError as e:
            return e.strerror or str(e)
        return None
    try:
        with sf.SoundFile(str(path)) as f:
            f.seek(max(0, frames - 4096))
            tail = f.read(4096, dtype="float32")
        if tail.shape[0] != min(frames, 4096):
            return "truncated"
    except Exception:
        return "truncated or damaged (the end does not decode)"
    return None


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


