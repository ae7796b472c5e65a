"""The ``slow`` marker: tests that profile real scripts of the development corpus (minutes)."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: profiles real development-set scripts (minutes); -m 'not slow' skips"
    )
