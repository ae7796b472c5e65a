"""Models recognised by how they are used (issue 28): ``x.eval()`` and ``x.train(False)``.

Only a module has a mode switch, so a value of no known kind that is switched to eval
mode is a model (MEDIUM confidence: weaker than a constructor, stronger than a name),
and a value that is a model only by its name (``model``, LOW) is confirmed by the use.
The evaluation rule TW002 then sees the loop. Uses other types share — ``train()``
without a flag (a trainer), ``eval("expr")`` with arguments (a data frame) — and an
unnamed value (``deepcopy(m).eval()``) are not evidence.
"""

from __future__ import annotations

import textwrap

from test_trust_classes import assert_exact, assert_quiet
from torchward.analysis import Confidence, Severity, analyze_source

DECODER = """
    def evaluate(decoder, loader):
        decoder.eval()
        total = 0
        for x in loader:  # expect: TW002
            total += decoder(x).sum().item()
        return total
"""


def _tw002(source: str):
    return [
        f
        for f in analyze_source(textwrap.dedent(source), "evaluate.py").findings
        if f.code == "TW002"
    ]


def test_value_switched_to_eval_is_a_model():
    assert_exact(DECODER, "TW002")
    (finding,) = _tw002(DECODER)
    assert (finding.severity, finding.confidence) == (Severity.WARNING, Confidence.MEDIUM)
    assert finding.evidence[0].message == "`decoder.eval()` switches the model to eval mode"


def test_name_guess_confirmed_by_use_is_not_lowered():
    # a parameter named ``model`` is a model by name only (LOW: a note); its eval() makes
    # it one by use, and the finding keeps its warning
    source = DECODER.replace("decoder", "model")
    (finding,) = _tw002(source)
    assert (finding.severity, finding.confidence) == (Severity.WARNING, Confidence.MEDIUM)


def test_train_false_is_a_use():
    assert_exact(DECODER.replace("decoder.eval()", "decoder.train(False)"), "TW002")


def test_whole_module_from_torch_load():
    source = """
        import torch

        def main(path, loader):
            net = torch.load(path, weights_only=False)
            net.eval()
            for x in loader:  # expect: TW002
                net(x)
    """
    assert_exact(source, "TW002")


def test_attribute_switched_to_eval():
    source = """
        class Searcher:
            def __init__(self, decoder):
                self.decoder = decoder

            def beam_search(self, batches):
                self.decoder.eval()
                out = []
                for x in batches:  # expect: TW002
                    out.append(self.decoder(x).argmax(-1))
                return out
    """
    assert_exact(source, "TW002")


def test_eval_with_arguments_is_not_a_module_use():
    # ``frame.eval("a + b")``: a data frame's expression evaluator
    assert_quiet(DECODER.replace("decoder.eval()", 'decoder.eval("a + b")'), "TW002")


def test_train_without_flag_is_not_a_module_use():
    # a trainer object's ``train()`` runs its loop; it says nothing about a module
    source = """
        def run(runner, loader):
            runner.train()
            runner.eval_mode = True
            for x in loader:
                runner(x)
    """
    assert_quiet(source, "TW002")


def test_unnamed_value_is_not_recognised():
    source = """
        from copy import deepcopy

        def evaluate(source_model, loader):
            scorer = deepcopy(source_model)
            deepcopy(scorer).eval()
            for x in loader:
                scorer(x)
    """
    assert_quiet(source, "TW002")


def test_greedy_generation_loop_with_autograd_on():
    # generation by hand: a while loop calling the eval-mode model, no no_grad (TW002
    # expresses it; the model is a parameter of no known kind, recognised by its eval())
    source = """
        import torch

        def greedy(seq2seq, src, max_len):
            seq2seq.eval()
            ys = src[:, :1]
            while ys.size(1) < max_len:  # expect: TW002
                ys = torch.cat([ys, seq2seq(src, ys).argmax(-1)[:, -1:]], dim=1)
            return ys
    """
    assert_exact(source, "TW002")


def test_generation_under_no_grad_is_quiet():
    source = """
        import torch

        @torch.no_grad()
        def greedy(seq2seq, src, max_len):
            seq2seq.eval()
            ys = src[:, :1]
            while ys.size(1) < max_len:
                ys = torch.cat([ys, seq2seq(src, ys).argmax(-1)[:, -1:]], dim=1)
            return ys
    """
    assert_quiet(source, "TW002")
