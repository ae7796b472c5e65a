"""TW010: fires only with a target GPU, from the script's own numbers; never on guesses."""

from __future__ import annotations

from torchward.analysis import LintSettings, analyze_source
from torchward.analysis.rules.projected_oom import ProjectedOom

from torchward.cli import main

OOM = ProjectedOom.INVALID[0].source


def _codes(source: str, gpu: str | None) -> list[str]:
    report = analyze_source(source, "train.py", LintSettings(select=("TW010",), target_gpu=gpu))
    return [f.code for f in report.findings]


def test_silent_without_a_target_gpu():
    assert _codes(OOM, None) == []


def test_fires_on_a_small_card_and_not_on_a_large_one():
    assert _codes(OOM, "t4") == ["TW010"]
    assert _codes(OOM, "8xh200") == ["TW010"]  # per GPU: no sharding configured
    assert (
        _codes(
            OOM.replace("per_device_train_batch_size=8", "per_device_train_batch_size=1").replace(
                "max_seq_length=2048", "max_seq_length=256"
            ),
            "b200",
        )
        == []
    )


def test_finding_points_at_the_model_and_names_the_numbers():
    report = analyze_source(OOM, "train.py", LintSettings(select=("TW010",), target_gpu="t4"))
    finding = report.findings[0]
    assert finding.span.line == 2 and "GiB" in finding.message
    assert any("batch_size" in e.message for e in finding.evidence)


def test_target_gpu_in_pyproject_reaches_the_rule(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.torchward]\ntarget-gpu = "t4"\n')
    (tmp_path / "train.py").write_text(OOM)
    status = main(["check", str(tmp_path), "--no-cache", "--select", "TW010"])
    assert status == 1 and "TW010" in capsys.readouterr().out


def test_an_unknown_target_gpu_name_is_silent_in_the_rule():
    assert _codes(OOM, "no-such-card") == []
