"""A project module an analysis imports is not read and hashed again while its
modification time and size are those it had when it was last read — one keystroke's
analysis of a script with many project imports read them all. A file modified within
the file system's clock tick before it was read is not trusted (a second write could
keep its time and size); a changed one is read again, and a read from the shortcut is
recorded like a real one, so the CLI cache still checks it."""

from __future__ import annotations

import os
import time

from torchward.analysis.workspace.index import WorkspaceIndex
from torchward.estimator import dependencies


def _age(path, seconds: float = 10.0) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_a_file_unchanged_since_it_was_read_is_not_read_again(tmp_path):
    module = tmp_path / "helpers.py"
    module.write_text("def f():\n    return 1\n")
    _age(module)
    data = dependencies.read_bytes(module)
    with dependencies.recording() as reads:
        digest = dependencies.unchanged_digest(module)
    assert digest is not None
    # recorded as a read of the content, with the digest a read records
    assert [(d.source, d.value) for d in reads.dependencies()] == [
        (dependencies.Source.CONTENT, dependencies._digest(data))
    ]
    module.write_text("def f():\n    return 2\n")  # same size, a new modification time
    assert dependencies.unchanged_digest(module) is None


def test_a_file_written_just_before_it_was_read_is_not_trusted(tmp_path):
    module = tmp_path / "fresh.py"
    module.write_text("x = 1\n")
    dependencies.read_bytes(module)
    assert dependencies.unchanged_digest(module) is None


def test_the_workspace_sees_a_module_that_changed_on_disk(tmp_path):
    module = tmp_path / "models.py"
    module.write_text("def build():\n    return 1\n")
    _age(module, 20)
    index = WorkspaceIndex()
    first = index.summary(str(module))
    assert first is not None
    assert index.summary(str(module)) is first  # unchanged: the same summary, not re-read
    module.write_text("def build():\n    return 2\n\ndef train():\n    pass\n")
    _age(module, 5)
    second = index.summary(str(module))
    assert second is not None and second is not first
    assert "train" in second.index.top_functions
