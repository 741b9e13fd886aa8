"""Shared pytest configuration (keep minimal: fixtures live in helper modules)."""
import pytest

from tmux_driver import Tmux


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "realtime: plays in real time through a (null) sound server; slower")


@pytest.fixture
def tmux(tmp_path):
    """A private tmux server to run a terminal program in (tests/tmux_driver.py)."""
    from audio_fixtures import require_tool

    require_tool("tmux")
    t = Tmux(tmp_path)
    yield t
    t.kill()
