"""Vendor the language server into the extension: ``bundled/`` (run by ``npm run package``).

The extension runs the bundled server as ``python -m torchward lsp --stdio`` with
``PYTHONPATH=bundled/libs[:bundled/native/cp3XY]`` when no environment of the user's has
torchward (see src/launch.ts). Steps:

1. build torchward's wheel from a clean copy of this repository (``pip wheel --no-deps``);
2. for each supported Python version, resolve the wheel's dependencies with
   ``pip install --target --python-version X.Y --only-binary=:all:``;
3. pure-Python distributions (``Root-Is-Purelib: true``) go to ``bundled/libs`` — shared
   by every Python >= 3.10; compiled ones (libcst, which the quick fixes need, and
   PyYAML) go to ``bundled/native/cp3XY``, one folder per Python version, for the
   platform this runs on (``--platform`` to build for another);
4. ``bundled/manifest.json`` records what went where.

A Python with no native folder still lints and estimates; only the fixes need libcst.
Usage: ``python3 scripts/bundle_server.py [--pythons 3.10,3.11,3.12,3.13] [--platform TAG]``.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EXTENSION = Path(__file__).resolve().parent.parent
REPOSITORY = EXTENSION.parent.parent
BUNDLED = EXTENSION / "bundled"
DEFAULT_PYTHONS = "3.10,3.11,3.12,3.13"  # pyproject.toml: requires-python >= 3.10


def pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, env={**os.environ, "PIP_ROOT_USER_ACTION": "ignore"})


def source_copy(into: Path) -> Path:
    """The repository's files as git sees them (tracked, and untracked but not ignored).

    Building from the working tree itself would let setuptools reuse a stale ``build/lib``
    (a module deleted from the source would still ship); a copy starts clean.
    """
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=REPOSITORY, check=True, capture_output=True).stdout.decode()
    for name in filter(None, listing.split("\0")):
        if name.startswith("editors/") or not (REPOSITORY / name).is_file():
            continue
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPOSITORY / name, into / name)
    return into


def build_wheel(into: Path) -> Path:
    source = source_copy(into.parent / "source")
    pip("wheel", "--no-deps", "--wheel-dir", str(into), str(source))
    (wheel,) = into.glob("torchward-*.whl")
    return wheel


def distributions(target: Path) -> dict[str, tuple[str, str, bool, list[str]]]:
    """name → (version, dist-info folder, is pure, top-level paths) for what pip put in ``target``."""
    found = {}
    for info in target.glob("*.dist-info"):
        metadata = email.parser.Parser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
        wheel = email.parser.Parser().parsestr((info / "WHEEL").read_text(encoding="utf-8"))
        pure = wheel.get("Root-Is-Purelib", "false").strip().lower() == "true"
        tops = {info.name}
        for line in (info / "RECORD").read_text(encoding="utf-8").splitlines():
            first = line.split(",", 1)[0].split("/", 1)[0]
            if first and not first.startswith("..") and first != "bin":
                tops.add(first)
        found[metadata["Name"].lower()] = (metadata["Version"], info.name, pure, sorted(tops))
    return found


def missing_requirements(target: Path, version: str) -> list[str]:
    """Requirements of what is in ``target`` that hold on Python ``version`` but are not there.

    pip evaluates environment markers for the Python it runs on, not --python-version, so
    run on 3.11 it leaves out ``tomli; python_version < "3.11"`` and cattrs'
    ``exceptiongroup`` for 3.10; this finds them.
    """
    try:
        from packaging.requirements import Requirement
    except ImportError:
        from pip._vendor.packaging.requirements import Requirement
    environment = {"python_version": version, "python_full_version": version + ".0", "extra": ""}
    installed = {name.replace("_", "-") for name in distributions(target)}
    missing = []
    for info in target.glob("*.dist-info"):
        metadata = email.parser.Parser().parsestr((info / "METADATA").read_text(encoding="utf-8"))
        for line in metadata.get_all("Requires-Dist") or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue
            name = requirement.name.lower().replace("_", "-")
            if name not in installed:
                missing.append(str(requirement).split(";")[0].strip())
    return sorted(set(missing))


def complete_for_version(target: Path, version: str, platform: list[str]) -> None:
    for _ in range(10):
        missing = missing_requirements(target, version)
        if not missing:
            return
        # --ignore-requires-python: pip compares Requires-Python with the Python it runs on
        pip("install", "--quiet", "--no-compile", "--no-deps", "--ignore-requires-python", "--target", str(target),
            "--python-version", version,
            "--implementation", "cp", "--only-binary=:all:", *platform, *missing)
    raise SystemExit(f"dependencies for Python {version} did not settle: {missing_requirements(target, version)}")


def copy_tops(source: Path, destination: Path, tops: list[str]) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    # the dependencies' own test suites are a third of libcst's size and never imported
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "tests")
    for top in tops:
        path = source / top
        if path.is_dir():
            shutil.copytree(path, destination / top, dirs_exist_ok=True, ignore=ignore)
        elif path.exists():
            shutil.copy2(path, destination / top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pythons", default=DEFAULT_PYTHONS, help=f"Python versions to bundle for (default {DEFAULT_PYTHONS})")
    parser.add_argument("--platform", help="pip --platform tag for the compiled dependencies (default: this machine's)")
    options = parser.parse_args()
    versions = [v.strip() for v in options.pythons.split(",") if v.strip()]

    shutil.rmtree(BUNDLED, ignore_errors=True)
    libs = BUNDLED / "libs"
    manifest: dict = {"torchward": None, "platform": options.platform or "this machine", "libs": {}, "native": {}}
    with tempfile.TemporaryDirectory(prefix="torchward-bundle-") as temporary:
        work = Path(temporary)
        wheel = build_wheel(work / "wheel")
        manifest["wheel"] = wheel.name
        for version in versions:
            target = work / f"py{version}"
            platform = ["--platform", options.platform] if options.platform else []
            pip("install", "--quiet", "--no-compile", "--target", str(target), "--python-version", version,
                "--implementation", "cp", "--only-binary=:all:", *platform, str(wheel))
            complete_for_version(target, version, platform)
            tag = "cp" + version.replace(".", "")
            for name, (dist_version, _, pure, tops) in sorted(distributions(target).items()):
                if pure:
                    known = manifest["libs"].get(name)
                    if known is not None and known != dist_version:
                        raise SystemExit(f"{name}: {known} for one Python, {dist_version} for another; pin it")
                    manifest["libs"][name] = dist_version
                    copy_tops(target, libs, tops)
                else:
                    manifest["native"].setdefault(tag, {})[name] = dist_version
                    copy_tops(target, BUNDLED / "native" / tag, tops)
    manifest["torchward"] = manifest["libs"].get("torchward")
    (BUNDLED / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(f"bundled torchward {manifest['torchward']} into {BUNDLED.relative_to(EXTENSION)}: "
          f"{len(manifest['libs'])} pure distributions, native for {', '.join(manifest['native']) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
