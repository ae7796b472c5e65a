"""TW023 as a policy: the declared torch version decides, and the project's own checkpoints
are hints whose ``weights_only=True`` fix is offered only when their content is proven.

Each case builds a small project on disk (a ``.git`` folder marks its root) and checks
the exact finding: code, line, severity, message and where the evidence points.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.finding import Applicability, Proof, Severity
from torchward.analysis.fixes import fixes_for
from torchward.analysis.workspace import torchversion
from torchward.analysis.workspace.torchversion import lowest_torch

RESTORE = "import torch\ndef restore(model, path):\n    model.load_state_dict(torch.load(path))\n    model.eval()\n"
RESTORE_FALSE = (
    "import torch\ndef restore(model, path):\n"
    "    model.load_state_dict(torch.load(path, weights_only=False))\n    model.eval()\n"
)
TRUSTED = (
    "Load only trusted files: ones this project's own runs wrote, or that come from a source "
    "you control, never a download, a shared folder or a file someone sent"
)


@pytest.fixture(autouse=True)
def no_interpreter_torch(monkeypatch, tmp_path):
    """Only a torch installed inside the test's project counts: the suite's own
    environment has one, and the cases must not depend on it."""
    real = torchversion._site_folders
    monkeypatch.setattr(
        torchversion,
        "_site_folders",
        lambda root: [f for f in real(root) if f.startswith(str(tmp_path))],
    )


def _project(tmp_path, files: dict[str, str]) -> None:
    (tmp_path / ".git").mkdir(exist_ok=True)
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _check(tmp_path, source: str, name: str = "src/train.py"):
    script = tmp_path / name
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(source)
    return analyze_source(source, str(script), LintSettings(select=("TW023",))).findings


@pytest.mark.parametrize(
    "files, flagged",
    [
        ({"pyproject.toml": '[project]\ndependencies = ["torch>=2.6"]\n'}, False),
        ({"pyproject.toml": '[project]\ndependencies = ["torch>=2.1,<3"]\n'}, True),
        ({"pyproject.toml": '[project.optional-dependencies]\ngpu = ["torch>=2.7"]\n'}, False),
        (
            {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = "^2.6"\n'},
            False,
        ),
        ({"pyproject.toml": '[tool.poetry.dependencies]\ntorch = {version = ">=2.0"}\n'}, True),
        ({"setup.cfg": "[options]\ninstall_requires =\n    torch>=2.7\n"}, False),
        ({"setup.py": "import torch\nsetup(install_requires=['torch~=2.6.0'])\n"}, False),
        ({"requirements.txt": "numpy\ntorch==2.7.1\n"}, False),
        ({"requirements.txt": "torch\n"}, True),
        ({"requirements.txt": "torch>=2.6\n", "requirements-dev.txt": "torch>=1.13\n"}, True),
        ({"environment.yml": "dependencies:\n  - pytorch=2.1\n"}, True),
        ({"environment.yml": "dependencies:\n  - pytorch>=2.6\n"}, False),
        # the order: pyproject.toml is asked before requirements.txt
        (
            {
                "pyproject.toml": '[project]\ndependencies = ["torch>=2.6"]\n',
                "requirements.txt": "torch>=1.13\n",
            },
            False,
        ),
        # torchvision is not torch
        ({"requirements.txt": "torchvision>=0.21\n"}, True),
        ({}, True),
    ],
)
def test_an_implicit_load_is_flagged_only_when_torch_below_2_6_may_run(tmp_path, files, flagged):
    _project(tmp_path, files)
    assert len(_check(tmp_path, RESTORE)) == (1 if flagged else 0)


def test_on_torch_2_6_only_an_explicit_weights_only_false_is_a_finding(tmp_path):
    _project(
        tmp_path,
        {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["numpy", "torch>=2.6"]\n'},
    )
    (finding,) = _check(tmp_path, RESTORE_FALSE)
    assert (finding.code, finding.span.line, finding.severity) == ("TW023", 3, Severity.WARNING)
    assert finding.message == (
        "`torch.load` with `weights_only=False` or a `pickle_module` unpickles the file, and "
        f"unpickling runs any code the file carries. {TRUSTED}. For any other file, load with "
        "`weights_only=True` and allow-list the classes the checkpoint holds with "
        "`torch.serialization.add_safe_globals([...])`."
    )
    (evidence,) = finding.evidence
    assert evidence.path == str(tmp_path / "pyproject.toml")
    assert evidence.span.line == 3
    assert evidence.message == "the project requires `torch>=2.6` (pyproject.toml)"
    assert fixes_for(RESTORE_FALSE, finding) == ()


def test_below_2_6_the_message_names_the_cve_and_the_remedy(tmp_path):
    _project(tmp_path, {"requirements.txt": "numpy\ntorch>=2.1,<3\n"})
    (finding,) = _check(tmp_path, RESTORE)
    assert (finding.code, finding.span.line, finding.severity) == ("TW023", 3, Severity.WARNING)
    assert finding.message == (
        "`torch.load` without `weights_only=True` unpickles the file on torch < 2.6 "
        "(`torch>=2.1,<3` in requirements.txt admits torch < 2.6), and unpickling runs any code "
        "the file carries; before 2.6 even `weights_only=True` can be bypassed (CVE-2025-32434). "
        f"{TRUSTED}. For any other file, require `torch>=2.6` and load with `weights_only=True`."
    )
    (evidence,) = finding.evidence
    assert (evidence.path, evidence.span.line) == (str(tmp_path / "requirements.txt"), 2)
    # the file's content is unknown: no fix
    assert fixes_for(RESTORE, finding) == ()


def test_an_unknown_version_says_so(tmp_path):
    _project(tmp_path, {})
    (finding,) = _check(tmp_path, RESTORE)
    assert (
        "(no requirement of the project names torch and no installed torch was found)"
        in finding.message
    )
    assert finding.evidence == ()


@pytest.mark.parametrize("version, flagged", [("2.7.0", False), ("2.4.1+cu121", True)])
def test_a_plain_script_reads_the_installed_torch(tmp_path, version, flagged):
    info = tmp_path / ".venv/lib/python3.11/site-packages" / f"torch-{version}.dist-info"
    _project(
        tmp_path,
        {str(info.relative_to(tmp_path) / "METADATA"): f"Name: torch\nVersion: {version}\n"},
    )
    found = _check(tmp_path, RESTORE)
    assert len(found) == (1 if flagged else 0)
    if flagged:
        assert "(the installed torch is 2.4.1+cu121)" in found[0].message
        (evidence,) = found[0].evidence
        assert evidence.path == str(info / "METADATA")


SAVER = (
    "import torch\n"
    "def train(model, opt, loader, epochs):\n"
    "    for epoch in range(epochs):\n"
    "        for x in loader:\n"
    "            model(x).sum().backward()\n"
    "            opt.step()\n"
    "        torch.save({'model': model.state_dict(), 'optimizer': opt.state_dict(), 'epoch': epoch}, 'out/last.pth')\n"
)
LOADER = (
    "import torch\n"
    "def resume(model, opt, path):\n"
    "    ckpt = torch.load(path, map_location='cpu')\n"
    "    model.load_state_dict(ckpt['model'])\n"
    "    opt.load_state_dict(ckpt['optimizer'])\n"
    "    model.train()\n"
    "    return ckpt['epoch']\n"
)


def test_a_load_of_the_projects_own_checkpoint_is_a_hint(tmp_path):
    _project(tmp_path, {"requirements.txt": "torch>=2.0\n", "src/train.py": SAVER})
    (finding,) = _check(tmp_path, LOADER, "src/resume.py")
    assert (finding.code, finding.span.line, finding.severity) == ("TW023", 3, Severity.HINT)
    assert finding.message.endswith(
        " The project writes this file itself (`torch.save` in train.py:7): a deliberate load "
        "of its own checkpoint, reported as a hint."
    )
    _, written = finding.evidence
    assert written.path == str(tmp_path / "src/train.py")
    assert written.span.line == 7
    # the keys match, but the path does not: the content of *this* file is not proven
    assert Proof.TENSOR_CHECKPOINT not in finding.proofs
    assert fixes_for(LOADER, finding) == ()


def test_weights_only_is_offered_when_the_same_file_is_written_with_tensors_only(tmp_path):
    loader = LOADER.replace("torch.load(path,", "torch.load('out/last.pth',")
    _project(tmp_path, {"requirements.txt": "torch>=2.0\n", "src/train.py": SAVER})
    (finding,) = _check(tmp_path, loader, "src/resume.py")
    assert finding.severity is Severity.HINT
    assert Proof.TENSOR_CHECKPOINT in finding.proofs
    (fix,) = fixes_for(loader, finding)
    assert fix.applicability is Applicability.UNSAFE
    assert fix.edits[0].text == ", weights_only=True"


@pytest.mark.parametrize(
    "saved",
    [
        "{'model': model.state_dict(), 'args': args}",  # an argparse Namespace
        "model",  # a whole pickled model
        "{'model': model.state_dict(), 'mean': np.zeros(3)}",  # a NumPy array
        "{'model': model.state_dict(), 'epoch': epoch}",  # a parameter: its type is unknown
    ],
)
def test_no_fix_when_a_write_holds_more_than_tensors(tmp_path, saved):
    saver = (
        "import numpy as np\nimport torch\n"
        f"def keep(model, args, epoch):\n    torch.save({saved}, 'ckpt.pt')\n"
    )
    loader = "import torch\ndef restore(model):\n    model.load_state_dict(torch.load('runs/ckpt.pt')['model'])\n    model.eval()\n"
    _project(tmp_path, {"requirements.txt": "torch>=2.0\n", "src/keep.py": saver})
    (finding,) = _check(tmp_path, loader, "src/restore.py")
    assert finding.severity is Severity.HINT
    assert Proof.TENSOR_CHECKPOINT not in finding.proofs
    assert fixes_for(loader, finding) == ()


def test_a_write_elsewhere_with_other_keys_is_not_this_file(tmp_path):
    saver = "import torch\ndef keep(model):\n    torch.save({'weights': model.state_dict(), 'step': 1}, path)\n"
    _project(tmp_path, {"requirements.txt": "torch>=2.0\n", "src/keep.py": saver})
    (finding,) = _check(tmp_path, LOADER, "src/resume.py")
    assert finding.severity is Severity.WARNING
    assert len(finding.evidence) == 1  # only the version's


@pytest.mark.parametrize(
    "spec, lowest",
    [
        (">=2.6", (2, 6)),
        ("==2.7.1", (2, 7, 1)),
        ("~=2.6", (2, 6)),
        (">2.5", (2, 6)),
        ("<3", None),
        ("^2.6", (2, 6)),
        ("=2.1", (2, 1)),
        ("2.6.0", (2, 6, 0)),
        ("", None),
    ],
)
def test_lowest_admitted_version(spec, lowest):
    assert lowest_torch(spec) == lowest


def test_the_installed_torch_is_read_without_importing_it():
    code = (
        "import sys\n"
        "from torchward.analysis.workspace.torchversion import installed_torch\n"
        "found = installed_torch('/nonexistent')\n"
        "print(found is not None and found.installed, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    has_torch = importlib.util.find_spec("torch") is not None
    assert done.stdout.split() == [str(has_torch), "False"]


IMAGENET_STYLE = (
    "import shutil\nimport torch\n"
    "def save_checkpoint(state, is_best, filename='checkpoint.pth.tar'):\n"
    "    torch.save(state, filename)\n"
    "    if is_best:\n"
    "        shutil.copyfile(filename, 'model_best.pth.tar')\n"
    "def main(args, model, optimizer, loader):\n"
    "    if args.resume:\n"
    "        checkpoint = torch.load(args.resume)\n"
    "        args.start_epoch = checkpoint['epoch']\n"
    "        model.load_state_dict(checkpoint['state_dict'])\n"
    "        optimizer.load_state_dict(checkpoint['optimizer'])\n"
    "    for epoch in range(args.start_epoch, args.epochs):\n"
    "        for x, y in loader:\n"
    "            model(x).sum().backward()\n"
    "            optimizer.step()\n"
    "        save_checkpoint({'epoch': epoch + 1, 'arch': args.arch, 'state_dict': model.state_dict(),\n"
    "                         'optimizer': optimizer.state_dict()}, False)\n"
)


def test_a_checkpoint_saved_through_a_helper_is_the_projects_own(tmp_path):
    """The saved dict is built at the helper's call: its keys are what the resume reads."""
    _project(tmp_path, {"requirements.txt": "torch>=1.8\n"})
    (finding,) = _check(tmp_path, IMAGENET_STYLE)
    assert (finding.span.line, finding.severity) == (9, Severity.HINT)
    assert "(`torch.save` in this file:4)" in finding.message
    assert fixes_for(IMAGENET_STYLE, finding) == ()  # ``args.arch`` and a parameter: not proven


def test_a_file_name_held_in_a_constant_names_the_same_file(tmp_path):
    saver = (
        "import os\nimport torch\nWEIGHTS_NAME = 'pytorch_model.bin'\n"
        "def keep(model, out):\n"
        "    output_model_file = os.path.join(out, WEIGHTS_NAME)\n"
        "    torch.save(model.state_dict(), output_model_file)\n"
    )
    loader = (
        "import os\nimport torch\nfrom keep import WEIGHTS_NAME\n"
        "def best(model, out):\n"
        "    best_model_path = os.path.join(out, 'best', WEIGHTS_NAME)\n"
        "    model.load_state_dict(torch.load(best_model_path))\n"
        "    model.train()\n"
    )
    _project(tmp_path, {"requirements.txt": "torch>=1.8\n", "src/keep.py": saver})
    (finding,) = _check(tmp_path, loader, "src/best.py")
    assert (finding.span.line, finding.severity) == (6, Severity.HINT)
    assert Proof.TENSOR_CHECKPOINT in finding.proofs


def test_a_helper_parameter_never_proves_the_content(tmp_path):
    """Other modules may call ``keep`` with anything: only a hint, no fix."""
    source = (
        "import torch\n"
        "def keep(state, path='last.pt'):\n    torch.save(state, path)\n"
        "def run(model):\n    keep({'model': model.state_dict()})\n"
        "    model.load_state_dict(torch.load('last.pt')['model'])\n    model.train()\n"
    )
    _project(tmp_path, {"requirements.txt": "torch>=1.8\n"})
    (finding,) = _check(tmp_path, source)
    assert (finding.span.line, finding.severity) == (6, Severity.HINT)
    assert Proof.TENSOR_CHECKPOINT not in finding.proofs


def test_a_save_with_keyword_arguments_is_a_write(tmp_path):
    source = (
        "import torch\n"
        "def keep(model):\n    torch.save(obj={'model': model.state_dict()}, f='weights.pt')\n"
        "def restore(model):\n    model.load_state_dict(torch.load('weights.pt')['model'])\n    model.train()\n"
    )
    _project(tmp_path, {"requirements.txt": "torch>=1.8\n"})
    (finding,) = _check(tmp_path, source)
    assert (finding.span.line, finding.severity) == (5, Severity.HINT)
    assert Proof.TENSOR_CHECKPOINT in finding.proofs


def test_a_namespace_in_the_checkpoint_is_named_with_its_allow_list(tmp_path):
    source = (
        "import argparse\nimport torch\n"
        "def main():\n"
        "    args = argparse.ArgumentParser().parse_args()\n"
        "    model = torch.nn.Linear(2, 2)\n"
        "    keep(model, args)\n"
        "def keep(model, args):\n"
        "    torch.save({'model': model.state_dict(), 'args': args}, 'run.pt')\n"
        "def restore(model):\n"
        "    ckpt = torch.load('run.pt')\n"
        "    model.load_state_dict(ckpt['model'])\n    model.train()\n"
    )
    _project(tmp_path, {"requirements.txt": "torch>=1.8\n"})
    (finding,) = _check(tmp_path, source)
    assert (finding.span.line, finding.severity) == (10, Severity.HINT)
    assert (
        " The checkpoint holds `argparse.Namespace`: to load it with `weights_only=True`, allow-list "
        "it first with `torch.serialization.add_safe_globals([argparse.Namespace])`."
    ) in finding.message
    assert fixes_for(source, finding) == ()


def test_a_field_of_the_namespace_is_not_the_namespace(tmp_path):
    source = (
        "import argparse\nimport torch\n"
        "def main():\n"
        "    args = argparse.ArgumentParser().parse_args()\n"
        "    model = torch.nn.Linear(2, 2)\n"
        "    best = max(0.0, score(model, args))\n"
        "    torch.save({'model': model.state_dict(), 'arch': args.arch, 'best': best}, 'run.pt')\n"
        "def restore(model):\n"
        "    ckpt = torch.load('run.pt')\n"
        "    model.load_state_dict(ckpt['model'])\n    model.train()\n"
    )
    _project(tmp_path, {"requirements.txt": "torch>=1.8\n"})
    (finding,) = _check(tmp_path, source)
    assert finding.severity is Severity.HINT
    assert "add_safe_globals" not in finding.message  # a call's arguments are not its result


def _tw023_lines(source: str) -> list[int]:
    report = analyze_source(source, "resume.py", LintSettings(select=("TW023",)))
    return [f.span.line for f in report.findings if f.code == "TW023"]


def test_a_load_outside_training_code_is_read():
    """The calls are read from the whole module, not from the dataflow's training
    functions: a resume helper that names no training word, a method of a plain class,
    and an aliased import are all loads of a file whose origin is unknown."""
    source = (
        "import torch as th\n"
        "from torch import load as tload\n"
        "def resume(path):\n"
        "    return th.load(path)\n"
        "class Checkpoints:\n"
        "    def restore(self, path):\n"
        "        return tload(path, pickle_module=None)\n"
    )
    assert _tw023_lines(source) == [4, 7]


def test_a_local_function_called_load_is_not_torch_load():
    source = (
        "import torch\ndef load(path):\n    return {}\ndef resume(path):\n    return load(path)\n"
    )
    assert _tw023_lines(source) == []
