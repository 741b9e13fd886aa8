#!/usr/bin/env python3
"""Voice packs nobody here recorded, with the truth known: for ``bench_voicepack.py --foreign``
and the tests.

Two kinds of "other reader", both made from what a registry package gives:

``HtsReader``   pyopenjtalk's HTS engine reading the poem at its natural speaking pace (not
                the built-in chant: ~130 ms a mora, its own prosody), then changed with WORLD
                (pyworld): another speaker's vocal tract (the spectral envelope's frequency
                axis scaled by ``warp``), another pitch (``half_tone``), another speed
                (``speed``; the frame track is resampled, so every time scales exactly).  The
                truth: each mora's onset from the engine's label times (where it is first
                heard after a silence; a consonant's label start elsewhere).
``EspeakReader``  Debian's espeak-ng (a formant synthesizer, through its library) reading the
                kana of each ku; the truth: each mora's onset from the library's phoneme
                events (the first phoneme of the mora: a stop's burst, a vowel's start).

Each ku is cut out at the engine's own pause and the poem put together again with the pauses
a reader makes: ``uniform`` draws every pause between ku (the one between 上の句 and 下の句
too) from 0.2-0.6 s, so the longest pause is no guide; ``human`` makes the pause before the
下の句 1.0-1.6 s.  ``write_pack`` writes one file a poem (``NNN.mp3``), stereo 24 kHz mp3
with 0.3-1.2 s of leading silence by default, and returns the truth per file.

    python scripts/testbed/foreign_pack.py OUT_DIR [--voice hts|espeak] [--poems 1-100] ...
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import subprocess
import threading
import zlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

RATE = 48000


@dataclass
class Reading:
    """One poem as a foreign reader says it (mono float32 at ``rate``) and what is known."""

    x: np.ndarray
    rate: int
    #: per ku, (first sound, end of last sound) in samples
    ku_spans: list[tuple[int, int]]
    #: per mora of the 上の句 (``sound_morae``), where it is first heard, samples; None: unknown
    kami_onsets: list[int] | None = None
    meta: dict = field(default_factory=dict)

    @property
    def kami_end(self) -> int:
        return self.ku_spans[2][1]

    @property
    def shimo_start(self) -> int:
        return self.ku_spans[3][0]


def _pauses(rng, n_ku: int, style: str) -> list[float]:
    """Seconds of silence after each ku but the last."""
    p = list(rng.uniform(0.2, 0.6, n_ku - 1))
    if style == "human" and n_ku == 5:
        p[2] = float(rng.uniform(1.0, 1.6))
    return p


def _assemble(kus: list[np.ndarray], pauses: list[float], rate: int):
    out, spans, pos = [], [], 0
    for i, k in enumerate(kus):
        spans.append((pos, pos + len(k)))
        out.append(k)
        pos += len(k)
        if i < len(pauses):
            n = int(round(pauses[i] * rate))
            out.append(np.zeros(n, np.float32))
            pos += n
    return np.concatenate(out).astype(np.float32), spans


class HtsReader:
    """pyopenjtalk's HTS voice at its natural pace, as another speaker (see the module doc)."""

    def __init__(self, *, warp: float = 0.88, half_tone: float = -5.0, speed: float = 1.0,
                 style: str = "uniform", seed: int = 0, rate: int = 24000):
        self.warp, self.half_tone, self.speed = warp, half_tone, speed
        self.style, self.seed, self.rate = style, seed, rate
        self.name = f"hts-w{warp:g}-st{half_tone:g}-x{speed:g}-{style}"

    @staticmethod
    def _heard(chant, sc, x, starts, lens) -> list[float]:
        """Per mora, where it is first heard (natural 5 ms frames), as the built-in voice
        defines it: a stop's burst, a fricative's start, after a vowel a nasal, flap or glide
        at its release into the vowel (``chant.HEARD_MS`` before the vowel as heard), after a
        pause its first sound."""
        try:
            got = chant._onsets(x, sc, starts, lens)
        except Exception:
            return [float(starts[ph[0]]) for ph in sc.mora_phones]
        out = []
        for n, (ph, (r, va)) in enumerate(zip(sc.mora_phones, got)):
            cons = chant._phone(sc.labels[ph[0]]) if len(ph) == 2 else ""
            after_pause = n == 0 or sc.ku_end[n - 1]
            if cons in ("m", "n", "my", "ny", "r", "ry", "y", "w") and not after_pause:
                r = max(r, va - chant.HEARD_MS.get(cons, 10) / 5.0)
            out.append(float(r))
        return out

    def read(self, key: str) -> Reading:
        import pyworld as pw
        from scipy.signal import resample_poly

        from audio import chant
        from audio.synth import SynthVoice, script_for

        sc = script_for(key, "whole")
        x, lens = chant.natural(sc.labels, SynthVoice().voice_path())
        starts = np.concatenate([[0], np.cumsum(lens)])  # 5 ms frames
        heard = self._heard(chant, sc, x, starts, lens)
        # another speaker: WORLD at 24 kHz, envelope warped, pitch shifted, time scaled
        fs = self.rate
        y = resample_poly(x, fs, RATE)
        f0, t = pw.dio(y, fs, f0_floor=70.0, f0_ceil=700.0, frame_period=5.0)
        f0 = pw.stonemask(y, f0, t, fs)
        sp = pw.cheaptrick(y, f0, t, fs)
        ap = pw.d4c(y, f0, t, fs)
        bins = np.arange(sp.shape[1])
        src = np.clip(bins * self.warp, 0, sp.shape[1] - 1)
        sp = np.stack([np.interp(src, bins, row) for row in sp])
        f0 = f0 * 2 ** (self.half_tone / 12)
        n_out = int(round(len(f0) / self.speed))
        pos = np.minimum(np.arange(n_out) * self.speed, len(f0) - 1)
        idx = np.round(pos).astype(int)
        f0, sp, ap = f0[idx], sp[idx], ap[idx]
        z = pw.synthesize(f0, np.ascontiguousarray(sp), np.ascontiguousarray(ap), fs, 5.0)
        z = (0.5 * z / (np.abs(z).max() + 1e-9)).astype(np.float32)
        per = fs * 0.005 / self.speed  # output samples per natural 5 ms frame
        # each ku: from its first phoneme to its last (the engine's pauses cut out)
        kus, kstart, mora_ku = [], [], []
        k_first = None
        for m, ph in enumerate(sc.mora_phones):
            if k_first is None:
                k_first = m
            if sc.ku_end[m]:
                a = int(round(starts[sc.mora_phones[k_first][0]] * per))
                b = int(round(starts[ph[-1] + 1] * per))
                kus.append(z[a:b])
                kstart.append(a)
                mora_ku.extend([len(kus) - 1] * (m - k_first + 1))
                k_first = None
        rng = np.random.default_rng([self.seed, int(key) if key.isdigit() else 0])
        out, spans = _assemble(kus, _pauses(rng, len(kus), self.style), fs)
        n_kami = sum(1 for k in mora_ku if k < 3)
        onsets = [spans[mora_ku[m]][0] + max(0, int(round(heard[m] * per)) - kstart[mora_ku[m]])
                  for m in range(n_kami)]
        return Reading(out, fs, spans, onsets, {"voice": self.name})


class _Espeak:
    """libespeak-ng (the library of Debian's espeak-ng, through ctypes): the samples it
    synthesizes and, with them, where each phoneme starts (its phoneme events, in samples).
    One process-wide engine; calls are serialised (the library keeps global state)."""

    _lock = threading.Lock()  # made once, at import: every call and the start take it
    _lib = None

    class _Event(ctypes.Structure):
        _fields_ = [("type", ctypes.c_int), ("unique_identifier", ctypes.c_uint),
                    ("text_position", ctypes.c_int), ("length", ctypes.c_int),
                    ("audio_position", ctypes.c_int), ("sample", ctypes.c_int),
                    ("user_data", ctypes.c_void_p), ("id", ctypes.c_char * 8)]

    @classmethod
    def lib(cls):
        """The library, started once (the caller holds ``_lock``: two threads starting it at
        once each made a lock of their own and synthesized together: a hang)."""
        if cls._lib is None:
            name = ctypes.util.find_library("espeak-ng") or "libespeak-ng.so.1"
            lib = ctypes.CDLL(name)
            # synchronous output, phoneme events on
            cls.rate = lib.espeak_Initialize(2, 0, None, 1)
            if cls.rate <= 0:
                raise OSError("espeak-ng did not start")
            cls._chunks, cls._events = [], []
            proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int,
                                     ctypes.POINTER(cls._Event))

            def callback(wav, n, ev):
                if wav and n > 0:
                    cls._chunks.append(np.ctypeslib.as_array(wav, (n,)).copy())
                i = 0
                while ev[i].type != 0:  # espeakEVENT_LIST_TERMINATED
                    if ev[i].type == 7:  # espeakEVENT_PHONEME
                        cls._events.append((int(ev[i].sample), bytes(ev[i].id).split(b"\0")[0].decode()))
                    i += 1
                return 0

            cls._callback = proto(callback)  # kept: the library holds the pointer
            lib.espeak_SetSynthCallback(cls._callback)
            cls._lib = lib
        return cls._lib

    @classmethod
    def say(cls, text: str, voice: str, wpm: int, pitch: int):
        """(int16 samples, rate, [(sample, phoneme), ...])."""
        with cls._lock:
            lib = cls.lib()
            if lib.espeak_SetVoiceByName(voice.encode()) != 0:
                raise OSError(f"espeak-ng has no voice {voice!r}")
            lib.espeak_SetParameter(1, wpm, 0)  # espeakRATE
            lib.espeak_SetParameter(3, pitch, 0)  # espeakPITCH
            cls._chunks.clear()
            cls._events.clear()
            # espeak-ng's noise sources (frication, aspiration) draw from the C library's
            # rand(): seeded from the text, a reading is the same samples every time (unseeded,
            # one test's pack differed run to run: confidences 0.33-0.62 for the same 上の句)
            ctypes.CDLL(None).srand(zlib.crc32(text.encode()) & 0x7FFFFFFF)
            b = text.encode()
            lib.espeak_Synth(b, len(b) + 1, 0, 1, 0, 1, None, None)  # POS_CHARACTER, CHARS_UTF8
            lib.espeak_Synchronize()
            x = np.concatenate(cls._chunks) if cls._chunks else np.zeros(0, np.int16)
            return x, cls.rate, list(cls._events)


#: espeak-ng's Japanese vowels and moraic nasal: each ends a mora
_ESPEAK_VOWELS = {"a", "i", "u", "e", "o"}
_ESPEAK_MORAIC = {"N\\"}


def espeak_mora_onsets(events, n_morae: int) -> list[int] | None:
    """Where each mora starts (the sample of its first phoneme: a stop's burst, a fricative's
    or nasal's start, a lone vowel's start), from espeak-ng's phoneme events; None when the
    phonemes do not make ``n_morae`` morae (espeak-ng merged or added a sound)."""
    onsets, open_at = [], None
    for at, ph in events:
        if ph.startswith("_") and ph != "_j":  # pauses
            continue
        if open_at is None:
            open_at = at
        if ph in _ESPEAK_VOWELS or ph in _ESPEAK_MORAIC:
            onsets.append(open_at)
            open_at = None
    return onsets if len(onsets) == n_morae and open_at is None else None


class EspeakReader:
    """Debian's espeak-ng reading each ku's kana (formant synthesis: nothing like HTS).  The
    truth: where each mora starts, from the library's phoneme events (ku whose phonemes do
    not make their morae have None there)."""

    def __init__(self, *, wpm: int = 150, pitch: int = 40, variant: str = "", style: str = "uniform",
                 seed: int = 0):
        self.wpm, self.pitch, self.variant, self.style, self.seed = wpm, pitch, variant, style, seed
        self.order_dependent = True  # (write_pack reads in key order)
        self.name = f"espeak{('-' + variant) if variant else ''}-{wpm}wpm-p{pitch}-{style}"

    @staticmethod
    def available() -> bool:
        try:
            _Espeak.say("あ", "ja", 150, 40)
        except (OSError, AttributeError):
            return False
        return True

    def _say(self, text: str):
        """(samples from the first sound to the last, rate, per mora its onset there or None)."""
        from audio.decode import trim_silence
        from poems.kimariji import sound_morae

        voice = "ja" + (f"+{self.variant}" if self.variant else "")
        x, rate, events = _Espeak.say(text, voice, self.wpm, self.pitch)
        y = x.astype(np.float32) / 32768.0
        s, e = trim_silence(y, rate)
        n = len(sound_morae([text]))
        onsets = espeak_mora_onsets(events, n)
        return y[s:e], rate, ([max(0, o - s) for o in onsets] if onsets else [0] + [None] * (n - 1))

    def read(self, key: str) -> Reading:
        from audio.voice import text_for

        kus, rate, onsets = [], 22050, []
        for ku in text_for(key).reading:
            y, rate, o = self._say(ku)
            kus.append(y)
            onsets.append(o)
        rng = np.random.default_rng([self.seed, int(key) if key.isdigit() else 0])
        out, spans = _assemble(kus, _pauses(rng, len(kus), self.style), rate)
        kami = [None if o is None else spans[k][0] + o for k in range(min(3, len(kus))) for o in onsets[k]]
        return Reading(0.5 * out / (np.abs(out).max() + 1e-9), rate, spans, kami, {"voice": self.name})


def write_pack(folder, reader, keys, *, fmt: str = "mp3", rate: int = 24000, channels: int = 2,
               lead=(0.3, 1.2), tail: float = 0.5, seed: int = 0, workers: int = 2) -> dict:
    """Write one file a poem (``NNN.<fmt>``) read by ``reader``; returns {key: truth} where a
    truth holds the ``Reading``'s spans and onsets in samples at 48 kHz from the file's start."""
    import soundfile as sf
    from concurrent.futures import ThreadPoolExecutor

    from audio.decode import resample

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    leads = {k: float(rng.uniform(*lead)) for k in keys}

    # a reader whose samples depend on what it read before (espeak-ng keeps state from one
    # utterance to the next) reads in key order, not in whatever order the workers take
    ahead = {k: reader.read(k) for k in keys} if getattr(reader, "order_dependent", False) else {}

    def one(key):
        r = ahead[key] if key in ahead else reader.read(key)
        lead_n = int(round(leads[key] * r.rate))
        y = np.concatenate([np.zeros(lead_n, np.float32), r.x, np.zeros(int(tail * r.rate), np.float32)])
        y = resample(y, r.rate, rate)
        if channels == 2:  # not quite the same in both ears
            y = np.stack([y, 0.9 * y], axis=1)
        nnn = 0 if key == "joka" else int(key)
        out = folder / f"{nnn:03d}.{fmt}"
        if fmt in ("wav", "flac"):
            sf.write(str(out), y, rate)
        else:
            wav = out.with_suffix(".src.wav")
            sf.write(str(wav), y, rate, subtype="FLOAT")
            codec = {"mp3": ["-c:a", "libmp3lame", "-b:a", "96k"], "ogg": ["-c:a", "libvorbis"]}[fmt]
            subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(wav), *codec, str(out)],
                           check=True)
            wav.unlink()
        to48 = RATE / r.rate
        return key, {
            "file": out.name,
            "ku_spans": [(int(round((a + lead_n) * to48)), int(round((b + lead_n) * to48)))
                         for a, b in r.ku_spans],
            "kami_onsets": None if r.kami_onsets is None else
            [None if o is None else int(round((o + lead_n) * to48)) for o in r.kami_onsets],
        }

    with ThreadPoolExecutor(max_workers=workers) as ex:
        return dict(ex.map(one, keys))


def score_pack(pack, truth: dict, *, tolerance_s: float = 0.3) -> dict:
    """How an imported one-file pack came out against the truth ``write_pack`` returned.

    A poem is split right when its 上の句 clip runs from the first ku's first sound to the
    third ku's end (and its 下の句 clip from the fourth ku's start to the end) within
    ``tolerance_s`` (a quiet first consonant or last sound may be trimmed; a split at another
    pause is a whole ku and a pause off, 0.8 s or more).  Onset errors are those of
    the 上の句 timeline against the known onsets (ms, signed: late is positive), all morae but
    the first, and the decisive mora's (the last of the kimariji among all 100).
    """
    from audio.align import LOW_CONFIDENCE
    from audio.voice import SpeechItem
    from poems.kimariji import kimariji_length

    kl = kimariji_length(range(1, 101))
    right, low, errors, decisive, missing = [], [], [], {}, []
    tol = tolerance_s * RATE
    for key, t in truth.items():
        spans = t["ku_spans"]
        if not pack.has(key, "kami") or not pack.has(key, "shimo"):
            missing.append(key)
            continue
        kami = pack.layout(SpeechItem(key, "kami")).frames
        shimo = pack.layout(SpeechItem(key, "shimo")).frames
        if abs(kami - (spans[2][1] - spans[0][0])) <= tol and abs(shimo - (spans[4][1] - spans[3][0])) <= tol:
            right.append(key)
        tl = pack.timeline(key, "kami")
        if tl is None or tl.confidence < LOW_CONFIDENCE:
            low.append(key)
        if t["kami_onsets"] is not None and tl is not None and key in right:
            got = np.array([m.start for m in tl.morae], float)
            want = np.array([np.nan if o is None else o for o in t["kami_onsets"]], float)
            want -= want[0]  # the clip starts at its first sound: where the first mora is heard
            if len(got) == len(want):
                err = (got - want) / RATE * 1000  # nan where the truth is unknown
                errors.extend(err[1:][np.isfinite(err[1:])])
                if key.isdigit() and kl[int(key)] > 1 and np.isfinite(err[kl[int(key)] - 1]):
                    decisive[key] = float(err[kl[int(key)] - 1])  # a 1-mora kimariji starts the clip
    return {"poems": len(truth), "split_right": right, "low_confidence": low, "missing": missing,
            "onset_errors_ms": np.array(errors), "decisive_errors_ms": decisive}


def summary(name: str, s: dict) -> str:
    """Lines for a benchmark: split right, low confidence, onset errors."""
    n = s["poems"]
    out = [f"{name}: split right {len(s['split_right'])} of {n}; 上の句 below the confidence "
           f"threshold {len(s['low_confidence'])} of {n}"
           + (f"; {len(s['missing'])} poems not imported" if s["missing"] else "")]
    e = np.abs(s["onset_errors_ms"])
    d = np.abs(np.array(list(s["decisive_errors_ms"].values())))
    if len(d):
        out.append(f"    decisive onsets ({len(d)} poems): median {np.median(d):.1f} ms, 90% {np.percentile(d, 90):.1f} ms, "
                   f"max {d.max():.0f} ms; within 10 ms {int((d <= 10).sum())}, within 30 ms {int((d <= 30).sum())}; "
                   f"all onsets: median {np.median(e):.1f} ms, 90% {np.percentile(e, 90):.1f} ms")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--voice", choices=("hts", "espeak"), default="hts")
    ap.add_argument("--poems", default="1-100", help="a range or a list, e.g. 1-20 or 2,5,61")
    ap.add_argument("--style", choices=("uniform", "human"), default="uniform")
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--truth", type=Path, default=None,
                    help="write what write_pack returns (clips, ku spans, onsets) as JSON here")
    args = ap.parse_args()
    if "," in args.poems:
        keys = [str(int(k)) for k in args.poems.split(",")]
    else:
        a, _, b = args.poems.partition("-")
        keys = [str(n) for n in range(int(a), int(b or a) + 1)]
    reader = (HtsReader(speed=args.speed, style=args.style, seed=args.seed) if args.voice == "hts"
              else EspeakReader(style=args.style, seed=args.seed))
    truth = write_pack(args.out, reader, keys, seed=args.seed)
    if args.truth is not None:
        import json

        args.truth.write_text(json.dumps(truth))
    print(f"{len(truth)} files by {reader.name} in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def in_readers_rhythm(r: Reading, quick_s: float = 0.17, hold_share: float = 0.4,
                      gaps_s=(0.0, 0.0), closure_s: float = 0.0) -> tuple[np.ndarray, list[int]]:
    """A reading's 上の句 re-timed as a human reader says it (issue 32): every mora but each
    ku's last one said in ``quick_s``, each ku's last mora held for ``hold_share`` of its ku
    (time-stretched, pitch kept: ``audio.stretch``), the ku joined by ``gaps_s`` of silence
    (readers often take no pause inside the 上の句), and ``closure_s`` of silence before the
    second mora (a reader's long stop closure: 120 ms before き in a human つきみれば).
    Returns (samples at ``r.rate``, each mora's designed onset in them)."""
    from audio.stretch import stretch

    on = list(r.kami_onsets)
    parts, onsets, pos = [], [], 0
    m = 0
    for k in range(3):
        a, b = r.ku_spans[k]
        idx = [i for i in range(m, len(on)) if a <= on[i] < b]
        m = idx[-1] + 1
        bounds = [a] + [on[i] for i in idx[1:]] + [b]
        n = len(idx)
        quick = quick_s * r.rate
        held = quick * (n - 1) * hold_share / (1 - hold_share) if n > 1 else 0.6 * r.rate
        for j in range(n):
            seg = r.x[bounds[j]:bounds[j + 1]]
            want = held if j == n - 1 else quick
            if k == 0 and j == 1 and closure_s > 0:
                g = np.zeros(int(closure_s * r.rate), np.float32)
                parts.append(g)
                pos += len(g)
            onsets.append(pos)
            y = stretch(seg, r.rate, len(seg) / max(1.0, want)) if len(seg) > 64 else seg
            parts.append(np.asarray(y, np.float32))
            pos += len(y)
        if k < 2 and gaps_s[k] > 0:
            g = np.zeros(int(gaps_s[k] * r.rate), np.float32)
            parts.append(g)
            pos += len(g)
    return np.concatenate(parts), onsets
