"""Time-stretch without a pitch change: WSOLA (waveform-similarity overlap-add), numpy only.

``stretch(x, rate, speed)`` returns ``round(len(x) / speed)`` frames (exactly): speed 0.7 is
slower (longer), 1.2 faster.  Pitch and timbre are kept because the output is made of
unmodified ~40 ms pieces of the input, each shifted by up to ±10 ms so that it continues the
waveform of the piece before it (maximum cross-correlation, computed by FFT).

Used for slow practice (0.7x-1.2x) of recorded voices.
"""
from __future__ import annotations

__all__ = ["stretch", "stretched_length"]


def stretched_length(frames: int, speed: float) -> int:
    return int(round(frames / float(speed)))


def stretch(x, rate: int, speed: float, frame_ms: float = 40.0, search_ms: float = 10.0):
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    speed = float(speed)
    if not speed > 0:
        raise ValueError(f"speed must be positive, not {speed}")
    out_len = stretched_length(len(x), speed)
    if abs(speed - 1.0) < 1e-9:
        return x.copy()
    N = max(64, int(rate * frame_ms / 1000) // 2 * 2)
    if len(x) < 2 * N or out_len < 2 * N:  # too short to overlap-add: plain interpolation
        if out_len == 0:
            return np.zeros(0, np.float32)
        pos = np.linspace(0, max(0, len(x) - 1), out_len)
        return np.interp(pos, np.arange(len(x)), x).astype(np.float32)
    Hs = N // 2
    delta = int(rate * search_ms / 1000)
    win = np.hanning(N + 2)[1:-1]  # periodic-ish; overlap-add at N/2 sums to ~1
    # frame k is written at output (k - 1) * Hs: the first two frames overlap at the start
    n_frames = out_len // Hs + 3
    # pad so every read is in range
    pad = N + delta + Hs
    xp = np.concatenate([np.zeros(pad, np.float32), x, np.zeros(pad + int(n_frames * Hs * speed) + N, np.float32)])
    y = np.zeros(n_frames * Hs + N, np.float64)
    wsum = np.zeros_like(y)
    nfft = 1
    while nfft < N + 2 * delta + N:
        nfft *= 2
    prev = pad  # input position (in xp) of the previous frame
    for k in range(n_frames):
        nominal = pad + int(round((k - 1) * Hs * speed))
        if k <= 1:  # both frames covering the start read it in place: the clip starts exactly
            best = pad + (k - 1) * Hs
        else:
            target = xp[prev + Hs: prev + Hs + N]  # natural continuation of the previous piece
            lo = max(0, nominal - delta)
            region = xp[lo: lo + N + 2 * delta]
            if not np.any(target) or not np.any(region):
                best = max(0, nominal)
            else:
                # cross-correlation of target with every shift of region, by FFT
                R = np.fft.rfft(region, nfft)
                T = np.fft.rfft(target, nfft)
                cc = np.fft.irfft(R * np.conj(T), nfft)[: len(region) - N + 1]
                best = lo + int(np.argmax(cc))
        seg = xp[best: best + N]
        o = k * Hs
        y[o:o + N] += seg * win
        wsum[o:o + N] += win
        prev = best
    y = y / np.maximum(wsum, 1e-3)
    out = y[Hs:Hs + out_len]
    if len(out) < out_len:
        out = np.concatenate([out, np.zeros(out_len - len(out))])
    return out.astype(np.float32)
