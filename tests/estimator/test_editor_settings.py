"""The editor's estimator settings (``torchward.useCache``) lie over the project's."""

from __future__ import annotations

from torchward.estimator.settings import EstimatorSettings, with_editor_settings


def test_the_editor_value_wins_over_the_project_and_names_its_source() -> None:
    project = EstimatorSettings(overrides=(("use_cache", True), ("batch_size", 4)))
    config = with_editor_settings(project, use_cache=False).run_config()
    assert config.use_cache.value is False
    assert config.use_cache.source == "editor setting torchward.useCache"
    assert config.batch_size.value == 4  # the project's other values stay


def test_auto_leaves_the_settings_as_they_are() -> None:
    project = EstimatorSettings(overrides=(("batch_size", 4),))
    assert with_editor_settings(project, use_cache=None) is project
    assert with_editor_settings(None, use_cache=None) is None


def test_an_editor_value_alone_makes_settings_that_change_the_cache_key() -> None:
    alone = with_editor_settings(None, use_cache=False)
    assert alone and alone.identity() != EstimatorSettings().identity()
