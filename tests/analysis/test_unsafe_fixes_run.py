"""Every unsafe fix offered on small realistic programs leaves a program that compiles,
re-analyses clean of its own finding, and runs.

The programs are written for this test (a resume from the project's own checkpoint, a
notebook's save-and-reload, a loss history); each is linted, every unsafe fix of every
finding is applied on its own, and the result is compiled, linted again and executed with
the CPU build of torch in a temporary folder: a ``weights_only=True`` that cannot load the
checkpoint, or a ``.detach()`` on something that is not a tensor, fails here. The refused
cases run too: they show the fix would have broken the program.
"""

from __future__ import annotations

import textwrap

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.finding import Applicability
from torchward.analysis.fixes import apply_edits, fixes_for

RESUME = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    def train(epochs):
        model = nn.Linear(4, 2)
        opt = torch.optim.Adam(model.parameters())
        for epoch in range(epochs):
            for _ in range(2):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
            state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch}
            torch.save(state, "last.pt")


    def resume():
        model = nn.Linear(4, 2)
        opt = torch.optim.Adam(model.parameters())
        checkpoint = torch.load("last.pt", map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        opt.load_state_dict(checkpoint["optimizer"])
        model.train()
        return checkpoint["epoch"]


    def main():
        train(2)
        assert resume() == 1
    """
)

NOTEBOOK = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    best = float("inf")
    for step in range(3):
        loss = model(torch.randn(16, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < best:
            best = loss.item()
            torch.save(model.state_dict(), "tut1-model.pt")

    model.load_state_dict(torch.load("tut1-model.pt"))
    model.eval()


    def main():
        pass
    """
)

HISTORY = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    def train(model, batches, opt):
        crit = torch.nn.MSELoss()
        losses = []
        for x, y in batches:
            loss = crit(model(x), y)
            losses.append(loss)
            loss.backward()
            opt.step()
            opt.zero_grad()
        return sum(losses) / len(losses)


    def main():
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]
        print(float(train(model, batches, opt)))
    """
)

CASES = {"resume": RESUME, "notebook": NOTEBOOK, "history": HISTORY}


def _unsafe_fixes(source: str):
    for finding in analyze_source(source, "case.py", LintSettings()).findings:
        for fix in fixes_for(source, finding):
            if fix.applicability is Applicability.UNSAFE:
                yield finding, fix


def _run(source: str, folder, monkeypatch) -> None:
    monkeypatch.chdir(folder)
    namespace: dict = {"__name__": "case"}
    exec(compile(source, "case.py", "exec"), namespace)  # noqa: S102 - our own test program
    namespace["main"]()


def test_every_case_is_offered_an_unsafe_fix():
    """The cases exercise what they are meant to: TW023 on two, TW001 on one."""
    offered = {
        name: sorted({f.code for f, _ in _unsafe_fixes(text)}) for name, text in CASES.items()
    }
    assert offered == {"resume": ["TW023"], "notebook": ["TW023"], "history": ["TW001"]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_unsafe_fix_compiles_re_analyses_clean_and_runs(name, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    source = CASES[name]
    for finding, fix in _unsafe_fixes(source):
        fixed = apply_edits(source, fix.edits)
        compile(fixed, "fixed.py", "exec")
        again = analyze_source(fixed, "case.py", LintSettings(select=(finding.code,))).findings
        assert [f for f in again if f.span.line == finding.span.line] == [], fix.title
        folder = tmp_path / f"{finding.code}-{finding.span.line}"
        folder.mkdir()
        torch.manual_seed(0)
        _run(fixed, folder, monkeypatch)  # raises on an UnpicklingError or AttributeError


NAMESPACE = RESUME.replace(
    '"epoch": epoch}', '"epoch": epoch, "args": argparse.Namespace(lr=0.1)}'
).replace("import torch\n", "import argparse\nimport torch\n", 1)


def test_a_refused_fix_would_have_broken_the_program(tmp_path, monkeypatch):
    """With an argparse Namespace in the checkpoint no fix is offered, and rightly so:
    the same edit made by hand makes the resume raise."""
    torch = pytest.importorskip("torch")
    (finding,) = analyze_source(NAMESPACE, "case.py", LintSettings(select=("TW023",))).findings
    assert fixes_for(NAMESPACE, finding) == ()
    by_hand = NAMESPACE.replace('map_location="cpu")', 'map_location="cpu", weights_only=True)')
    assert by_hand != NAMESPACE
    with pytest.raises(torch.serialization.pickle.UnpicklingError):
        _run(by_hand, tmp_path, monkeypatch)
