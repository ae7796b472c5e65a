"""``--fix`` writes into the user's file: links, mode and owner survive; refusals are reported.

Each test fixes a real file in a temporary project through the in-process CLI and looks
at the file system afterwards (inode, link count, mode bits, owner), because a fix that
replaces a file by a new one looks identical when only its text is compared.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess

import pytest

from .projects import write

NO_RESET = (
    "import torch\ndef train(model, loader, crit):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n        crit(model(x), y).backward()\n        opt.step()\n"
)  # an optimizer built here: its reset is a proven-safe fix
FIXED = "opt.zero_grad(set_to_none=True)"


def test_fix_writes_through_a_symlink_into_its_target(project, torchward):
    target = write(project, "real/train.py", NO_RESET)
    link = project / "train.py"
    link.symlink_to(target)
    outcome = torchward("check", "--no-cache", "--fix", "train.py")
    assert outcome.status == 0, outcome.err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert FIXED in target.read_text()


def test_fix_keeps_hard_links_mode_and_inode(project, torchward):
    path = write(project, "train.py", NO_RESET)
    other = project / "alias.py"
    os.link(path, other)
    path.chmod(0o640)
    inode = path.stat().st_ino
    outcome = torchward("check", "--no-cache", "--fix", "train.py")
    assert outcome.status == 0, outcome.err
    assert path.stat().st_ino == inode and path.stat().st_nlink == 2
    assert FIXED in other.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_fix_keeps_the_owner(project, torchward):
    path = write(project, "train.py", NO_RESET)
    os.chown(path, 4321, 4322)
    assert torchward("check", "--no-cache", "--fix", "train.py").status == 0
    assert (path.stat().st_uid, path.stat().st_gid) == (4321, 4322)
    assert FIXED in path.read_text()


def test_a_read_only_file_is_refused_with_its_reason_and_the_rest_is_fixed(project, torchward):
    locked = write(project, "locked.py", NO_RESET)
    free = write(project, "free.py", NO_RESET)
    locked.chmod(0o444)
    outcome = torchward("check", "--no-cache", "--fix", "locked.py", "free.py")
    assert locked.read_text() == NO_RESET
    assert FIXED in free.read_text()
    assert "locked.py: not written: the file is read-only" in outcome.err
    assert "1 file could not be written; files changed: free.py." in outcome.err
    assert outcome.status == 1


@contextlib.contextmanager
def read_only_folder(folder):
    """``folder`` made read-only for this process (root ignores mode bits: chattr +i)."""
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
        undo = ["chattr", "-i", str(folder)]
    else:
        folder.chmod(0o555)
        made, undo = True, None
    try:
        probe = folder / ".probe"
        try:
            probe.touch()
        except OSError:
            pass
        else:
            probe.unlink()
            made = False
        if not made:
            pytest.skip("cannot make a read-only folder here")
        yield
    finally:
        if undo:
            subprocess.run(undo, check=False)
        else:
            folder.chmod(0o755)


def test_a_writable_file_in_a_read_only_folder_is_fixed_in_place(project, torchward):
    path = write(project, "sub/train.py", NO_RESET)
    with read_only_folder(path.parent):
        outcome = torchward("check", "--no-cache", "--fix", "sub/train.py")
    assert "Traceback" not in outcome.err and "internal error" not in outcome.err
    assert FIXED in path.read_text()
    assert outcome.status == 0, outcome.err
    assert sorted(p.name for p in path.parent.iterdir()) == ["train.py"]


def test_fix_only_exits_1_when_a_file_could_not_be_written(project, torchward):
    locked = write(project, "locked.py", NO_RESET)
    locked.chmod(0o444)
    outcome = torchward("check", "--no-cache", "--fix-only", "locked.py")
    assert outcome.status == 1
    assert "files changed: none" in outcome.err
