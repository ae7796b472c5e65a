"""``[tool.torchward.effects]`` from the command line: a project's own loss scaler is
seen through its pyproject, the result cache keeps the table in its key, and a table
that says something unknown is a configuration error naming the key (exit 2)."""

from __future__ import annotations

import json

SCRIPT = """\
from mytrainer.amp import LossScaler


def train(model, loader, optimizer, criterion):
    scaler = LossScaler()
    for x, y in loader:
        scaler(criterion(model(x), y), optimizer)
"""

TABLE = """\
[tool.torchward]
select = ["TW003"]

[tool.torchward.effects.constructors]
scaler = ["mytrainer.amp.LossScaler"]
"""


def _lines(torchward) -> list[int]:
    outcome = torchward("check", "train.py", "--format", "json", "--exit-zero")
    assert outcome.status == 0, outcome.err
    return [f["line"] for f in json.loads(outcome.out) if f["code"] == "TW003"]


def test_project_table_reaches_the_rules_and_the_cache_key(project, torchward):
    (project / "train.py").write_text(SCRIPT)
    (project / "pyproject.toml").write_text('[tool.torchward]\nselect = ["TW003"]\n')
    assert _lines(torchward) == []  # mytrainer is unknown to the built-in table
    (project / "pyproject.toml").write_text(TABLE)
    assert _lines(torchward) == [7]  # a warm cache must not answer with the old result
    (project / "pyproject.toml").write_text('[tool.torchward]\nselect = ["TW003"]\n')
    assert _lines(torchward) == []


def test_bad_table_is_a_configuration_error(project, torchward):
    (project / "train.py").write_text(SCRIPT)
    (project / "pyproject.toml").write_text(
        '[tool.torchward.effects.constructors]\nsampler = ["a.B"]\n'
    )
    outcome = torchward("check", "train.py")
    assert outcome.status == 2
    assert "effects" in outcome.err and "unknown kind 'sampler'" in outcome.err
