"""The calibration file between two karuta versions (an unlucky user with two installs):
saving one device's calibration leaves every other device's entry as it was saved (fields
this version does not know included), and a file a newer karuta wrote is not written over --
one line, before any click is played."""
from __future__ import annotations

import json

from cli_run import one_line_error, run_inproc

from reader.drills.calibrate import CalibrationResult, CalibrationStore

RESULT = CalibrationResult(offset_ms=12.5, taps=18, dropped=2, spread_ms=1.2, clicks=20)


def _file(path, version):
    path.write_text(json.dumps({"version": version, "devices": {"sounddevice:hdmi": {
        "offset_ms": 30.0, "taps": 17, "latency_model": {"kind": "two-stage", "a": 1.5},
        "history": [{"offset_ms": 30.0, "note": "before the new amp"}]}}}))


def test_saving_one_device_keeps_the_others_as_they_were(tmp_path):
    f = tmp_path / "calibration.json"
    _file(f, 1)
    other = json.loads(f.read_text())["devices"]["sounddevice:hdmi"]
    CalibrationStore(f).save("sounddevice:pulse", RESULT)
    saved = json.loads(f.read_text())["devices"]
    assert saved["sounddevice:hdmi"] == other
    assert saved["sounddevice:pulse"]["offset_ms"] == 12.5


def test_a_file_from_a_newer_karuta_is_not_written_over(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    f = config / "calibration.json"
    _file(f, 2)
    before = f.read_bytes()
    res = run_inproc("calibrate", env={"KARUTA_CONFIG_DIR": str(config)},
                     data_dir=tmp_path / "data")
    one_line_error(res, "newer karuta", str(f))
    assert f.read_bytes() == before
    assert sorted(p.name for p in config.iterdir()) == ["calibration.json"]
