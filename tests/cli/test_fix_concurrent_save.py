"""A save that lands while ``--fix`` works on a file is never lost.

The real ``check --fix`` path runs in process on a real file; the save is injected
where it can happen in life, after the file was read and its fix computed, before the
write: the fixer (``torchward.fixing.fix_source``) is wrapped to save the user's text
right after it returns. The save is done in place (same inode) or as editors do, by
writing a new file and renaming it over the old one. Either way the user's text is on
disk afterwards, the file is reported as not written, and ``check`` exits 1.
"""

from __future__ import annotations

import os

import pytest

from torchward import fixing

from .projects import write

NO_RESET = (
    "import torch\ndef train(model, loader, crit):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n"
)  # an optimizer built here: its reset is a proven-safe fix
SAVED = NO_RESET + "# the user's save\n"


def save_in_place(path) -> None:
    with open(path, "r+b") as handle:
        handle.write(SAVED.encode())


def save_by_rename(path) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(SAVED)
    os.replace(temporary, path)


@pytest.mark.parametrize("save", [save_in_place, save_by_rename])
def test_a_save_between_the_read_and_the_write_is_kept(project, torchward, monkeypatch, save):
    path = write(project, "train.py", NO_RESET)
    other = write(project, "other.py", NO_RESET)
    fix_source = fixing.fix_source
    saved = []

    def fix_then_save(text, name, *args, **kwargs):
        outcome = fix_source(text, name, *args, **kwargs)
        if name.endswith("train.py") and not saved:
            save(path)
            saved.append(name)
        return outcome

    monkeypatch.setattr(fixing, "fix_source", fix_then_save)
    outcome = torchward("check", "--no-cache", "--fix", "train.py", "other.py")
    assert saved, "the save was not injected"
    assert path.read_text() == SAVED
    assert "opt.zero_grad(set_to_none=True)" in other.read_text()  # the rest is fixed
    assert "train.py: not written: the file changed while it was being fixed" in outcome.err
    assert "files changed: other.py." in outcome.err
    assert outcome.status == 1


def test_a_save_by_rename_during_the_write_is_kept_and_the_fix_reported_unwritten(
    project, torchward, monkeypatch
):
    """The editor's rename lands while the fix is being written into the old file: the
    user's file stands, and the run must not claim the fix was applied."""
    path = write(project, "train.py", NO_RESET)
    fsync = os.fsync
    saved = []

    def fsync_then_save(descriptor):
        fsync(descriptor)
        if not saved:
            save_by_rename(path)
            saved.append(descriptor)

    monkeypatch.setattr(os, "fsync", fsync_then_save)
    outcome = torchward("check", "--no-cache", "--fix", "train.py")
    assert saved, "the save was not injected"
    assert path.read_text() == SAVED
    assert "train.py: not written: the file changed while it was being fixed" in outcome.err
    assert "Fixed" not in outcome.err and outcome.status == 1
