"""Every state file, damaged: truncated, garbage, not UTF-8, deeply nested, wrong shapes and
wrong types (hypothesis draws them from a valid copy), read by the command that uses it
(issue 12, item 7).

Promised: exit 1 with one line ``karuta: ...`` that names the file, no traceback, the file
byte-for-byte as it was — or the documented recovery: a damaged synthesized-voice cache entry
is rebuilt (it is a cache; the reading goes on, exit 0).
"""
from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faults_table import inproc, snapshot  # noqa: F401 (fixture)


def _deal_log() -> str:
    from reader.match import log as matchlog
    from reader.match.rules import kyogi

    return matchlog.dumps(kyogi.KyogiMatch(kyogi.deal(random.Random(1))), {"seed": 1})


SESSION = {
    "kind": "karuta-club-session", "version": 1,
    "options": {"rules": "kyogi", "seed": 1, "cards": 3, "poems_spec": None, "colors": [],
                "karafuda": None, "ma": None, "yoin": None, "take": None, "gap": None,
                "speed": None, "joka": None, "last_shimo": None, "voice_spec": "tone"},
    "seed": 1, "rules": "kyogi", "voice": "tone", "order": [12, 55, 3], "total": 3,
    "position": 1, "finished": False, "memorize_min": 0.0, "auto": False,
    "log": [{"card": 1, "poem": 12, "kimariji": "あまつ", "kimariji_sound": "あまつ",
             "karafuda": False, "again": False, "time": "2026-01-01T10:00:00+09:00"}],
    "started": "2026-01-01T10:00:00+09:00", "updated": "2026-01-01T10:01:00+09:00",
}
PACK_INDEX = {"format": 1, "name": "p", "sample_rate": 48000,
              "clips": {"12.kami": {"file": "clips/12_kami.flac", "frames": 96000, "gain": 1.0,
                                    "timeline": {"morae": [["あ", 0, 4000], ["ま", 4000, 9000]],
                                                 "confidence": 0.9, "method": "dtw"}}}}
CALIBRATION = {"devices": {"sounddevice:pulse": {"offset_ms": 12.5, "taps": 19}}}

#: kind -> (relative path of the file, valid text, argv that reads it, words the line has)
FILES = {
    "session": ("data/sessions/last.json", json.dumps(SESSION, ensure_ascii=False),
                ["read", "--show-log"], ["session"]),
    "match log": ("m.jsonl", _deal_log(), ["match", "replay", "{tmp}/m.jsonl"], ["m.jsonl"]),
    "resumed match": ("m.jsonl", _deal_log(),
                      ["match", "keep", "--resume", "--log", "{tmp}/m.jsonl"], ["m.jsonl"]),
    "deal": ("deal.json", _deal_log().splitlines()[0],
             ["match", "keep", "--rules", "kyogi", "--deal", "{tmp}/deal.json", "--log",
              "{tmp}/new.jsonl"], ["deal.json"]),
    "pack index": ("data/voices/p/pack.json", json.dumps(PACK_INDEX, ensure_ascii=False),
                   ["plan", "--voice", "p", "--poems", "12", "--no-joka"], ["pack"]),
    "default voice": ("config/voice.toml", 'default = "tone"\n',
                      ["plan", "--cards", "1", "--no-joka"], ["voice.toml"]),
    "calibration": ("config/calibration.json", json.dumps(CALIBRATION),
                    ["calibrate", "--show"], ["calibration"]),
}


def _json_damage():
    """Structured damage: a valid JSON document with one node replaced by a value of a
    different type, or wrapped deep."""
    odd = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False), st.text(max_size=5),
                    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3),
                                                                         st.integers(), max_size=2))
    return st.tuples(st.integers(0, 10**6), odd)


def _replace_node(obj, pick: int, value):
    """``obj`` with its ``pick``-th node (depth first, mod the count) replaced by ``value``."""
    nodes = []

    def walk(o, parent, key):
        nodes.append((parent, key))
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, o, k)
        elif isinstance(o, list):
            for i, v in enumerate(o):
                walk(v, o, i)

    walk(obj, None, None)
    parent, key = nodes[pick % len(nodes)]
    if parent is None:
        return value
    parent[key] = value
    return obj


damage = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 0.999)),
    st.tuples(st.just("garbage"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("not-utf8"), st.integers(0, 10**6)),
    st.tuples(st.just("deep"), st.integers(40, 5000)),
    st.tuples(st.just("shape"), _json_damage()),
    st.tuples(st.just("empty"), st.just(None)),
)


def apply(kind: str, text: str, how) -> bytes:
    op, arg = how
    raw = text.encode()
    if op == "truncate":
        return raw[:int(len(raw) * arg)]
    if op == "garbage":
        return arg
    if op == "not-utf8":
        i = arg % max(1, len(raw))
        return raw[:i] + b"\xff\xfe" + raw[i:]
    if op == "deep":
        return (b"[" * arg) + (b"]" * arg) if not kind.endswith("voice") else \
            b"default = " + b"[" * arg + b"]" * arg + b"\n"
    if op == "empty":
        return b""
    pick, value = arg
    if kind == "default voice":
        return f"default = {json.dumps(value)}\n".encode()
    if kind in ("match log", "resumed match"):
        first, *rest = text.splitlines()
        return ("\n".join([json.dumps(_replace_node(json.loads(first), pick, value))] + rest)
                + "\n").encode()
    return json.dumps(_replace_node(json.loads(text), pick, value), ensure_ascii=False).encode()


@pytest.mark.parametrize("kind", list(FILES))
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(how=damage)
def test_damaged_state_file_is_one_line_and_left_alone(inproc, kind, how):
    rel, valid, argv, words = FILES[kind]
    path = inproc.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    data = apply(kind, valid, how)
    path.write_bytes(data)
    for extra in (inproc.root / "new.jsonl",):
        extra.unlink(missing_ok=True)
    if kind == "pack index":
        (path.parent / "clips").mkdir(exist_ok=True)
    before = snapshot(inproc.root)
    rc, out, err = inproc(argv)
    assert "Traceback" not in err
    assert path.read_bytes() == data, "the damaged file was changed"
    if rc == 0:
        # the damage left a file that is still valid (e.g. a value replaced by an equal
        # one): then it must have been used as it is
        assert snapshot(inproc.root).get(rel) == before.get(rel)
        return
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and lines[0].startswith("karuta: "), (how, err)
    assert any(w in lines[0] for w in words), (how, lines[0])


@pytest.mark.parametrize("kind", list(FILES))
def test_the_valid_copy_works(inproc, kind):
    """The undamaged file of each kind is accepted (so the damage is what the test injects)."""
    rel, valid, argv, _ = FILES[kind]
    path = inproc.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(valid)
    (inproc.root / "new.jsonl").unlink(missing_ok=True)
    rc, out, err = inproc(argv)
    assert "Traceback" not in err
    assert rc == 0, err


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(how=damage)
def test_damaged_voice_cache_entry_is_rebuilt(inproc, how):
    """The synthesized voice keeps each ku's phoneme script in the cache; a damaged entry was
    a traceback in every later reading until deleted.  Now it is rebuilt."""
    import os

    cache = inproc.root / "cache"
    old = os.environ.get("KARUTA_CACHE_DIR")
    os.environ["KARUTA_CACHE_DIR"] = str(cache)
    try:
        rc, out, err = inproc(["plan", "--voice", "synth", "--poems", "12", "--no-joka",
                               "--seed", "1", "--json"])
        assert rc == 0, err
        entries = sorted((cache / "synth" / "scripts").glob("*.json"))
        assert entries
        valid = entries[0].read_text()
        entries[0].write_bytes(apply("synth", valid, how))
        rc, out2, err = inproc(["plan", "--voice", "synth", "--poems", "12", "--no-joka",
                                "--seed", "1", "--json"])
        assert rc == 0 and "Traceback" not in err, err
        assert out2 == out, "the rebuilt entry gives the same plan"
        assert json.loads(entries[0].read_text()) == json.loads(valid)
    finally:
        if old is None:
            del os.environ["KARUTA_CACHE_DIR"]
        else:
            os.environ["KARUTA_CACHE_DIR"] = old
