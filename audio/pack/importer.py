"""Import a source folder as a pack (``import_pack``): decode, trim, split, match loudness,
align, and install without ever leaving a half-written folder."""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
from pathlib import Path

from audio.voice import Layout, Mora, SpeechItem
from reader.base.errors import AudioFileError, KarutaError
from audio.pack.common import (
    _order, _ref_layout, BUILTIN, clip_label, MAX_CLIP_S, MIN_CLIP_S, MIN_PAUSE_S, PACK_FORMAT,
    PACK_RATE, PARTS, PEAK_LIMIT, Problem, SILENT_DB, TARGET_RMS_DB, voices_dir,
)
from audio.pack.read import file_sha1, VoicePack
from audio.pack.scan import _manifest_text, read_manifest, refuse_out_of_range, scan_source
from audio.pack.split import analyse, find_parts, voice_span, widen_split


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


def find_split(x, rate: int, expect: int | None = None, an=None) -> tuple[int, int] | None:
    """Where a one-file recording pauses between 上の句 and 下の句: (pause start, pause end).

    The pauses are runs of 10 ms frames 30 dB below the loud frames (or near the noise
    floor) inside the spoken span, at least ``MIN_PAUSE_S`` long (None when there is none).
    ``expect``: where the 上の句 is known to end (a sample, from the mora alignment of the
    whole poem): the pause nearest to it wins (a reader who pauses alike after every ku has
    no longest pause to go by).  Without it the longest pause wins; pauses outside the middle
    of the span (20-85 %) count a third of their length.
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
    from audio.pack.split import analyse

    an = an if an is not None else analyse(x, rate)
    for s0, e0 in (an.bursts if an is not None else ()):  # a breath or a click is no voice
        active[s0:e0] = False
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
            if expect is not None:  # nearest to the expected end first, then the longer
                gap = max(0, (first + k) * hop - expect, expect - (first + j) * hop)
                score = length / (1.0 + gap / (0.05 * rate)) ** 2
            if length * hop >= MIN_PAUSE_S * rate and score > best_score:
                best, best_score = (first + k, first + j), score
            k = j
        else:
            k += 1
    if best is None:
        return None
    return best[0] * hop, best[1] * hop


def _expected_split(y, ref, key: str) -> int | None:
    """Where the alignment of a whole one-file poem with the reference reading of its 上の句
    and 下の句 ends the 上の句's last mora (a sample of ``y``); None without a reference or
    when it cannot say."""
    if ref is None:
        return None
    import numpy as np

    from audio.align import align, ku_sizes
    from audio.decode import trim_silence

    try:
        kami, shimo = SpeechItem(key, "kami"), SpeechItem(key, "shimo")
        la, lb = ref.layout(kami), ref.layout(shimo)
        xa = np.asarray(ref.samples(kami), np.float32)
        xb = np.asarray(ref.samples(shimo), np.float32)
        sizes_a, sizes_b = ku_sizes(kami, la), ku_sizes(shimo, lb)
    except Exception:  # the reference cannot read this one: the longest pause decides
        return None
    gap = np.zeros(int(0.3 * la.sample_rate), np.float32)
    off = len(xa) + len(gap)
    both = Layout(off + len(xb), la.sample_rate,
                  la.morae + tuple(Mora(m.kana, m.start + off, m.end + off) for m in lb.morae))
    s, e = trim_silence(y, PACK_RATE)
    if e - s < PACK_RATE // 2 or not la.morae or not lb.morae:
        return None
    t = align(y[s:e], PACK_RATE, np.concatenate([xa, gap, xb]), both,
              ku_sizes=sizes_a + sizes_b if sizes_a and sizes_b else None)
    return s + t.morae[len(la.morae)].start


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


def import_pack(src, dest_dir=None, *, name: str | None = None, reference=None,
                align_parts=("kami", "shimo"), workers: int | None = None, progress=None,
                replace: bool = False) -> "VoicePack":
    """``_import_pack`` that never leaves its half-written ``NAME.importing-PID`` folder
    behind (an error, a full disk, Ctrl-C, SIGTERM), says a full or read-only disk in one
    line, and first removes such folders left by imports that were killed (kill -9, power).

    An installed pack of the same name is replaced only when it was imported from the same
    source folder (adding a folder again re-imports it) or with ``replace=True``; otherwise
    ``KarutaError`` (one line) and the installed pack is untouched.
    """
    roots = {voices_dir()} | ({Path(dest_dir).parent} if dest_dir is not None else set())
    for root in roots:
        _remove_stale_imports(root)
    try:
        return _import_pack(src, dest_dir, name=name, reference=reference,
                            align_parts=align_parts, workers=workers, progress=progress,
                            replace=replace)
    except BaseException as e:
        for root in roots:
            for p in root.glob(f"*.importing-{os.getpid()}") if root.is_dir() else ():
                shutil.rmtree(p, ignore_errors=True)
        if isinstance(e, Exception) and not isinstance(e, (OSError, KarutaError)) and any(
                root.is_dir() and shutil.disk_usage(root).free < 1 << 20 for root in roots):
            # libsndfile's write errors are not OSError: a full disk is said the same way
            raise KarutaError(f"cannot import {src}: the disk is full; nothing was installed "
                              f"and the partial import was removed") from None
        if isinstance(e, OSError):
            import errno

            why = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is full",
                   errno.EROFS: "the disk is read-only", errno.EACCES: "permission denied"
                   }.get(e.errno, e.strerror or str(e))
            raise KarutaError(f"cannot import {src}: {why} ({getattr(e, 'filename', '') or ''}); "
                              f"nothing was installed and the partial import was removed") from None
        raise


def _remove_stale_imports(root: Path) -> None:
    """Remove ``*.importing-PID`` folders whose process is gone (killed mid-import)."""
    if not root.is_dir():
        return
    for p in root.glob("*.importing-*"):
        pid = p.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still importing
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
        except OSError:
            continue


def _import_pack(src, dest_dir=None, *, name: str | None = None, reference=None,
                 align_parts=("kami", "shimo"), workers: int | None = None, progress=None,
                 replace: bool = False) -> "VoicePack":
    """Import a source folder (any supported layout) as a pack; returns the ``VoicePack``.

    ``dest_dir``: the pack folder to (re)create (default ``voices_dir() / <name>``).
    ``reference``: the voice to align with (default: ``SynthVoice`` when it can speak; with
    no reference, or ``reference=False``, timelines are proportional).  ``align_parts``: which
    parts are aligned by DTW (the others get proportional timelines).  ``progress(done, total)``
    is called as clips are done.  Problems never raise: they are stored and
    ``VoicePack.problems()`` / ``karuta voice check`` report them.
    """
    import dataclasses

    import numpy as np
    import soundfile as sf

    from audio.align import (COMPETITORS_ABOVE, SWAP_CHECK_BELOW, align_detail, both_halves_agree, ku_sizes,
                             proportional, sounds_like, text_ratios, with_competitors)
    from audio.align import LOW_CONFIDENCE
    from audio.align import _morae_from_onsets as _morae
    from audio.align_hmm import MIN_CLIPS
    from audio.decode import decode, trim_silence
    from audio.loudness import CEILING_DBTP, TARGET_LUFS, integrated_lufs, true_peak_db

    src = Path(src)
    source = scan_source(src)
    fields, overrides, mproblems = read_manifest(src / "voice.toml")
    refuse_out_of_range(mproblems, src / "voice.toml",
                        "nothing was imported: mend it and add the folder again")
    if source.layout == "unknown" and not source.files:
        raise KarutaError(f"{src}: no clips found (expected <reader>_NNN_1.ogg, NNN_1.mp3 or name_NNN.mp3 files)")
    pack_name = _pack_name(name or fields.get("name") or source.reader or src.resolve().name)
    if pack_name in BUILTIN:
        pack_name += "-pack"
    dest = Path(dest_dir) if dest_dir is not None else voices_dir() / pack_name
    from reader.base.files import hold

    # two imports under one name at once: the second is one line, not a silent replacement
    dest.parent.mkdir(parents=True, exist_ok=True)
    held = hold(dest, "the voice pack")
    try:
        if dest.exists() and not replace:
            _refuse_replacing(dest, src)
        tmp = dest.with_name(dest.name + f".importing-{os.getpid()}")
        if tmp.exists():
            shutil.rmtree(tmp)
        (tmp / "clips").mkdir(parents=True)
        ref = None if reference is False else _reference(reference)

        problems: list[Problem] = list(source.problems) + mproblems
        clips: dict[str, dict] = {}
        lock = threading.Lock()

        notes: dict[str, dict] = {}

        #: the reader's own repeat of a 下の句 the reading says twice (the jo-ka's): its second
        again: dict[str, dict] = {}

        def store(key: str, part: str, y, info: dict, rel: str, offset: int = 0, say_bursts=True,
                  repeat: bool = False):
            ov = overrides.get((key, part), {})
            if ov.get("exclude"):
                return [Problem(clip_label(key, part), "excluded", "exclude = true in voice.toml")]
            span = voice_span(y, PACK_RATE)  # a breath or a click before or after: not the voice
            s0, e0 = trim_silence(y, PACK_RATE)
            s, e = s0, e0
            if span is not None and (span[0] > 0 or span[1] < len(y)):
                # trimmed as the whole was (its floor from the silence around the voice), with
                # the bursts around the voice silenced
                y2 = np.zeros_like(y)
                y2[span[0]:span[1]] = y[span[0]:span[1]]
                s1, e1 = trim_silence(y2, PACK_RATE)
                if e1 > s1:
                    s, e = s1, e1
                    if say_bursts and (s - s0 > PACK_RATE // 20 or e0 - e > PACK_RATE // 20):
                        with lock:  # more than 50 ms of a burst left out: said in voice add
                            notes.setdefault(key, {})["bursts"] = notes.get(key, {}).get("bursts", 0) + 1
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
            fname = f"{key}_{part}{'_again' if repeat else ''}.flac"
            sf.write(str(tmp / "clips" / fname), clip * store_gain, PACK_RATE, subtype="PCM_24")
            sha1 = file_sha1(tmp / "clips" / fname)  # voice check finds a replaced clip
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
                "sha1": sha1, "span": [offset + s, offset + e],
            }
            with lock:
                (again if repeat else clips)[f"{key}.{part}"] = entry
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
                end = len(y)
            else:
                an = parts = None
                from audio.voice import ToneVoice

                tone = ToneVoice(PACK_RATE)
                morae = tuple(len(tone.layout(SpeechItem(key, p)).morae) for p in PARTS)
                an = analyse(y, PACK_RATE)
                parts = find_parts(y, PACK_RATE, morae, an=an)
                if parts is not None:  # 上・下・下: one 下の句 is kept (the reading repeats it)
                    a, b, end = parts.kami_end, parts.shimo_start, parts.shimo_end
                    with lock:
                        notes.setdefault(key, {})["repeat"] = "copy" if parts.copy else "read"
                else:
                    found = find_split(y, PACK_RATE, _expected_split(y, ref, key), an=an)
                    if found is None:
                        return [Problem(key, "no split", f"no pause between 上の句 and 下の句 in {rel}; "
                                                         f"set clips.\"{key}\".split_ms in voice.toml")]
                    a, b = widen_split(y, PACK_RATE, *found, an=an)
                    end = len(y)
                    with lock:
                        notes.setdefault(key, {})["repeat"] = ""  # read once: 上・下
            if "split_ms" not in ov:  # the breaths and clicks found in the pauses, said once
                heard = len(an.apart()) if an is not None else 0
                if heard:
                    with lock:
                        notes.setdefault(key, {})["bursts"] = heard
            kept = []
            if "split_ms" not in ov and parts is not None and key == "joka":
                # the reading says the jo-ka's 下の句 twice: its second time is the reader's own
                r0, r1 = parts.repeat
                kept = store(key, "shimo", y[r0:r1], info, rel, offset=r0, say_bursts=False, repeat=True)
            return (store(key, "kami", y[:a], info, rel, say_bursts=False)
                    + store(key, "shimo", y[b:end], info, rel, offset=b, say_bursts=False) + kept)

        jobs = sorted(source.files.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1]))
        if ref is not None and hasattr(ref, "prefetch") and any(p == "both" for _, p in source.files):
            try:  # one-file poems are split where the alignment of the whole poem ends the 上の句
                ref.prefetch([SpeechItem(k, p) for (k, part) in source.files if part == "both"
                              for p in ("kami", "shimo")])
            except Exception:
                pass
        from concurrent.futures import ThreadPoolExecutor

        nworkers = workers or min(4, os.cpu_count() or 1)
        done = 0
        with ThreadPoolExecutor(max_workers=nworkers) as ex:
            for res in ex.map(one, jobs):
                problems.extend(res)
                done += 1
                if progress:
                    progress(done, len(jobs))

        # loudness matching: every clip's active RMS to the target, peaks limited
        target = 10 ** (TARGET_RMS_DB / 20)
        for c in list(clips.values()) + list(again.values()):
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

        # a pack big enough gets its reader's own model (audio.align_hmm): its confidence is
        # weighed against the neighbouring texts there, not by DTW
        use_model = sum(1 for k in aligned if k.split(".")[0].isdigit()) >= MIN_CLIPS
        dtw_at: dict[str, list[int]] = {}  # clip -> the DTW's onsets (samples), the model's start
        dinfo: dict[str, dict] = {}  # clip -> what its DTW measured (align_detail)
        ratios: dict[str, dict[str, float]] = {}  # clip -> {poem: its cost ratio against that poem's text}
        fits: dict[str, dict[str, float]] = {}  # clip -> {poem: its fit to that poem's text (with_competitors)}

        def timeline(job):
            store_, k = job
            key, part = k.split(".")
            c = store_[k]
            lay = _ref_layout(ref, key, part)
            if ref is not None and part in align_parts:
                try:
                    x, _ = sf.read(str(tmp / c["file"]), dtype="float32")
                    t, detail = align_detail(x, PACK_RATE, ref.samples(SpeechItem(key, part)), lay,
                                             ku_sizes=ku_sizes(SpeechItem(key, part), lay))
                    if "ratio" in detail and store_ is clips:
                        ratios[k] = {key: float(detail["ratio"])}
                        fits[k] = {key: float(detail["fit"])}
                    if t.confidence < SWAP_CHECK_BELOW and key.isdigit() and "ratio" in detail:
                        t = _swapped(t, x, detail["ratio"], key, part, ratios.get(k), fits.get(k))
                    if "dtw_onsets" in detail and store_ is clips:
                        dtw_at[k] = list(detail["dtw_onsets"])
                        dinfo[k] = detail
                    if not use_model:
                        t = _weighed_by_dtw(k, t, x, detail)
                    return k, t
                except Exception as e:  # the reference cannot speak this one: estimate
                    t = proportional(c["frames"], lay)
                    return k, type(t)(t.morae, 0.0, f"proportional ({' '.join(str(e).split())[:60]})")
            return k, proportional(c["frames"], lay)

        def _texts(key, part):
            """The kana of ``key``'s ``part`` (None if the reference cannot say it)."""
            try:
                return [m.kana for m in _ref_layout(ref, key, part).morae]
            except Exception:
                return None

        def _weighed_by_dtw(k, t, x, detail):
            """Another voice's timeline ``t`` of clip ``k`` (samples ``x``): its confidence
            weighed by how much better its own text fits than the neighbouring poems' texts
            (DTW; the cost ratio alone let a human reader's neighbouring texts through)."""
            key, part = k.split(".")
            if not (key.isdigit() and k in ratios and not detail.get("same_voice")
                    and detail["ratio"] >= COMPETITORS_ABOVE):
                return t
            seen, fit = ratios[k], fits[k]
            near = [str(o) for o in (int(key) - 1, int(key) + 1) if 1 <= o <= 100]
            seen.update(text_ratios(x, PACK_RATE, _cands([o for o in near if o not in fit], part), fits=fit))
            conf = with_competitors(t.confidence, detail["pace"], detail["fit"],
                                    {o: f for o, f in fit.items() if o != key})
            return dataclasses.replace(t, confidence=conf)

        def _weighed(k, t):
            """``_weighed_by_dtw`` afterwards, for a pack whose reader's model could not be
            trained; a clip it cannot weigh keeps ``t``."""
            if k not in dtw_at:
                return t
            try:
                x, _ = sf.read(str(tmp / clips[k]["file"]), dtype="float32")
                return _weighed_by_dtw(k, t, x, dinfo[k])
            except Exception:
                return t

        def _own_model(tls):
            """The reader's own model (``audio.align_hmm``) trained on every clip the DTW
            aligned (``tls``: clip -> its DTW timeline), and each of them aligned with it:
            onsets where both agree, confidence from how much better its own text fits
            than the neighbouring poems' texts (the same part) and its own morae shuffled,
            measured against any phones (``audio.align_hmm.weigh``).  None when
            it cannot be trained."""
            from audio.align_hmm import clip_features, competitor_texts, onset_frames, onsets, quiet_frames, train, weigh

            data, order = [], []
            for k in sorted(tls):
                key, part = k.split(".")
                kanas = [m.kana for m in tls[k].morae]
                try:
                    x, _ = sf.read(str(tmp / clips[k]["file"]), dtype="float32")
                except Exception:
                    continue
                F = clip_features(x, PACK_RATE)
                near = [_texts(str(o), part) for o in (int(key) - 1, int(key) + 1) if 1 <= o <= 100] \
                    if key.isdigit() else []
                comps = competitor_texts(kanas, [t_ for t_ in near if t_])
                init = onset_frames(dtw_at[k], PACK_RATE, len(F))
                data.append((F, kanas, init, quiet_frames(x, PACK_RATE)[:len(F)]))
                order.append((k, x, comps))
            model = train(data, competitors=[c for _, _, c in order])
            if model is None:
                return None

            def one_clip(i):
                k, x, comps = order[i]
                F, kanas = data[i][0], data[i][1]
                t = tls[k]
                on = onsets(model, x, PACK_RATE, kanas, [m.start for m in t.morae], F=F)
                conf = weigh(model, F, kanas, comps)[0]
                # its own text fits it clearly: no "sounds like poem N" from the DTW's weaker test
                like = t.sounds_like if conf < LOW_CONFIDENCE else None
                return k, dataclasses.replace(t, morae=_morae(kanas, on, clips[k]["frames"]), confidence=conf,
                                              method="reader", sounds_like=like)

            with ThreadPoolExecutor(max_workers=nworkers) as ex2:
                return dict(ex2.map(one_clip, range(len(order))))

        def _cands(keys, part):
            cands = {}
            for other in keys:
                item = SpeechItem(str(other), part)
                try:
                    lay_o = ref.layout(item)
                    cands[str(other)] = (ref.samples(item), lay_o, ku_sizes(item, lay_o))
                except Exception:
                    pass
            return cands

        def _swapped(t, x, own_ratio, key, part, seen, seen_fits):
            """``t`` naming the neighbouring poem whose text the clip fits clearly better
            (``seen``, when given, gets each neighbour's cost ratio, ``seen_fits`` its fit)."""
            near = [o for o in (int(key) - 1, int(key) + 1) if 1 <= o <= 100]
            like = sounds_like(x, PACK_RATE, own_ratio, _cands(near, part), ratios=seen, fits=seen_fits)
            return dataclasses.replace(t, sounds_like=like) if like else t

        def _one_file_swaps():
            """A poem read in one file whose one half sounds like poem N names N only if its
            other half fits N's text better than its own too (two files swapped or misnumbered
            hold the other poem in both halves); where it does, both halves name N."""
            for k in sorted(clips):
                t = clips[k].get("timeline") or {}
                named = t.get("sounds_like")
                key, part = k.split(".")
                other = f"{key}.{'shimo' if part == 'kami' else 'kami'}"
                o = clips.get(other)
                if not named or o is None or o.get("source") != clips[k].get("source") \
                        or other.split(".")[1] not in align_parts or other not in ratios:
                    continue
                seen = ratios[other]
                if named not in seen:
                    try:
                        x, _ = sf.read(str(tmp / o["file"]), dtype="float32")
                        seen.update(text_ratios(x, PACK_RATE, _cands([named], other.split(".")[1])))
                    except Exception:
                        pass
                if named in seen and both_halves_agree(named, seen[key], seen[named]):
                    if (o["timeline"] or {}).get("sounds_like") in (None, named):
                        o["timeline"]["sounds_like"] = named
                        continue
                t.pop("sounds_like", None)

        got: dict = {}
        with ThreadPoolExecutor(max_workers=nworkers) as ex:
            for store_, k, t in ex.map(lambda j: (j[0],) + timeline(j),
                                       [(clips, k) for k in sorted(clips)] + [(again, k) for k in sorted(again)]):
                got[id(store_), k] = (store_, t)
        if use_model:
            try:
                mended = _own_model({k: t for (sid, k), (st, t) in got.items() if st is clips and k in dtw_at})
            except Exception:  # never a traceback at import: the DTW's timelines stand
                mended = None
            if mended is None:  # too few clips fit their texts to learn from: the DTW's weighing
                with ThreadPoolExecutor(max_workers=nworkers) as ex:
                    mended = dict(zip(dtw_at, ex.map(lambda k: _weighed(k, got[id(clips), k][1]), list(dtw_at))))
            for k, t in mended.items():
                got[id(clips), k] = (clips, t)
        for (_, k), (store_, t) in got.items():
            store_[k]["timeline"] = t.to_json()
        _one_file_swaps()
        if ref is not None and hasattr(ref, "close") and reference is None:
            ref.close()

        fields = dict(fields)
        fields["name"] = pack_name
        fields.setdefault("reader", source.reader)
        fields["imported_from"] = str(src.resolve())
        fields["layout"] = source.layout
        for c in list(clips.values()) + list(again.values()):
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
            "split_notes": {k: notes[k] for k in sorted(notes, key=_order)},
            "again": again,
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
    finally:
        held.release()


def _refuse_replacing(dest: Path, src: Path) -> None:
    """``KarutaError`` unless ``dest`` (an installed pack) came from ``src`` itself."""
    from reader.base.statefiles import StateFileError, load_json

    try:
        came_from = load_json(dest / "pack.json", "pack-index", "voice pack index").get("imported_from")
    except (OSError, StateFileError):
        came_from = None
    if came_from is not None and Path(str(came_from)) == Path(src).resolve():
        return  # the same source again: a re-import
    raise KarutaError(f"a voice named {dest.name!r} is already installed"
                      + (f" (from {came_from})" if came_from else "")
                      + f": choose another name with --name, or replace it with --replace")


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


# the other parts of the package (imported last: they import this one too)
