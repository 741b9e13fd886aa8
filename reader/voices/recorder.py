"""``karuta voice record``: walk a reader through the jo-ka and the poems, one clip at a time.

Session logic (pure: no audio, no terminal) and the terminal front end (``run_terminal``).

**Order**: jo-ka 上の句, jo-ka 下の句, then 1 上の句, 1 下の句 ... 100 下の句.  ``--poems SPEC``
(``reader.reading.selection`` grammar, plus ``joka`` / ``序歌`` / ``0`` for the jo-ka) records a subset;
without ``--poems`` it is all 202 clips.  ``--only-missing`` walks only the clips that have no
take yet.  Either way the session starts at the first clip with no take.

**Where takes go**: every take is saved as it is made, as
``$KARUTA_DATA_DIR/recordings/<NAME>/NNN_1.flac`` (上の句) / ``NNN_2.flac`` (下の句), the
karuta-tools layout that ``audio.pack`` imports, with a ``voice.toml`` naming the pack.  A retake
keeps the take it replaces as ``NNN_H.take1.flac``, ``take2`` ... (not read as clips; rename one
back to ``NNN_H.flac`` to use it again), and the line saying the take was saved names it.  Quitting
(or a crash) loses nothing: running the command again finds the takes and continues at the
first missing clip.  On quit the pack ``$KARUTA_DATA_DIR/voices/<NAME>`` is (re)built from that
folder with ``audio.pack.import_pack`` (also when an earlier session ended without it).
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from reader.base.clock import SYSTEM_CLOCK
from reader.base.errors import KarutaError, SelectionError

__all__ = [
    "Clip", "clip_order", "parse_poems", "RecordSession", "staging_dir", "run_terminal",
]

PART_JA = {"kami": "上の句", "shimo": "下の句"}
_JOKA_TOKENS = {"joka", "jo-ka", "序歌", "0", "000"}


@dataclass(frozen=True)
class Clip:
    key: str  # "joka", "1".."100"
    part: str  # "kami" | "shimo"

    @property
    def nnn(self) -> str:
        return "000" if self.key == "joka" else f"{int(self.key):03d}"

    @property
    def filename(self) -> str:
        return f"{self.nnn}_{1 if self.part == 'kami' else 2}.flac"

    @property
    def label(self) -> str:
        return f"{'序歌' if self.key == 'joka' else self.key} {PART_JA[self.part]}"

    def text(self):
        import poems

        return poems.JOKA if self.key == "joka" else poems.poem(int(self.key))

    @property
    def kanji(self) -> str:
        t = self.text()
        return " ".join(t.kami_kanji if self.part == "kami" else t.shimo_kanji)

    @property
    def reading(self) -> str:
        t = self.text()
        return " ".join(t.kami_reading if self.part == "kami" else t.shimo_reading)


def parse_poems(spec: str | None) -> tuple[bool, tuple[int, ...]]:
    """(jo-ka included, poem numbers) for ``--poems``; None: the jo-ka and all 100."""
    if spec is None:
        return True, tuple(range(1, 101))
    tokens = [t for t in re.split(r"[,\s、]+", spec) if t]
    joka = any(t.lower() in _JOKA_TOKENS for t in tokens)
    rest = [t for t in tokens if t.lower() not in _JOKA_TOKENS]
    if not tokens:
        raise SelectionError("--poems is empty: name poems (5, 1-20, blue, joka ...)")
    if not rest:
        return joka, ()
    from reader.reading.selection import parse_selection

    return joka, parse_selection(",".join(rest))


def clip_order(poem_nos=tuple(range(1, 101)), joka: bool = True) -> list[Clip]:
    keys = (["joka"] if joka else []) + [str(n) for n in sorted(set(poem_nos))]
    return [Clip(k, p) for k in keys for p in ("kami", "shimo")]


def staging_dir(name: str) -> Path:
    from audio.pack import data_dir

    return data_dir() / "recordings" / name


def check_name(name: str) -> str:
    from audio.pack import BUILTIN, _pack_name

    if not name or _pack_name(name) != name or name in BUILTIN:
        raise KarutaError(f"bad voice name {name!r}: use letters, digits, '-', '_' or '.' "
                          f"(not {', '.join(BUILTIN)})")
    return name


class RecordSession:
    """Which clip is next, what each clip has, and where takes are saved.

    ``clips``: the walk (``clip_order``).  ``only_missing``: walk only the clips with no
    take when the session starts.  ``states``: "missing" | "saved" (a take on disk from an
    earlier session) | "recorded" (taken in this session); ``warnings`` per clip, from this
    session's last take.
    """

    def __init__(self, name: str, clips: list[Clip], folder: Path | None = None,
                 only_missing: bool = False):
        self.name = check_name(name)
        self.folder = Path(folder) if folder is not None else staging_dir(name)
        self.all_clips = list(clips)
        self.states: dict[Clip, str] = {c: ("saved" if self.path(c).is_file() else "missing")
                                        for c in self.all_clips}
        self.clips = [c for c in self.all_clips if self.states[c] == "missing"] if only_missing \
            else list(self.all_clips)
        self.warnings: dict[Clip, list[str]] = {}
        #: takes that could not be saved (a full disk, a folder gone): kept, saved at quit
        self.unsaved: dict[Clip, object] = {}
        self.saved_now = 0
        self.takes: dict[Clip, int] = {}  # takes saved in this session, per clip
        #: the take a new one replaced, kept beside it (``keep_earlier``), per clip
        self.earlier: dict[Clip, Path] = {}
        first = self.first_missing()
        self.index = self.clips.index(first) if first is not None else 0

    # ---- the walk -------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return not self.clips

    @property
    def current(self) -> Clip | None:
        return self.clips[self.index] if self.clips else None

    def first_missing(self) -> Clip | None:
        return next((c for c in self.clips if self.states[c] == "missing"), None)

    def missing(self) -> list[Clip]:
        return [c for c in self.all_clips if self.states[c] == "missing"]

    def next(self) -> bool:
        """Move on; False at the end (stays on the last clip)."""
        if self.index + 1 < len(self.clips):
            self.index += 1
            return True
        return False

    def back(self) -> bool:
        if self.index > 0:
            self.index -= 1
            return True
        return False

    # ---- takes ----------------------------------------------------------------------------
    def path(self, clip: Clip) -> Path:
        return self.folder / clip.filename

    def prepare(self) -> None:
        """Create the folder and its voice.toml (the pack's name)."""
        from audio.pack import _toml_str

        import tempfile

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            manifest = self.folder / "voice.toml"
            if not manifest.exists():
                manifest.write_text(
                    "# karuta voice record: takes of this reader (NNN_1 = 上の句, NNN_2 = 下の句)\n"
                    f"name = {_toml_str(self.name)}\nreader = {_toml_str(self.name)}\n"
                    f"source = \"recorded with karuta voice record\"\n", encoding="utf-8")
            with tempfile.TemporaryFile(dir=self.folder):  # takes can be saved here
                pass
        except OSError as e:
            raise KarutaError(f"cannot write {self.folder}: {e.strerror or e}") from None

    def save(self, clip: Clip, samples, warnings=()) -> Path:
        """Save a take at once; a take already there is kept first (``keep_earlier``)."""
        from audio.record import save_take

        self.prepare()
        earlier = self.keep_earlier(clip)
        try:
            p = save_take(self.path(clip), samples)
        except KarutaError:
            if earlier is not None:  # the take is still in its place: no second copy
                earlier.unlink(missing_ok=True)
            raise
        if earlier is not None:
            self.earlier[clip] = earlier
        self.unsaved.pop(clip, None)
        self.states[clip] = "recorded"
        self.warnings[clip] = list(warnings)
        self.saved_now += 1
        self.takes[clip] = self.takes.get(clip, 0) + 1
        return p

    def keep_earlier(self, clip: Clip) -> Path | None:
        """A retake never loses the take before it: the file there is kept as
        ``NNN_H.takeK.flac`` (K: 1, 2, ... the next free number) beside it — a name no pack
        import reads; renaming it back to ``NNN_H.flac`` makes it the take again.  Returns
        that path (None: no take yet); one ``KarutaError`` if it cannot be kept, so the
        new take is kept in memory instead of replacing it."""
        import os
        import shutil

        from reader.base.files import write_target

        target = write_target(self.path(clip))  # a take that is a link: the file it names
        try:
            if not target.is_file() or target.stat().st_size == 0:
                return None
            stem = target.name.removesuffix(".flac")
            k = 1
            while os.path.lexists(target.with_name(f"{stem}.take{k}.flac")):
                k += 1
            kept = target.with_name(f"{stem}.take{k}.flac")
            try:
                os.link(target, kept)  # the same bytes under a second name: nothing copied
            except OSError:
                shutil.copy2(target, kept)
        except OSError as e:
            raise KarutaError(f"cannot keep the earlier take {target.name} "
                              f"({e.strerror or e})") from None
        return kept

    def keep_unsaved(self, clip: Clip, samples) -> None:
        """A take that could not be saved: kept in memory (``save_unsaved`` at quit)."""
        self.unsaved[clip] = samples

    def save_unsaved(self) -> tuple[list[Clip], Path | None]:
        """Save the takes kept in memory: where they belong, else in a folder of their own
        under the system's temp folder.  Returns (the clips that went there, that folder)."""
        import os
        import tempfile

        from audio.record import save_take

        for clip, x in list(self.unsaved.items()):
            try:
                self.save(clip, x, self.warnings.get(clip, ()))
            except KarutaError:
                pass
        if not self.unsaved:
            return [], None
        rescue = Path(tempfile.gettempdir()) / f"karuta-unsaved-{self.name}-{os.getpid()}"
        kept = []
        for clip, x in self.unsaved.items():
            try:
                save_take(rescue / clip.filename, x)
                kept.append(clip)
            except KarutaError:
                pass
        if len(kept) < len(self.unsaved):
            lost = [c.label for c in self.unsaved if c not in kept]
            raise KarutaError(f"takes of {', '.join(lost)} could not be saved in {self.folder} "
                              f"nor in {rescue}")
        return kept, rescue

    def counts(self) -> tuple[int, int]:
        """(clips with a take, clips in the walk)."""
        have = sum(1 for c in self.all_clips if self.states[c] != "missing")
        return have, len(self.all_clips)

    # ---- the pack -------------------------------------------------------------------------
    def pack_folder(self) -> Path:
        from audio.pack import voices_dir

        return voices_dir() / self.name

    def check_pack_owner(self) -> None:
        """A pack of this name imported from somewhere else is not overwritten."""
        import json

        meta = self.pack_folder() / "pack.json"
        if not meta.is_file():
            return
        from reader.base.statefiles import StateFileError, load_json

        try:
            src = load_json(meta, "pack-index", "voice pack index").get("imported_from")
        except (OSError, StateFileError):
            return
        if src and Path(src).resolve() != self.folder.resolve():
            raise KarutaError(f"voice {self.name!r} was imported from {src}, not recorded here: "
                              f"record under another name")

    def pack_stale(self) -> bool:
        """Takes on disk that the installed pack does not have yet."""
        import json

        from audio.pack import _signature

        if not any(self.path(c).is_file() for c in self.all_clips) and not self.folder.is_dir():
            return False
        from reader.base.statefiles import StateFileError, load_json

        try:
            meta = load_json(self.pack_folder() / "pack.json", "pack-index", "voice pack index")
        except (OSError, StateFileError):
            return any(self.folder.glob("*_[12].flac"))
        return meta.get("source_signature") != _signature(self.folder)

    def refresh_pack(self, *, align: bool = True, progress=None):
        """(Re)build the pack from the takes; returns the ``VoicePack`` (None: no takes)."""
        from audio.pack import import_pack

        if not self.folder.is_dir() or not any(self.folder.glob("*_[12].flac")):
            return None
        return import_pack(self.folder, name=self.name, reference=None if align else False,
                           progress=progress)


# ===========================================================================================
# the terminal front end

HELP = ("space/Enter record/stop   r retake   p play   n/→ next   b/← back   q quit (saved)")


class _Keys:
    """Keys from ``reader.ui.keys.KeyReader`` as recorder commands (by key name)."""

    MAP = {"space": "toggle", "enter": "toggle", "r": "retake", "p": "play", "n": "next",
           "right": "next", "b": "back", "left": "back", "q": "quit", "ctrl-c": "quit",
           "ctrl-d": "quit"}

    def __init__(self, reader):
        self.reader = reader

    def get(self, timeout: float) -> str | None:
        from reader.ui.keys import read_key_name

        name = read_key_name(self.reader, timeout)
        if name is None:
            return "quit" if self.reader.closed else None
        return self.MAP.get(name)


class _Screen:
    def __init__(self, out, full: bool):
        self.out = out
        self.full = full

    def write(self, s: str):
        try:
            self.out.write(s)
            self.out.flush()
        except (OSError, ValueError):
            pass

    def event(self, line: str):
        """A line worth keeping (plain mode prints it; the full screen shows the last one)."""
        if not self.full:
            self.write(line + "\n")


def _fmt_db(v: float) -> str:
    return f"{v:6.1f}" if v > -90 else "  -inf"


def run_terminal(session: RecordSession, mic, *, stop_after: float = 2.0, player=None,
                 stdin=None, stdout=None, full_screen: bool | None = None,
                 tick: float = 0.1) -> str:
    """The interactive loop; returns why it ended ("quit" | "done").  Takes are saved as they
    are stopped.  ``full_screen``: redraw in place (default: when stdout is a terminal)."""
    from audio.record import analyse, load_take, meter_bar
    from reader.ui.keys import KeyReader

    out = stdout or sys.stdout
    full = out.isatty() if full_screen is None else full_screen
    scr = _Screen(out, full)
    message = "ready: press space to record"
    last_draw = 0.0
    ended = "quit"

    def describe(c: Clip) -> str:
        st = session.states[c]
        w = session.warnings.get(c, [])
        s = {"missing": "no take yet", "saved": "take saved earlier", "recorded": "take saved"}[st]
        return s + (f"  ⚠ {', '.join(w)}" if w else "")

    def announce():
        c = session.current
        pos = session.index + 1
        scr.event(f"[{pos}/{len(session.clips)}] {c.label}: {c.kanji} / {c.reading}  ({describe(c)})")

    def draw(force=False):
        nonlocal last_draw
        now = SYSTEM_CLOCK.seconds()
        if not full or (not force and now - last_draw < tick):
            return
        last_draw = now
        c = session.current
        have, total = session.counts()
        lv = mic.level
        rec = (f"● REC {mic.take_seconds:5.1f} s   (space/Enter: stop"
               + (f"; stops after {stop_after:g} s of silence" if stop_after > 0 else "") + ")") \
            if mic.recording else "  idle"
        lines = [
            f"karuta voice record {session.name}   clip {session.index + 1}/{len(session.clips)}"
            f"   takes {have}/{total}   mic: {mic.name}",
            "",
            f"  {c.label}",
            f"    {c.kanji}",
            f"    {c.reading}",
            "",
            f"  {describe(c)}",
            f"  level |{meter_bar(lv.rms_db)}| rms {_fmt_db(lv.rms_db)} dBFS  peak {_fmt_db(lv.peak_db)}"
            f"  max {_fmt_db(lv.hold_db)}",
            f"  {rec}",
            "",
            f"  {message}",
            "",
            f"  {HELP}",
        ]
        scr.write("\x1b[H\x1b[J" + "\n".join(lines) + "\n")

    def stop_and_save(reason: str) -> None:
        nonlocal message
        c = session.current
        x = mic.stop_take()
        take = analyse(x)
        if not take.usable:
            message = f"{c.label}: nothing heard ({take.peak_db:.0f} dBFS peak): not saved, press r to retry"
            if session.states[c] != "missing":
                message += " (the earlier take is kept)"
            session.warnings[c] = ["nothing heard"]
        else:
            try:
                session.save(c, take.trimmed, take.warnings)
            except KarutaError as e:  # a full disk, a folder gone: the take is not lost
                session.keep_unsaved(c, take.trimmed)
                session.warnings[c] = list(take.warnings)
                message = f"{c.label}: {e}: the take is kept, saved again at quit"
                scr.event(message)
                return
            message = (f"{c.label}: take {session.takes[c]} saved, {take.seconds:.2f} s "
                       f"(peak {take.peak_db:.1f} dBFS, {reason})")
            earlier = session.earlier.pop(c, None)
            if earlier is not None:
                message += (f"; the earlier take: {earlier.name} (rename to "
                            f"{session.path(c).name} to restore)")
            if take.warnings:
                message += f"  ⚠ {', '.join(take.warnings)}"
            if "too loud" in take.warnings:
                message += ": move back or lower the gain, r to retake"
        scr.event(message)

    def _step() -> str | None:
        mic.pump()
        if mic.should_auto_stop(stop_after):
            stop_and_save(f"stopped after {stop_after:g} s of silence")
            draw(force=True)
        return keys.get(0.02)

    if session.done:
        return "done"
    if full:
        scr.write("\x1b[?25l")
    try:
        with KeyReader(stdin) as reader:
            keys = _Keys(reader)
            announce()
            draw(force=True)
            while True:
                try:
                    cmd = _step()
                    if cmd is None:
                        draw()
                        continue
                    c = session.current
                    if cmd == "toggle":
                        if mic.recording:
                            stop_and_save("stopped")
                        else:
                            if player is not None:
                                player.stop()
                            mic.start_take()
                            message = f"recording {c.label} ..."
                            scr.event(message)
                    elif cmd == "retake":
                        if player is not None:
                            player.stop()
                        if mic.recording:
                            mic.cancel_take()
                        mic.start_take()
                        message = f"recording {c.label} again (the new take replaces the old one) ..."
                        scr.event(message)
                    elif cmd == "play":
                        if mic.recording:
                            stop_and_save("stopped")
                        if player is None:
                            message = "no playback device"
                        elif session.states[c] == "missing":
                            message = f"{c.label}: no take to play"
                        else:
                            try:
                                player.play(load_take(session.path(c)))
                                message = f"playing {c.label}"
                            except KarutaError as e:
                                message = f"cannot play: {e}"
                            except Exception as e:  # an unreadable take: say so, keep going
                                message = f"cannot play {session.path(c).name}: {' '.join(str(e).split())[:80]}"
                        scr.event(message)
                    elif cmd in ("next", "back"):
                        if mic.recording:
                            stop_and_save("stopped")
                        if player is not None:
                            player.stop()
                        moved = session.next() if cmd == "next" else session.back()
                        if not moved and cmd == "next":
                            ended = "done"  # past the last clip: the walk is over
                            break
                        if moved:
                            message = "ready: press space to record"
                            announce()
                    elif cmd == "quit":
                        if mic.recording:
                            stop_and_save("stopped at quit")
                        break
                    draw(force=True)
                except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: quit like q, keeping the take
                    if mic.recording:
                        stop_and_save("stopped at quit")
                    break
    finally:
        if player is not None:
            player.stop()
        if full:
            scr.write("\x1b[?25h\n")
    return ended
