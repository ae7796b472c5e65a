"""The real-GPU calibration script, run end to end on the fake device (no GPU here).

``gpu_calibration.py --fake`` goes through every step a GPU run takes — the child
processes, the real / profile / estimate columns, the comparison and the JSON it writes —
with the fake CUDA device standing in for the GPU (allocator and context fields null).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is a calibration-only dependency (README.md)")
pytest.importorskip("transformers", reason="transformers is a calibration-only dependency")

HERE = Path(__file__).resolve().parent


def test_the_configurations_span_a_decoder_an_encoder_and_a_cnn():
    sys.path.insert(0, str(HERE))
    import gpu_calibration

    kinds = {row[2] for row in gpu_calibration.CONFIGS}
    assert len(gpu_calibration.CONFIGS) >= 10 and kinds == {"decoder", "encoder", "cnn"}
    assert {row[3] for row in gpu_calibration.CONFIGS} == {"train", "inference", "generate"}


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the fake CUDA device")
def test_the_pipeline_runs_on_the_fake_device_and_writes_the_comparison(tmp_path):
    out = tmp_path / "peaks.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "gpu_calibration.py"),
            "--fake",
            "--only",
            "resnet50-train-fp32",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["fake"] is True and "NO GPU" in data["note"]
    (run,) = data["runs"]
    assert run["architecture"] == "cnn" and run["real"]["reserved_bytes"] is None
    # on the fake device the "real" run is the profile's own count: the comparison is exact
    assert run["profile_error"] == 0.0
    assert run["real"]["allocated_bytes"] > 0 and abs(run["estimate_error"]) < 0.25
