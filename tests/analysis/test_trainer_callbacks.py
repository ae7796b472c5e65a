"""Hugging Face Trainer callbacks, from the library-effects table's ``[callbacks]``.

The Trainer calls a callback's ``on_step_end`` (and the table's other per-step methods)
once per optimizer step, so their bodies run inside the training loop: a
``torch.cuda.synchronize()`` there stalls every step (TW007), exactly as in a
hand-written loop. A class is a callback by its base (``TrainerCallback``) or by use:
handed to ``trainer.add_callback`` or to ``Trainer(callbacks=[...])``. Methods the
Trainer calls every N steps (``on_log``) and classes never handed to a trainer stay
quiet. Snippets are written in our own words after the Trainer's callback docs.
"""

from __future__ import annotations

import textwrap

import pytest
from test_trust_classes import assert_exact, assert_quiet
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.effects.table import EffectsError, builtin, parse_effects
from torchward.analysis.facts.semantic import mentions_training_words

BY_BASE = """
    import torch
    from transformers import TrainerCallback

    class GradProbe(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            torch.cuda.synchronize()  # expect: TW007
"""

# the same class without the base: a callback only when handed to a trainer
PLAIN = """
    import torch

    class GradProbe:
        def on_step_end(self, args, state, control, model=None, **kwargs):
            torch.cuda.synchronize()  # expect: TW007
"""

BY_KEYWORD = (
    PLAIN
    + """
    def main(model, args, dataset):
        from transformers import Trainer
        trainer = Trainer(model=model, args=args, train_dataset=dataset, callbacks=[GradProbe()])
        trainer.train()
"""
)

BY_ADD_CALLBACK = (
    PLAIN
    + """
    def main(trainer):
        trainer.add_callback(GradProbe)
        trainer.train()
"""
)

# registered through a subclass that inherits the hook
INHERITED = (
    PLAIN
    + """
    class NamedProbe(GradProbe):
        name = "probe"

    def main(trainer):
        trainer.add_callback(NamedProbe())
"""
)

# a keyword `callbacks` on something that is not a trainer of the table
NOT_A_TRAINER = (
    PLAIN
    + """
    def main(runner):
        runner.fit(callbacks=[GradProbe()])
"""
)

# on_log runs every `logging_steps`, not every step: not in the loop
EVERY_N_STEPS = BY_BASE.replace("def on_step_end", "def on_log").replace("  # expect: TW007", "")


@pytest.mark.parametrize(
    "source",
    [BY_BASE, BY_KEYWORD, BY_ADD_CALLBACK, INHERITED],
    ids=["base", "callbacks-keyword", "add_callback", "inherited"],
)
def test_a_sync_in_a_per_step_callback_is_reported_on_its_line(source):
    assert_exact(source, "TW007")


def test_the_finding_says_why_and_is_a_warning():
    (finding,) = analyze_source(textwrap.dedent(BY_BASE), "cb.py").findings
    assert finding.code == "TW007"
    assert finding.severity.value == "warning"
    assert finding.message.startswith("`torch.cuda.synchronize()` runs on every training step")


@pytest.mark.parametrize(
    "source",
    [PLAIN, NOT_A_TRAINER, EVERY_N_STEPS],
    ids=["never-registered", "not-a-trainer", "on_log"],
)
def test_a_method_no_trainer_calls_every_step_is_quiet(source):
    assert_quiet(source, "TW007")


def test_a_callback_body_counts_as_training_code_for_the_cheap_relevance_test():
    assert mentions_training_words("    def on_step_end(self, args, state, control):\n")
    assert not mentions_training_words("    def on_log(self, args, state, control):\n")


def test_the_builtin_table_lists_the_trainer_callbacks():
    callbacks = builtin().callbacks
    assert "transformers.TrainerCallback" in callbacks.classes
    assert {"on_step_begin", "on_step_end", "on_substep_end"} <= callbacks.per_step
    assert "on_log" not in callbacks.per_step
    assert callbacks.register == {"add_callback"} and callbacks.keywords == {"callbacks"}
    assert callbacks.model == "model"


# a project adds another library's callbacks: Lightning's per-batch hook
LIGHTNING_CALLBACK = """
    import torch
    from lightning.pytorch import Callback

    class Sync(Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            torch.cuda.synchronize()  # expect: TW007
"""


def test_a_project_table_adds_callbacks_of_another_library():
    table = parse_effects(
        {"callbacks": {"classes": ["lightning.Callback"], "per_step": ["on_train_batch_end"]}},
        "[tool.torchward.effects]",
    )
    source = textwrap.dedent(LIGHTNING_CALLBACK)
    found = analyze_source(source, "cb.py", LintSettings(effects=table)).findings
    assert [(f.code, f.span.line) for f in found] == [("TW007", 7)]
    assert_quiet(LIGHTNING_CALLBACK, "TW007")  # the built-in table does not list it


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"callbacks": {"hooks": ["on_step_end"]}}, "unknown key 'hooks'"),
        ({"callbacks": {"per_step": "on_step_end"}}, "expected a list"),
        ({"callbacks": {"model": "the model"}}, "'model' must be a parameter name"),
        ({"trainers": {"hook": ["x"]}}, "unknown key 'hook'"),
    ],
)
def test_a_bad_callbacks_table_is_a_clear_error(table, words):
    with pytest.raises(EffectsError, match=words):
        parse_effects(table, "[tool.torchward.effects]")


# --- model bases: which packages' classes make a subclass an nn.Module --------------------

MYLIB_MODEL = """
from mylib.layers import Block

class Net(Block):
    pass
"""


def test_model_base_packages_come_from_the_table():
    import ast

    from torchward.analysis.effects.table import using
    from torchward.analysis.facts.semantic import ModuleIndex

    hf_source = MYLIB_MODEL.replace("mylib.layers", "transformers")
    hf = ModuleIndex(ast.parse(hf_source), hf_source)
    assert hf.is_module_class("Net")  # transformers is in the built-in table
    index = ModuleIndex(ast.parse(MYLIB_MODEL), MYLIB_MODEL)
    assert not index.is_module_class("Net")
    table = parse_effects({"models": {"base_packages": ["mylib"]}}, "[tool.torchward.effects]")
    with using(table):
        assert index.is_module_class("Net")
    with pytest.raises(EffectsError, match="unknown key 'packages'"):
        parse_effects({"models": {"packages": ["mylib"]}}, "[tool.torchward.effects]")
