"""The pre-commit hook, run exactly as the README documents it, fails on a bad file.

The README's ``repo: local`` configuration is taken from the README itself (so the
documentation cannot drift from what is tested) and run by the real ``pre-commit`` in a
fresh git repository; it needs no network, unlike a remote ``repo:`` that pre-commit
would clone and install. The published ``.pre-commit-hooks.yaml`` is checked to define
the same hook (id, entry, file types), so the remote form runs the same command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .projects import TRAIN_LOOP

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")


def readme_local_config() -> str:
    blocks = re.findall(
        r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S
    )
    return next(block for block in blocks if "repo: local" in block)


def run_pre_commit(repo: Path) -> subprocess.CompletedProcess:
    bin_dir = os.path.dirname(sys.executable)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def make_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".pre-commit-config.yaml").write_text(readme_local_config(), encoding="utf-8")
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    return repo


def test_the_documented_hook_fails_on_a_file_with_a_finding(tmp_path):
    result = run_pre_commit(make_repo(tmp_path, {"train.py": TRAIN_LOOP}))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "TW001" in result.stdout


def test_the_documented_hook_passes_on_clean_code(tmp_path):
    result = run_pre_commit(make_repo(tmp_path, {"clean.py": "def add(a, b):\n    return a + b\n"}))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_published_hook_runs_the_same_command_as_the_documented_one():
    published = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    local = readme_local_config()
    for line in ("id: torchward", "entry: torchward check", "types_or: [python, jupyter]"):
        assert line in published and line in local
