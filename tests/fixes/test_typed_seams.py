"""The seams between findings and fixes carry typed facts, never message text (issue 29).

A relocated finding (reported at a call for code in another module) is known by its
``origin``, not by the wording of its evidence; both survive the JSON round trip a
finding makes through the cache and an LSP diagnostic's ``data``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import attrs
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.finding import Evidence, Finding
from torchward.analysis.fixes import fixes_for

CROSSFILE = Path(__file__).parents[1] / "analysis" / "fixtures" / "crossfile" / "project"
STEP_WITHOUT_RESET = (
    "import torch\n"
    "def train(model, loader, crit):\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n"
    "        crit(model(x), y).backward()\n"
    "        opt.step()\n"
)


def _only(source: str, code: str, path: str = "x.py") -> Finding:
    (finding,) = [
        f
        for f in analyze_source(source, path, LintSettings(notes_per_file=None)).findings
        if f.code == code
    ]
    return finding


def test_a_relocated_finding_names_the_module_it_is_in_and_keeps_it_through_json(tmp_path):
    shutil.copytree(CROSSFILE, tmp_path / "project")
    train = tmp_path / "project" / "train.py"
    source = train.read_text()
    finding = _only(source, "TW005", str(train))
    assert finding.origin == str(tmp_path / "project" / "helpers.py")
    carried = Finding.from_dict(finding.to_dict())
    assert carried == finding
    reworded = attrs.evolve(
        carried, evidence=tuple(Evidence(e.span, "elsewhere", e.path) for e in carried.evidence)
    )
    assert fixes_for(source, reworded) == ()  # the wording changed, the fact did not


def test_a_local_finding_whose_evidence_reads_like_a_relocation_keeps_its_fix():
    finding = _only(STEP_WITHOUT_RESET, "TW003")
    assert finding.origin is None
    first = finding.evidence[0]
    worded = attrs.evolve(
        finding,
        evidence=(Evidence(first.span, "the finding is here, in the called code"),),
    )
    assert fixes_for(STEP_WITHOUT_RESET, worded)
