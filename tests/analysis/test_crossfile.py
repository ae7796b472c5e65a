"""Cross-file analysis: a program split over four modules is analysed as one program.

``fixtures/crossfile/project`` holds a model (``models.py``), data loading (``data.py``),
a training step and an evaluation pass (``helpers.py``) and the script that ties them
together (``train.py``); ``fixtures/crossfile/single/train_all.py`` is the same program in
one file (``project2`` / ``single2``: a second program, with other bugs). Every rule must find the same bugs in both, modulo file and line: a finding
inside a helper that only the script's values reveal (the model's ``forward`` ends in
softmax, the loss is cross-entropy) is reported in the script at the call, and a value
built in another module (a loader without a ``DistributedSampler``) is reported at the
call that brought it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.finding import Applicability
from torchward.analysis.fixes import fixes_for
from torchward.analysis.workspace import WORKSPACE

FIXTURES = Path(__file__).parent / "fixtures" / "crossfile"
ALL = LintSettings(notes_per_file=None)
_RELOCATED = re.compile(r"^in `[\w.]+`, as called here: ")


def _check(folder: Path) -> list:
    findings = []
    for path in sorted(folder.glob("*.py")):
        report = analyze_source(path.read_text(), str(path), ALL)
        assert not report.problems, report.problems
        findings.extend(report.findings)
    return findings


def _bugs(findings) -> dict[tuple, tuple]:
    """What the findings say, without where: by rule and message, the most severe
    severity and confidence given (a helper analysed alone may add a note for a bug the
    caller's values prove: that is the same bug)."""
    found: dict[tuple, tuple] = {}
    for finding in findings:
        message = _RELOCATED.sub("", finding.message)
        message = re.sub(r"\bline \d+\b", "line N", message)
        rank = (finding.severity.rank, finding.confidence.value != "low")
        key = (finding.code, message)
        found[key] = max(found.get(key, rank), rank)
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The fixtures in a temporary folder (what rules read around them is the same)."""
    for name in ("single", "project", "single2", "project2"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
    return tmp_path


@pytest.fixture
def project(workspace: Path) -> Path:
    return workspace / "project"


# (single-file version, split version, rules that do not follow the split yet)
PAIRS = [
    ("single", "project", set()),
    ("single2", "project2", set()),
]


@pytest.mark.parametrize(("single", "split", "gaps"), PAIRS)
def test_the_split_program_has_the_bugs_of_the_single_file_program(
    workspace: Path, single: str, split: str, gaps: set[str]
):
    alone = _bugs(_check(workspace / single))
    expected = {key: rank for key, rank in alone.items() if key[0] not in gaps}
    assert _bugs(_check(workspace / split)) == expected
    assert {code for code, _ in alone} >= gaps  # a gap closed: take it off the list


def test_the_fixtures_exercise_the_rules_that_cross_files(workspace: Path):
    codes = {code for name in ("single", "single2") for code, _ in _bugs(_check(workspace / name))}
    assert {"TW001", "TW002", "TW003", "TW005", "TW006", "TW011", "TW012", "TW018"} <= codes


def test_findings_lie_in_the_file_they_are_reported_in(project: Path):
    """Spans are the reporting file's; evidence in another module names its path."""
    for finding in _check(project):
        path = Path(finding.path)
        lines = path.read_text().splitlines()
        assert finding.span.line <= len(lines), finding
        for item in finding.evidence:
            where = Path(item.path) if item.path else path
            assert where.exists(), item
            assert item.span.line <= len(where.read_text().splitlines()), item


def test_a_helper_bug_is_reported_at_the_call_without_a_fix(project: Path):
    train = project / "train.py"
    source = train.read_text()
    report = analyze_source(source, str(train), ALL)
    softmax = [f for f in report.findings if f.code == "TW005"]
    assert len(softmax) == 1
    finding = softmax[0]
    assert source.splitlines()[finding.span.line - 1].strip().startswith("loss = train_step(")
    assert finding.evidence[0].path == str(project / "helpers.py")
    # the softmax itself is in models.py: named by the evidence of the model the call passes
    assert any("(in models.py:17)" in item.message for item in finding.evidence)
    assert fixes_for(source, finding) == ()  # the code to change is in another file


def test_editing_the_helper_changes_the_script_findings(project: Path):
    train, helpers = project / "train.py", project / "helpers.py"
    before = {f.code for f in analyze_source(train.read_text(), str(train), ALL).findings}
    assert "TW003" in before
    helpers.write_text(
        helpers.read_text().replace(
            "    loss.backward()\n", "    optimizer.zero_grad()\n    loss.backward()\n"
        )
    )
    after = {f.code for f in analyze_source(train.read_text(), str(train), ALL).findings}
    assert "TW003" not in after
    assert WORKSPACE.reads(str(train)) >= {str(helpers), str(project / "models.py")}


def test_without_the_project_the_script_sees_nothing_of_its_helpers(project: Path):
    """The same text as an unsaved document without a path links nothing."""
    source = (project / "train.py").read_text()
    codes = {f.code for f in analyze_source(source, "<untitled>", ALL).findings}
    assert "TW005" not in codes and "TW003" not in codes


def test_a_sampler_built_in_a_helper_module_is_paired_with_the_epoch_loop(workspace: Path):
    """TW021: the DistributedSampler is built in data.py's helper, the epoch loop is
    train.py's; reported where the single-file version reports it (the iterated loader),
    the construction named in data.py, the call that brought the loader as evidence."""
    project = workspace / "project2"
    train = project / "train.py"
    source = train.read_text()
    found = [f for f in analyze_source(source, str(train), ALL).findings if f.code == "TW021"]
    assert len(found) == 1
    finding = found[0]
    assert (
        source.splitlines()[finding.span.line - 1].strip() == "for inputs, targets in train_loader:"
    )
    sampler, epoch_loop = finding.evidence[0], finding.evidence[1]
    assert sampler.path == str(project / "data.py")
    data_line = (project / "data.py").read_text().splitlines()[sampler.span.line - 1]
    assert "DistributedSampler(dataset)" in data_line
    assert source.splitlines()[epoch_loop.span.line - 1].strip() == "for epoch in range(20):"
    brought = finding.evidence[-1]
    assert brought.path is None and "(in data.py:8)" in brought.message
    assert source.splitlines()[brought.span.line - 1].strip().startswith("train_loader = sharded_")
    # the fix edits train.py only; that the sampler is distributed on every path is
    # written in data.py, which the fixer cannot read: unsafe, never safe
    (fix,) = fixes_for(source, finding)
    assert fix.applicability is Applicability.UNSAFE
    assert [edit.text.strip() for edit in fix.edits] == ["train_loader.sampler.set_epoch(epoch)"]


@pytest.mark.parametrize(
    ("where", "old", "new"),
    [
        # the script sets the epoch on the loader's sampler
        (
            "train.py",
            "        for inputs, targets in train_loader:\n",
            "        train_loader.sampler.set_epoch(epoch)\n"
            "        for inputs, targets in train_loader:\n",
        ),
        # the helper module returns the sampler too, and the script sets its epoch
        (
            "data.py",
            "    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset))\n",
            "    sampler = DistributedSampler(dataset)\n"
            "    return DataLoader(dataset, batch_size=batch_size, sampler=sampler), sampler\n",
        ),
        # a helper of data.py the script calls every epoch sets it
        (
            "data.py",
            "def sharded_loader(",
            "def new_epoch(loader, epoch):\n    loader.sampler.set_epoch(epoch)\n\n\n"
            "def sharded_loader(",
        ),
        # the sampler does not shuffle: the order is meant to be fixed
        ("data.py", "DistributedSampler(dataset)", "DistributedSampler(dataset, shuffle=False)"),
    ],
)
def test_a_sampler_built_in_a_helper_module_with_its_epoch_set_is_quiet(
    workspace: Path, where: str, old: str, new: str
):
    project = workspace / "project2"
    train = project / "train.py"
    before = {f.code for f in analyze_source(train.read_text(), str(train), ALL).findings}
    assert "TW021" in before
    path = project / where
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new))
    if where == "data.py" and "new_epoch" in new:
        train.write_text(
            train.read_text()
            .replace("import sharded_loader", "import new_epoch, sharded_loader")
            .replace(
                "        for inputs, targets in train_loader:\n",
                "        new_epoch(train_loader, epoch)\n        for inputs, targets in train_loader:\n",
            )
        )
    elif "sampler\n" in new:
        train.write_text(
            train.read_text()
            .replace(
                "    train_loader = sharded_loader(train_set)\n",
                "    train_loader, sampler = sharded_loader(train_set)\n",
            )
            .replace(
                "    val_loader = sharded_loader(val_set, batch_size=128)\n",
                "    val_loader, _ = sharded_loader(val_set, batch_size=128)\n",
            )
            .replace(
                "        for inputs, targets in train_loader:\n",
                "        sampler.set_epoch(epoch)\n        for inputs, targets in train_loader:\n",
            )
        )
    after = {f.code for f in analyze_source(train.read_text(), str(train), ALL).findings}
    assert after == before - {"TW021"}  # the rest of the program is still seen
