"""The on-disk cache: a second run re-analyses nothing unchanged, and never serves stale results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from torchward.cache import CACHE_DIR_NAME, engine_fingerprint

from .projects import CLEAN, RETAINED_LINE, TRAIN_LOOP, pyproject, write


def test_a_second_run_analyses_nothing_and_reports_the_same(project, torchward, tw001, analysed):
    write(project, "train.py", TRAIN_LOOP)
    write(project, "clean.py", CLEAN)
    first = torchward("check", "--format", "json")
    assert sorted(analysed) == ["clean.py", "train.py"]
    analysed.clear()
    second = torchward("check", "--format", "json")
    assert analysed == []
    assert json.loads(second.out) == json.loads(first.out)
    assert second.status == first.status == 1
    assert "(2 unchanged, from cache)" in torchward("check").out


def test_only_the_edited_file_is_analysed_again(project, torchward, tw001, analysed):
    write(project, "train.py", TRAIN_LOOP)
    write(project, "clean.py", CLEAN)
    torchward("check")
    analysed.clear()
    write(
        project, "train.py", TRAIN_LOOP.replace("losses.append(loss)", "losses.append(loss.item())")
    )
    outcome = torchward("check", "--format", "json")
    assert analysed == ["train.py"]
    assert json.loads(outcome.out) == []


def test_a_touched_but_unchanged_file_is_not_analysed_again(project, torchward, tw001, analysed):
    path = write(project, "train.py", TRAIN_LOOP)
    torchward("check")
    analysed.clear()
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    torchward("check")
    assert analysed == []


def test_other_settings_use_other_cache_entries(project, torchward, tw001, analysed):
    write(project, "train.py", TRAIN_LOOP)
    torchward("check")
    analysed.clear()
    assert "TW001" not in torchward("check", "--ignore", "TW001").out
    assert analysed == ["train.py"]
    analysed.clear()
    assert "TW001" in torchward("check").out
    assert analysed == []


def test_a_changed_configuration_is_not_served_stale_results(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    assert torchward("check").status == 1
    pyproject(project, 'severity = { TW001 = "note" }\n')
    assert torchward("check").status == 0


def test_no_cache_neither_reads_nor_writes(project, torchward, tw001, analysed):
    write(project, "train.py", TRAIN_LOOP)
    torchward("check", "--no-cache")
    torchward("check", "--no-cache")
    assert analysed == ["train.py", "train.py"]
    assert not (project / CACHE_DIR_NAME).exists()


def test_the_cache_folder_ignores_itself_and_sits_next_to_the_configuration(project, torchward):
    pyproject(project, "")
    write(project, "src/clean.py", CLEAN)
    os.chdir(project / "src")
    torchward("check")
    folder = project / CACHE_DIR_NAME
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"
    assert list(folder.glob("*/*.json"))


def test_a_damaged_cache_is_ignored(project, torchward, tw001):
    write(project, "train.py", TRAIN_LOOP)
    torchward("check")
    for index in (project / CACHE_DIR_NAME).glob("*/*.json"):
        index.write_text("{not json")
    outcome = torchward("check")
    assert outcome.status == 1 and f"train.py:{RETAINED_LINE}:" in outcome.out


def test_cached_findings_are_shown_under_the_path_as_given_now(project, torchward, tw001):
    pyproject(project, "")
    write(project, "train.py", TRAIN_LOOP)
    torchward("check")
    (project / "sub").mkdir()
    os.chdir(project / "sub")
    outcome = torchward("check", "..", "--format", "json")
    assert [item["path"] for item in json.loads(outcome.out)] == ["../train.py"]
    assert "unchanged, from cache" in torchward("check", "..").out


def test_editing_an_engine_file_changes_the_fingerprint(tmp_path):
    write(tmp_path, "engine.py", "x = 1\n")
    before = engine_fingerprint([str(tmp_path)])
    write(tmp_path, "rules/new_rule.py", "y = 2\n")
    assert engine_fingerprint([str(tmp_path)]) != before


def test_the_warm_path_imports_neither_libcst_nor_pygls(project):
    write(project, "train.py", TRAIN_LOOP)
    write(project, "clean.py", CLEAN)
    script = textwrap.dedent(
        """
        import sys
        from torchward.cli import main
        main(["check", "--exit-zero"])
        heavy = sorted(m for m in ("libcst", "pygls", "lsprotocol", "torch") if m in sys.modules)
        print("HEAVY", heavy)
        """
    )
    for _ in range(2):  # cold, then warm
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=project, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout
    assert "(2 unchanged, from cache)" in result.stdout
