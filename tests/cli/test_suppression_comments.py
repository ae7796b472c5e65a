"""Suppression comments, end to end through ``torchward check``."""

from __future__ import annotations

import pytest

from .projects import RETAINED_LINE, TRAIN_LOOP, codes_by_line, write

APPEND = "losses.append(loss)"


def check_codes(torchward, text: str) -> list[tuple[str, int]]:
    outcome = torchward("check", "--no-cache", "--format", "json")
    return [(code, line) for _, code, line in codes_by_line(outcome.out)]


@pytest.mark.parametrize(
    "comment",
    [
        "# torchward: ignore[TW001]",
        "# torchward: ignore[TW002, TW001]",
        "# torchward: ignore",
        "# noqa: TW001",
        "# noqa: TG001",
        "# noqa",
        "# TORCHWARD: IGNORE[tw001]",
    ],
)
def test_an_inline_comment_suppresses_the_finding_on_its_line(project, torchward, tw001, comment):
    write(project, "train.py", TRAIN_LOOP.replace(APPEND, f"{APPEND}  {comment}"))
    assert ("TW001", RETAINED_LINE) not in check_codes(torchward, "")


@pytest.mark.parametrize(
    "comment", ["# torchward: ignore[TW002]", "# noqa: TW003", "# noqa: TG002"]
)
def test_a_comment_for_another_code_does_not_suppress(project, torchward, tw001, comment):
    write(project, "train.py", TRAIN_LOOP.replace(APPEND, f"{APPEND}  {comment}"))
    assert ("TW001", RETAINED_LINE) in check_codes(torchward, "")


def test_a_comment_on_another_line_does_not_suppress(project, torchward, tw001):
    write(
        project,
        "train.py",
        TRAIN_LOOP.replace("optimizer.zero_grad()", "optimizer.zero_grad()  # noqa: TW001"),
    )
    assert ("TW001", RETAINED_LINE) in check_codes(torchward, "")


@pytest.mark.parametrize("comment", ["# torchward: ignore-file[TW001]", "# torchward: ignore-file"])
def test_a_file_level_comment_suppresses_the_code_everywhere_in_the_file(
    project, torchward, tw001, comment
):
    write(project, "train.py", f"{comment}\n" + TRAIN_LOOP)
    write(project, "other.py", TRAIN_LOOP)
    outcome = torchward("check", "--no-cache", "--format", "json")
    assert {path for path, code, _ in codes_by_line(outcome.out) if code == "TW001"} == {"other.py"}


def test_a_file_level_comment_for_another_code_does_not_suppress(project, torchward, tw001):
    write(project, "train.py", "# torchward: ignore-file[TW008]\n" + TRAIN_LOOP)
    assert ("TW001", RETAINED_LINE + 1) in check_codes(torchward, "")


def test_a_suppressed_finding_does_not_fail_the_run(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP.replace(APPEND, f"{APPEND}  # torchward: ignore[TW001]"))
    outcome = torchward("check", "--no-cache", "--select", "TW001")
    assert outcome.status == 0, outcome.out


def test_the_suppression_text_inside_a_string_does_not_suppress(project, torchward, tw001):
    source = TRAIN_LOOP.replace(APPEND, f"{APPEND}; note = '# noqa: TW001'")
    write(project, "train.py", source)
    assert ("TW001", RETAINED_LINE) in check_codes(torchward, "")
