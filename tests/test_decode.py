"""audio.decode: any file a player may have -> float32 mono at 48 kHz, or one clear line."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
import soundfile as sf

from audio import decode as dec
from audio.decode import decode, resample, trim_silence
from reader.base.errors import AudioFileError

RATE = 48000
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")


def tone(seconds, rate, freq=440.0, amp=0.5, lead=0.0, tail=0.0, ramp_ms=2.0):
    n = int(round(seconds * rate))
    t = np.arange(n) / rate
    x = amp * np.sin(2 * np.pi * freq * t)
    r = max(1, int(rate * ramp_ms / 1000))
    env = np.minimum(1.0, np.minimum(np.arange(n) + 1, np.arange(n)[::-1] + 1) / r)
    x = x * env
    return np.concatenate([np.zeros(int(lead * rate)), x, np.zeros(int(tail * rate))]).astype(np.float32)


def dominant(x, rate):
    w = np.hanning(len(x))
    f = np.abs(np.fft.rfft(x * w))
    return np.argmax(f) * rate / len(x)


def ffmpeg_encode(src, dst, *args):
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", "-i", str(src), *args, str(dst)], check=True)


@pytest.mark.parametrize("subtype", ["PCM_U8", "PCM_16", "PCM_24", "PCM_32", "FLOAT", "DOUBLE"])
@pytest.mark.parametrize("rate", [8000, 22050, 44100, 96000])
def test_wav_any_depth_and_rate(tmp_path, subtype, rate):
    x = tone(0.5, rate, freq=1000)
    path = tmp_path / "a.wav"
    sf.write(path, x, rate, subtype=subtype)
    d = decode(path, RATE)
    assert d.samples.dtype == np.float32 and d.samples.ndim == 1
    assert d.source_rate == rate and d.rate == RATE
    assert len(d.samples) == round(len(x) * RATE / rate)
    assert abs(dominant(d.samples, RATE) - 1000) < 5
    assert 0.4 < np.abs(d.samples).max() < 0.6


def test_stereo_is_averaged(tmp_path):
    x = tone(0.3, 44100, freq=500)
    st = np.stack([x, 0.5 * x], axis=1)
    path = tmp_path / "st.flac"
    sf.write(path, st, 44100)
    d = decode(path)
    assert d.channels == 2
    assert abs(np.abs(d.samples).max() - 0.375) < 0.02


@needs_ffmpeg
@pytest.mark.parametrize("ext,args", [
    ("flac", []), ("ogg", ["-c:a", "libvorbis"]), ("opus", ["-c:a", "libopus", "-ar", "48000"]),
    ("mp3", ["-c:a", "libmp3lame"]), ("m4a", ["-c:a", "aac"]),
])
def test_compressed_formats_keep_length_after_trim(tmp_path, ext, args):
    rate = 44100
    body = tone(0.8, rate, freq=660, lead=0.2, tail=0.3)
    wav = tmp_path / "src.wav"
    sf.write(wav, body, rate)
    out = tmp_path / f"clip.{ext}"
    ffmpeg_encode(wav, out, *args)
    d = decode(out, RATE)
    s, e = trim_silence(d.samples, RATE)
    # the tone is 0.8 s: the trimmed clip is that long, whatever the codec added around it
    # (no padding left; transform codecs smear a hard stop by up to one block, ~25 ms)
    tol = {"flac": 0.001, "mp3": 0.005}.get(ext, 0.03)
    assert abs((e - s) - 0.8 * RATE) < tol * RATE, (ext, e - s)
    assert abs(s - 0.2 * RATE) < tol * RATE, (ext, s)
    assert abs(dominant(d.samples[s:e], RATE) - 660) < 5


@needs_ffmpeg
@pytest.mark.parametrize("xing", [True, False])
def test_mp3_encoder_padding_removed(tmp_path, xing):
    """A tone of known length, mp3-encoded, comes back without the encoder's delay/padding."""
    rate = 44100
    n = 44100 + 123
    x = tone(n / rate, rate, freq=440, ramp_ms=1.0)
    wav = tmp_path / "t.wav"
    sf.write(wav, x, rate)
    mp3 = tmp_path / "t.mp3"
    ffmpeg_encode(wav, mp3, "-c:a", "libmp3lame", *([] if xing else ["-write_xing", "0"]))
    d = decode(mp3, None)
    if xing:  # LAME gapless header: libsndfile gives back exactly the frames that went in
        assert d.source_frames == n
    s, e = trim_silence(d.samples, rate)
    s0, e0 = trim_silence(x, rate)
    if xing:  # sample-exact (±3 for the codec's error at the threshold crossing)
        assert abs(s - s0) <= 3 and abs(e - e0) <= 3
    else:  # without the header ~1,100 samples of delay come first, and are cut
        assert s > 500
        assert abs((e - s) - (e0 - s0)) < 0.004 * rate


def test_trim_is_sample_exact():
    x = np.zeros(10000, np.float32)
    x[1234:5678] = 0.25 * np.sign(np.sin(np.arange(5678 - 1234) / 7.0) + 1e-9)
    assert trim_silence(x, RATE) == (1234, 5678)
    assert trim_silence(np.zeros(500, np.float32), RATE) == (0, 0)
    assert trim_silence(np.zeros(0, np.float32), RATE) == (0, 0)


def test_trim_ignores_noise_floor_and_far_click():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 0.001, RATE * 2).astype(np.float32)
    x[RATE // 2:RATE] += tone(0.5, RATE, amp=0.5)
    x[50] = 0.3  # a click 0.45 s before the sound
    s, e = trim_silence(x, RATE)
    assert abs(s - RATE // 2) < 0.002 * RATE and abs(e - RATE) < 0.002 * RATE


@pytest.mark.parametrize("src,dst", [(22050, 48000), (44100, 48000), (96000, 48000), (8000, 48000), (48000, 16000)])
def test_resample_sine(src, dst):
    x = np.sin(2 * np.pi * 1000 * np.arange(src) / src).astype(np.float32)
    y = resample(x, src, dst)
    assert len(y) == dst
    ref = np.sin(2 * np.pi * 1000 * np.arange(dst) / dst)
    mid = slice(dst // 10, -dst // 10)
    assert np.abs(y[mid] - ref[mid]).max() < 1e-3


# ---- bad input: one line each -----------------------------------------------------------

def one_line_error(path, **kw) -> str:
    with pytest.raises(AudioFileError) as ei:
        decode(path, **kw)
    msg = str(ei.value)
    assert "\n" not in msg and path.name in msg
    return msg


def test_zero_length(tmp_path):
    p = tmp_path / "empty.mp3"
    p.write_bytes(b"")
    assert "empty" in one_line_error(p)


def test_missing(tmp_path):
    assert "missing" in one_line_error(tmp_path / "nope.wav")


@pytest.mark.process  # (audio.decode asks ffprobe about a file libsndfile cannot read)
@pytest.mark.parametrize("name", ["fake.mp3", "fake.wav", "fake.ogg", "fake.flac", "fake.m4a", "fake.opus"])
def test_garbage_with_audio_name(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(b"<html>this is a web page, not audio</html>\n" * 50)
    msg = one_line_error(p)
    assert "not a readable audio file" in msg or "corrupt" in msg


@pytest.mark.parametrize("ext", ["wav", "flac", "mp3", "ogg"])
def test_truncated_file_decodes_what_is_there_or_fails_cleanly(tmp_path, ext):
    rate = 44100
    x = tone(2.0, rate, freq=440)
    src = tmp_path / "full.wav"
    sf.write(src, x, rate)
    full = tmp_path / f"full.{ext}"
    if ext != "wav":
        if shutil.which("ffmpeg") is None:
            pytest.skip("ffmpeg not installed")
        ffmpeg_encode(src, full)
    data = full.read_bytes()
    cut = tmp_path / f"cut.{ext}"
    cut.write_bytes(data[: len(data) // 2])
    try:
        d = decode(cut)
    except AudioFileError as e:
        assert "\n" not in str(e) and "cut." in str(e)
    else:
        assert 0 < len(d.samples) <= 2.05 * RATE


def test_huge_files_refused_before_decoding(tmp_path, monkeypatch):
    p = tmp_path / "long.wav"
    sf.write(p, np.zeros(8000 * 5, np.float32), 8000)
    monkeypatch.setattr(dec, "MAX_SECONDS", 2.0)
    assert "too long" in one_line_error(p)
    monkeypatch.setattr(dec, "MAX_BYTES", 1000)
    assert "too large" in one_line_error(p)


def test_float_file_beyond_full_scale_counts_as_clipped(tmp_path):
    x = tone(0.2, 48000, amp=1.5)
    p = tmp_path / "hot.wav"
    sf.write(p, x, 48000, subtype="FLOAT")
    d = decode(p)
    assert d.clipped_samples > 100
    nan = x.copy()
    nan[100] = np.nan
    sf.write(p, nan, 48000, subtype="FLOAT")
    assert np.all(np.isfinite(decode(p).samples))


@needs_ffmpeg
def test_m4a_via_ffmpeg(tmp_path):
    rate = 22050
    src = tmp_path / "s.wav"
    sf.write(src, tone(0.5, rate, freq=880, lead=0.1, tail=0.1), rate)
    m4a = tmp_path / "s.m4a"
    ffmpeg_encode(src, m4a, "-c:a", "aac")
    d = decode(m4a)
    assert d.source_rate == rate
    s, e = trim_silence(d.samples, RATE)
    assert abs((e - s) - 0.5 * RATE) < 0.005 * RATE
