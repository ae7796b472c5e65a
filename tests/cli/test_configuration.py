"""``[tool.torchward]``: where it is found, what it may say, and how flags combine with it."""

from __future__ import annotations

import pytest

from torchward.config import Config, find_config, load_config

from .projects import RETAINED_LINE, TRAIN_LOOP, codes_by_line, pyproject, write


@pytest.mark.parametrize(
    ("table", "key", "fragment"),
    [
        ('selct = ["TW"]\n', "selct", "did you mean 'select'"),
        ('fail_on = "error"\n', "fail_on", "did you mean 'fail-on'"),
        ("colour = true\n", "colour", "known keys"),
        ('fail-on = "fatal"\n', "fail-on", "expected one of error, warning, note"),
        ('select = "TW001"\n', "select", "expected a list of strings"),
        ('ignore = ["TW-1"]\n', "ignore", "not a rule code or prefix"),
        ('severity = { TW001 = "loud" }\n', "severity", "expected one of"),
        ('severity = { TW = "note" }\n', "severity", "not a full rule code"),
        ('severity = ["TW001"]\n', "severity", "expected a table"),
        (
            "per-file-ignores = { 'tests/*' = 'TW001' }\n",
            "per-file-ignores",
            "expected a list of strings",
        ),
        ("exclude = [1]\n", "exclude", "expected a list of strings"),
        ("extend-exclude = 'build'\n", "extend-exclude", "expected a list of strings"),
    ],
)
def test_a_bad_key_or_value_is_an_error_naming_the_file_and_the_key(
    project, torchward, table, key, fragment
):
    path = pyproject(project, table)
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check")
    assert outcome.status == 2
    assert str(path) in outcome.err
    assert f"key '{key}'" in outcome.err
    assert fragment in outcome.err


def test_malformed_toml_is_an_error_naming_the_file(project, torchward):
    path = write(project, "pyproject.toml", "[tool.torchward\nselect = [\n")
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check")
    assert outcome.status == 2
    assert str(path) in outcome.err and "invalid TOML" in outcome.err


def test_a_pyproject_without_a_torchward_table_is_not_ours(project):
    write(project, "pyproject.toml", "[project]\nname = 'x'\n")
    assert find_config(str(project)) is None


def test_a_foreign_malformed_pyproject_is_never_parsed(project, torchward):
    write(project, "pyproject.toml", "this is = = not toml\n")
    write(project, "clean.py", "x = 1\n")
    assert torchward("check").status == 0


def test_the_nearest_configured_pyproject_wins(project):
    pyproject(project, 'fail-on = "note"\n')
    write(project, "sub/pyproject.toml", "[tool.torchward]\nfail-on = 'warning'\n")
    write(project, "sub/deeper/x.py", "")
    assert find_config(str(project / "sub" / "deeper" / "x.py")).fail_on == "warning"
    write(project, "other/pyproject.toml", "[project]\nname = 'unconfigured'\n")
    assert find_config(str(project / "other")).fail_on == "note"


def test_defaults_when_the_table_is_empty(project):
    config = load_config(str(pyproject(project, "")))
    assert attrs_without_location(config) == attrs_without_location(Config())


def attrs_without_location(config: Config) -> tuple:
    return (
        config.select,
        config.ignore,
        config.per_file_ignores,
        config.severity,
        config.fail_on,
        config.exclude,
    )


def test_explicit_config_path_is_used(project, torchward, tw001):
    write(project, "settings/pyproject.toml", "[tool.torchward]\nignore = ['TW001']\n")
    write(project, "train.py", TRAIN_LOOP)
    assert torchward("check").status == 1
    assert torchward("check", "--config", "settings/pyproject.toml").status == 0


def test_a_missing_explicit_config_is_an_error(project, torchward):
    write(project, "clean.py", "x = 1\n")
    outcome = torchward("check", "--config", "nope.toml")
    assert outcome.status == 2 and "nope.toml" in outcome.err


def test_config_ignore_silences_a_code(project, torchward, tw001):
    pyproject(project, 'ignore = ["TW001"]\n')
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--format", "json")
    assert "TW001" not in [code for _, code, _ in codes_by_line(outcome.out)]


def test_config_select_limits_the_rules(project, torchward, tw001):
    pyproject(project, 'select = ["TW002"]\n')
    write(project, "train.py", TRAIN_LOOP)
    assert "TW001" not in torchward("check", "--format", "json").out


@pytest.mark.parametrize(
    "flags",
    [
        ("--ignore", "TW001"),
        ("--ignore", "TW0"),
        ("--ignore", "TW999,TW001"),
        ("--ignore", "TW999", "--ignore", "tw001"),
        ("--select", "TW002"),
    ],
)
def test_select_and_ignore_flags_take_codes_and_prefixes(project, torchward, tw001, flags):
    write(project, "train.py", TRAIN_LOOP)
    assert "TW001" not in torchward("check", "--format", "json", *flags).out


def test_select_flag_replaces_configured_select(project, torchward, tw001):
    pyproject(project, 'select = ["TW002"]\n')
    write(project, "train.py", TRAIN_LOOP)
    assert ("train.py", "TW001", RETAINED_LINE) in codes_by_line(
        torchward("check", "--format", "json", "--select", "TW001").out
    )


def test_ignore_flag_adds_to_configured_ignore(project, torchward, tw001):
    pyproject(project, 'ignore = ["TW002"]\n')
    write(project, "train.py", TRAIN_LOOP)
    assert "TW001" not in torchward("check", "--format", "json", "--ignore", "TW001").out


def test_preflight_codes_are_accepted_as_aliases(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    assert "TW001" not in torchward("check", "--format", "json", "--ignore", "TG001").out


def test_per_file_ignores_apply_only_to_matching_files(project, torchward, tw001):
    pyproject(
        project,
        """\
        [tool.torchward.per-file-ignores]
        "tests/" = ["TW001"]
        "scripts/legacy_*.py" = ["TW0"]
        """,
    )
    for name in ("tests/unit/train.py", "scripts/legacy_train.py", "scripts/train.py", "train.py"):
        write(project, name, TRAIN_LOOP)
    paths = {
        path
        for path, code, _ in codes_by_line(torchward("check", "--format", "json").out)
        if code == "TW001"
    }
    assert paths == {"scripts/train.py", "train.py"}


def test_severity_overrides_change_the_reported_severity(project, torchward, tw001):
    import json

    pyproject(project, 'severity = { TW001 = "note" }\n')
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--format", "json")
    severities = {item["severity"] for item in json.loads(outcome.out) if item["code"] == "TW001"}
    assert severities == {"note"}
    assert outcome.status == 0
