"""A measurement that cannot start says so in editor terms, with the next step."""

from __future__ import annotations

import pytest
from harness import REAL_SERVER, session, uri_of
from torchward.server.profiling import NEXT_CHOOSE_FACTORY, NEXT_INSTALL_TORCH, in_editor_terms

from torchward.profile.plan import PlanError


def test_the_clis_advice_becomes_the_editors_next_step():
    refusal = PlanError(
        "train.py:3: cannot build the model `Net(cfg)`: cfg is read from a file. Profile a "
        "function that returns the model: torchward profile FILE.py:FUNCTION",
        problem="train.py:3: cannot build the model `Net(cfg)`: cfg is read from a file",
        needs_factory=True,
    )
    reason, step = in_editor_terms(refusal)
    assert "torchward profile" not in reason and "module:function" not in reason
    assert reason.endswith("choose the function that builds the model")
    assert step == NEXT_CHOOSE_FACTORY
    reason, step = in_editor_terms("torch is not installed in this interpreter: /usr/bin/python3")
    assert step == NEXT_INSTALL_TORCH
    assert in_editor_terms("the worker crashed") == ("the worker crashed", None)
    # a refusal that naming a function would not answer keeps its words and gets no action
    assert in_editor_terms(PlanError("'x': factory arguments are NAME=VALUE"))[1] is None


NO_MODEL = """\
import torch

def helper(x):
    return x * 2

for step in range(10):
    pass
"""


@pytest.mark.asyncio
async def test_a_script_without_a_model_is_answered_with_choose_the_function(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(NO_MODEL)
    uri = uri_of(script)
    async with session("vscode-1.96", server=REAL_SERVER, folders=[tmp_path]) as editor:
        editor.open(uri, NO_MODEL)
        await editor.diagnostics(uri)
        quiet = await editor.command("torchward.measure", uri, {"quiet": True})
        quiet = quiet if isinstance(quiet, dict) else dict(quiet.__dict__)
        assert quiet["status"] == "error", quiet
        assert quiet.get("next") == NEXT_CHOOSE_FACTORY
        assert "torchward profile" not in quiet["reason"]
        assert not editor.client.messages, "quiet: the editor shows it itself"
        await editor.command("torchward.measure", uri)
        shown = [m.message for m in editor.client.messages]
        assert shown and "choose the function that builds the model" in shown[-1]
        assert "torchward profile" not in shown[-1]
