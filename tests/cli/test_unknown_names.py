"""Unknown rule codes, prefixes and GPU names are usage errors with a suggestion.

A mistyped ``select = ["TW999"]`` used to turn every rule off and report "No findings";
a mistyped ``target-gpu`` silently switched TW010 off. Every place that accepts them —
flags, ``pyproject.toml``, the editor's settings — now refuses them (CLI exit 2, an
editor warning) and names the closest known one.
"""

from __future__ import annotations

import pytest

from .projects import TRAIN_LOOP, pyproject, write


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--select", "TW999"], "unknown rule code or prefix 'TW999': did you mean"),
        (["--select", "TW001,TW0O2"], "'TW0O2' is not a rule code or prefix"),
        (["--ignore", "TW7"], "unknown rule code or prefix 'TW7'"),
        (["--select", "retained-graph"], "did you mean TW001 (retained-graph)?"),
        (["--target-gpu", "potato-9000"], "unknown GPU or instance 'potato-9000'"),
        (["--target-gpu", "a100-80"], "did you mean NVIDIA A100 80GB"),
    ],
)
def test_an_unknown_name_on_the_command_line_is_a_usage_error(project, torchward, flags, fragment):
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--no-cache", *flags, "train.py")
    assert outcome.status == 2
    assert fragment in outcome.err
    assert "No findings" not in outcome.out


@pytest.mark.parametrize(
    ("table", "key", "fragment"),
    [
        ('select = ["TW999"]\n', "select", "did you mean"),
        ('ignore = ["TW0", "TW9"]\n', "ignore", "unknown rule code or prefix 'TW9'"),
        ('[tool.torchward.per-file-ignores]\n"tests/*" = ["TW01X"]\n', "per-file-ignores", "TW01X"),
        ('[tool.torchward.severity]\nTW999 = "note"\n', "severity", "TW999"),
        ('target-gpu = "potato-9000"\n', "target-gpu", "unknown GPU or instance 'potato-9000'"),
    ],
)
def test_an_unknown_name_in_pyproject_is_a_configuration_error(
    project, torchward, table, key, fragment
):
    pyproject(project, table)
    write(project, "train.py", TRAIN_LOOP)
    for command in (["check", "--no-cache"], ["estimate", "train.py"]):
        outcome = torchward(*command)
        assert outcome.status == 2, (command, outcome)
        assert f"key '{key}'" in outcome.err and fragment in outcome.err


def test_known_codes_prefixes_and_gpus_are_accepted(project, torchward):
    pyproject(project, 'select = ["TW0", "TW1"]\nignore = ["TW100"]\ntarget-gpu = "T4"\n')
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--no-cache", "--select", "TW001,ALL", "train.py")
    assert outcome.status == 1 and "TW001" in outcome.out
