"""Unit tests of the settings' wire conversion."""

from __future__ import annotations

from torchward.server.configuration import (
    ServerSettings,
    merge_wire,
    settings_from_wire,
    settings_to_wire,
)


def test_camel_case_keys_become_typed_settings():
    settings, errors = settings_from_wire(
        {
            "targetGpu": "A100 80GB",
            "select": ["tw0"],
            "ignore": ["TG002"],
            "severity": {"TW001": "note"},
            "debounceMs": 0,
            "estimator": False,
            "inlayHints": False,
            "codeLens": True,
            "trace": {"server": "off"},
        }
    )
    assert errors == []
    assert settings == ServerSettings(
        target_gpu="A100 80GB",
        select=("TW0",),
        ignore=("TW002",),
        severity=(("TW001", "note"),),
        debounce_ms=0,
        estimator=False,
        inlay_hints=False,
        code_lens=True,
    )


def test_each_invalid_key_is_reported_and_defaulted_alone():
    settings, errors = settings_from_wire(
        {"debounceMs": -1, "severity": {"TW001": "fatal"}, "ignore": ["TW01"]}
    )
    assert settings == ServerSettings(ignore=("TW01",))
    assert len(errors) == 2 and "debounceMs" in errors[0] and "severity" in errors[1]


def test_a_non_object_is_an_error_and_the_defaults():
    assert settings_from_wire(["select"]) == (
        ServerSettings(),
        ["torchward settings must be an object, got list"],
    )
    assert settings_from_wire(None) == (ServerSettings(), [])


def test_later_layers_win_key_by_key_and_the_wire_round_trips():
    merged = merge_wire(
        {"debounceMs": 5, "select": ["TW"]}, None, {"debounceMs": 0, "select": None}
    )
    assert merged == {"debounceMs": 0, "select": ["TW"]}
    settings, _ = settings_from_wire({"severity": {"TW001": "error"}, "targetGpu": "L4"})
    assert settings_from_wire(settings_to_wire(settings))[0] == settings


def test_a_severity_setting_that_is_not_an_object_names_every_level_hint_included():
    settings, errors = settings_from_wire({"severity": "hint", "select": ["TW0"]})
    assert settings == ServerSettings(select=("TW0",))
    (error,) = errors
    assert '"error" | "warning" | "note" | "hint"' in error
    assert settings_from_wire({"severity": {"TW015": "hint"}})[0].severity == (("TW015", "hint"),)
