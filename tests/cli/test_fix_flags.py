"""``check --fix``, ``--unsafe-fixes``, ``--diff``, ``--fix-only`` on real files."""

from __future__ import annotations

import json

from .projects import TRAIN_LOOP, write

NO_RESET = (
    "import torch\ndef train(model, loader, crit):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n"
)  # an optimizer built here: its reset is a proven-safe fix
ACCUMULATE = (
    "def train(model, loader, opt, crit, accum):\n    for i, (x, y) in enumerate(loader):\n"
    "        loss = crit(model(x), y)\n        loss.backward()\n        if (i + 1) % accum == 0:\n"
    "            opt.step()\n            opt.zero_grad()\n"
)


def test_fix_applies_safe_fixes_and_reports_nothing_left(project, torchward):
    path = write(project, "train.py", NO_RESET)
    outcome = torchward("check", "--no-cache", "--fix", "train.py")
    assert outcome.status == 0
    assert "opt.zero_grad(set_to_none=True)" in path.read_text()
    assert "Fixed 1 finding." in outcome.err
    assert torchward("check", "--no-cache", "--fix", "train.py").err.strip() == "No fixes applied."


def test_fix_leaves_unsafe_fixes_for_unsafe_fixes(project, torchward):
    path = write(project, "train.py", ACCUMULATE)
    assert torchward("check", "--no-cache", "--fix", "--fail-on", "warning", "train.py").status == 1
    assert path.read_text() == ACCUMULATE
    assert (
        torchward(
            "check", "--no-cache", "--unsafe-fixes", "--fail-on", "warning", "train.py"
        ).status
        == 0
    )
    assert "(loss / accum).backward()" in path.read_text()


def test_diff_prints_a_unified_diff_changes_nothing_and_exits_1(project, torchward):
    path = write(project, "train.py", NO_RESET)
    outcome = torchward("check", "--no-cache", "--diff", "train.py")
    assert outcome.status == 1
    assert outcome.out.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+        opt.zero_grad(set_to_none=True)\n" in outcome.out
    assert path.read_text() == NO_RESET


def test_diff_exits_0_when_there_is_nothing_to_fix(project, torchward):
    write(project, "clean.py", "x = 1\n")
    outcome = torchward("check", "--no-cache", "--diff", "clean.py")
    assert outcome.status == 0 and outcome.out == ""


def test_fix_only_exits_0_and_prints_no_findings(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--no-cache", "--fix-only", "train.py")
    assert outcome.status == 0 and outcome.out == ""
    assert "losses.append(loss.detach())" in (project / "train.py").read_text()


def test_a_file_with_a_syntax_error_is_never_written(project, torchward):
    broken = NO_RESET + "def oops(:\n"
    path = write(project, "broken.py", broken)
    outcome = torchward("check", "--no-cache", "--fix", "broken.py")
    assert outcome.status == 1
    assert path.read_text() == broken


def test_fix_keeps_crlf_line_endings_and_the_byte_order_mark(project, torchward):
    data = ("\ufeff" + NO_RESET).replace("\n", "\r\n").encode("utf-8")
    path = write(project, "train.py", data)
    torchward("check", "--no-cache", "--fix", "train.py")
    fixed = path.read_bytes()
    assert (
        fixed.startswith("\ufeff".encode())
        and b"\r\n        opt.zero_grad(set_to_none=True)\r\n" in fixed
    )
    assert b"\n" not in fixed.replace(b"\r\n", b"")


def test_json_output_carries_the_fixes(project, torchward):
    write(project, "train.py", NO_RESET)
    (finding,) = json.loads(torchward("check", "--no-cache", "--format", "json", "train.py").out)
    (fix,) = finding["fixes"]
    assert fix["applicability"] == "safe"
    assert fix["edits"] == [
        {
            "line": 7,
            "column": 1,
            "end_line": 7,
            "end_column": 1,
            "text": "        opt.zero_grad(set_to_none=True)\n",
        }
    ]


def test_unused_suppressions_are_reported_only_when_asked(project, torchward):
    source = (
        NO_RESET.replace("opt.step()", "opt.step()  # noqa: TW003")
        + "y = 1  # torchward: ignore[TW001]\nz = 2  # noqa: E501\n"
    )
    write(project, "train.py", source)
    assert torchward("check", "--no-cache", "--format", "json", "train.py").out.strip() == "[]"
    out = json.loads(
        torchward(
            "check", "--no-cache", "--format", "json", "--report-unused-suppressions", "train.py"
        ).out
    )
    assert [(item["code"], item["line"]) for item in out] == [("TW100", 7)]
