"""Exit statuses of ``torchward check``: 0 clean, 1 findings, 2 usage / config / internal error."""

from __future__ import annotations

import pytest
from torchward.analysis import Problem, engine

from .projects import CLEAN, TRAIN_LOOP, pyproject, write


def test_a_clean_project_exits_zero(project, torchward, tw001):
    write(project, "clean.py", CLEAN)
    outcome = torchward("check")
    assert outcome.status == 0, outcome.out
    assert "No findings in 1 file checked" in outcome.out


def test_an_error_finding_exits_one(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    assert torchward("check").status == 1


def test_exit_zero_turns_findings_into_success(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--exit-zero")
    assert outcome.status == 0
    assert "TW001" in outcome.out


@pytest.mark.parametrize(
    ("severity", "fail_on", "status"),
    [
        ("warning", "error", 0),
        ("warning", "warning", 1),
        ("warning", "note", 1),
        ("note", "warning", 0),
        ("note", "note", 1),
        ("error", "error", 1),
    ],
)
def test_fail_on_sets_the_lowest_severity_that_fails(
    project, torchward, tw001, severity, fail_on, status
):
    pyproject(project, f'severity = {{ TW001 = "{severity}" }}\n')
    write(project, "train.py", TRAIN_LOOP)
    assert torchward("check", "--fail-on", fail_on).status == status


def test_fail_on_is_read_from_the_configuration_and_the_flag_wins(project, torchward, tw001):
    pyproject(project, 'fail-on = "warning"\nseverity = { TW001 = "warning" }\n')
    write(project, "train.py", TRAIN_LOOP)
    assert torchward("check").status == 1
    assert torchward("check", "--fail-on", "error").status == 0


def test_a_syntax_error_exits_one_but_the_other_files_are_still_checked(project, torchward, tw001):
    write(project, "broken.py", "def broken(:\n    pass\n")
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check")
    assert outcome.status == 1
    assert "broken.py:1:" in outcome.out and "syntax-error" in outcome.out
    assert "train.py:14:" in outcome.out


def test_a_missing_path_is_a_usage_error(project, torchward):
    outcome = torchward("check", "does_not_exist.py")
    assert outcome.status == 2
    assert "does_not_exist.py: no such file or directory" in outcome.err


@pytest.mark.parametrize(
    "arguments",
    [
        ("check", "--format", "xml"),
        ("check", "--fail-on", "fatal"),
        ("check", "--jobs", "0"),
        ("check", "--jobs", "many"),
        ("check", "--select", "TW-001"),
        ("check", "--no-such-flag"),
        ("frobnicate",),
        (),
    ],
)
def test_bad_arguments_exit_two(project, torchward, arguments):
    outcome = torchward(*arguments)
    assert outcome.status == 2
    assert outcome.err


def test_an_empty_project_exits_zero_with_a_warning(project, torchward):
    outcome = torchward("check")
    assert outcome.status == 0
    assert "no Python files found" in outcome.err


def test_an_internal_error_on_one_file_exits_two_after_reporting_the_rest(
    project, torchward, tw001, monkeypatch
):
    original = engine.run_rules

    def crash_on_one_file(facts, rules):
        findings, problems = original(facts, rules)
        if facts.path.endswith("crash.py"):
            problems = [*problems, Problem("internal-error", "rule TW999 failed: boom")]
        return findings, problems

    monkeypatch.setattr(engine, "run_rules", crash_on_one_file)
    write(project, "crash.py", CLEAN)
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--no-cache", "--exit-zero")
    assert outcome.status == 2
    assert "crash.py:1:1: internal-error rule TW999 failed: boom" in outcome.out
    assert "train.py:14:" in outcome.out


def test_an_unexpected_exception_is_an_internal_error_with_a_traceback(
    project, torchward, monkeypatch
):
    from torchward import runner

    def explode(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(runner, "check_files", explode)
    write(project, "clean.py", CLEAN)
    outcome = torchward("check")
    assert outcome.status == 2
    assert "internal error" in outcome.err and "kaboom" in outcome.err
