"""Cached results equal ``--no-cache`` results after any file a result read is edited.

Checking a file may read others: TW010's script reader follows ``json.load(open(
"cfg.json"))``, argument defaults declared in a sibling module and a local checkpoint's
``config.json``; TW023 reads the nearest requirement file (``pyproject.toml`` among them,
which is also the configuration, part of the cache key). The project below has one
script per kind of read. Every edit of the pool changes, creates or deletes one of those
files; after each, a cached run must print exactly what a ``--no-cache`` run prints.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchward import runner
from torchward.cli import main

PROJECT = {
    "pyproject.toml": "[project]\nname = 'demo'\n\n[tool.torchward]\ntarget-gpu = \"t4\"\n",
    # a config file read with json.load(open(...))
    "train.py": textwrap.dedent(
        """\
        import json

        from transformers import AutoModelForCausalLM, TrainingArguments

        config = json.load(open("cfg.json"))
        model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
        training = TrainingArguments(
            per_device_train_batch_size=config["batch_size"],
            max_seq_length=config["max_seq_length"],
            bf16=True,
        )
        """
    ),
    "cfg.json": '{"batch_size": 8, "max_seq_length": 2048}\n',
    # flags declared in a sibling module
    "finetune.py": textwrap.dedent(
        """\
        from transformers import AutoModelForCausalLM, TrainingArguments

        from options import get_args

        args = get_args()
        model = AutoModelForCausalLM.from_pretrained("gpt2")
        training = TrainingArguments(per_device_train_batch_size=args.batch_size, max_seq_length=1024)
        """
    ),
    "options.py": textwrap.dedent(
        """\
        import argparse


        def get_args():
            parser = argparse.ArgumentParser()
            parser.add_argument("--batch_size", type=int, default=8)
            return parser.parse_args()
        """
    ),
    # a local checkpoint folder, sized by its config.json (absent at first)
    "local.py": textwrap.dedent(
        """\
        from transformers import AutoModelForCausalLM, TrainingArguments

        model = AutoModelForCausalLM.from_pretrained("./ckpt")
        training = TrainingArguments(per_device_train_batch_size=64, max_seq_length=1024)
        """
    ),
    # TW023 asks the nearest requirement file which torch it admits
    "restore.py": textwrap.dedent(
        """\
        import torch


        def restore(model, path):
            model.load_state_dict(torch.load(path))
            model.eval()
        """
    ),
    "requirements.txt": "torch>=2.0\n",
}

GPT2_CONFIG = {
    "model_type": "gpt2",
    "n_layer": 12,
    "n_embd": 768,
    "n_head": 12,
    "vocab_size": 50257,
    "n_positions": 1024,
}


def _write(root: Path, name: str, text: str | None) -> None:
    path = root / name
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _options(default: int) -> str:
    return PROJECT["options.py"].replace("default=8", f"default={default}")


# name -> (file, new text or None to delete); the files are the ones the scripts read
EDITS: dict[str, tuple[str, str | None]] = {
    "cfg_small": ("cfg.json", '{"batch_size": 1, "max_seq_length": 128}\n'),
    "cfg_large": ("cfg.json", '{"batch_size": 64, "max_seq_length": 4096}\n'),
    "cfg_broken": ("cfg.json", '{"batch_size": '),
    "cfg_deleted": ("cfg.json", None),
    "options_one": ("options.py", _options(1)),
    "options_large": ("options.py", _options(512)),
    "options_deleted": ("options.py", None),
    "ckpt_created": ("ckpt/config.json", json.dumps(GPT2_CONFIG)),
    "ckpt_deeper": ("ckpt/config.json", json.dumps({**GPT2_CONFIG, "n_layer": 48})),
    "ckpt_deleted": ("ckpt/config.json", None),
    "requirements_new_torch": ("requirements.txt", "torch>=2.6\n"),
    "requirements_old_torch": ("requirements.txt", "torch==1.13\n"),
    "requirements_deleted": ("requirements.txt", None),
    # the configuration: part of the cache key, and a requirement file TW023 reads
    "pyproject_big_gpu": (
        "pyproject.toml",
        PROJECT["pyproject.toml"].replace('"t4"', '"8xh200"'),
    ),
    "pyproject_estimate_table": (
        "pyproject.toml",
        PROJECT["pyproject.toml"] + "\n[tool.torchward.estimate]\nseq-len = 64\n",
    ),
    "pyproject_requires_new_torch": (
        "pyproject.toml",
        PROJECT["pyproject.toml"].replace(
            "name = 'demo'", "name = 'demo'\ndependencies = ['torch>=2.6']"
        ),
    ),
}


# edits that change nothing from the project as written: run after one that does
AFTER = {
    "ckpt_deleted": "ckpt_created",
    "ckpt_deeper": "ckpt_created",
    "requirements_old_torch": "requirements_new_torch",
}


def _run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(["check", ".", "--format", "json", *args])
    return status, out.getvalue()


@contextlib.contextmanager
def _project() -> Path:
    """A fresh copy of the project as the working directory (hypothesis needs one per example)."""
    previous = os.getcwd()
    saved = os.environ.pop("TORCHWARD_CACHE_DIR", None)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, text in PROJECT.items():
            _write(root, name, text)
        os.chdir(root)
        try:
            yield root
        finally:
            os.chdir(previous)
            if saved is not None:
                os.environ["TORCHWARD_CACHE_DIR"] = saved


def _cached_equals_uncached(root: Path, edits: list[str]) -> list[tuple[int, str]]:
    """Apply ``edits`` one by one; after each, the cached run must equal a fresh one."""
    outputs = [_run()]
    for name in edits:
        _write(root, *EDITS[name])
        cached, fresh = _run(), _run("--no-cache")
        assert cached == fresh, f"stale cached result after {name}"
        outputs.append(fresh)
    return outputs


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_each_edit_of_a_file_a_result_read_reaches_the_cached_run(edit):
    with _project() as root:
        edits = [AFTER[edit], edit] if edit in AFTER else [edit]
        outputs = _cached_equals_uncached(root, edits)
        # the edit matters (or the comparison proves nothing): the report changed
        assert outputs[-2] != outputs[-1], f"{edit} did not change the report"


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.sampled_from(sorted(EDITS)), min_size=2, max_size=4))
def test_any_sequence_of_edits_keeps_the_cache_honest(edits):
    with _project() as root:
        _cached_equals_uncached(root, edits)


def test_an_unread_file_does_not_invalidate(analysed):
    """Recording is precise: editing a file no result read re-analyses nothing."""
    with _project() as root:
        _run()
        analysed.clear()
        _write(root, "notes.txt", "not read by anything\n")
        _run()
        assert analysed == []
        _write(root, *EDITS["requirements_new_torch"])
        _run()
        assert analysed == ["restore.py"]  # only the script whose result read it


def test_without_the_recorded_reads_the_cache_would_be_stale(monkeypatch):
    """The property can fail: a cache that ignores what results read serves stale ones."""
    ignore: Callable[..., bool] = lambda data, seen: True  # noqa: E731
    monkeypatch.setattr(runner, "reads_still_hold", ignore)
    with _project() as root:
        _run()
        _write(root, *EDITS["requirements_new_torch"])
        assert _run() != _run("--no-cache")
