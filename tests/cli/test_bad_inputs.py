"""Bad input gets check's clear words and exit codes, in every command, and loses nothing.

- ``estimate`` reads every file ``check`` reads and says the same about those it cannot
  (latin-1, binary, an expression nested too deep for the parser, a syntax error, a
  malformed notebook): the same ``path:line:col: kind message`` line, exit 1, no
  traceback; ``--fail-on-oom`` makes an OOM verdict exit 1.
- One mistyped path among others is reported like an unreadable file; the rest is checked.
- A notebook's syntax error says ``cell N, line M``, not a line of the JSON file.
- The README's examples name rules that exist.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchward.config import known_codes

from .projects import TRAIN_LOOP, write

README = Path(__file__).resolve().parents[2] / "README.md"

BAD_FILES = {
    "latin1.py": 'x = "caf\xe9"\n'.encode("latin-1"),
    "binary.py": bytes(range(256)) * 4,
    "deep.py": ("x = " + " + ".join(["a"] * 5000) + "\n").encode(),
    "broken.py": b"def f(:\n    pass\n",
    "notebook.ipynb": b'{"cells": 5}',
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_estimate_says_what_check_says_about_a_file_it_cannot_read(project, torchward, name):
    (project / name).write_bytes(BAD_FILES[name])
    checked = torchward("check", "--no-cache", name)
    estimated = torchward("estimate", name)
    assert "Traceback" not in estimated.err
    problem = next(line for line in checked.out.splitlines() if line.startswith(name + ":"))
    assert problem in estimated.err
    assert checked.status == estimated.status == 1


def test_fail_on_oom_exits_1_on_an_oom_verdict_and_0_when_it_fits(torchward):
    big = ["--model", "gpt2", "--gpu", "t4", "--batch-size", "512", "--seq-len", "1024"]
    assert torchward("estimate", *big).status == 0  # the verdict alone is not a failure
    outcome = torchward("estimate", *big, "--fail-on-oom", "--format", "json")
    assert json.loads(outcome.out)["verdict"] == "oom"
    assert outcome.status == 1
    small = ["--model", "gpt2", "--gpu", "h200", "--batch-size", "1", "--seq-len", "128"]
    assert torchward("estimate", *small, "--fail-on-oom").status == 0
    assert torchward("estimate", "--model", "gpt2", "--fail-on-oom").status == 2


def test_a_mistyped_path_does_not_abort_the_run(project, torchward):
    write(project, "train.py", TRAIN_LOOP)
    outcome = torchward("check", "--no-cache", "trian.py", "train.py")
    assert "train.py:14:" in outcome.out  # the existing file was checked
    assert "trian.py:1:1: unreadable cannot read file: No such file or directory" in outcome.out
    assert outcome.status == 1
    assert torchward("check", "--no-cache", "trian.py").status == 2  # nothing to check at all


def test_a_notebook_syntax_error_is_placed_by_cell_and_line(project, torchward):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# title"},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": ["import torch\n", "x = 1\n"],
        },
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": ["y = 2\n", "z = (\n"],
        },
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    write(project, "nb.ipynb", json.dumps(notebook))
    outcome = torchward("check", "--no-cache", "nb.ipynb")
    assert "nb.ipynb: cell 3, line 2, column 5: syntax-error" in outcome.out
    assert not re.search(r"nb\.ipynb:\d+:\d+:", outcome.out)
    assert outcome.status == 1


def test_the_readme_names_only_rules_that_exist():
    codes = set(known_codes())
    named = set(re.findall(r"\bT[WG](\d{3})\b", README.read_text()))
    unknown = sorted(f"TW{number}" for number in named if f"TW{number}" not in codes)
    assert unknown == []


def test_diff_and_source_lines_split_lines_as_python_does(project, torchward):
    # a form feed and U+2028 inside lines: str.splitlines would cut there, shifting the
    # terminal's source excerpt and marking "No newline" in the middle of the diff
    source = (
        "def train(model, loader, opt, crit):\n"
        "    for x, y in loader:  # step\u2028 by step\x0c\n"
        "        crit(model(x), y).backward()\n"
        "        opt.step()\n"
    )
    write(project, "train.py", source)
    diff = torchward("check", "--no-cache", "--diff", "--unsafe-fixes", "train.py").out
    assert "+        opt.zero_grad(set_to_none=True)\n" in diff
    assert "No newline at end of file" not in diff
    assert " for x, y in loader:  # step\u2028 by step\x0c\n" in diff
    shown = torchward("check", "--no-cache", "train.py").out
    assert " 4 |         opt.step()" in shown
