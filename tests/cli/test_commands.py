"""``torchward explain``, ``torchward rules``, ``python -m torchward`` and the command registry."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from torchward.analysis import all_rules

from torchward import __version__
from torchward.cli import build_parser, command_modules


def test_explain_prints_the_rule_documentation(torchward, tw001):
    outcome = torchward("explain", "TW001")
    assert outcome.status == 0
    assert outcome.out.startswith("# TW001 retained-graph")
    assert "What it does" in outcome.out


@pytest.mark.parametrize("spelling", ["tw001", "TG001", "retained-graph"])
def test_explain_accepts_lower_case_preflight_codes_and_names(torchward, tw001, spelling):
    assert torchward("explain", spelling).out.startswith("# TW001 ")


def test_explain_of_an_unknown_code_exits_two_with_a_message(torchward):
    outcome = torchward("explain", "TW9999")
    assert outcome.status == 2
    assert "unknown rule 'TW9999'" in outcome.err and outcome.out == ""


def test_rules_lists_code_name_severity_and_summary_of_every_rule(torchward):
    outcome = torchward("rules")
    assert outcome.status == 0
    lines = outcome.out.splitlines()
    assert len(lines) == max(len(all_rules()), 1)
    for rule, line in zip(all_rules(), lines):
        assert line.split()[:3] == [rule.code, rule.name, rule.default_severity.value]
        assert line.endswith(rule.summary)


def test_rules_as_json(torchward):
    rows = json.loads(torchward("rules", "--format", "json").out)
    assert [row["code"] for row in rows] == [rule.code for rule in all_rules()]


def test_python_dash_m_torchward_runs_the_cli(tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n")
    result = subprocess.run(
        [sys.executable, "-m", "torchward", "check", "--no-cache", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "No findings in 1 file checked" in result.stdout


def test_version_flag(torchward):
    outcome = torchward("--version")
    assert outcome.status == 0 and __version__ in outcome.out


def test_every_command_module_follows_the_protocol():
    modules = command_modules()
    assert {"check", "explain", "rules"} <= {module.NAME for module in modules}
    for module in modules:
        assert isinstance(module.HELP, str) and module.HELP
        assert callable(module.configure) and callable(module.run)
    parser = build_parser()
    assert parser.parse_args(["check"]).handler is next(m for m in modules if m.NAME == "check").run


def test_command_modules_import_nothing_heavy_at_module_level():
    script = (
        "import sys\n"
        "from torchward.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('libcst', 'pygls', 'lsprotocol', 'torch') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.strip() == "[]", result.stderr
