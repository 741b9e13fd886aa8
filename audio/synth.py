"""The built-in offline voice: HTS "mei" speaking in the karuta reading style, with designed timing.

How a clip is made
------------------
1. **Text -> phonemes.**  pyopenjtalk's frontend reads the poem's kanji with 、 between the ku
   (all-hiragana input misreads).  Its word-by-word pronunciation (NJD features) is checked ku
   by ku against the poem's ``reading`` (mora for mora, を=お, long vowels, えい=ええ); where it
   differs, the reading is aligned onto the words (edit-distance alignment of morae) and each
   word's ``pron`` is rewritten, so the words and their accents stay and only the sounds change.
   Vowel devoicing is turned off (a chanted mora is always voiced).  The full-context labels
   come from ``pyopenjtalk.make_label``.
2. **Designed timing.**  Every phoneme gets its own start/end time on a 5 ms grid (240 frames at
   48 kHz; ``SynthVoice.grid``): a steady pace of ``mora_ms`` (300 ms) per mora at speed 1.0,
   scaled by 1/speed; the consonant takes a fixed share by its class (r 35 ms ... ch 95 ms,
   scaled by 1/speed) and the vowel the rest; each ku's last mora lasts ``ku_end`` (2x) morae;
   a breath (``pau``, ``breath_ms`` = 100 ms / speed) follows each ku but the last; the item's
   last mora is extended by ``hold_ms`` (余韻, rounded to the grid, not scaled by speed).
3. **Synthesis.**  Debian's ``hts_engine -vp`` (phoneme alignment from the labels) renders the
   timed labels exactly.  A long vowel (or ん) is written as a 70 ms onset, continuation
   labels (V-V+V, up to ~500 ms each) and a 60 ms ending: stretched as one label, HTS puts the
   stretch into its transition states and the vowel goes silent.  The engine runs 20 dB down
   (no int16 clipping); at load the clip gets +12 dB and a soft limiter above 0.7.  The hold
   is not synthesized: the last vowel is continued as a cross-faded loop of whole pitch
   periods at a steady pitch, falling 4 dB (``_sustain``), so every ``hold_ms`` shares one
   cached clip.  50 ms of ``sil`` before and after are synthesized and cut off exactly,
   so a clip starts where the voice starts and ends where its last sound ends.  A 5 ms fade-in
   and a ``fade_ms`` (150 ms) fade-out are applied at load.

``layout(item)`` needs only step 1-2 (< 2 ms, memoized) and is exact: ``samples(item)`` always
has ``layout(item).frames`` frames and the mora onsets are the phoneme boundaries requested.
Mora kana in the layout are ``poems.kimariji.sound_morae`` of the reading.

Clips are cached on disk (``KARUTA_CACHE_DIR`` or the per-user cache folder, ``synth/``),
keyed by a hash of the timed labels (without the hold), voice file, engine options
(half-tone), engine version and format.
Entries carry their length and a SHA-256; a bad entry is deleted and rebuilt.  ``prefetch``
synthesizes ahead in a pool of 2 worker threads (each runs one ``hts_engine`` process).

Grid: every length this voice produces is a multiple of ``grid`` = 240 frames (5 ms); a
``hold_ms`` adds ``round(hold_ms / 5) * 240`` frames.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from audio.voice import Layout, Mora, SpeechItem, text_for
from reader.errors import KarutaError
from reader.dirs import cache_dir as _default_cache_dir

__all__ = ["SynthVoice", "SynthError", "script_for", "label_morae", "canonical_morae", "reading_morae"]

SAMPLE_RATE = 48000
GRID = 240  # frames per 5 ms tick (hts_engine's frame period for mei at 48 kHz)
_TICK_MS = 5
_HTK_PER_TICK = 50000  # label times are in 100 ns units
_EDGE_SIL = 10  # ticks of sil synthesized before/after the voice and cut off
#: mei at 48 kHz with long designed durations peaks up to ~5x full scale: synthesize 20 dB
#: down (no clipping in the int16 the engine writes and the cache keeps), then gain 12 dB in
#: float with a soft limiter above 0.7
_ENGINE_GAIN_DB = -20
_OUTPUT_GAIN = 10 ** (12 / 20)
_LIMIT = 0.7
_FORMAT = 1  # bump when the cache content or timing design changes meaning

_DEFAULT_ENGINE = "hts_engine"


class SynthError(KarutaError):
    """The synthesized voice cannot speak (no engine, no voice file, engine failure)."""


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
_FOLD = str.maketrans("をぢづゐゑ", "おじずいえ")


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
    """A modern reading split into morae, as written (small kana attached; を, ぢ, づ as お, じ, ず).

    Unlike ``sound_morae`` this keeps a-row + う as written (いわうつ is i-wa-u-tsu)."""
    out: list[str] = []
    for c in reading.translate(_FOLD):
        if c in _SMALL and out:
            out[-1] += c
        else:
            out.append(c)
    return out


def canonical_morae(morae) -> tuple[str, ...]:
    """Morae with the standard equivalences folded: を=お, ぢ=じ, づ=ず, long o (おう=おお),
    えい=ええ.  Two readings sound alike when their canonical morae are equal."""
    out: list[str] = []
    for m in morae:
        m = {"を": "お", "ぢ": "じ", "づ": "ず", "ゐ": "い", "ゑ": "え"}.get(m, m)
        prev = _vowel(out[-1]) if out else None
        if m == "う" and prev == "o":
            m = "お"
        elif m == "い" and prev == "e":
            m = "え"
        out.append(m)
    return tuple(out)


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

_FRONTEND_LOCK = threading.Lock()
_pyopenjtalk = None


def _pyopenjtalk_module():
    """Import pyopenjtalk once, swallowing what it prints to stdout on import."""
    global _pyopenjtalk
    if _pyopenjtalk is None:
        with _FRONTEND_LOCK:
            if _pyopenjtalk is None:
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        import pyopenjtalk
                except Exception as e:  # ImportError, or a broken native module
                    raise SynthError(
                        f"Japanese text frontend not available ({e.__class__.__name__}): "
                        "install the Python package pyopenjtalk-plus") from None
                _pyopenjtalk = pyopenjtalk
    return _pyopenjtalk


def _frontend(text: str) -> list[dict]:
    pj = _pyopenjtalk_module()
    with _FRONTEND_LOCK, contextlib.redirect_stdout(io.StringIO()):
        return [dict(f) for f in pj.run_frontend(text, use_sudachi_kanji_yomi=False, predict_nani=False)]


def _make_label(features: list[dict]) -> list[str]:
    pj = _pyopenjtalk_module()
    with _FRONTEND_LOCK, contextlib.redirect_stdout(io.StringIO()):
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
# timing

#: consonant length in ms at speed 1.0 (the vowel gets the rest of the mora)
CONSONANT_MS = {  # near mei's own median durations (k 75, s 75, sh 75, ch 95, r 30 ms)
    "k": 70, "g": 55, "s": 85, "sh": 85, "z": 70, "j": 70, "t": 65, "ch": 95, "ts": 95,
    "d": 45, "n": 50, "h": 75, "f": 90, "b": 55, "p": 70, "m": 55, "y": 55, "r": 35, "w": 45,
    "v": 60, "ky": 80, "gy": 65, "ny": 60, "hy": 80, "by": 60, "py": 80, "my": 65, "ry": 45,
    "ty": 75, "dy": 60, "kw": 80, "gw": 65,
}


#: a vowel or ん longer than HEAD + TAIL + 4 ticks is said as a long vowel: a HEAD-tick onset,
#: segments of about SEG ticks labelled as its continuation (V-V+V), and a TAIL-tick ending
#: that leads on.  One stretched label would put the stretch into its transition states
#: (silence after sil, a fade before pau): a 600 ms ku-final vowel went silent after 350 ms.
_HEAD = 14
_SEG = 100
_TAIL = 12
_QUINT = re.compile(r"^([^^]*)\^([^-]*)-([^+]*)\+([^=]*)=([^/]*)(/.*)$")


def _split_long(label: str, ticks: int) -> list[tuple[int, str]]:
    m = _QUINT.match(label)
    if m is None or m.group(3) not in ("a", "i", "u", "e", "o", "N") or ticks <= _HEAD + _TAIL + 4:
        return [(ticks, label)]
    p1, p2, v, p4, p5, rest = m.groups()
    mid = ticks - _HEAD - _TAIL
    n = max(1, round(mid / _SEG))
    segs = [_HEAD] + [mid // n + (1 if k < mid % n else 0) for k in range(n)] + [_TAIL]
    out = []
    for k, d in enumerate(segs):
        prev2, prev = (p1, p2) if k == 0 else ((p2 if k == 1 else v), v)
        nxt, nxt2 = (p4, p5) if k == len(segs) - 1 else (v, p4 if k == len(segs) - 2 else v)
        out.append((d, f"{prev2}^{prev}-{v}+{nxt}={nxt2}{rest}"))
    return out


def _sustain(x, vowel_start: int, hold: int):
    """Hold the last vowel ``hold`` frames longer (余韻) at a steady pitch.

    Stretching a vowel inside HTS makes its pitch and loudness swing (each stretched label has
    its own contour), so the hold is made here: from a point S 45 % into the last vowel the
    clip continues as a loop of whole pitch periods (about 25 ms, cut from just before S and
    cross-faded with a sin^2 window), falling gently by 4 dB to the end; the clip's end fade
    follows.  Deterministic, exact length ``len(x) + hold``."""
    import numpy as np

    n = len(x)
    s = vowel_start + int(0.45 * (n - vowel_start))
    seg = x[max(vowel_start, s - 2400):s].astype(np.float64)
    period = 240
    if len(seg) >= 1200:
        seg = seg - seg.mean()
        lags = np.arange(80, min(400, len(seg) // 2))
        if len(lags):
            corr = [np.dot(seg[:-k], seg[k:]) / (np.linalg.norm(seg[:-k]) * np.linalg.norm(seg[k:]) + 1e-12)
                    for k in lags]
            period = int(lags[int(np.argmax(corr))])
    loop = period * max(1, round(1200 / period))
    while loop > period and s - 2 * loop < vowel_start:
        loop -= period
    loop = min(loop, max(1, (s - vowel_start) // 2), s // 2) or 1
    w = np.sin(np.pi * (np.arange(2 * loop) + 0.5) / (2 * loop)) ** 2  # w[i] + w[i + loop] == 1
    grain = x[s - 2 * loop:s].astype(np.float64) * w
    cycle = grain[:loop] + grain[loop:]  # one period of the loop; cycle[i] ~ x[s - loop + i]
    total = (n - s) + hold
    ext = np.tile(cycle, (loop + total) // loop + 1)[:loop + total]  # from s - loop on
    ext[loop:] *= 10 ** (-4 / 20 * np.arange(total) / max(1, total))
    xf = np.sin(0.5 * np.pi * (np.arange(loop) + 0.5) / loop) ** 2
    out = np.empty(n + hold, dtype=np.float32)
    out[:s - loop] = x[:s - loop]
    out[s - loop:s] = x[s - loop:s] * (1 - xf) + ext[:loop] * xf
    out[s:] = ext[loop:]
    return out


@dataclass(frozen=True)
class _Timed:
    """A script with times: label lines for hts_engine and the layout."""

    label_text: str  # what hts_engine reads (edge sil included); the hold is not in it
    base_frames: int  # length of the synthesized clip (edge sil excluded, hold excluded)
    frames: int  # clip length with the hold
    vowel_start: int  # frame where the last mora's vowel (or ん) starts
    layout: Layout


# --------------------------------------------------------------------------------------------
# the voice




_MAGIC = b"KRTSYN1\n"
_HEADER = struct.Struct("<Q32s")  # frames, sha256 of the payload (int16 little-endian)

_file_hashes: dict[tuple[str, int, int], str] = {}
_engine_versions: dict[str, str] = {}


def _file_hash(path: str) -> str:
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _file_hashes:
        with open(path, "rb") as fh:
            _file_hashes[key] = hashlib.sha256(fh.read()).hexdigest()
    return _file_hashes[key]


class SynthVoice:
    """HTS "mei" reading in karuta style (see the module docstring for the timing design).

    Args:
      mora_ms:    length of one mora at speed 1.0 (default 300); scaled by 1/speed
      ku_end:     each ku's last mora lasts this many morae (default 2.0)
      breath_ms:  silence after each ku but the item's last, at speed 1.0 (default 100)
      half_tone:  pitch shift in half-tones (hts_engine -fm; default 0)
      fade_ms:    fade-out at the clip's end (default 150); a 5 ms fade-in at its start
      cache_dir:  clip cache folder (default $KARUTA_CACHE_DIR or the per-user cache) + /synth
      engine:     hts_engine executable (default "hts_engine" on PATH)
      voice_file: .htsvoice file (default mei_normal inside the pyopenjtalk package)
      workers:    threads for ``prefetch`` (default 2)

    ``layout`` and ``samples`` are thread-safe.  ``prefetch(items)`` returns one Future per
    item (its result is the cache file path) and synthesizes in the background; ``samples`` of
    an item being prefetched waits for that work instead of repeating it.
    """

    name = "synth"
    sample_rate = SAMPLE_RATE
    grid = GRID

    def __init__(self, *, mora_ms: int = 300, ku_end: float = 2.0, breath_ms: int = 100,
                 half_tone: float = 0.0, fade_ms: int = 150, cache_dir: str | os.PathLike | None = None,
                 engine: str | None = None, voice_file: str | os.PathLike | None = None,
                 workers: int = 2):
        self.mora_ms = mora_ms
        self.ku_end = ku_end
        self.breath_ms = breath_ms
        self.half_tone = float(half_tone)
        self.fade_ms = fade_ms
        self.cache_dir = Path(cache_dir) if cache_dir is not None else _default_cache_dir() / "synth"
        self._engine = engine
        self._voice_file = str(voice_file) if voice_file is not None else None
        self.workers = workers
        self._lock = threading.Lock()
        self._inflight: dict[str, Future] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._timed: dict[SpeechItem, _Timed] = {}

    # ---- resources --------------------------------------------------------------------------
    def engine_path(self) -> str:
        name = self._engine or _DEFAULT_ENGINE
        path = shutil.which(name)
        if path is None:
            raise SynthError(f"speech engine {name!r} not found: install Debian package htsengine")
        return path

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

    def engine_version(self) -> str:
        path = self.engine_path()
        if path not in _engine_versions:
            try:
                p = subprocess.run([path], capture_output=True, text=True, timeout=10)
                out = p.stdout + p.stderr
            except OSError as e:
                raise SynthError(f"speech engine {path} cannot run: {e.strerror}") from None
            version = next((ln.strip() for ln in out.splitlines() if ln.strip().startswith("Version")), "")
            _engine_versions[path] = f"{os.path.realpath(path)} {version}"
        return _engine_versions[path]

    def check(self) -> None:
        """Raise ``SynthError`` now if the voice cannot speak (engine, voice file, frontend)."""
        self.engine_path()
        self.voice_path()
        self.engine_version()

    # ---- timing -----------------------------------------------------------------------------
    def _script(self, key: str, part: str) -> Script:
        """``script_for``, kept on disk too: a warm start then needs no frontend (and no
        pyopenjtalk import, ~0.3 s, plus ~2 ms a clip).  Keyed by the text, the frontend's
        version and ``_FORMAT``; an unreadable entry is recomputed and rewritten."""
        import json
        from importlib.metadata import PackageNotFoundError, version

        kanji, reading = _ku_for(key, part)
        try:
            frontend = version("pyopenjtalk-plus")
        except PackageNotFoundError:
            frontend = "?"
        ident = json.dumps([key, part, kanji, reading, frontend, _FORMAT], ensure_ascii=False)
        path = self.cache_dir / "scripts" / (hashlib.sha256(ident.encode()).hexdigest()[:32] + ".json")
        from reader.statefiles import StateFileError, load_json, seal

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

    def _ticks(self, ms: float, speed: float) -> int:
        return max(0, round(ms / speed / _TICK_MS))

    def _time(self, item: SpeechItem) -> _Timed:
        timed = self._timed.get(item)
        if timed is not None:
            return timed
        if not item.speed > 0:
            raise ValueError(f"speed must be positive, not {item.speed!r}")
        sc = self._script(item.key, item.part)
        speed = item.speed
        mora = max(2, self._ticks(self.mora_ms, speed))
        breath = self._ticks(self.breath_ms, speed)
        hold = max(0, round(item.hold_ms / _TICK_MS))
        dur: dict[int, int] = {}  # label index -> ticks
        starts: list[int] = []
        pos = 0
        last = len(sc.mora_phones) - 1
        for n, phones in enumerate(sc.mora_phones):
            starts.append(pos)
            total = mora if not sc.ku_end[n] else max(mora, round(mora * self.ku_end))
            c_t = 0
            if len(phones) == 2:
                c = label_phoneme(sc.labels[phones[0]])
                c_t = min(max(3, self._ticks(CONSONANT_MS.get(c, 60), speed)), mora // 2)
                dur[phones[0]], dur[phones[1]] = c_t, total - c_t
            else:
                dur[phones[0]] = total
            vowel_start = pos + c_t
            pos += total
            if sc.pau_after[n] >= 0 and n != last:
                b = max(1, breath)
                dur[sc.pau_after[n]] = b
                pos += b
        frames = (pos + hold) * GRID
        morae = tuple(
            Mora(k, s * GRID, (starts[i + 1] if i < last else pos + hold) * GRID)
            for i, (k, s) in enumerate(zip(sc.kana, starts)))
        lines = []
        t = 0
        for idx, lab in enumerate(sc.labels):
            d = _EDGE_SIL if idx in (0, len(sc.labels) - 1) else dur.get(idx)
            if d is None:  # a pau after the last mora: none expected
                raise SynthError(f"text {item.key!r}: untimed label {label_phoneme(lab)!r}")
            for seg_ticks, seg_lab in _split_long(lab, d):
                lines.append(f"{t * _HTK_PER_TICK} {(t + seg_ticks) * _HTK_PER_TICK} {seg_lab}")
                t += seg_ticks
        timed = _Timed("\n".join(lines) + "\n", pos * GRID, frames, vowel_start * GRID,
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
        timed = self._time(item)
        h = hashlib.sha256()
        for part in (f"format={_FORMAT}", f"rate={SAMPLE_RATE}", f"options={' '.join(self._engine_options())}",
                     f"speed={item.speed!r}",
                     f"voice={_file_hash(self.voice_path())}", f"engine={self.engine_version()}",
                     timed.label_text):
            h.update(part.encode("utf-8"))
            h.update(b"\0")
        return h.hexdigest()[:40]

    def cache_path(self, item: SpeechItem) -> Path:
        return self.cache_dir / f"{self.cache_key(item)}.pcm"

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
    def _synthesize(self, timed: _Timed):
        import numpy as np

        cmd = [self.engine_path(), "-m", self.voice_path(), *self._engine_options()]
        total = timed.base_frames + 2 * _EDGE_SIL * GRID
        try:
            if os.path.exists("/dev/stdin") and os.path.exists("/dev/stdout"):
                p = subprocess.run(cmd + ["-or", "/dev/stdout", "/dev/stdin"],
                                   input=timed.label_text.encode("utf-8"), capture_output=True)
                raw = p.stdout
            else:  # pragma: no cover - platforms without /dev/stdin
                with tempfile.TemporaryDirectory(prefix="karuta-synth-") as d:
                    lab, out = os.path.join(d, "in.lab"), os.path.join(d, "out.raw")
                    Path(lab).write_text(timed.label_text, encoding="utf-8")
                    p = subprocess.run(cmd + ["-or", out, lab], capture_output=True)
                    raw = Path(out).read_bytes() if os.path.exists(out) else b""
        except OSError as e:
            raise SynthError(f"speech engine {cmd[0]} cannot run: {e.strerror}") from None
        if p.returncode != 0:
            msg = [ln for ln in p.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
            raise SynthError(f"speech engine failed: {msg[-1] if msg else f'exit status {p.returncode}'}")
        pcm = np.frombuffer(raw, dtype="<i2")
        if len(pcm) != total:
            raise SynthError(f"speech engine returned {len(pcm)} frames, expected {total}")
        return pcm[_EDGE_SIL * GRID:_EDGE_SIL * GRID + timed.base_frames].copy()

    def _engine_options(self) -> list[str]:
        opts = ["-vp", "-g", str(_ENGINE_GAIN_DB)]
        if self.half_tone:
            opts += ["-fm", repr(self.half_tone)]
        return opts

    def _pcm(self, item: SpeechItem):
        """The int16 clip (from the cache, from a running prefetch, or synthesized now)."""
        timed = self._time(item)
        path = self.cache_path(item)
        with self._lock:
            fut = self._inflight.get(path.name)
            owner = fut is None
            if owner:
                fut = self._inflight[path.name] = Future()
        if not owner:
            return fut.result()
        try:
            pcm = self._read_entry(path, timed.base_frames)
            if pcm is None:
                pcm = self._synthesize(timed)
                self._write_entry(path, pcm)
            fut.set_result(pcm)
            return pcm
        except BaseException as e:
            fut.set_exception(e)
            raise
        finally:
            with self._lock:
                self._inflight.pop(path.name, None)

    def samples(self, item: SpeechItem):
        import numpy as np

        timed = self._time(item)
        out = self._pcm(item).astype(np.float32) * np.float32(_OUTPUT_GAIN / 32768.0)
        # soft limiter: unchanged below _LIMIT, compressed smoothly into (-1, 1) above it
        over = np.abs(out) > _LIMIT
        if over.any():
            x = out[over]
            out[over] = np.sign(x) * (_LIMIT + (1 - _LIMIT) * np.tanh((np.abs(x) - _LIMIT) / (1 - _LIMIT)))
        if timed.frames > timed.base_frames:
            out = _sustain(out, timed.vowel_start, timed.frames - timed.base_frames)
        n = len(out)
        fin = min(GRID, n)
        out[:fin] *= np.linspace(0.0, 1.0, fin, endpoint=False, dtype=np.float32)
        fade = min(round(self.fade_ms * SAMPLE_RATE / 1000), n)
        if fade > 0:
            ramp = 0.5 + 0.5 * np.cos(np.linspace(0.0, np.pi, fade, dtype=np.float64))
            out[n - fade:] *= ramp.astype(np.float32)
        assert n == timed.frames
        return out

    # ---- background work --------------------------------------------------------------------
    def prefetch(self, items) -> list[Future]:
        """Synthesize ``items`` ahead in the background (``workers`` threads), in order.

        Returns one Future per item; each resolves to the item's cache file path (the audio
        stays on disk, so prefetching 200 clips costs no memory) or raises ``SynthError``."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                                    thread_name_prefix="karuta-synth")
            ex = self._executor
        return [ex.submit(self._prefetch_one, item) for item in items]

    def _prefetch_one(self, item: SpeechItem) -> Path:
        self._pcm(item)
        return self.cache_path(item)

    def close(self) -> None:
        """Stop the prefetch pool (waits for running clips, cancels queued ones)."""
        with self._lock:
            ex, self._executor = self._executor, None
        if ex is not None:
            ex.shutdown(wait=True, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
