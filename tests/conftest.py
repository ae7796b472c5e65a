"""The whole suite's switches: strict analysis, fault injection and the fast subset.

- **Strict analysis.** The engine degrades gracefully for users: an exception in the fact
  builder or a rule becomes an internal-error problem and the file reports no findings.
  In tests that would hide a crash behind an empty result, so the session runs with
  ``$TORCHWARD_STRICT=1`` and the engine re-raises (``analysis/engine.py``). A test about
  the degradation itself turns it off with the :func:`lenient` fixture; a server
  started as a subprocess inherits the variable.
- **Fault injection.** With ``$TORCHWARD_FAULT=build_facts`` the engine's fact builder
  raises on every file. ``.ci/fault_injection.py`` runs a subset that way (and with strict
  mode off) and checks that nearly every test fails: a test that still passes cannot tell
  a working analysis from a broken one.
- **Equivalence that can fail.** An incremental result compared with a full one passes
  vacuously when both are empty; :func:`same_analysis` also checks that neither analysis
  broke and that the full one found something where the case has findings.
- **The fast subset.** ``pytest -m fast`` runs every rule's examples and snapshots and the
  server's basic round trip, in under a minute: the edit loop of a rule change. The mark
  is given here by file (and only here: ``-m fast`` does not even collect other files),
  so a new test in those files is fast without saying so.
"""

from __future__ import annotations

import os

import pytest
from torchward.analysis.engine import STRICT, FileReport

FAULT = "TORCHWARD_FAULT"

# files whose every test is in the fast subset (paths relative to tests/)
FAST_FILES = frozenset(
    {
        "analysis/test_rule_examples.py",
        "analysis/test_new_rules_examples.py",
        "analysis/test_rule_snapshots.py",
        "analysis/test_rule_edges.py",
        "server/test_real_rules.py",
    }
)


def pytest_configure(config: pytest.Config) -> None:
    # setdefault: the fault-injection check runs the subset with strict mode off ("0")
    os.environ.setdefault(STRICT, "1")
    fault = os.environ.get(FAULT)
    if fault == "build_facts":
        _break_the_fact_builder()
    elif fault:
        raise pytest.UsageError(f"${FAULT}={fault!r}: the only fault known is 'build_facts'")


def _break_the_fact_builder() -> None:
    """Every analysis raises where facts are built: no rule can run."""
    from torchward.analysis import engine
    from torchward.analysis.facts import filefacts as facts

    def broken(*args, **kwargs):
        raise RuntimeError("fault injected: build_facts")

    engine.build_facts = broken  # type: ignore[assignment]
    facts.build_facts = broken  # type: ignore[assignment]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = os.path.dirname(__file__)
    for item in items:
        relative = os.path.relpath(str(item.path), root).replace(os.sep, "/")
        if relative in FAST_FILES:
            item.add_marker(pytest.mark.fast)


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    """Under exactly ``-m fast`` a test file outside :data:`FAST_FILES` holds no fast test
    (the mark is given by file only), so it is not even imported: collecting the whole
    suite would cost the subset a third of its time."""
    if config.getoption("markexpr") != "fast" or not collection_path.name.startswith("test_"):
        return None
    relative = os.path.relpath(str(collection_path), os.path.dirname(__file__))
    if relative.startswith(".."):
        return None
    return True if relative.replace(os.sep, "/") not in FAST_FILES else None


@pytest.fixture
def lenient(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strict mode off for one test: the engine degrades as it does for users."""
    monkeypatch.setenv(STRICT, "0")


def _assert_same_analysis(got: FileReport, full: FileReport, *, flagged: bool) -> None:
    """``got`` (incremental, cached, re-parsed...) equals ``full`` (a fresh analysis), and
    the comparison is not between two failures: neither report has an internal error, and
    where the case has findings (``flagged``) the full report is not empty."""
    for report in (got, full):
        broken = [p for p in report.problems if p.kind == "internal-error"]
        assert not broken, f"the analysis failed, so the comparison proves nothing: {broken}"
    if flagged:
        assert full.findings, "the case has findings but the full analysis found none"
    assert [f.to_dict() for f in got.findings] == [f.to_dict() for f in full.findings]
    assert [p.kind for p in got.problems] == [p.kind for p in full.problems]


@pytest.fixture
def same_analysis():
    """The equivalence check of incremental tests: ``same_analysis(got, full, flagged=...)``."""
    return _assert_same_analysis
