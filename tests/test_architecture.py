"""The layering of ARCHITECTURE.md, enforced: dependencies point down, and torch is never loaded.

Two independent checks, because each misses what the other sees: reading the import
statements of every source file with ``ast`` (catches an import on a code path the
tests do not run) and importing the packages in a fresh interpreter and looking at
``sys.modules`` (catches an import that arrives indirectly, through a dependency).
Then the promise users rely on: checking a file never imports or executes it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGES = {
    "analysis": "torchward.analysis",
    "estimator": "torchward.estimator",
    "server": "torchward.server",
}
FACE = (
    "torchward.cli",
    "torchward.commands",
    "torchward.reporters",
    "torchward.runner",
    "torchward.cache",
    "torchward.discovery",
    "torchward.docs",
)
# package -> module prefixes it must never import, anywhere in its source
FORBIDDEN = {
    "analysis": ("torchward.server", "pygls", "lsprotocol", *FACE),
    "estimator": (
        "torchward.server",
        "torchward.analysis",
        "pygls",
        "lsprotocol",
        "libcst",
        "ast",
        *FACE,
    ),
    "server": (),
}


def source_files(folder: str) -> list[Path]:
    return sorted((REPOSITORY / folder).rglob("*.py"))


def module_name(folder: str, path: Path) -> str:
    parts = list(path.relative_to(REPOSITORY / folder).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGES[folder], *parts])


def imports(folder: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import in the file, relative ones resolved."""
    package = module_name(folder, path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    return imports_of(path.read_text(encoding="utf-8"), package)


def imports_of(source: str, package: str) -> list[tuple[str, int, bool]]:
    tree = ast.parse(source)
    top_level = {id(node) for node in _module_level_statements(tree.body)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = (
                [f"{target}.{alias.name}" for alias in node.names]
                if not node.module or node.level
                else []
            )
            found += [(name, node.lineno, id(node) in top_level) for name in [target, *names]]
    return found


def _module_level_statements(body):
    """Statements that run on import: the module body and the bodies of its if/try/with blocks."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            for field in ("body", "orelse", "finalbody"):
                yield from _module_level_statements(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                yield from _module_level_statements(handler.body)


def is_within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_dependencies_point_down(folder):
    violations = [
        f"{path.relative_to(REPOSITORY)}:{line}: imports {module}"
        for path in source_files(folder)
        for module, line, _ in imports(folder, path)
        if any(is_within(module, prefix) for prefix in FORBIDDEN[folder])
    ]
    assert violations == []


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_nothing_imports_torch_at_module_level(folder):
    violations = [
        f"{path.relative_to(REPOSITORY)}:{line}: imports {module} at module level"
        for path in source_files(folder)
        for module, line, top in imports(folder, path)
        if top and is_within(module, "torch")
    ]
    assert violations == []


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_every_parse_takes_the_parse_lock(folder):
    """CPython 3.11 fails two concurrent ``ast.parse`` calls with a SystemError now and
    then (the server parses in several threads): only ``analysis/syntax/parsing.py`` calls it."""
    violations = [
        f"{path.relative_to(REPOSITORY)}:{node.lineno}: calls ast.parse directly"
        for path in source_files(folder)
        if path != REPOSITORY / "analysis" / "syntax" / "parsing.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "parse"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "ast"
    ]
    assert violations == []


def test_the_import_check_resolves_relative_imports_and_knows_module_level():
    source = textwrap.dedent(
        """
        from ..server import hover
        from . import facts
        try:
            import torch
        except ImportError:
            torch = None

        def lazy():
            import torch.nn
        """
    )
    found = imports_of(source, "torchward.analysis")
    assert ("torchward.server", 2, True) in found and ("torchward.server.hover", 2, True) in found
    assert ("torchward.analysis.facts", 3, True) in found
    assert ("torch", 5, True) in found and ("torch.nn", 10, False) in found


def loaded_modules(script: str) -> set[str]:
    heavy = ("torch", "pygls", "lsprotocol", "libcst")
    code = script + f"\nimport sys\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPOSITORY
    )
    assert result.returncode == 0, result.stderr
    return set(ast.literal_eval(result.stdout.strip().splitlines()[-1]))


def test_importing_the_analysis_loads_no_torch_pygls_lsprotocol_or_libcst():
    assert loaded_modules("import torchward.analysis") == set()


def test_linting_a_training_script_loads_no_torch_pygls_lsprotocol_or_libcst():
    script = textwrap.dedent(
        """
        from torchward.analysis import analyze_source
        source = '''
        import torch
        def train(model, loader, opt, crit):
            losses = []
            for x, y in loader:
                loss = crit(model(x), y)
                losses.append(loss)
                loss.backward()
                opt.step()
        '''
        analyze_source(source, "train.py")
        """
    )
    assert loaded_modules(script) == set()


def test_importing_the_estimator_loads_no_torch_pygls_lsprotocol_or_libcst():
    assert loaded_modules("import torchward.estimator") == set()


MARKER_PAYLOAD = textwrap.dedent(
    """\
    # Writes a marker file when executed or imported: torchward must do neither.
    import pathlib
    pathlib.Path({marker!r}).write_text("{name} was executed")
    import torch

    model = torch.nn.Linear(2, 2)
    losses = []
    for step in range(3):
        loss = model(torch.randn(1, 2)).sum()
        losses.append(loss)
        loss.backward()

    if __name__ == "__main__":
        pathlib.Path({marker!r}).write_text("{name} was run as a script")
    """
)


@pytest.fixture
def booby_trapped(tmp_path):
    """A folder whose files write a marker when run or imported, with a fake ``torch`` module in it."""
    folder = tmp_path / "project"
    folder.mkdir()
    for name in (
        "train.py",
        "torch.py",
        "sitecustomize.py",
        "conftest.py",
        "setup.py",
        "__main__.py",
    ):
        (folder / name).write_text(
            MARKER_PAYLOAD.format(marker=str(tmp_path / f"MARKER-{name}"), name=name)
        )
    return folder


def test_checking_files_never_imports_or_executes_them(booby_trapped):
    # cwd is the trapped folder, so `python -m` puts it first on sys.path: an `import torch`
    # anywhere in torchward would import the fake torch.py and write its marker.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchward",
            "check",
            ".",
            "--no-cache",
            "--exit-zero",
            "--jobs",
            "2",
        ],
        cwd=booby_trapped,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 files checked" in result.stdout
    assert list(booby_trapped.parent.glob("MARKER-*")) == []


def test_checking_in_process_leaves_torch_unimported(booby_trapped):
    script = textwrap.dedent(
        f"""
        from torchward.cli import main
        main(["check", {str(booby_trapped)!r}, "--no-cache", "--exit-zero"])
        """
    )
    assert "torch" not in loaded_modules(script)
    assert list(booby_trapped.parent.glob("MARKER-*")) == []
