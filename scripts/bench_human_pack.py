#!/usr/bin/env python3
"""How a one-file pack (``NNN.mp3``, 000 = jo-ka) is split, measured against where its parts
really are: for a reader's set you have (never committed), or for a synthesized one.

    python scripts/bench_human_pack.py FOLDER [--align] [--png DIR --show 1,2,52]
    python scripts/bench_human_pack.py --synth 12      # 上・下・下 packs made here

The truth of each file, found without the importer's code: the sound is the 10 ms frames
louder than -45 dBFS (or 40 dB under the file's loud frames); stretches of sound shorter than
0.5 s that never come within 25 dB of the loud frames (the 95th percentile), and those
shorter than 0.4 s with 0.1 s of quiet on both sides (shorter than any ku), are clicks or
breaths; the parts are the stretches of
sound between pauses of 0.8 s or more (a reader's pause between 上の句 and 下の句, and
between the 下の句 and its repeat, is 0.9-2.6 s; the breaths between ku are shorter); a third
part is the 下の句's repeat when its log-mel cepstra follow the second's (the DTW cost of
the two under 0.7 of the 2nd part's cost against the 1st).  The voice's end: the last 1 ms
block of the first part louder than 48 dB under its peak.

Prints: files whose parts were found (2 or 3), repeats; files with a clip holding more than
one part (doubled: both copies of the 下の句, or a 下の句 inside the 上の句); the 上の句 clip's
end against the voice's end (within 50 ms, median and worst error); what ``voice add`` said.
``--png DIR`` renders the spectrogram and level of the files in ``--show`` with the truth
(green) and the clips (red: 上の句, blue: 下の句) marked, to check the truth by eye.
Issue 32's goals: 0 of 101 doubled, the 上の句's end within 50 ms in at least 95 of 100.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


import numpy as np  # noqa: E402

RATE = 48000


def truth_of(y) -> dict:
    """{"parts": [(start, end) samples], "repeat": bool, "voice_end": sample}."""
    hop = RATE // 100
    n = len(y) // hop
    db = 10 * np.log10(np.mean(y[: n * hop].astype(np.float64).reshape(n, hop) ** 2, axis=1) + 1e-20)
    on = db > min(-45.0, np.percentile(db, 95) - 40)
    runs = []
    m = np.concatenate([[False], on, [False]])
    d = np.flatnonzero(np.diff(m.astype(np.int8)))
    runs = [(int(s), int(e)) for s, e in zip(d[0::2], d[1::2])]
    # a short stretch that stays 25 dB under the loud frames, or a shorter one than any ku
    # with 0.1 s of quiet on both sides: a click or a breath
    top = np.percentile(db, 95)
    keep = []
    for i, (s, e) in enumerate(runs):
        alone = (s - runs[i - 1][1] if i else 10 ** 9) >= 10 and \
            (runs[i + 1][0] - e if i + 1 < len(runs) else 10 ** 9) >= 10
        if not (e - s < 50 and db[s:e].max() < top - 25 or e - s < 40 and alone):
            keep.append((s, e))
    parts = []
    for s, e in keep:
        if parts and s - parts[-1][1] < 80:
            parts[-1] = (parts[-1][0], e)
        else:
            parts.append((s, e))
    parts = [(s * hop, e * hop) for s, e in parts]
    repeat = False
    if len(parts) == 3:
        _features, dtw_cost = _similarity()

        f = [_features(y[s:e], RATE) for s, e in parts]
        allf = np.concatenate(f)
        mu, sd = allf.mean(0), allf.std(0) + 1e-9
        f = [(x - mu) / sd for x in f]
        repeat = dtw_cost(f[1], f[2]) < 0.7 * dtw_cost(f[1], f[0])
    s, e = parts[0] if parts else (0, 0)
    seg = np.abs(y[s:e])
    blocks = seg[: len(seg) // 48 * 48].reshape(-1, 48).max(axis=1) if len(seg) >= 48 else seg
    loud = np.flatnonzero(blocks > blocks.max() * 10 ** (-48 / 20)) if len(blocks) else [0]
    voice_end = s + (int(loud[-1]) + 1) * 48 if len(blocks) else e
    return {"parts": parts, "repeat": repeat, "voice_end": voice_end}


def _similarity():
    """This tree's log-mel cepstra and DTW cost (``audio.pack.split.similarity_features``,
    ``audio.align.dtw_cost`` without a step penalty)."""
    from audio.align import dtw_cost
    from audio.pack.split import similarity_features

    return similarity_features, lambda A, B: dtw_cost(A, B, step_penalty=0.0)


def clip_span(pack, key: str, part: str, y) -> tuple[int, int] | None:
    """Where the pack's clip sits in the decoded source file: stored at import since issue 32,
    found by cross-correlation for a pack imported before."""
    from scipy.signal import fftconvolve

    c = pack.meta["clips"].get(f"{key}.{part}")
    if c is None:
        return None
    if "span" in c:
        return tuple(c["span"])
    import soundfile as sf

    x, _ = sf.read(str(pack.folder / c["file"]), dtype="float64")
    w = x[:4800]
    corr = fftconvolve(y, w[::-1], mode="valid")
    energy = np.sqrt(np.abs(fftconvolve(y.astype(np.float64) ** 2, np.ones(len(w)), mode="valid")))
    r = np.where(energy > 1e-6, corr / (energy * np.linalg.norm(w) + 1e-20), 0)
    s = int(np.argmax(r))
    return s, s + len(x)


def overlap(a, b) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def score(pack, src: Path, keys: list[str]) -> dict:
    from audio.decode import decode

    rows = {}

    def one(key):
        nnn = 0 if key == "joka" else int(key)
        f = next(src.glob(f"*{nnn:03d}.*"))
        y = decode(f, RATE).samples
        t = truth_of(y)
        spans = {p: clip_span(pack, key, p, y) for p in ("kami", "shimo")}
        doubled = [p for p, sp in spans.items() if sp is not None
                   and sum(overlap(sp, q) > 0.3 * RATE for q in t["parts"]) > 1]
        end_err = (spans["kami"][1] - t["voice_end"]) / RATE * 1000 if spans["kami"] else None
        return key, {"truth": t, "spans": spans, "doubled": doubled, "end_err_ms": end_err, "y": y}

    with ThreadPoolExecutor(max_workers=2) as ex:
        for key, r in ex.map(one, keys):
            rows[key] = r
    return rows


def report(rows: dict, pack, took: float) -> None:
    n = len(rows)
    found = sum(1 for r in rows.values() if len(r["truth"]["parts"]) in (2, 3))
    reps = [k for k, r in rows.items() if r["truth"]["repeat"]]
    print(f"files: {n}; truth: {found} of {n} in 2 or 3 parts, {len(reps)} read the 下の句 twice "
          f"(parts: {sorted({len(r['truth']['parts']) for r in rows.values()})}); imported in {took:.0f} s")
    doubled = {k: r["doubled"] for k, r in rows.items() if r["doubled"]}
    print(f"doubled: {len(doubled)} of {n}" + (f" ({', '.join(f'{k} {v}' for k, v in list(doubled.items())[:8])})"
                                               if doubled else ""))
    errs = np.array([r["end_err_ms"] for k, r in rows.items() if k != "joka" and r["end_err_ms"] is not None])
    if len(errs):
        ok = int((np.abs(errs) <= 50).sum())
        worst = sorted(((abs(r["end_err_ms"]), k) for k, r in rows.items()
                        if k != "joka" and r["end_err_ms"] is not None), reverse=True)[:5]
        print(f"上の句 end within 50 ms of the voice's end: {ok} of {len(errs)} poems (median "
              f"{np.median(errs):+.0f} ms, |err| 90% {np.percentile(np.abs(errs), 90):.0f} ms; worst "
              + ", ".join(f"{k} {e:.0f} ms" for e, k in worst) + ")")
    notes = pack.notes() if hasattr(pack, "notes") else []
    print("voice add says: " + ("; ".join(notes) if notes else "(nothing about the split)"))


def render(rows: dict, keys: list[str], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    for key in keys:
        r = rows[key]
        y = r["y"]
        fig, ax = plt.subplots(2, 1, figsize=(18, 7), sharex=True)
        ax[0].specgram(y[::3], NFFT=512, Fs=RATE // 3, noverlap=384, cmap="magma", vmin=-140)
        ax[0].set_ylim(0, 6000)
        hop = RATE // 100
        n = len(y) // hop
        db = 10 * np.log10(np.mean(y[: n * hop].astype(np.float64).reshape(n, hop) ** 2, axis=1) + 1e-20)
        ax[1].plot(np.arange(n) / 100, db)
        ax[1].set_ylim(-100, 0)
        ax[1].grid()
        for s, e in r["truth"]["parts"]:
            ax[1].axvspan(s / RATE, e / RATE, color="g", alpha=0.15)
        ax[1].axvline(r["truth"]["voice_end"] / RATE, color="g")
        for p, c in (("kami", "r"), ("shimo", "b")):
            if r["spans"][p]:
                for v in r["spans"][p]:
                    for a in ax:
                        a.axvline(v / RATE, color=c, lw=1)
        ax[0].set_title(f"{key}: truth (green) {len(r['truth']['parts'])} parts, repeat "
                        f"{r['truth']['repeat']}; kami clip red, shimo clip blue; kami end error "
                        f"{r['end_err_ms']:.0f} ms")
        plt.tight_layout()
        plt.savefig(out / f"{key}.png", dpi=60)
        plt.close(fig)


def synth_pack(folder: Path, n: int, seed: int = 5, tone: bool = False) -> None:
    """``n`` poems (the jo-ka and 1..n-1) read 上・下・下 as testbed/synth_clips.py reads them
    (the synthesized voice, or test tones with ``tone``): other speeds, pauses, breaths and
    clicks, a digital copy every fourth poem."""
    from testbed.synth_clips import write_repeat_pack

    from audio.voice import ToneVoice

    write_repeat_pack(folder, ["joka"] + [str(k) for k in range(1, n)], seed=seed,
                      voice=ToneVoice(RATE) if tone else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, help="a one-file pack (NNN.mp3 ...)")
    ap.add_argument("--synth", type=int, default=0, help="instead: make an N-poem 上・下・下 pack here")
    ap.add_argument("--tone", action="store_true", help="with --synth: test tones, not the synthesized voice")
    ap.add_argument("--align", action="store_true", help="import with the alignment (as voice add does; slower)")
    ap.add_argument("--png", type=Path, help="render the files of --show here")
    ap.add_argument("--show", default="1,2,52", help="which files --png renders")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="karuta-bench-human-"))
    os.environ["KARUTA_DATA_DIR"] = str(work / "data")
    os.environ["KARUTA_CONFIG_DIR"] = str(work / "config")
    try:
        src = args.folder
        if args.synth:
            src = work / "src" / "synth"
            synth_pack(src, args.synth, tone=args.tone)
        if src is None:
            ap.error("give a folder or --synth N")
        from audio.pack import import_pack, scan_source

        keys = sorted({k for k, _ in scan_source(src).files}, key=lambda k: -1 if k == "joka" else int(k))
        t0 = time.perf_counter()
        pack = import_pack(src, name="bench-human", reference=None if args.align else False)
        took = time.perf_counter() - t0
        rows = score(pack, src, keys)
        report(rows, pack, took)
        if args.png:
            render(rows, [k for k in args.show.split(",") if k in rows], args.png)
            print(f"pictures in {args.png}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
