"""The built-in offline voice: HTS "mei" chanting in the karuta reading style, all in-process.

How a clip is made
------------------
1. **Text -> phonemes.**  pyopenjtalk's frontend reads the poem's kanji with 、 between the ku
   (all-hiragana input misreads).  Its word-by-word pronunciation (NJD features) is checked ku
   by ku against the poem's ``reading`` (mora for mora, as heard: ``poems.kimariji.heard``); where it
   differs, the reading is aligned onto the words (edit-distance alignment of morae) and each
   word's ``pron`` is rewritten, so the words and their accents stay and only the sounds change.
   Vowel devoicing is turned off (a chanted mora is always voiced).  The full-context labels
   come from ``pyopenjtalk.make_label``.
2. **Designed timing** (``audio.chant.design``, pure; its settings ``chant.PACE`` are a human
   reader's rhythm, issue 32): a ku's morae go by quickly, each vowel onset ``mora_ms`` after
   the one before by the mora's position in the ku (165, 145, 170, 175 ... ms at speed 1.0,
   scaled by 1/speed), each consonant before its beat (its audible part by class, stops and
   affricates with a closure before that); each ku's last mora is held ``ku_end_ms`` (1.1 s),
   the clip's last ``part_end_ms`` (1.7 s); a breath (``breath_ms`` = 200 ms / speed) follows
   each ku but the last; the item's last sound is then held ``hold_ms`` longer (余韻, rounded
   to 5 ms, not scaled by speed).  **The 余韻 setting counts only the hold**: the last mora
   first sounds for its part-end length (1.7 s at speed 1.0), then is held for ``hold_ms``.
3. **Synthesis** (``audio.chant``): pyopenjtalk's in-process HTS engine says the labels at its
   natural pace (no system binary); WORLD (pyworld) analyses it and resynthesises it on the
   designed timeline with a designed melody (each ku opens low and glides up to one reciting
   tone, as a human reader does: ``chant.MELODY``), a 余韻 that wanders slowly over the
   vowel's steady part (never a loop), consonants capped against the vowels (de-essing) and a
   gentle end.  The held sound is brought to the speech's loudness, then the speech to
   ``audio.loudness.TARGET_LUFS`` with the true peak under ``CEILING_DBTP`` (no limiter).
   Synthesis runs in ``workers`` (2) spawned processes: it holds the GIL, and a live reading's
   audio callback must not wait for it.

``layout(item)`` needs only steps 1-2 (< 2 ms, memoized) and is exact: ``samples(item)`` always
has ``layout(item).frames`` frames, and each mora's onset is where its sound is first heard
(the burst of a stop, the start of a fricative or nasal, the vowel): the design maps the
natural speech's measured onset there.  A clip starts at its first sound (an initial stop's
closure is left out) and ends where the last sound ends.  Mora kana in the layout are
``poems.kimariji.sound_morae`` of the reading.

Clips are cached on disk (``KARUTA_CACHE_DIR`` or the per-user cache folder, ``synth/``),
keyed by a hash of the voice version (``chant.VOICE_VERSION``, ``_FORMAT``), the package
versions, the voice file, the pitch settings and the designed timeline (hold included), so a
new voice version never reads an old clip.  Entries carry their length and a SHA-256; a bad
entry is deleted and rebuilt.

Grid: every length this voice produces is a multiple of ``grid`` = 240 frames (5 ms); a
``hold_ms`` adds ``round(hold_ms / 5) * 240`` frames.
"""
from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import struct
import tempfile
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from audio.openjtalk import FRONTEND_LOCK as _FRONTEND_LOCK
from audio.openjtalk import SynthError
from audio.openjtalk import pyopenjtalk_module as _pyopenjtalk_module
from audio.voice import Layout, Mora, SpeechItem, text_for
from reader.base.errors import KarutaError
from reader.base.dirs import cache_dir as _default_cache_dir

__all__ = ["SynthVoice", "SynthError", "script_for", "label_morae", "canonical_morae", "reading_morae"]

SAMPLE_RATE = 48000
GRID = 240  # frames per 5 ms tick (the HTS and WORLD frame period at 48 kHz)
_FORMAT = 2  # bump when the cache content or timing design changes meaning




# --------------------------------------------------------------------------------------------
# kana <-> phonemes

_VOWELS = "aiueo"
_ROWS = {
    "": "あいうえお", "k": "かきくけこ", "g": "がぎぐげご", "s": "さしすせそ", "z": "ざじずぜぞ",
    "t": "たちつてと", "d": "だぢづでど", "n": "なにぬねの", "h": "はひふへほ", "b": "ばびぶべぼ",
    "p": "ぱぴぷぺぽ", "m": "まみむめも", "r": "らりるれろ",
}
_SPECIAL = {"し": "sh", "じ": "j", "ち": "ch", "つ": "ts", "ぢ": "j", "づ": "z", "ふ": "f"}


def _build_tables():
    kana: dict[str, tuple[str, str]] = {}
    for cons, row in _ROWS.items():
        for k, v in zip(row, _VOWELS):
            kana[k] = (_SPECIAL.get(k, cons), v)
    kana.update({"や": ("y", "a"), "ゆ": ("y", "u"), "よ": ("y", "o"), "わ": ("w", "a"),
                 "を": ("", "o"), "ゐ": ("", "i"), "ゑ": ("", "e"), "ゔ": ("v", "u")})
    for base, cons in {"き": "ky", "ぎ": "gy", "し": "sh", "じ": "j", "ち": "ch", "ぢ": "j",
                       "に": "ny", "ひ": "hy", "び": "by", "ぴ": "py", "み": "my", "り": "ry"}.items():
        for small, v in zip("ゃゅょ", "auo"):
            kana[base + small] = (cons, v)
    for base, cons in {"し": "sh", "じ": "j", "ち": "ch"}.items():
        kana[base + "ぇ"] = (cons, "e")
    for k, (c, v) in {"てぃ": ("t", "i"), "でぃ": ("d", "i"), "ふぁ": ("f", "a"), "ふぃ": ("f", "i"),
                      "ふぇ": ("f", "e"), "ふぉ": ("f", "o"), "うぃ": ("w", "i"), "うぇ": ("w", "e"),
                      "うぉ": ("w", "o"), "つぁ": ("ts", "a"), "とぅ": ("t", "u"),
                      "どぅ": ("d", "u")}.items():
        kana[k] = (c, v)
    # phonemes -> kana: prefer the spelling sound_morae uses (じ not ぢ, ず not づ, お not を)
    inverse: dict[tuple[str, str], str] = {}
    for k in ["じ", "ず", "お", "い", "え"] + sorted(kana):
        inverse.setdefault(kana[k], k)
    return kana, inverse


_KANA, _PHONEMES_TO_KANA = _build_tables()
_SMALL = set("ゃゅょぁぃぅぇぉゎ")
_VOWEL_KANA = dict(zip(_VOWELS, "あいうえお"))


def _vowel(mora: str) -> str | None:
    pv = _KANA.get(mora)
    return pv[1] if pv else None


def _hira(text: str) -> str:
    return "".join(chr(ord(c) - 0x60) if "ァ" <= c <= "ヶ" else c for c in text)


def _kata(text: str) -> str:
    return "".join(chr(ord(c) + 0x60) if "ぁ" <= c <= "ゖ" else c for c in text)


def _pron_morae(pron: str) -> list[str]:
    """Katakana pronunciation (NJD ``pron``) -> hiragana morae; ー becomes the vowel it lengthens."""
    out: list[str] = []
    for c in _hira(pron.replace("’", "")):
        if c in _SMALL and out:
            out[-1] += c
        elif c == "ー" and out and _vowel(out[-1]):
            out.append(_VOWEL_KANA[_vowel(out[-1])])
        elif c in "、。？！":  # punctuation is no sound
            continue
        else:
            out.append(c)
    return out


def reading_morae(reading: str) -> list[str]:
    """A modern reading split into morae, as written (small kana attached; を, ぢ, づ as お, じ,
    ず): ``poems.kimariji.split_morae``.  Unlike ``sound_morae`` this keeps a long o as written
    (おう is o-u)."""
    from poems.kimariji import split_morae

    return split_morae(reading)


def canonical_morae(morae) -> tuple[str, ...]:
    """Morae as heard (``poems.kimariji.heard``: the app's one rule).  Two readings sound alike
    when their canonical morae are equal."""
    from poems.kimariji import heard

    return heard(morae)


def label_phoneme(label: str) -> str:
    """The current phoneme of a full-context label (``p1^p2-p3+p4=p5/A:...``)."""
    return label.split("-", 1)[1].split("+", 1)[0]


def label_morae(labels) -> list[list[str]]:
    """Kana morae said by full-context labels, grouped by phrase (split at pau; sil dropped).

    Devoiced vowels (I, U) count as their vowels; N is ん, cl is っ."""
    groups: list[list[str]] = [[]]
    cons = ""
    for lab in labels:
        p = label_phoneme(lab)
        if p == "sil":
            continue
        if p == "pau":
            groups.append([])
            continue
        if p == "N":
            groups[-1].append("ん")
        elif p == "cl":
            groups[-1].append("っ")
        elif p.lower() in _VOWELS:
            groups[-1].append(_PHONEMES_TO_KANA.get((cons, p.lower()), f"?{cons}{p}"))
            cons = ""
            continue
        else:
            cons = p
            continue
        cons = ""
    return [g for g in groups if g]


# --------------------------------------------------------------------------------------------
# frontend: text -> corrected full-context labels

def _frontend(text: str) -> list[dict]:
    pj = _pyopenjtalk_module()
    with _FRONTEND_LOCK:  # pyopenjtalk prints only when imported (``audio.openjtalk``)
        return [dict(f) for f in pj.run_frontend(text, use_sudachi_kanji_yomi=False, predict_nani=False)]


def _make_label(features: list[dict]) -> list[str]:
    pj = _pyopenjtalk_module()
    with _FRONTEND_LOCK:
        return list(pj.make_label(features))


def _align(a: tuple[str, ...], b: tuple[str, ...]) -> list[tuple[int | None, int | None]]:
    """Edit-distance alignment of two mora sequences: (i, j) pairs, None for a gap."""
    n, m = len(a), len(b)
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        d[i][0] = i
    for j in range(m + 1):
        d[0][j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), d[i - 1][j] + 1, d[i][j - 1] + 1)
    out = []
    i, j = n, m
    while i or j:
        if i and j and d[i][j] == d[i - 1][j - 1] + (a[i - 1] != b[j - 1]):
            out.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif i and d[i][j] == d[i - 1][j] + 1:
            out.append((i - 1, None))
            i -= 1
        else:
            out.append((None, j - 1))
            j -= 1
    return out[::-1]


def _respell(words: list[dict], target: tuple[str, ...]) -> list[dict]:
    """Rewrite the words' ``pron`` so that together they say ``target`` (morae, hiragana)."""
    owner: list[int] = []  # pron mora index -> word index
    for w, f in enumerate(words):
        owner += [w] * len(_pron_morae(f["pron"]))
    pron = canonical_morae([m for f in words for m in _pron_morae(f["pron"])])
    assigned: list[list[str]] = [[] for _ in words]
    word = None  # the word of the last pron mora passed
    pending: list[str] = []  # target morae before the first pron mora
    for i, j in _align(pron, canonical_morae(target)):
        if i is not None:
            word = owner[i]
            if pending:
                assigned[word] += pending
                pending = []
        if j is not None:
            if word is None:
                pending.append(target[j])
            else:
                assigned[word].append(target[j])
    if pending:
        assigned[0] += pending
    out = []
    for f, morae in zip(words, assigned):
        if not morae:
            continue  # a word that says nothing: drop it
        f = dict(f)
        f["pron"] = f["read"] = _kata("".join(morae))
        f["mora_size"] = len(morae)
        f["acc"] = min(int(f["acc"]), len(morae))
        out.append(f)
    if out and out[0]["chain_flag"] == 1 and words and words[0]["chain_flag"] != 1:
        out[0]["chain_flag"] = words[0]["chain_flag"]
    return out


@dataclass(frozen=True)
class Script:
    """What an item says, before timing: the labels and how they group into morae."""

    labels: tuple[str, ...]  # full-context labels without times, sil first and last
    kana: tuple[str, ...]  # one per mora, as heard (sound_morae of the reading)
    #: per mora: indices into ``labels`` of its phonemes (consonant first)
    mora_phones: tuple[tuple[int, ...], ...]
    #: per mora: True when it ends a ku
    ku_end: tuple[bool, ...]
    #: per mora: index of the pau label right after it, or -1
    pau_after: tuple[int, ...]
    #: number of ku whose pronunciation was corrected
    respelled: int


def _ku_for(key: str, part: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    text = text_for(key)
    if len(text.reading) != 5 or part == "whole":
        return text.kanji, text.reading
    return (text.kanji[:3], text.reading[:3]) if part == "kami" else (text.kanji[3:], text.reading[3:])


def _ku_features(features: list[dict]) -> list[list[dict]]:
    kus: list[list[dict]] = [[]]
    for f in features:
        if f["string"] == "、":
            kus.append([])
        else:
            kus[-1].append(f)
    return kus


@lru_cache(maxsize=1024)
def script_for(key: str, part: str) -> Script:
    """The corrected labels of a text part ("1".."100", "joka", "karafuda", "announce")."""
    from poems.kimariji import sound_morae

    kanji, reading = _ku_for(key, part)
    kus = _ku_features(_frontend("、".join(kanji)))
    if len(kus) != len(reading):
        raise SynthError(f"text {key!r}: the frontend split {len(kus)} phrases, expected {len(reading)}")
    features: list[dict] = []
    respelled = 0
    sep = None
    for n, (words, ku) in enumerate(zip(kus, reading)):
        target = reading_morae(ku)
        said = canonical_morae([m for f in words for m in _pron_morae(f["pron"])])
        if said != canonical_morae(target):
            words = _respell(words, target)
            respelled += 1
        words = [dict(f, pron=f["pron"].replace("’", "")) for f in words]  # no devoicing
        if n:
            features.append(sep or {"string": "、", "pos": "記号", "pos_group1": "読点", "pos_group2": "*",
                                     "pos_group3": "*", "ctype": "*", "cform": "*", "orig": "、",
                                     "read": "、", "pron": "、", "acc": 0, "mora_size": 0,
                                     "chain_rule": "*", "chain_flag": 0})
        features += words
    labels = _make_label(features)
    # group phonemes into morae and check them against the reading
    kana = sound_morae(reading)
    said = label_morae(labels)
    if [canonical_morae(g) for g in said] != [canonical_morae(reading_morae(k)) for k in reading]:
        raise SynthError(f"text {key!r}: synthesis would say {'/'.join(''.join(g) for g in said)}, "
                         f"not {'/'.join(reading)}")
    mora_phones: list[tuple[int, ...]] = []
    pau_after: list[int] = []
    ku_end: list[bool] = []
    cons: list[int] = []
    for idx, lab in enumerate(labels):
        p = label_phoneme(lab)
        if p == "sil":
            continue
        if p == "pau":
            ku_end[-1] = True
            pau_after[-1] = idx
            continue
        cons.append(idx)
        if p in ("N", "cl") or p.lower() in _VOWELS:
            mora_phones.append(tuple(cons))
            pau_after.append(-1)
            ku_end.append(False)
            cons = []
    ku_end[-1] = True
    if cons or len(mora_phones) != len(kana) or label_phoneme(labels[0]) != "sil" \
            or label_phoneme(labels[-1]) != "sil":
        raise SynthError(f"text {key!r}: unexpected label structure")
    return Script(tuple(labels), tuple(kana), tuple(mora_phones), tuple(ku_end), tuple(pau_after),
                  respelled)


# --------------------------------------------------------------------------------------------
# timing and synthesis (audio.chant does the sound)


@dataclass(frozen=True)
class _Timed:
    """A script with its designed timeline and the layout that follows from it."""

    design: object  # audio.chant.Design
    ident: str  # everything the sound depends on, for the cache key
    frames: int  # clip length, the hold included
    speech_frames: int  # where the hold (余韻) starts
    layout: Layout


_MAGIC = b"KRTSYN2\n"
_HEADER = struct.Struct("<Q32s")  # frames, sha256 of the payload (int16 little-endian)

_file_hashes: dict[tuple[str, int, int], str] = {}


def _file_hash(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _file_hashes:
        with open(path, "rb") as fh:
            _file_hashes[key] = hashlib.sha256(fh.read()).hexdigest()
    return _file_hashes[key]


@lru_cache(maxsize=1)
def _versions() -> str:
    """Versions of the packages whose output is in a clip (frontend/engine, vocoder)."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("pyopenjtalk-plus", "pyworld"):
        try:
            out.append(f"{pkg}={version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg}=?")
    return " ".join(out)


# ---- the worker processes -------------------------------------------------------------------
# Synthesis (HTS + WORLD) holds the GIL for long stretches: it runs in worker processes, so a
# live reading's audio callback in the main process is never starved.

_WORKER_VOICES: dict[tuple, "SynthVoice"] = {}


def _worker_init():
    import signal

    # A Ctrl-C at the terminal reaches every process of the foreground group, these workers
    # too; what it means is the app's to decide (a club reading saves and quits), and the app
    # ends its pool itself.  A worker that took it printed a traceback over the app's screen
    # and broke the pool under it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A parent killed outright (kill -9, the OOM killer) cannot end its pool: the workers end
    # themselves (and with them the resource tracker, which lives while they hold its pipe)
    from reader.base.procs import end_with_parent

    end_with_parent()
    with contextlib.suppress(OSError, AttributeError):
        os.nice(5)  # below the player: synthesis is ahead of time
    _pyopenjtalk_module()


def _worker_job(config: tuple, item: SpeechItem) -> None:
    voice = _WORKER_VOICES.get(config)
    if voice is None:
        voice = _WORKER_VOICES[config] = SynthVoice(**dict(config), workers=0)
    voice._pcm_here(item)


class SynthVoice:
    """HTS "mei" chanting in karuta style (see the module docstring and ``audio.chant``).

    Args:
      mora_ms:    each mora by its position in the ku at speed 1.0, ms (a tuple; an int:
                  every mora alike; default ``chant.PACE``: a human reader's rhythm, issue 32);
                  scaled by 1/speed
      ku_end_ms:  each ku's last mora within a part sounds this long (default 1100); scaled
      part_end_ms: the clip's last mora sounds this long before its 余韻 (default 1700); scaled
      breath_ms:  silence after each ku but the item's last, at speed 1.0 (default 200);
                  scaled by 1/speed
      half_tone:  pitch shift in half-tones (default 0)
      low_hz:     the reciting tone (default 262 Hz); each ku opens under it (``melody``)
      melody:     the chant's melody (default ``chant.MELODY``: a human reader's, issue 21)
      cache_dir:  clip cache folder (default $KARUTA_CACHE_DIR or the per-user cache) + /synth
      voice_file: .htsvoice file (default mei_normal inside the pyopenjtalk package)
      workers:    synthesis processes (default 2); 0 = synthesize in this process

    ``layout`` and ``samples`` are thread-safe.  ``prefetch(items)`` returns one Future per
    item (its result is the cache file path) and synthesizes in the background; ``samples`` of
    an item being prefetched waits for that work instead of repeating it.
    """

    name = "synth"
    sample_rate = SAMPLE_RATE
    grid = GRID

    def __init__(self, *, mora_ms=None, ku_end_ms: int | None = None,
                 part_end_ms: int | None = None, breath_ms: int | None = None,
                 half_tone: float = 0.0, low_hz: float = 262.0, melody=None,
                 cache_dir: str | os.PathLike | None = None,
                 voice_file: str | os.PathLike | None = None, workers: int = 2):
        # None: ``chant.PACE``'s (chant, and numpy with it, is imported only when needed)
        if isinstance(mora_ms, list):
            mora_ms = tuple(mora_ms)
        self._pace = {"mora_ms": mora_ms, "ku_end_ms": ku_end_ms, "part_end_ms": part_end_ms,
                      "breath_ms": breath_ms}
        self.half_tone = float(half_tone)
        self.low_hz = float(low_hz)
        self._melody = melody  # None: chant.MELODY (chant is imported only when needed)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else _default_cache_dir() / "synth"
        self._voice_file = str(voice_file) if voice_file is not None else None
        self.workers = workers
        self._lock = threading.Lock()
        self._inflight: dict[str, Future] = {}
        self._executor = None
        self._queue: collections.deque = collections.deque()
        self._wake = threading.Semaphore(0)
        self._dispatcher: threading.Thread | None = None
        self._closed = False
        self._timed: dict[SpeechItem, _Timed] = {}

    def _config(self) -> tuple:
        return (*self._pace.items(),
                ("half_tone", self.half_tone), ("low_hz", self.low_hz), ("melody", self._melody),
                ("cache_dir", str(self.cache_dir)), ("voice_file", self._voice_file))

    def _paced(self, name: str):
        value = self._pace[name]
        if value is None:
            from audio.chant import PACE

            return getattr(PACE, name)
        return value

    @property
    def mora_ms(self):
        """Each mora's length by its position in the ku at speed 1.0, ms (a tuple; an int: every
        mora alike; default ``chant.PACE``'s: a human reader's)."""
        return self._paced("mora_ms")

    @property
    def ku_end_ms(self) -> int:
        """How long each ku's last mora within a part sounds at speed 1.0, ms (default
        ``chant.PACE``'s)."""
        return self._paced("ku_end_ms")

    @property
    def part_end_ms(self) -> int:
        """How long the clip's last mora sounds (before a 余韻) at speed 1.0, ms (default
        ``chant.PACE``'s)."""
        return self._paced("part_end_ms")

    @property
    def breath_ms(self) -> int:
        """Silence after each ku but the item's last at speed 1.0, ms (default ``chant.PACE``'s)."""
        return self._paced("breath_ms")

    @property
    def melody(self):
        """The chant's melody (``audio.chant.Melody``)."""
        if self._melody is None:
            from audio.chant import MELODY

            return MELODY
        return self._melody

    # ---- resources --------------------------------------------------------------------------
    def voice_path(self) -> str:
        path = self._voice_file
        if path is None:
            # find the package without importing it (its import costs ~0.3 s of start-up)
            import importlib.util

            spec = importlib.util.find_spec("pyopenjtalk")
            if spec is None or not spec.submodule_search_locations:
                raise SynthError("Japanese text frontend not available: install the Python package "
                                 "pyopenjtalk-plus")
            path = os.path.join(list(spec.submodule_search_locations)[0], "htsvoice", "mei_normal.htsvoice")
        if not os.path.isfile(path):
            raise SynthError(f"voice file not found: {path} (reinstall pyopenjtalk-plus)")
        return path

    def check(self) -> None:
        """Raise ``SynthError`` now if the voice cannot speak (voice file, frontend, vocoder)."""
        self.voice_path()
        import importlib.util

        for mod, pkg in (("pyopenjtalk", "pyopenjtalk-plus"), ("pyworld", "pyworld"),
                         ("pyloudnorm", "pyloudnorm"), ("scipy", "scipy")):
            if importlib.util.find_spec(mod) is None:
                raise SynthError(f"the synthesized voice needs the Python package {pkg}: pip install {pkg}")

    # ---- timing -----------------------------------------------------------------------------
    def _script(self, key: str, part: str) -> Script:
        """``script_for``, kept on disk too: a warm start then needs no frontend (and no
        pyopenjtalk import, ~0.3 s, plus ~2 ms a clip).  Keyed by the text, the frontend's
        version and ``_FORMAT``; an unreadable entry is recomputed and rewritten."""
        import json

        kanji, reading = _ku_for(key, part)
        frontend = _versions().split()[0].split("=", 1)[1]
        ident = json.dumps([key, part, kanji, reading, frontend, _FORMAT], ensure_ascii=False)
        path = self.cache_dir / "scripts" / (hashlib.sha256(ident.encode()).hexdigest()[:32] + ".json")
        from reader.base.statefiles import StateFileError, load_json, seal

        try:  # a damaged entry (any shape) is rebuilt below
            d = load_json(path, "synth-script", "voice cache entry")
            return Script(tuple(d["labels"]), tuple(d["kana"]), tuple(map(tuple, d["mora_phones"])),
                          tuple(d["ku_end"]), tuple(d["pau_after"]), d["respelled"])
        except (OSError, StateFileError):
            pass
        sc = script_for(key, part)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                entry = {"labels": sc.labels, "kana": sc.kana, "mora_phones": sc.mora_phones,
                         "ku_end": sc.ku_end, "pau_after": sc.pau_after, "respelled": sc.respelled}
                json.dump(seal(entry), f, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs time
        return sc

    def _time(self, item: SpeechItem) -> _Timed:
        timed = self._timed.get(item)
        if timed is not None:
            return timed
        if not item.speed > 0:
            raise ValueError(f"speed must be positive, not {item.speed!r}")
        from audio import chant

        sc = self._script(item.key, item.part)
        des = chant.design(sc, speed=item.speed, hold_ms=max(0, item.hold_ms), mora_ms=self.mora_ms,
                           ku_end_ms=self.ku_end_ms, part_end_ms=self.part_end_ms,
                           breath_ms=self.breath_ms)
        frames = des.frames * GRID
        heard = chant.heard_onsets(des) + [frames]
        morae = tuple(Mora(k, heard[i], heard[i + 1]) for i, k in enumerate(sc.kana))
        ident = "\n".join([chant.VOICE_VERSION, repr(des), repr(sorted(chant.HEARD_MS.items())), *sc.labels])
        timed = _Timed(des, ident, frames, des.speech * GRID,
                       Layout(frames=frames, sample_rate=SAMPLE_RATE, morae=morae, exact=True))
        with self._lock:
            if len(self._timed) > 4096:
                self._timed.clear()
            self._timed[item] = timed
        return timed

    def layout(self, item: SpeechItem) -> Layout:
        return self._time(item).layout

    # ---- cache ------------------------------------------------------------------------------
    def cache_key(self, item: SpeechItem) -> str:
        """Hash of everything a clip's sound depends on: the voice version (``chant.VOICE_VERSION``
        and ``_FORMAT``), the package versions, the voice file, the pitch settings and the
        designed timeline (so the hold, speed and pace).  A new version never reads old clips."""
        timed = self._time(item)
        h = hashlib.sha256()
        for part in (f"format={_FORMAT}", f"rate={SAMPLE_RATE}", f"versions={_versions()}",
                     f"pitch={self.half_tone!r},{self.low_hz!r},{self.melody!r}",
                     f"voice={_file_hash(self.voice_path())}", timed.ident):
            h.update(part.encode("utf-8"))
            h.update(b"\0")
        return h.hexdigest()[:40]

    def cache_path(self, item: SpeechItem) -> Path:
        return self.cache_dir / f"{self.cache_key(item)}.pcm"

    def is_cached(self, item: SpeechItem) -> bool:
        """True when ``item``'s clip is in the cache (no synthesis needed)."""
        return self.cache_path(item).is_file()

    @staticmethod
    def _read_entry(path: Path, frames: int):
        """The cached int16 clip, or None if absent; a bad entry is deleted."""
        import numpy as np

        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            data = b""
        head = len(_MAGIC) + _HEADER.size
        ok = len(data) == head + 2 * frames and data.startswith(_MAGIC)
        if ok:
            n, digest = _HEADER.unpack_from(data, len(_MAGIC))
            payload = memoryview(data)[head:]
            ok = n == frames and hashlib.sha256(payload).digest() == digest
        if not ok:
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        return np.frombuffer(data, dtype="<i2", offset=head).copy()

    @staticmethod
    def _write_entry(path: Path, pcm) -> None:
        payload = pcm.astype("<i2").tobytes()
        blob = _MAGIC + _HEADER.pack(len(pcm), hashlib.sha256(payload).digest()) + payload
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pcm", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(blob)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            pass  # an unwritable cache only costs speed

    # ---- synthesis --------------------------------------------------------------------------
    def _synthesize(self, item: SpeechItem):
        """The int16 clip of ``item``: natural HTS speech, rebuilt by ``audio.chant``, the 余韻 at
        the speech's loudness, the speech at ``loudness.TARGET_LUFS``, true peak under the ceiling."""
        import numpy as np

        from audio import chant, loudness

        timed = self._time(item)
        sc = self._script(item.key, item.part)
        try:
            nat = chant.natural(sc.labels, self.voice_path())
            y = chant.render(sc, timed.design, nat, low_hz=self.low_hz, melody=self.melody,
                             half_tone=self.half_tone)
        except ImportError as e:
            raise SynthError(f"the synthesized voice needs the Python package {e.name}: "
                             f"pip install {e.name}") from None
        except (RuntimeError, ValueError) as e:
            raise SynthError(f"speech engine failed ({item.key} {item.part}): {e}") from None
        if len(y) != timed.frames:
            raise SynthError(f"synthesis returned {len(y)} frames, expected {timed.frames}")
        speech = timed.speech_frames
        if timed.frames > speech:  # the 余韻 at the loudness of the speech
            last = timed.design.morae[-1]
            y = _match_hold(y, speech, last.beat * GRID)
        g = loudness.normalizing_gain(y, SAMPLE_RATE, measure=y[:speech])
        y = chant.end_fade(y * g, timed.design)
        pcm = np.round(np.clip(y, -1.0, 1.0) * 32767.0).astype("<i2")
        return pcm

    def _pcm_here(self, item: SpeechItem):
        """The int16 clip, from the cache or synthesized in this process (and cached)."""
        timed = self._time(item)
        path = self.cache_path(item)
        pcm = self._read_entry(path, timed.frames)
        if pcm is None:
            pcm = self._synthesize(item)
            self._write_entry(path, pcm)
        return pcm

    def _pool(self):
        with self._lock:
            if self._executor is None:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                self._executor = ProcessPoolExecutor(
                    max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
                    initializer=_worker_init)
            return self._executor

    def _submit(self, item: SpeechItem) -> Future:
        """A future for ``item``'s cache entry: the running one, or a new job in the pool."""
        name = self.cache_path(item).name
        with self._lock:
            fut = self._inflight.get(name)
            if fut is not None:
                return fut
        fut = self._pool().submit(_worker_job, self._config(), item)
        with self._lock:
            fut = self._inflight.setdefault(name, fut)

        def done(_f, name=name):
            with self._lock:
                if self._inflight.get(name) is _f:
                    self._inflight.pop(name, None)
        fut.add_done_callback(done)
        return fut

    def _pcm(self, item: SpeechItem):
        """The int16 clip (from the cache, from a running prefetch, or synthesized now in a
        worker process)."""
        timed = self._time(item)
        path = self.cache_path(item)
        pcm = self._read_entry(path, timed.frames)
        if pcm is not None:
            return pcm
        if self.workers <= 0:
            return self._pcm_here(item)
        try:
            self._submit(item).result()
        except KarutaError:
            raise
        except Exception as e:  # a worker died (BrokenProcessPool) or could not start
            raise SynthError(f"speech synthesis failed: {e.__class__.__name__}: {e}") from None
        pcm = self._read_entry(path, timed.frames)
        return pcm if pcm is not None else self._pcm_here(item)  # unwritable cache: do it here

    def samples(self, item: SpeechItem):
        import numpy as np

        timed = self._time(item)
        out = self._pcm(item).astype(np.float32) * np.float32(1.0 / 32767.0)
        assert len(out) == timed.frames
        return out

    # ---- background work --------------------------------------------------------------------
    def prefetch(self, items) -> list[Future]:
        """Synthesize ``items`` ahead in the background (``workers`` processes), in order.

        Returns one Future per item; each resolves to the item's cache file path (the audio
        stays on disk, so prefetching 200 clips costs no memory) or raises ``SynthError``.
        Items wait in a queue here and go to the worker processes ``workers`` at a time, so a
        program that quits leaves at most that many clips to finish (and ``samples`` of an item
        still queued goes first)."""
        out: list[Future] = []
        for item in items:
            res: Future = Future()
            if self.workers <= 0:
                try:
                    self._pcm(item)
                    res.set_result(self.cache_path(item))
                except BaseException as e:  # noqa: BLE001 - handed to the caller
                    res.set_exception(e)
            else:
                with self._lock:
                    self._queue.append((item, res))
            out.append(res)
        if self.workers > 0:
            self._wake.release()
            with self._lock:
                if self._dispatcher is None or not self._dispatcher.is_alive():
                    self._dispatcher = threading.Thread(target=self._dispatch, daemon=True,
                                                        name="karuta-synth-queue")
                    self._dispatcher.start()
        return out

    def _dispatch(self) -> None:
        """Feed queued items to the worker processes, at most ``workers`` at a time."""
        slots = threading.Semaphore(self.workers)
        while True:
            with self._lock:
                job = self._queue.popleft() if self._queue else None
                closed = self._closed
            if closed:
                return
            if job is None:
                self._wake.acquire(timeout=1.0)
                continue
            item, res = job
            if res.cancelled():
                continue
            try:
                path = self.cache_path(item)
                if path.is_file():
                    res.set_result(path)
                    continue
                slots.acquire()
                fut = self._submit(item)
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                res.set_exception(e if isinstance(e, KarutaError) else
                                  SynthError(f"speech synthesis failed: {e.__class__.__name__}: {e}"))
                continue

            def relay(j, res=res, path=path):
                slots.release()
                e = None if j.cancelled() else j.exception()
                if j.cancelled():
                    res.cancel()
                elif e is None:
                    res.set_result(path)
                else:
                    res.set_exception(e if isinstance(e, KarutaError) else
                                      SynthError(f"speech synthesis failed: {e.__class__.__name__}: {e}"))
            fut.add_done_callback(relay)

    def close(self) -> None:
        """Stop the worker processes (waits for running clips, cancels queued ones)."""
        with self._lock:
            ex, self._executor = self._executor, None
            queued = list(self._queue)
            self._queue.clear()
        for _item, res in queued:
            res.cancel()
        if ex is not None:
            ex.shutdown(wait=True, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _match_hold(y, speech: int, beat: int):
    """Bring the held sound (from ``speech`` on, its end fade excepted) to 1 LU under the speech
    before it; the gain ramps in over 100 ms from the last vowel's ``beat``."""
    import numpy as np

    from audio import loudness

    n = len(y)
    body_end = max(speech + SAMPLE_RATE // 2, n - SAMPLE_RATE * 2 // 5)
    ref = loudness.integrated_lufs(y[:speech], SAMPLE_RATE)
    held = loudness.short_lufs(y[speech:min(n, body_end)], SAMPLE_RATE)
    if not (np.isfinite(ref) and np.isfinite(held)):
        return y
    g_db = float(np.clip(ref - 1.0 - held, -12.0, 20.0))
    ramp = min(SAMPLE_RATE // 10, max(1, speech - beat))
    gain = np.ones(n)
    gain[beat:beat + ramp] = 10 ** (g_db / 20 * np.linspace(0, 1, ramp))
    gain[beat + ramp:] = 10 ** (g_db / 20)
    return y * gain
