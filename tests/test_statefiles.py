"""reader/base/statefiles.py is the one place state files are parsed (issue 12: "so a new file
cannot forget it"), and its schemas accept what karuta itself writes."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from audio_fixtures import REPO
from source_tree import parsed, walk
from reader.base.statefiles import SCHEMAS, StateFileError, check, decode_json, load_json, load_toml

#: modules allowed to parse JSON/TOML themselves, and why
ALLOWED = {
    "reader/base/statefiles.py": "the one place",
    "poems/__init__.py": "the package's own poem data (installed with karuta, not state)",
    "audio/output/audio_process.py": "its command line, written by its parent (no file; the "
                                     "process imports only numpy and sounddevice)",
}
PARSERS = {("json", "loads"), ("json", "load"), ("tomllib", "load"), ("tomllib", "loads"),
           ("np", "load"), ("numpy", "load"), ("pickle", "load"), ("pickle", "loads")}


def _calls(tree: ast.AST):
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name):
            yield (node.func.value.id, node.func.attr), node.lineno


def test_no_module_parses_a_state_file_by_itself():
    found = []
    for folder in ("reader", "audio", "poems"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel in ALLOWED:
                continue
            for call, line in _calls(parsed(path)):
                if call in PARSERS:
                    found.append(f"{rel}:{line}: {'.'.join(call)}")
    assert not found, ("parse state files through reader.base.statefiles (load_json/load_toml/"
                       "decode_json), so they are checked: " + "; ".join(found))


def test_every_kind_in_the_module_table_has_a_schema():
    import reader.base.statefiles as sf

    table = sf.__doc__.split("reader\n")[1]
    kinds = [ln.split()[0] for ln in table.splitlines() if ln.startswith("    ") and ln.split()]
    for kind in kinds:
        if kind == "stats":
            continue  # rows, checked with check_row
        assert kind in SCHEMAS, kind


def test_what_karuta_writes_is_accepted(tmp_path):
    """A real session and a real calibration file, written by karuta's own code, load."""
    from reader.drills.calibrate import CalibrationResult, CalibrationStore

    store = CalibrationStore(tmp_path / "c.json")
    store.save("sounddevice:pulse", CalibrationResult(offset_ms=3.5, taps=10, dropped=0,
                                                      spread_ms=0.2, offsets=(3.5,) * 10))
    assert load_json(tmp_path / "c.json", "calibration", "c")["devices"]


@pytest.mark.parametrize("text,why", [
    ("[" * 5000 + "]" * 5000, "nested too deep"),
    ('{"a": NaN}', "NaN"),
    ('{"a": Infinity}', "Infinity"),
    ('{"a": 1', "line 1"),
])
def test_decode_refuses_what_json_should_not_carry(text, why):
    with pytest.raises(ValueError) as e:
        decode_json(text)
    assert why.split()[0] in str(getattr(e.value, "msg", e.value)) or \
        why in str(e.value) or e.value.__class__.__name__ == "JSONDecodeError"


def test_messages_name_the_file_and_the_place(tmp_path):
    p = tmp_path / "last.json"
    bad = {"kind": "karuta-club-session", "version": 1, "options": {}, "order": [1],
           "position": 0, "log": [], "seed": 1}
    p.write_text(json.dumps(bad))
    with pytest.raises(StateFileError) as e:
        load_json(p, "session", "session")
    assert str(p) in str(e.value) and "options" in str(e.value) and "\n" not in str(e.value)
    p.write_bytes(b"\xff\xfe{}")
    with pytest.raises(StateFileError, match="not UTF-8"):
        load_json(p, "session", "session")
    t = tmp_path / "voice.toml"
    t.write_text("default = [[[[\n")
    with pytest.raises(StateFileError, match="voice.toml"):
        load_toml(t, "default-voice", "the default-voice setting")


def test_a_folder_or_a_missing_file():
    with pytest.raises(FileNotFoundError):
        load_json(Path("/nonexistent/karuta/x.json"), "session", "session")
    with pytest.raises(StateFileError, match="folder"):
        load_json(REPO, "session", "session")


def test_synth_script_consistency():
    from reader.base.statefiles import seal

    good = seal({"labels": ["a", "b", "c"], "kana": ["あ"], "mora_phones": [[1]],
                 "ku_end": [True], "pau_after": [-1], "respelled": 0})
    assert check(good, "synth-script", "cache entry", "x") is good
    with pytest.raises(StateFileError, match="past the labels"):
        check(seal(dict(good, mora_phones=[[7]])), "synth-script", "cache entry", "x")
    with pytest.raises(StateFileError, match="different lengths"):
        check(seal(dict(good, kana=["あ", "い"])), "synth-script", "cache entry", "x")
    # a value changed into another valid one (a 上の句 end moved): the checksum finds it
    with pytest.raises(StateFileError, match="checksum"):
        check(dict(good, ku_end=[False]), "synth-script", "cache entry", "x")
