"""Voice packs: a reader's recordings, imported once, read like any other voice.

A **source** is a folder a player already has, in one of three layouts (rules.md §7):

  wasuramoti     ``<reader>/<reader>_<NNN>_<1|2>.<ext>``   1 = 上の句 (kami), 2 = 下の句 (shimo)
  karuta-tools   ``<reader>/<NNN>_<1|2>.<ext>``
  one-file       ``<prefix>_<NNN>.<ext>`` (e.g. ``karuta_000.mp3``): kami and shimo in one file,
                 split at the pause where the 上の句 ends (``audio.pack.split``): a file read
                 上・下・下 (the 下の句 again after a pause, found by its self-similarity) keeps
                 one 下の句 and splits at the pause before it; otherwise the whole poem is
                 aligned with the reference reading of its 上の句 and 下の句 and the pause
                 nearest the end of the 上の句's last mora wins (without a reference: the
                 longest pause).  Breaths and clicks beside the voice are left out of every clip.

NNN 000 is the jo-ka (key "joka"), 001-100 the poems (keys "1".."100").  Extensions: wav, flac,
ogg, opus, mp3 (in-process) and m4a/aac (ffmpeg); see ``audio.decode``.

An optional ``voice.toml`` in the source folder names the pack and overrides single clips::

    name = "inaba"                 # pack name (default: the reader's / the folder's name)
    reader = "稲葉"                 # who reads
    source = "recorded 2019, club archive"
    licence = "private use only"
    [clips."12"]                   # one-file packs: 下の句 starts here, in ms from file start
    split_ms = 6150
    [clips."12.kami"]              # one clip ("12.kami", "12.shimo") or both ("12")
    gain_db = -2.0                 # extra gain on top of the pack's loudness matching
    trim_start_ms = 120            # cut this much more off the start / end after trimming
    trim_end_ms = 0
    exclude = true                 # do not use this clip (the synthesized voice reads it)

A field of the wrong type is reported (one line) and ignored; the rest of the pack is used.

**Import** (``import_pack``) decodes every clip once into the pack folder
``$KARUTA_DATA_DIR/voices/<name>`` (default ``platformdirs.user_data_dir("karuta")``):
resampled to 48 kHz, trimmed sample-exactly to the first and last sound (encoder padding and
silence go), stored as 24-bit FLAC under ``clips/``.  ``pack.json`` holds, per clip: frames,
gain (loudness matching: every clip is brought to the loudness every voice uses,
``audio.loudness.TARGET_LUFS`` (BS.1770), lowered only where its true peak would pass
``CEILING_DBTP``; a clip too short to measure falls back to its speech-active RMS at -20 dBFS),
what was found wrong, and the mora timeline with its confidence
(``audio.align``: 上の句 clips are aligned by DTW with the synthesized reading, ku by ku; 下の句 clips
get the reference layout spread proportionally, method "proportional").  A copy of the source
manifest, with ``imported_from``, is written as ``voice.toml``.

**Reading** (``VoicePack``, the ``audio.voice.Voice`` protocol):

* items: keys "joka", "1".."100", parts "kami" and "shimo".  "whole" items and texts no pack
  has ("announce", "karafuda") raise ``MissingClip``; ``FallbackVoice`` hands them to the
  synthesized voice.
* ``hold_ms`` is **ignored** for recordings: a recorded 下の句 already contains the reader's
  own held last sound (余韻), so it is played as recorded and ``layout().frames`` is the clip's
  length.  (Padding with silence would hold the sound twice.)
* ``speed`` != 1.0 time-stretches the clip without changing its pitch (``audio.stretch``,
  WSOLA); frames = ``round(clip_frames / speed)`` and mora onsets scale with it.
* ``layout().exact`` is False: onsets are estimates.

``resolve_voice(spec, fallback_factory)`` turns a ``--voice`` value into a voice.

Parts (``from audio.pack import X`` keeps working for every name below):
  common    constants, ``MissingClip``, ``Problem``, ``voices_dir``
  scan      ``scan_source`` (which file is which clip), ``read_manifest`` (voice.toml)
  importer  ``import_pack``
  split     ``find_parts`` (上・下・下), ``voice_span`` (a clip's voice, without breaths or clicks)
  read      ``VoicePack``, ``check_pack``, ``verify_clip``, ``list_packs``
  resolve   ``resolve_voice``, ``FallbackVoice``, the default voice
"""
from __future__ import annotations

from reader.base.dirs import config_dir, data_dir  # noqa: F401 (re-exported, as before)
from audio.pack.common import (  # noqa: F401
    _order, _PART_JA, _ref_layout, _toml_str, BUILTIN, clip_label, format_problems, KEYS, MAX_CLIP_S,
    MIN_CLIP_S, MIN_PAUSE_S, MissingClip, PACK_FORMAT, PACK_RATE, PARTS, PEAK_LIMIT,
    Problem, SILENT_DB, TARGET_RMS_DB, voices_dir,
)
from audio.pack.scan import (  # noqa: F401
    _AUDIO_RE, _LAYOUTS, _manifest_text, _nnn_key, _NUM, MANIFEST_LIMITS, read_manifest,
    scan_source, Source,
)
from audio.pack.importer import (  # noqa: F401
    _frame_rms, _import_pack, _pack_name, _reference, _refuse_replacing,
    _remove_stale_imports, _signature, active_rms, find_split, import_pack,
)
from audio.pack.read import (  # noqa: F401
    _missing_rows, _problem_order, file_sha1, is_pack_folder, list_packs,
    verify_clip, VoicePack,
)
from audio.pack.resolve import (  # noqa: F401
    _config_file, _import_cached, _installed_names, _unknown_voice_message,
    check_pack, checked_spec, default_voice_name, FallbackVoice, resolve_voice, set_default_voice,
)

__all__ = [
    "VoicePack", "FallbackVoice", "MissingClip", "Problem", "import_pack", "resolve_voice",
    "check_pack", "format_problems", "scan_source", "find_split", "list_packs", "data_dir",
    "voices_dir", "config_dir", "default_voice_name", "set_default_voice", "PACK_RATE",
    "KEYS", "PARTS", "clip_label",
]
