"""Shared pytest configuration (keep minimal: fixtures live in helper modules)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "realtime: plays in real time through a (null) sound server; slower")
