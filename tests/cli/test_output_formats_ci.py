"""``--format github``, ``sarif``, ``junit`` and ``grouped``.

SARIF is validated with ``jsonschema`` against ``fixtures/sarif-schema-2.1.0-subset.json``:
the definitions of the official OASIS SARIF 2.1.0 schema for every object torchward
writes (property names, types, enums, required properties, no extra properties). The
full official file is not vendored (no network here to copy it from); the subset is
the part of it that our output can violate.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import jsonschema

from .projects import write

SCHEMA = json.loads(
    (Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0-subset.json").read_text()
)
NO_RESET = "def train(model, loader, opt, crit):\n    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()  # schritt ✓\n"


def test_sarif_is_valid_and_carries_rule_help_and_fixes(project, torchward):
    write(project, "train.py", NO_RESET)
    write(project, "broken.py", "def f(:\n")
    outcome = torchward("check", "--no-cache", "--format", "sarif", ".")
    log = json.loads(outcome.out)
    jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(log)
    run = log["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert "## Fix safety" in rules["TW003"]["help"]["markdown"]
    (result,) = run["results"]
    assert (
        result["ruleId"] == "TW003"
        and rules[result["ruleId"]] == run["tool"]["driver"]["rules"][result["ruleIndex"]]
    )
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "train.py",
        "uriBaseId": "%SRCROOT%",
    }
    replacement = result["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "        opt.zero_grad(set_to_none=True)\n"
    assert run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"].startswith(
        "syntax-error"
    )


def test_github_annotations_escape_what_would_end_the_command(project, torchward):
    write(project, "train.py", NO_RESET)
    out = torchward("check", "--no-cache", "--format", "github", "train.py").out
    (line,) = out.splitlines()
    assert line.startswith(
        "::warning file=train.py,line=4,col=9,endLine=4,endColumn=19,title=TW003 missing-zero-grad::"
    )
    assert "%3A" not in line.split("::", 2)[2]  # colons are escaped in properties only


def test_junit_has_one_case_per_finding_and_one_passing_case_per_clean_file(project, torchward):
    write(project, "train.py", NO_RESET)
    write(project, "twice.py", NO_RESET + NO_RESET.replace("def train", "def train_again"))
    write(project, "clean.py", "x = 1\n")
    root = ElementTree.fromstring(torchward("check", "--no-cache", "--format", "junit", ".").out)
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    assert set(suites) == {"train.py", "twice.py", "clean.py"}
    twice = list(suites["twice.py"].iter("testcase"))
    assert len(twice) == 2 and suites["twice.py"].get("failures") == "2"
    assert [case.find("failure").get("type") for case in twice] == ["TW003", "TW003"]
    assert twice[0].get("name").startswith("TW003 missing-zero-grad at 4:")
    assert twice[0].get("classname") == "twice.py" and twice[0].get("line") == "4"
    (clean,) = suites["clean.py"].iter("testcase")
    assert list(clean) == []
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "3", "0")


def test_grouped_lists_findings_under_their_file(project, torchward):
    write(project, "train.py", NO_RESET)
    lines = torchward("check", "--no-cache", "--format", "grouped", "train.py").out.splitlines()
    assert lines[0] == "train.py:"
    assert lines[1].startswith("  4:9  TW003  warning  ")
    assert lines[-1].startswith("Found 1 finding")
