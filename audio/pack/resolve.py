"""Which voice ``--voice`` (or the default set with ``karuta voice use``) names:
``resolve_voice``, ``FallbackVoice`` (the synthesized voice fills missing clips), the default."""
from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

from audio.voice import Layout, Mora, SpeechItem
from reader.base.dirs import config_dir
from reader.base.errors import AudioFileError, KarutaError
from audio.pack.common import (_order, _PART_JA, _toml_str, BUILTIN, MissingClip, Problem,
                               voices_dir)
from audio.pack.importer import _signature, import_pack
from audio.pack.read import is_pack_folder, list_packs, VoicePack
from audio.pack.scan import scan_source


def _config_file() -> Path:
    return config_dir() / "voice.toml"


def default_voice_name() -> str | None:
    """The voice chosen with ``karuta voice use`` (None: never chosen, or unreadable)."""
    from reader.base.statefiles import StateFileError, load_toml

    path = _config_file()
    try:
        value = load_toml(path, "default-voice", "the default-voice setting").get("default")
    except FileNotFoundError:
        return None
    except StateFileError as e:  # said, not silently replaced by the built-in voice
        raise KarutaError(f"{e}: choose the voice again with 'karuta voice use NAME' "
                          f"(or delete the file)") from None
    return value


def set_default_voice(name: str) -> Path:
    from reader.base.files import atomic_write_text

    path = _config_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KarutaError(f"cannot write {path}: {e.strerror or e}") from None
    atomic_write_text(path, _with_default(path, name))  # a link is written through
    return path


def _with_default(path: Path, name: str) -> str:
    """The setting's text with ``default`` set to ``name``: the user's own lines (notes, keys
    of a newer karuta) kept as they were, only the ``default = ...`` line replaced; a file
    that cannot be read as TOML (what 'voice use' is said to mend) is written anew."""
    import re

    from reader.base.statefiles import StateFileError, parse_toml, read_text

    what = "the default-voice setting"
    line = f"default = {_toml_str(name)}"
    fresh = f"# karuta: the voice used when --voice is not given\n{line}\n"
    try:
        old = read_text(path, what)
        parse_toml(old, "default-voice", what, path)
    except (OSError, StateFileError):
        return fresh
    head = re.search(r"^\s*\[", old, re.M)  # top-level keys end at the first [table]
    top, rest = (old[:head.start()], old[head.start():]) if head else (old, "")
    top, n = re.subn(r"^[ \t]*default[ \t]*=.*$", line, top, count=1, flags=re.M)
    text = (top if n else (top + ("" if not top or top.endswith("\n") else "\n") + line + "\n")) \
        + rest
    try:
        if parse_toml(text, "default-voice", what, path).get("default") == name:
            return text
    except StateFileError:
        pass
    return fresh


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


def checked_spec(spec: str) -> str:
    """``spec`` if it can name a voice at all (each part of a path at most 255 bytes, no NUL);
    else the usual "unknown voice" line (the file system would fail with a traceback)."""
    parts = str(spec).split("/")
    if "\0" in str(spec) or any(len(os.fsencode(p)) > 255 for p in parts):
        raise KarutaError(_unknown_voice_message(str(spec)[:60] + ("…" if len(str(spec)) > 60 else "")))
    return spec


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
            raise KarutaError(f"the default voice {spec!r} (set in {_config_file()}) is not "
                              f"installed any more (choose another with 'karuta voice use NAME')")
    spec = checked_spec(str(spec))
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
    ours = None  # an earlier import of this very folder (files changed since: re-import it)
    for p in list_packs():
        if isinstance(p, VoicePack) and p.meta.get("imported_from") == src_real:
            if p.meta.get("source_signature") == sig:
                return p
            ours = p
    source = scan_source(src)
    if not source.files:
        raise KarutaError(f"{src}: not a voice pack and no clips found in it")
    if ours is not None:
        return import_pack(src, name=ours.folder.name)
    return import_pack(src, name=_private_name(src, source.reader))


def _private_name(src: Path, reader: str) -> str:
    """The name a folder used with ``--voice`` is installed under: the one ``voice add`` would
    give it, or, when a pack from another folder has that name, that name and a short hash of
    the folder's path (so using a folder never replaces nor is refused by another pack)."""
    import hashlib

    from audio.pack.importer import _pack_name
    from audio.pack.scan import read_manifest

    fields, _, _ = read_manifest(src / "voice.toml")
    name = _pack_name(fields.get("name") or reader or src.resolve().name)
    if name in BUILTIN:
        name += "-pack"
    taken = voices_dir() / name
    if not taken.exists():
        return name
    try:
        if VoicePack(taken).meta.get("imported_from") == str(src.resolve()):
            return name
    except KarutaError:
        pass
    return f"{name}-{hashlib.sha1(str(src.resolve()).encode()).hexdigest()[:8]}"


# the other parts of the package (imported last: they import this one too)


def check_pack(spec) -> tuple[VoicePack, list[Problem]]:
    """Problems of an installed pack (name), a pack folder, or a source folder (imported into
    a temporary folder first, nothing installed)."""
    if isinstance(spec, VoicePack):
        return spec, spec.problems()
    path = Path(checked_spec(str(spec)))
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


# the other parts of the package (imported last: they import this one too)
