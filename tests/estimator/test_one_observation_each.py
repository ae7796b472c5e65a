"""A memoised result is revalidated against the files it read; inside one analysis
(``dependencies.one_observation_each``) each file is looked at once, however many
memoised results read it — one keystroke resolves dozens of imports against the same
folders. Outside such a block, and in the next one, a changed file is seen."""

from __future__ import annotations

from torchward.estimator import dependencies


def _counting(monkeypatch) -> list[tuple]:
    looked: list[tuple] = []
    observe = dependencies._observe

    def counted(source, key):
        looked.append((source, key))
        return observe(source, key)

    monkeypatch.setattr(dependencies, "_observe", counted)
    return looked


def test_inside_one_analysis_each_file_is_looked_at_once(tmp_path, monkeypatch):
    settings = tmp_path / "settings.txt"
    settings.write_text("a")

    @dependencies.remembered
    def size_of(name: str, salt: int) -> int:
        return len(dependencies.read_text(tmp_path / name))

    for salt in range(5):
        size_of("settings.txt", salt)  # five memoised results, all reading one file
    looked = _counting(monkeypatch)
    with dependencies.one_observation_each():
        for salt in range(5):
            assert size_of("settings.txt", salt) == 1
    assert len(looked) == 1
    looked.clear()
    for salt in range(5):  # outside a block: each hit revalidates on its own
        size_of("settings.txt", salt)
    assert len(looked) == 5


def test_a_file_changed_between_two_analyses_is_seen(tmp_path):
    settings = tmp_path / "settings.txt"
    settings.write_text("a")

    @dependencies.remembered
    def size_of(name: str) -> int:
        return len(dependencies.read_text(tmp_path / name))

    with dependencies.one_observation_each():
        assert size_of("settings.txt") == 1
    settings.write_text("abc")
    with dependencies.one_observation_each():
        assert size_of("settings.txt") == 3
        with dependencies.one_observation_each():  # nested: the outer block's view
            assert size_of("settings.txt") == 3
