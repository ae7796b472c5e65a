"""``action.yml``: a composite action that installs torchward and annotates with ``--format github``."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_action_is_composite_with_the_documented_inputs():
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    assert {"paths", "fail-on", "target-gpu"} <= set(action["inputs"])
    run = action["runs"]["steps"][-1]["run"]
    assert (
        "torchward check --format github" in run
        and '--fail-on "$FAIL_ON"' in run
        and "--target-gpu" in run
    )
    assert "uses: OWNER/torchward@" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_flags_the_action_passes_exist(project, torchward):
    (project / "a.py").write_text("x = 1\n")
    outcome = torchward(
        "check", "--format", "github", "--fail-on", "error", "--target-gpu", "a100-80gb", "a.py"
    )
    assert outcome.status == 0 and outcome.out == ""
