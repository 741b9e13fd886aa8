"""An interrupt that lands while a thread pool releases its lock (CPython then raises
"cannot release un-acquired lock", the interrupt as its context) is still ``karuta:
interrupted``, exit 130 — not a traceback; any other RuntimeError stays a bug and propagates."""
from __future__ import annotations

import signal

import pytest


@pytest.fixture(autouse=True)
def _signals_kept():
    """``main`` installs its SIGTERM/SIGHUP handlers: this process's are put back after."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


def _main_with(monkeypatch, capsys, failure):
    import reader.cli as cli_pkg

    monkeypatch.setattr(cli_pkg.cli, "invoke", lambda ctx: failure())
    with pytest.raises(SystemExit) as ex:
        cli_pkg.main(["poems"])
    return ex.value.code, capsys.readouterr().err


def test_an_interrupt_inside_a_locks_release_is_interrupted(monkeypatch, capsys):
    from reader.base.interrupt import Terminated

    def failure():
        try:
            raise Terminated("SIGHUP")
        except KeyboardInterrupt:
            raise RuntimeError("cannot release un-acquired lock")  # noqa: B904 (as CPython)

    code, err = _main_with(monkeypatch, capsys, failure)
    assert code == 130 and err.strip() == "karuta: interrupted"


def test_another_runtime_error_is_not_taken_for_an_interrupt(monkeypatch, capsys):
    import reader.cli as cli_pkg

    def failure():
        raise RuntimeError("a real bug")

    monkeypatch.setattr(cli_pkg.cli, "invoke", lambda ctx: failure())
    with pytest.raises(RuntimeError, match="a real bug"):
        cli_pkg.main(["poems"])
