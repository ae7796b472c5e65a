"""The estimator's script reader finds the project's model class through imports and keys.

Issue 12: a script-defined model is often defined in another module of the project and
chosen by a key (an argparse default). Each project below builds ``Wide`` (two linear
layers, 10·64 + 64 + 64·5 + 5 = 1,029 parameters) in a different way; the reader must
name the class and count its parameters from the module that defines it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from torchward.analysis.job.runconfig import read_script

WIDE_PARAMS = 10 * 64 + 64 + 64 * 5 + 5
NETS = """\
import torch.nn as nn


class Narrow(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 5)


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 64)
        self.fc2 = nn.Linear(64, 5)
"""
ARGS = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="wide")
args = parser.parse_args()
"""
LOOP = """\
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    model(x).sum().backward()
    optimizer.step()
"""

PROJECTS = {
    "star import": {
        "models.py": NETS,
        "train.py": "import torch\nfrom models import *\nmodel = Wide()\n" + LOOP,
    },
    "package re-export": {
        "models/__init__.py": "from .nets import Wide, Narrow\n",
        "models/nets.py": NETS,
        "train.py": "import torch\nfrom models import Wide\nmodel = Wide()\n" + LOOP,
    },
    "module attribute": {
        "models.py": NETS,
        "train.py": "import torch\nimport models\nmodel = models.Wide()\n" + LOOP,
    },
    "registry in the script": {
        "models.py": NETS,
        "train.py": ARGS
        + "from models import Narrow, Wide\n"
        + 'MODELS = {"narrow": Narrow, "wide": Wide}\n'
        + "model = MODELS[args.arch]()\n"
        + LOOP,
    },
    "imported registry": {
        "models.py": NETS + '\nMODELS = {"narrow": Narrow, "wide": Wide}\n',
        "train.py": ARGS + "from models import MODELS\nmodel = MODELS[args.arch]()\n" + LOOP,
    },
    "decorator registry": {
        "models/__init__.py": "from .nets import *\nfrom .registry import create_model\n",
        "models/registry.py": textwrap.dedent(
            """\
            _MODELS = {}


            def register_model(name):
                def add(cls):
                    _MODELS[name] = cls
                    return cls
                return add


            def create_model(name, **kwargs):
                return _MODELS[name](**kwargs)
            """
        ),
        "models/nets.py": NETS.replace(
            "import torch.nn as nn\n",
            "import torch.nn as nn\nfrom .registry import register_model\n",
        )
        .replace("class Narrow", '@register_model("narrow")\nclass Narrow')
        .replace("class Wide", '@register_model("wide")\nclass Wide'),
        "train.py": ARGS
        + "from models import create_model\nmodel = create_model(args.arch)\n"
        + LOOP,
    },
    "module __dict__": {
        "models.py": NETS,
        "train.py": ARGS.replace('"wide"', '"Wide"')
        + "import models\nmodel = models.__dict__[args.arch]()\n"
        + LOOP,
    },
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "train.py"


@pytest.mark.parametrize("kind", sorted(PROJECTS))
def test_the_model_class_is_found_and_counted(kind, tmp_path):
    script = _write(tmp_path, PROJECTS[kind])
    config, _ = read_script(str(script))
    assert config.model is not None and config.model.value == "Wide", kind
    assert config.params is not None and config.params.value == WIDE_PARAMS, kind


def test_a_key_naming_no_registered_class_resolves_nothing(tmp_path):
    files = dict(PROJECTS["imported registry"])
    files["train.py"] = files["train.py"].replace('default="wide"', 'default="deep"')
    config, _ = read_script(str(_write(tmp_path, files)))
    assert config.params is None or config.params.value != WIDE_PARAMS
