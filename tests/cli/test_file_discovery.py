"""Which files ``torchward check`` looks at: recursion, exclusions, .gitignore, virtualenvs."""

from __future__ import annotations

import os

import pytest

from torchward.config import load_config
from torchward.discovery import DEFAULT_EXCLUDE, discover
from torchward.patterns import PatternList, compile_pattern

from .projects import pyproject, write


def found(root, paths=(".",), exclude=DEFAULT_EXCLUDE) -> list[str]:
    return [f.path for f in discover(list(paths), PatternList.parse("", list(exclude)), str(root))]


def test_walks_recursively_and_only_takes_python_files(project):
    for name in ("a.py", "pkg/b.py", "pkg/deep/c.py", "notes.txt", "pkg/stub.pyi", "pkg/data.json"):
        write(project, name, "")
    assert found(project) == ["a.py", "pkg/b.py", "pkg/deep/c.py"]


def test_skips_version_control_build_cache_and_node_folders(project):
    for folder in (
        ".git",
        ".hg",
        "build",
        "dist",
        "__pycache__",
        "node_modules",
        ".tox",
        ".torchward_cache",
        "demo.egg-info",
        ".mypy_cache",
    ):
        write(project, f"{folder}/x.py", "")
    write(project, "keep.py", "")
    assert found(project) == ["keep.py"]


@pytest.mark.parametrize("name", [".venv", "venv", "env", "my-python"])
def test_skips_virtualenvs_by_name_or_by_pyvenv_cfg(project, name):
    write(project, f"{name}/lib/python3.11/site-packages/torch/x.py", "")
    write(project, f"{name}/pyvenv.cfg", "home = /usr/bin\n")
    write(project, "keep.py", "")
    assert found(project) == ["keep.py"]


def test_honours_gitignore_files_at_every_level(project):
    write(project, ".gitignore", "generated/\n*_pb2.py\n/top_only.py\n")
    write(project, "pkg/.gitignore", "local.py\n!keep_pb2.py\n")
    for name in (
        "generated/x.py",
        "api_pb2.py",
        "top_only.py",
        "pkg/top_only.py",
        "pkg/local.py",
        "pkg/keep_pb2.py",
        "pkg/other_pb2.py",
        "main.py",
    ):
        write(project, name, "")
    assert found(project) == ["main.py", "pkg/keep_pb2.py", "pkg/top_only.py"]


def test_gitignore_of_the_repository_applies_when_checking_a_subfolder(project):
    (project / ".git" / "info").mkdir(parents=True)
    (project / ".git" / "info" / "exclude").write_text("secret.py\n")
    write(project, ".gitignore", "sub/ignored/\n")
    for name in ("sub/ignored/x.py", "sub/secret.py", "sub/kept.py"):
        write(project, name, "")
    assert found(project, paths=("sub",)) == ["sub/kept.py"]


def configured(root) -> list[str]:
    config = load_config(str(root / "pyproject.toml"))
    return found(root, exclude=config.exclude + config.extend_exclude)


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(project):
    for name in ("build/gen.py", "fixtures/case.py", "main.py"):
        write(project, name, "")
    pyproject(project, 'exclude = ["fixtures/"]\n')
    assert configured(project) == ["build/gen.py", "main.py"]
    pyproject(project, 'extend-exclude = ["fixtures/"]\n')
    assert configured(project) == ["main.py"]


def test_exclude_patterns_are_relative_to_the_configuration(project, torchward):
    pyproject(project, 'extend-exclude = ["src/legacy/*.py", "*_old.py"]\n')
    for name in ("src/legacy/a.py", "src/legacy/deeper/b.py", "src/train_old.py", "src/train.py"):
        write(project, name, "")
    os.chdir(project / "src")
    outcome = torchward("check", "--no-cache")
    assert "in 2 files checked" in outcome.out  # legacy/deeper/b.py and train.py


def test_explicitly_named_files_are_always_checked(project):
    write(project, "build/gen.py", "")
    write(project, "script", "")
    assert found(project, paths=("build/gen.py", "script")) == ["build/gen.py", "script"]


def test_the_same_file_named_twice_is_checked_once(project):
    write(project, "a.py", "")
    assert found(project, paths=("a.py", ".", "./a.py")) == ["a.py"]


def test_paths_are_shown_as_given(project):
    write(project, "pkg/a.py", "")
    assert found(project, paths=("pkg",)) == ["pkg/a.py"]
    assert found(project, paths=(str(project / "pkg"),)) == [str(project / "pkg" / "a.py")]


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "matched"),
    [
        ("*.py", "a/b/c.py", False, True),
        ("/top.py", "top.py", False, True),
        ("/top.py", "a/top.py", False, False),
        ("build/", "a/build", True, True),
        ("build/", "a/build", False, False),
        ("a/**/z.py", "a/z.py", False, True),
        ("a/**/z.py", "a/b/c/z.py", False, True),
        ("**/cache", "x/y/cache", True, True),
        ("logs/**", "logs/a/b.py", False, True),
        ("data?.py", "data1.py", False, True),
        ("data[0-9].py", "datax.py", False, False),
        ("data[!0-9].py", "datax.py", False, True),
        ("\\#hash.py", "#hash.py", False, True),
    ],
)
def test_gitignore_patterns_match_like_git(pattern, path, is_dir, matched):
    compiled = compile_pattern(pattern)
    assert compiled is not None
    assert compiled.matches(path, is_dir) is matched


def test_comments_and_blank_lines_are_not_patterns():
    assert compile_pattern("# comment") is None
    assert compile_pattern("   ") is None
