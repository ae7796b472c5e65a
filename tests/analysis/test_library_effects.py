"""The library-effects table (analysis/data/library_effects.toml, analysis/effects/table.py).

What a library call does is data: timm's ``loss_scaler(loss, optimizer)`` runs backward
and steps, ``get_peft_model`` wraps a model, a bitsandbytes class is an optimizer. These
tests check that the rules see those effects through the table (a timm loop without
``zero_grad`` is reported by TW003 exactly like a hand-written one), that a project's
``[tool.torchward.effects]`` extends it, and that a table that says something unknown is
a clear error. Snippets are written in our own words after timm's and PEFT's docs.
"""

from __future__ import annotations

import textwrap

import pytest
from test_trust_classes import assert_exact, assert_quiet
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.effects.table import (
    EffectsError,
    LibraryEffects,
    builtin,
    parse_effects,
)
from torchward.analysis.facts.values import Kind

from torchward.config import ConfigError, parse_table

TIMM_LOOP = """
    import torch
    from timm.utils import NativeScaler

    def train_one_epoch(model, loader, optimizer, criterion):
        loss_scaler = NativeScaler()
        for images, target in loader:
            with torch.autocast("cuda"):
                loss = criterion(model(images), target)
            loss_scaler(loss, optimizer, clip_grad=1.0, parameters=model.parameters())  # expect: TW003
"""

TIMM_LOOP_RESET = TIMM_LOOP.replace(
    "        for images, target in loader:\n",
    "        for images, target in loader:\n            optimizer.zero_grad()\n",
).replace("  # expect: TW003", "")

# the scaler kept on a trainer object, built from timm's ApexScaler, called as an attribute
APEX_TRAINER = """
    from timm.utils import ApexScaler

    class Trainer:
        def __init__(self, model, optimizer, criterion):
            self.model, self.optimizer, self.criterion = model, optimizer, criterion
            self.loss_scaler = ApexScaler()

        def fit(self, loader):
            for x, y in loader:
                loss = self.criterion(self.model(x), y)
                self.loss_scaler(loss, self.optimizer)  # expect: TW003
"""


def test_timm_native_scaler_hides_no_update_from_tw003():
    assert_exact(TIMM_LOOP, "TW003")


def test_timm_native_scaler_with_reset_is_quiet():
    assert_quiet(TIMM_LOOP_RESET, "TW003")


def test_timm_scaler_finding_is_exact():
    (finding,) = [
        f
        for f in analyze_source(textwrap.dedent(TIMM_LOOP), "train.py").findings
        if f.code == "TW003"
    ]
    assert (finding.span.line, finding.span.column) == (10, 8)
    assert finding.message.startswith(
        "this loop runs backward() and steps the optimizer but never resets the gradients"
    )


def test_timm_apex_scaler_as_attribute():
    assert_exact(APEX_TRAINER, "TW003")


def test_timm_need_update_makes_no_claim_about_the_step():
    # newer timm: ``need_update=False`` on micro-steps; the step is decided at run time,
    # so the call claims only the backward, and TW003 (which needs a step) stays quiet
    source = TIMM_LOOP.replace(
        "parameters=model.parameters())", "parameters=model.parameters(), need_update=last)"
    ).replace("  # expect: TW003", "")
    assert_quiet(source, "TW003")


def test_peft_wrapper_keeps_the_model():
    # get_peft_model wraps the model it is given: the wrapped model is still the model
    # switched to eval mode, so the evaluation loop without no_grad is reported
    source = """
        import torch
        from peft import get_peft_model

        def evaluate(config, loader):
            model = get_peft_model(torch.nn.Linear(4, 4), config)
            model.eval()
            for x in loader:  # expect: TW002
                model(x)
    """
    assert_exact(source, "TW002")


def test_bitsandbytes_optimizer_is_an_optimizer():
    table = builtin()
    assert table.constructed_kind("bitsandbytes.optim.AdamW8bit") is Kind.OPTIMIZER
    assert table.constructed_kind("bitsandbytes.optim.optimizer.Optimizer8bit") is Kind.OPTIMIZER
    assert table.constructed_kind("bitsandbytes.optim.Optimizer") is None  # the base class
    assert table.constructed_kind("bitsandbytes.nn.Linear8bitLt") is None
    source = """
        import bitsandbytes as bnb

        def train(model, loader, crit):
            for x, y in loader:
                opt = bnb.optim.AdamW8bit(model.parameters())  # expect: TW017
                opt.zero_grad()
                crit(model(x), y).backward()
                opt.step()
    """
    assert_exact(source, "TW017")


def test_builtin_table_covers_the_libraries():
    table = builtin()
    for name, kind in (
        ("timm.utils.NativeScaler", Kind.SCALER),
        ("timm.utils.ApexScaler", Kind.SCALER),
        ("torch.amp.GradScaler", Kind.SCALER),
        ("timm.create_model", Kind.MODEL),
        ("accelerate.Accelerator", Kind.ACCELERATOR),
    ):
        assert table.constructed_kind(name) is kind, name
    assert "peft.get_peft_model" in table.model_wrappers
    assert [e.effect for e in table.method("scaler", "__call__").effects] == [
        "scale",
        "backward",
        "unscale",
        "clip",
        "scaler_step",
        "step",
    ]
    backward = table.method("lightning_module", "manual_backward").effects[0]
    assert (backward.effect, backward.framework) == ("backward", "lightning.manual")
    assert table.frameworks["deepspeed"].zeroes_gradients
    assert not table.frameworks["accelerate"].zeroes_gradients


PROJECT_SCALER = """
    from mylib.amp import LossScaler

    def train(model, loader, optimizer, criterion):
        scaler = LossScaler()
        for x, y in loader:
            scaler(criterion(model(x), y), optimizer)  # expect: TW003
"""

PROJECT_TABLE = {
    "constructors": {"scaler": ["mylib.amp.LossScaler"]},
}


def test_project_extends_the_table(tmp_path):
    config = parse_table(str(tmp_path / "pyproject.toml"), {"effects": PROJECT_TABLE})
    assert isinstance(config.effects, LibraryEffects)
    source = textwrap.dedent(PROJECT_SCALER)
    lines = [n for n, line in enumerate(source.splitlines(), 1) if "expect: TW003" in line]
    extended = analyze_source(source, "train.py", LintSettings(effects=config.effects))
    assert [f.span.line for f in extended.findings if f.code == "TW003"] == lines
    # without the project's entry the call is unknown: nothing to report
    assert_quiet(PROJECT_SCALER, "TW003")


def test_project_table_can_add_a_method_effect():
    table = parse_effects(
        {
            "constructors": {"accelerator": ["mylib.Runner"]},
            "methods": {
                "accelerator": {
                    "fit_step": {
                        "effects": [
                            {"effect": "backward", "argument": 0},
                            {"effect": "step", "argument": 1},
                        ]
                    }
                }
            },
        },
        "test",
    )
    source = """
        from mylib import Runner

        def train(model, loader, optimizer, criterion):
            runner = Runner()
            for x, y in loader:
                runner.fit_step(criterion(model(x), y), optimizer)  # expect: TW003
    """
    text = textwrap.dedent(source)
    findings = analyze_source(text, "train.py", LintSettings(effects=table)).findings
    assert [f.span.line for f in findings if f.code == "TW003"] == [7]
    assert_quiet(source, "TW003")  # the built-in table does not know mylib


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"constructor": {}}, "unknown section 'constructor'"),
        ({"constructors": {"sampler": ["a.B"]}}, "unknown kind 'sampler'"),
        ({"constructors": {"scaler": "a.B"}}, "expected a list of qualified names"),
        ({"methods": {"scaler": {"go": {"effects": [{"effect": "jump"}]}}}}, "effect must be"),
        ({"methods": {"scaler": {"go": {"returns": "float"}}}}, "returns 'float'"),
        ({"methods": {"trainer": {}}}, "unknown receiver 'trainer'"),
        ({"frameworks": {"x": {"zeroes_gradients": 1}}}, "must be true or false"),
    ],
)
def test_bad_table_is_a_clear_error(table, words):
    with pytest.raises(EffectsError, match=words):
        parse_effects(table, "[tool.torchward.effects]")


def test_bad_project_table_names_the_key(tmp_path):
    with pytest.raises(ConfigError) as raised:
        parse_table(str(tmp_path / "pyproject.toml"), {"effects": {"constructors": {"x": ["a"]}}})
    assert "unknown kind 'x'" in str(raised.value)
    assert "effects" in str(raised.value)


def test_equal_tables_are_equal_and_hash_alike():
    assert parse_effects(PROJECT_TABLE, "a") == parse_effects(PROJECT_TABLE, "b")
    assert hash(parse_effects(PROJECT_TABLE, "a")) == hash(parse_effects(PROJECT_TABLE, "b"))
    assert parse_effects(PROJECT_TABLE, "a") != builtin()


def test_trainer_classes_come_from_the_table():
    table = builtin()
    assert table.is_trainer("transformers.Trainer")
    assert table.is_trainer("trl.SFTTrainer")
    assert not table.is_trainer("trl.SFTConfig")
    assert not table.is_trainer("mylib.Trainer")
    # a project's own trainer class, declared in [tool.torchward.effects.trainers]: its
    # checkpoints call save_pretrained, so TW027 follows a model handed to it
    source = textwrap.dedent(
        """
        from peft import get_peft_model_state_dict
        from mylib import Runner

        def main(model, data):
            old = model.state_dict
            model.state_dict = lambda *a, **k: get_peft_model_state_dict(model, old())
            Runner(model=model, data=data).train()
        """
    )
    extension = parse_effects({"trainers": {"classes": ["mylib.Runner"]}}, "test")
    extended = analyze_source(source, "train.py", LintSettings(effects=extension)).findings
    assert [f.span.line for f in extended if f.code == "TW027"] == [7]
    assert [f for f in analyze_source(source, "train.py").findings if f.code == "TW027"] == []


def test_editor_cache_keeps_tables_apart():
    # the language server keeps function analyses across edits; a project table added
    # (or removed) mid-session must not replay an analysis made under the other table
    from torchward.analysis import SummaryCache

    cache = SummaryCache()
    source = textwrap.dedent(PROJECT_SCALER)
    extension = parse_effects(PROJECT_TABLE, "test")

    def lines(settings: LintSettings) -> list[int]:
        report = analyze_source(source, "train.py", settings, cache)
        return [f.span.line for f in report.findings if f.code == "TW003"]

    assert lines(LintSettings()) == []
    assert lines(LintSettings(effects=extension)) == [7]
    assert lines(LintSettings()) == []
    assert lines(LintSettings(effects=parse_effects(PROJECT_TABLE, "again"))) == [7]


def _events(source: str) -> list[tuple[int, str]]:
    """The training events of ``train`` in ``source``, as (line, kind), in order."""
    import ast

    from torchward.analysis.facts.events import EventKind
    from torchward.analysis.facts.filefacts import build_facts

    text = textwrap.dedent(source)
    facts = build_facts(ast.parse(text), text, "train.py")
    (trace,) = [t for t in facts.traces if t.function == "train"]
    wanted = {
        EventKind.SCALER_SCALE,
        EventKind.BACKWARD,
        EventKind.SCALER_UNSCALE,
        EventKind.CLIP_GRAD,
        EventKind.SCALER_STEP,
        EventKind.STEP,
    }
    return [(e.span.line, e.kind.value) for e in trace.events if e.kind in wanted]


SCALER_CALL = """
    from timm.utils import NativeScaler

    def train(model, loader, optimizer, criterion, last):
        loss_scaler = NativeScaler()
        for x, y in loader:
            loss_scaler(criterion(model(x), y), optimizer{extra})
"""


@pytest.mark.parametrize(
    ("extra", "kinds"),
    [
        ("", ["scaler_scale", "backward", "scaler_step", "step"]),
        (
            ", clip_grad=1.0",
            ["scaler_scale", "backward", "scaler_unscale", "clip_grad", "scaler_step", "step"],
        ),
        (", clip_grad=None", ["scaler_scale", "backward", "scaler_step", "step"]),
        (", clip_grad=1.0, need_update=last", ["scaler_scale", "backward"]),
        (", need_update=True", ["scaler_scale", "backward", "scaler_step", "step"]),
    ],
)
def test_timm_scaler_call_events(extra, kinds):
    events = _events(SCALER_CALL.format(extra=extra))
    assert [kind for _, kind in events] == kinds
    assert {line for line, _ in events} == {7}
