"""Notebooks: cells checked as one program, reported by cell, fixed cell by cell."""

from __future__ import annotations

import json

from torchward.analysis import LintSettings

from torchward.cli import main
from torchward.notebook import analyze_notebook, fix_notebook, program, split_cell

CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Training ✓\n"]},
    {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
        "source": [
            "%matplotlib inline\n",
            "import torch\n",
            "model = torch.nn.Linear(2, 2)\n",
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
        ],
    },
    {
        "cell_type": "code",
        "execution_count": 2,
        "metadata": {},
        "outputs": [],
        "source": [
            "losses = []\n",
            "for x in torch.utils.data.DataLoader(range(4)):\n",
            "    loss = torch.nn.functional.mse_loss(model(x), x)\n",
            "    losses.append(loss)\n",
            "    loss.backward()\n",
            "    opt.step()\n",
            "    opt.zero_grad()",
        ],
    },
]


def notebook_text(cells=CELLS) -> str:
    document = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def test_cells_are_one_program_in_file_order_with_magics_neutralised():
    built = program(notebook_text())
    assert built.numbers == (2, 3)
    assert "pass  # torchward-magic" in built.text and "%matplotlib" not in built.text
    assert built.cell_at(built.starts[1] + 3) == (3, 4)


def test_a_finding_uses_a_model_built_in_an_earlier_cell(project):
    (project / "nb.ipynb").write_text(notebook_text(), encoding="utf-8")
    status = main(["check", "--no-cache", "nb.ipynb"])
    assert status == 1


def test_findings_are_reported_as_cell_and_line(project, capsys):
    (project / "nb.ipynb").write_text(notebook_text(), encoding="utf-8")
    main(["check", "--no-cache", "nb.ipynb"])
    assert capsys.readouterr().out.startswith("nb.ipynb:cell 3:line 4: TW001 ")
    main(["check", "--no-cache", "--format", "json", "nb.ipynb"])
    (finding,) = json.loads(capsys.readouterr().out)
    assert (finding["path"], finding["cell"], finding["line"]) == ("nb.ipynb", 3, 4)


def test_fix_rewrites_only_the_touched_cell_and_keeps_the_rest_byte_for_byte():
    text = notebook_text()
    # unsafe: `losses` lives at module level, where a later cell may backpropagate it
    fixed, applied, problems = fix_notebook(text, "nb.ipynb", LintSettings(), unsafe=True)
    assert [code for code, _ in applied] == ["TW001"] and not problems
    before, after = text.splitlines(), fixed.splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after)
    assert changed == [
        ('    "    losses.append(loss)\\n",', '    "    losses.append(loss.detach())\\n",')
    ]
    assert json.loads(fixed)["cells"][1] == CELLS[1]  # the magic and the outputs survive
    assert fix_notebook(fixed, "nb.ipynb", LintSettings(), unsafe=True)[0] == fixed


def test_a_magic_line_in_a_fixed_cell_is_restored():
    cells = [
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": (
                "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\n%time x = 1\nfor b in range(3):\n    model(b)\n"
            ),
        }
    ]
    fixed, applied, _ = fix_notebook(notebook_text(cells), "nb.ipynb", LintSettings(), unsafe=False)
    source = json.loads(fixed)["cells"][0]["source"]
    assert (
        isinstance(source, str)
        and "%time x = 1\n" in source
        and "with torch.no_grad():\n    for b" in source
    )


def test_malformed_notebooks_are_reported_never_raised(project, capsys):
    (project / "bad.ipynb").write_text("{not json", encoding="utf-8")
    (project / "odd.ipynb").write_text(
        '{"cells": [{"cell_type": "code", "source": 3}]}', encoding="utf-8"
    )
    assert analyze_notebook("{not json", "bad.ipynb").problems[0].kind == "malformed-notebook"
    status = main(["check", "--no-cache", "--fix", "."])
    out = capsys.readouterr().out
    assert status == 1 and "bad.ipynb" in out and "odd.ipynb" in out
    assert (project / "bad.ipynb").read_text() == "{not json"


def test_discovery_includes_notebooks(project, capsys):
    (project / "sub").mkdir()
    (project / "sub" / "nb.ipynb").write_text(notebook_text(), encoding="utf-8")
    main(["check", "--no-cache", "--format", "grouped", "."])
    assert "sub/nb.ipynb:cell 3:" in capsys.readouterr().out


def test_split_cell_reads_cell_paths_only():
    assert split_cell("a/nb.ipynb:cell 12") == ("a/nb.ipynb", 12)
    assert split_cell("train.py") == ("train.py", None)


SHELL_COMMAND_OVER_LINES = (
    "!python prepare.py --split train \\\n"
    "                   --output_dir data \\\n"
    "                   --limit 100\n"
    "import torch\n"
    "model = torch.nn.Linear(2, 2)\n"
)


def test_a_shell_command_continued_over_lines_is_neutralised_whole():
    """Found on a PEFT token-classification notebook: ``!python ... \\`` with its options on
    the next lines; only the first line was neutralised, so the notebook was reported as a
    syntax error (unexpected indent) and nothing in it was checked."""
    cells = [
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": SHELL_COMMAND_OVER_LINES,
        }
    ]
    built = program(notebook_text(cells))
    compile(built.text, "nb.ipynb", "exec")  # valid Python, same line count
    assert built.text.count("pass  # torchward-magic") == 3
    assert "model = torch.nn.Linear(2, 2)" in built.text


def test_a_continued_shell_command_in_a_fixed_cell_comes_back_as_written():
    source = (
        "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()\n"
        + SHELL_COMMAND_OVER_LINES.replace("import torch\nmodel = torch.nn.Linear(2, 2)\n", "")
        + "for b in range(3):\n    model(b)\n"
    )
    cells = [
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": source,
        }
    ]
    fixed, applied, _ = fix_notebook(notebook_text(cells), "nb.ipynb", LintSettings(), unsafe=False)
    restored = json.loads(fixed)["cells"][0]["source"]
    assert "with torch.no_grad():\n    for b" in restored  # the fix applied
    assert (
        "!python prepare.py --split train \\\n                   --output_dir data \\\n" in restored
    )
