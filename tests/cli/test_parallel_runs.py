"""Checking many files: a process pool gives the serial result; bad files never stop a run."""

from __future__ import annotations

import json

import pytest

from torchward import runner

from .projects import CLEAN, RETAINED_LINE, TRAIN_LOOP, write


@pytest.fixture
def many_files(project):
    for index in range(12):
        write(project, f"pkg/train_{index:02}.py", TRAIN_LOOP if index % 3 == 0 else CLEAN)
    write(project, "pkg/broken.py", "def broken(:\n")
    return project


@pytest.fixture
def pool_always(monkeypatch):
    """Lowers the thresholds so that even a small run goes through the process pool."""
    monkeypatch.setattr(runner, "POOL_MIN_FILES", 2)
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)


def test_parallel_run_equals_serial_run(many_files, torchward, tw001, pool_always, monkeypatch):
    pool_used = []
    original = runner.ProcessPoolExecutor

    def recording_pool(*args, **kwargs):
        pool_used.append(kwargs.get("max_workers"))
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "ProcessPoolExecutor", recording_pool)
    serial = torchward("check", "--no-cache", "--jobs", "1", "--format", "json")
    assert pool_used == []
    parallel = torchward("check", "--no-cache", "--jobs", "2", "--format", "json")
    assert pool_used == [2]
    assert json.loads(parallel.out) == json.loads(serial.out)
    assert parallel.err == serial.err
    assert parallel.status == serial.status == 1
    assert [item["path"] for item in json.loads(serial.out)] == [
        f"pkg/train_{i:02}.py" for i in (0, 3, 6, 9)
    ]


def test_a_small_run_stays_in_process(many_files, torchward, monkeypatch):
    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was started for a small run")

    monkeypatch.setattr(runner, "ProcessPoolExecutor", no_pool)
    assert torchward("check", "--no-cache", "--jobs", "4").status == 1


def test_binary_non_utf8_and_broken_files_are_reported_and_the_run_goes_on(
    project, torchward, tw001
):
    write(project, "a_binary.py", b"\x7fELF\x00\x00\x01\x02")
    write(project, "b_latin1.py", "name = 'caf\u00e9'\n".encode("latin-1"))
    write(project, "c_syntax.py", "for x in :\n")
    write(project, "d_train.py", TRAIN_LOOP)
    write(project, "e_bom.py", "\ufeff" + CLEAN)
    outcome = torchward("check", "--no-cache")
    lines = outcome.out.splitlines()
    assert "a_binary.py:1:1: encoding cannot decode file: binary file (contains NUL bytes)" in lines
    assert "b_latin1.py:1:1: encoding cannot decode file: not UTF-8 text" in lines
    assert any(line.startswith("c_syntax.py:1:") and "syntax-error" in line for line in lines)
    assert any(line.startswith(f"d_train.py:{RETAINED_LINE}:") for line in lines)
    assert not any(line.startswith("e_bom.py") for line in lines)
    assert "3 files could not be fully analysed" in lines[-1]
    assert outcome.status == 1


def test_an_unreadable_file_is_reported(project, torchward, monkeypatch):
    write(project, "locked.py", CLEAN)
    real_open = open

    def deny(path, *args, **kwargs):
        if str(path).endswith("locked.py") and "b" in (
            args[0] if args else kwargs.get("mode", "r")
        ):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", deny)
    outcome = torchward("check", "--no-cache")
    assert "locked.py:1:1: unreadable cannot read file: Permission denied" in outcome.out
    assert outcome.status == 1


def test_bad_files_do_not_stop_a_parallel_run(many_files, torchward, tw001, pool_always):
    write(many_files, "pkg/binary.py", b"\x00\x01")
    outcome = torchward("check", "--no-cache", "--jobs", "2")
    assert "pkg/binary.py:1:1: encoding" in outcome.out
    assert "pkg/broken.py:1:" in outcome.out
    assert outcome.out.count(" TW001 ") == 4


def test_batches_hold_every_file_once_largest_first_and_stay_few():
    sizes = [10, 5_000, 300, 7, 12_000, 40, 800, 800, 1, 2_500] * 30
    groups = runner.batches(sizes, jobs=2)
    flat = [index for group in groups for index in group]
    assert sorted(flat) == list(range(len(sizes)))
    assert [sizes[i] for i in flat] == sorted(sizes, reverse=True)
    assert len(groups) <= 2 * runner.BATCHES_PER_JOB + 1
