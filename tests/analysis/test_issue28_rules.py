"""The rules for issue 28's misses (TW025, TW026, TW027): every invalid example's exact finding.

Each example is checked for its code, full span, severity, message and evidence lines,
so that a rule that stops running, moves its finding or rewords it fails here. The
examples are the rule modules' own (the documentation and the tests cannot drift).
"""

from __future__ import annotations

import pytest
from torchward.analysis import LintSettings, analyze_source, rule_by_code

TW025_MESSAGE = (
    "`unscale_()` runs on every accumulation micro-step, but the scaler steps and updates only "
    "on the boundary: the second micro-step raises `RuntimeError: unscale_() has already been "
    "called on this optimizer since the last update()`. Move the unscale (and the clipping after "
    "it) to just before `scaler.step(optimizer)`."
)


def _tw026_message(function: str, count: int) -> str:
    return (
        f"`{function}` returns a `PackedSequence`, a named tuple of four fields (data, "
        "batch_sizes, sorted_indices, unsorted_indices) since torch 1.1: unpacking it into "
        f"{count} names raises `ValueError` on any current torch. Keep the `PackedSequence` "
        "and read `.data` / `.batch_sizes` from it."
    )


def _tw027_message(owner: str) -> str:
    return (
        f"`{owner}.state_dict` is replaced by one that returns the PEFT adapter's weights; since "
        "PEFT 0.3 `save_pretrained` filters `state_dict()` for the adapter itself, so the filter "
        "runs twice and the saved adapter is empty after the whole run. Delete the patch: "
        "`save_pretrained` already saves only the adapter."
    )


SAVED = "the model is saved here"
GATED = "the step is gated here, once every N micro-steps"
STEPS = "the scaler steps only here"
EXPECTED = {
    ("TW025", 0): ((6, 8, 6, 28), TW025_MESSAGE, [(8, GATED), (9, STEPS)]),
    ("TW025", 1): ((7, 12, 7, 32), TW025_MESSAGE, [(9, GATED), (10, STEPS)]),
    (
        "TW025",
        2,
    ): (
        (7, 12, 7, 32),
        TW025_MESSAGE,
        [(5, "this micro-step loop runs backward on every iteration"), (9, STEPS)],
    ),
    ("TW025", 3): ((10, 12, 10, 42), TW025_MESSAGE, [(11, GATED), (12, STEPS)]),
    ("TW026", 0): (
        (3, 4, 3, 21),
        _tw026_message("pack_padded_sequence", 2),
        [(3, "`pack_padded_sequence(...)` is called here")],
    ),
    ("TW026", 1): (
        (4, 8, 4, 17),
        _tw026_message("pack_padded_sequence", 2),
        [(4, "`pack_padded_sequence(...)` is called here")],
    ),
    ("TW026", 2): (
        (3, 4, 3, 17),
        _tw026_message("pack_sequence", 2),
        [(3, "`pack_sequence(...)` is called here")],
    ),
    ("TW026", 3): (
        (3, 4, 3, 22),
        _tw026_message("pack_padded_sequence", 3),
        [(3, "`pack_padded_sequence(...)` is called here")],
    ),
    ("TW027", 0): ((5, 4, 5, 20), _tw027_message("model"), [(8, SAVED)]),
    ("TW027", 1): (
        (5, 4, 5, 20),
        _tw027_message("model"),
        [(6, "this Trainer's checkpoints call `save_pretrained`")],
    ),
    ("TW027", 2): ((4, 4, 4, 20), _tw027_message("model"), [(5, SAVED)]),
    ("TW027", 3): ((7, 8, 7, 29), _tw027_message("self.model"), [(9, SAVED)]),
}
SEVERITY = {"TW025": "error", "TW026": "error", "TW027": "warning"}


@pytest.mark.parametrize(("code", "index"), sorted(EXPECTED), ids=lambda v: str(v))
def test_invalid_example_finding_is_exact(code, index):
    rule = rule_by_code(code)
    assert rule is not None
    example = rule.INVALID[index]
    report = analyze_source(example.source, "example.py", LintSettings(select=(code,)))
    assert not report.problems
    (finding,) = report.findings
    span, message, evidence = EXPECTED[(code, index)]
    f_span = finding.span
    assert (f_span.line, f_span.column, f_span.end_line, f_span.end_column) == span
    assert (finding.code, finding.severity.value) == (code, SEVERITY[code])
    assert finding.message == message
    assert [(e.span.line, e.message) for e in finding.evidence] == evidence
    assert finding.fixes == ()


def test_every_invalid_example_is_covered():
    for code in SEVERITY:
        rule = rule_by_code(code)
        assert rule is not None
        assert {i for c, i in EXPECTED if c == code} == set(range(len(rule.INVALID)))


def test_tw025_on_a_helper_called_per_micro_step():
    # the unscale inside a helper the loop calls every micro-step; the step gated in the loop
    source = (
        "import torch\n"
        "def clip(scaler, opt, model):\n"
        "    scaler.unscale_(opt)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "\n"
        "def train(model, loader, opt, crit, accum):\n"
        "    scaler = torch.amp.GradScaler()\n"
        "    for i, (x, y) in enumerate(loader):\n"
        "        scaler.scale(crit(model(x), y) / accum).backward()\n"
        "        clip(scaler, opt, model)\n"
        "        if (i + 1) % accum == 0:\n"
        "            scaler.step(opt)\n"
        "            scaler.update()\n"
        "            opt.zero_grad()\n"
    )
    findings = analyze_source(source, "train.py", LintSettings(select=("TW025",))).findings
    assert [f.span.line for f in findings] == [10]
