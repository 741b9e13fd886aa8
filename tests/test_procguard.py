"""The suite's own hygiene (tests/procguard.py): whatever a test starts is ended when the test
ends, passed or failed — a process it forgot, one that detached into a session of its own, a
tmux server — and reported; and the run check fails a run that left anything behind.

Each case runs a small pytest session of its own (with this run's guard loaded as a plugin)
under a fresh KARUTA_TEST_RUN, so its processes can be told apart from everything else."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import procguard

TESTS = Path(__file__).resolve().parent

LEAKY = textwrap.dedent('''
    import subprocess, sys

    def test_forgets_its_process():
        subprocess.Popen(["sleep", "301"])

    def test_fails_after_starting_the_app():
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(302)"])
        assert False, "the test fails; its process must still be ended"

    def test_starts_a_process_that_detaches():
        subprocess.run(["sh", "-c", "setsid sleep 303 </dev/null >/dev/null 2>&1 &"], check=True)

    def test_starts_a_tmux_server(tmp_path):
        subprocess.run(["tmux", "-L", f"guard-{tmp_path.name}", "-f", "/dev/null", "new-session",
                        "-d", "sleep 304"], check=True)

    def test_ends_what_it_starts():
        p = subprocess.Popen(["sleep", "305"])
        p.kill()
        p.wait()

    def test_builds_its_environment_from_scratch():
        subprocess.Popen(["sleep", "306"], env={"PATH": "/usr/bin:/bin"})

    def test_leaves_the_app_waiting_at_its_prompt(tmp_path):
        from cli_run import karuta_argv, karuta_env
        subprocess.Popen(karuta_argv("table", "genkan", "play", "--save", str(tmp_path / "t.json")),
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=karuta_env())
''')


def inner_pytest(tmp_path: Path, run: str, *, tests: str = LEAKY,
                 **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_leaky.py").write_text(tests)
    full = {k: v for k, v in os.environ.items() if k not in (procguard.STRICT, procguard.LOG)}
    # (no grace: the leaky tests' processes never end by themselves; no hypothesis plugin: its
    # summary costs a second and a half)
    full.update({"PYTHONPATH": str(TESTS), procguard.GRACE: "0.02", **env})
    full[procguard.RUN] = run
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "procguard", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "no:hypothesispytest", "-q", "-W", "default",
                           str(tmp_path / "test_leaky.py")],
                          cwd=tmp_path, env=full, capture_output=True, text=True, timeout=120)


def test_every_process_a_test_started_is_ended_and_named(tmp_path, capsys):
    run = f"guard-test-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "left.log"
    res = inner_pytest(tmp_path, run, **{procguard.LOG: str(log)})
    assert "1 failed, 6 passed" in res.stdout, res.stdout + res.stderr
    assert procguard.marked(run) == [], "the guard left processes of the run running"
    report = log.read_text()
    for test, what in [("test_forgets_its_process", "sleep 301"),
                       ("test_fails_after_starting_the_app", "time.sleep(302)"),
                       ("test_starts_a_process_that_detaches", "sleep 303"),
                       ("test_starts_a_tmux_server", "sleep 304"),
                       ("test_builds_its_environment_from_scratch", "sleep 306"),
                       ("test_leaves_the_app_waiting_at_its_prompt", "karuta table genkan play")]:
        assert any(test in line and what in line for line in report.splitlines()), (test, report)
    assert "sleep 305" not in report  # a test that ends what it starts is not named
    assert "LeftBehind" in res.stdout  # the warning summary names them too
    # the guard ended them, but the tests are still wrong: the run check fails the run
    check = subprocess.run([sys.executable, str(TESTS / "procguard.py"), "--after-run", run,
                            "--log", str(log)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 1, check.stderr
    assert "test_forgets_its_process" in check.stderr and "sleep 301" in check.stderr
    log.write_text("")  # a run whose tests each ended what they started passes
    # (the check's own function, in this process: the command was run just above)
    assert procguard.after_run(run, log) == 0
    assert capsys.readouterr().err == ""


#: two of LEAKY's tests: one leaves a process, one ends what it starts
TWO = "import subprocess, sys\n" + "\n\n".join(
    block for block in LEAKY.split("\n\n")
    if "def test_fails_after_starting_the_app" in block or "def test_ends_what_it_starts" in block)


def test_strict_mode_makes_a_leak_an_error(tmp_path):
    run = f"guard-test-{uuid.uuid4().hex[:8]}"
    res = inner_pytest(tmp_path, run, tests=TWO, **{procguard.STRICT: "1"})
    # the test that failed on its own fails, and its leak is an error as well; the test that
    # ended what it started passes
    summary = res.stdout.strip().splitlines()[-1]
    assert "1 failed, 1 passed," in summary and "1 error" in summary, res.stdout
    assert "left running, now ended" in res.stdout and "time.sleep(302)" in res.stdout
    assert procguard.marked(run) == []


def test_the_run_check_fails_a_run_that_left_a_process(tmp_path, capsys):
    run = f"guard-test-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, **{procguard.RUN: run, procguard.OWNER: "gw9/17"})
    stray = subprocess.Popen(["sleep", "307"], env=env, start_new_session=True)
    try:
        check = subprocess.run([sys.executable, str(TESTS / "procguard.py"), "--after-run", run],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 1
        assert "sleep 307" in check.stderr and "gw9/17" in check.stderr, check.stderr
        assert stray.wait(timeout=10) is not None  # ended by the check
        # nothing is left: the check passes (its function, in this process)
        assert procguard.after_run(run, None) == 0
        assert capsys.readouterr().err == ""
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait()


def test_a_test_that_ends_its_processes_costs_no_wait():
    """Most tests start processes and end them: the guard looks once and moves on."""
    from machine_stall import Waited

    with Waited() as waited:
        start = time.monotonic()
        p = subprocess.Popen(["sleep", "308"])
        p.kill()
        p.wait()
        assert procguard.marked(os.environ[procguard.RUN], os.environ[procguard.OWNER]) == []
        el = time.monotonic() - start
    # no grace waited out (a busy machine: plus as long as it kept this process from a CPU)
    assert el < procguard.GRACE_S + waited.s, (el, str(waited))
