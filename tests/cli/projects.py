"""Example sources and small helpers shared by the CLI tests."""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

from torchward.analysis import Severity, Span
from torchward.analysis.rule import Rule

TRAIN_LOOP = textwrap.dedent(
    """\
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset


    def train():
        model = nn.Linear(4, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
        losses = []
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            losses.append(loss)
            loss.backward()
            optimizer.step()
        print(f"mean loss {sum(l.item() for l in losses) / len(losses):.3f}")
    """
)
RETAINED_LINE = 14  # the line of ``losses.append(loss)`` in TRAIN_LOOP
CLEAN = "import torch\n\n\ndef add(a, b):\n    return a + b\n"


class StandInRetainedGraph(Rule):
    """Stand-in for TW001 used only until the real rule exists (see module docstring).

    ## What it does
    Flags ``losses.append(loss)``.
    """

    code = "TW001"
    name = "retained-graph"
    default_severity = Severity.ERROR
    summary = "A graph-attached tensor is stored beyond its iteration."

    def check(self, facts):
        source = Path(facts.path).read_text(encoding="utf-8-sig")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Expr) and ast.unparse(node) == "losses.append(loss)":
                span = Span(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
                yield self.finding(
                    span, "`loss` is appended to `losses` with its autograd graph attached"
                )


def write(root: Path, relative: str, text: str | bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def pyproject(root: Path, table: str) -> Path:
    return write(
        root,
        "pyproject.toml",
        "[project]\nname = 'demo'\n\n[tool.torchward]\n" + textwrap.dedent(table),
    )


def codes_by_line(json_text: str) -> list[tuple[str, str, int]]:
    return [(item["path"], item["code"], item["line"]) for item in json.loads(json_text)]
