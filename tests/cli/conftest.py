"""Fixtures for the CLI tests: a project folder, an in-process ``torchward`` and TW001.

The CLI tests need one rule that fires on a known line. They use the real TW001
(retained-graph) on a training loop that appends the loss to a list before
``backward()`` (:data:`tests.cli.projects.TRAIN_LOOP`). While TW001 is not written yet,
a stand-in with the same code, name and line is installed instead and the run says so
with a warning (visible in ``-ra`` output) rather than skipping anything.
"""

from __future__ import annotations

import warnings

import attrs
import pytest
import torchward.analysis as analysis_package
from torchward.analysis import all_rules, engine
from torchward.analysis import rule as rule_module

from torchward import runner
from torchward.cli import main

from .projects import StandInRetainedGraph


@pytest.fixture(scope="session")
def real_tw001() -> bool:
    return any(rule.code == "TW001" for rule in all_rules())


@pytest.fixture
def analysed(monkeypatch) -> list[str]:
    """The paths each run really analysed (not served from the cache)."""
    calls: list[str] = []
    original = runner.check_one

    def counted(path, absolute, settings):
        calls.append(path)
        return original(path, absolute, settings)

    monkeypatch.setattr(runner, "check_one", counted)
    return calls


@pytest.fixture
def tw001(monkeypatch, real_tw001):
    """Makes sure a TW001 runs: the real rule, or the announced stand-in."""
    if real_tw001:
        return
    warnings.warn(
        "TW001 is not implemented yet: CLI tests ran against a stand-in rule", stacklevel=2
    )
    rules = tuple(sorted(all_rules() + (StandInRetainedGraph,), key=lambda r: r.code))
    monkeypatch.setattr(engine, "all_rules", lambda: rules)
    monkeypatch.setattr(rule_module, "all_rules", lambda: rules)
    monkeypatch.setattr(analysis_package, "all_rules", lambda: rules)


@attrs.frozen
class Outcome:
    status: int
    out: str
    err: str


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project folder as the working directory, with no cache override."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCHWARD_CACHE_DIR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


@pytest.fixture
def torchward(capsys):
    """Runs ``torchward ARGS`` in process and returns status, stdout and stderr."""

    def run(*args: str) -> Outcome:
        capsys.readouterr()
        status = main(list(args))
        captured = capsys.readouterr()
        return Outcome(status, captured.out, captured.err)

    return run
