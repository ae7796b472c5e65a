"""The terminal view of an estimate: verdict line, a breakdown bar chart, phases, remedies.

Reads only the JSON-able report (:func:`torchward.estimator.report.estimate_report`), so
the terminal and ``--format json`` cannot disagree about a number.
"""

from __future__ import annotations

from typing import TextIO

from torchward.estimator.units import count_text, size

BAR = 40
_VERDICTS = {"tight": "may not fit"}
_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer_state": "optimizer state",
    "master_weights": "master weights",
    "activations": "activations",
    "kv_cache": "KV cache",
    "temporaries": "temporaries",
    "cuda_context": "CUDA context",
    "fragmentation": "fragmentation",
}


def render(data: dict, out: TextIO, *, explain: bool = False) -> None:
    """The terminal view of an estimate; ``explain``: each term's formula with its inputs."""
    write = lambda text="": print(text, file=out)  # noqa: E731
    gpus = data.get("gpus", 1)
    title = f"{data['model']} ({count_text(data['params'])} parameters), {data['mode']}"
    write(title)
    if data["gpu"]:
        write(
            f"on {data['gpu']}"
            + (f" (per GPU, {gpus} GPUs)" if gpus > 1 else "")
            + f": {size(data['usable_bytes'])} usable"
        )
    verdict = _VERDICTS.get(data["verdict"], data["verdict"] or "no GPU given").upper()
    if data.get("unknown") and data["verdict"] in ("tight", "oom", "fits"):
        verdict += " over the interval (inputs assumed, below)"
    write(
        f"peak {size(data['peak_bytes'])}  (interval {size(data['low_bytes'])} – "
        f"{size(data['high_bytes'])}, confidence {data['confidence']})  → {verdict}"
    )
    write(f"peak phase: {data['peak_phase']}; live tensors {size(data['allocated_bytes'])}")
    write()
    largest = max(data["terms"].values()) or 1
    for name, value in data["terms"].items():
        if value <= 0:
            continue
        bar = "█" * max(1, round(BAR * value / largest))
        write(f"  {_LABELS[name]:<16} {size(value):>12}  {bar}")
        formula = data.get("formulas", {}).get(name) if explain else None
        if formula:
            write(f"      {_LABELS[name].lower()} = {formula}")
    write()
    write(
        "phases: " + ", ".join(f"{p['name']} {size(p['allocated_bytes'])}" for p in data["phases"])
    )
    for name, field in data["config"].items():
        if field["source"] == "assumed":
            continue
        write(f"  {name} = {field['value']!r}  ({field['source']}, {field['confidence']})")
    for unknown in data.get("unknown", ()):
        name = unknown["field"].replace("_", " ")
        where = (
            f"; the script would say it with {unknown['read_from']}" if unknown["read_from"] else ""
        )
        write(
            f"{name} unknown — assumed {unknown['assumed']!r} (the interval covers alternatives)"
            f"{where}; give {unknown['give']}"
        )
    for note in data["notes"]:
        write(f"note: {note}")
    if data["remedies"]:
        write()
        write("what would make it fit (largest saving first):")
        for m in data["remedies"]:
            write(
                f"  - {m['title']}: saves {size(m['saving_bytes'])} → {size(m['peak_bytes'])} "
                f"({m['verdict']}); cost: {m['cost']}"
            )
    if data["stacked_remedies"]:
        write(
            "together: "
            + " + ".join(m["title"] for m in data["stacked_remedies"])
            + f" → {data['stacked_remedies'][-1]['verdict']}"
        )
    if data["smallest_gpu"] or data["smallest_instance"]:
        write(
            f"smallest GPU that fits as is: {data['smallest_gpu'] or 'none'}; "
            f"instance: {data['smallest_instance'] or 'none'}"
        )
    if data["max_batch_size"] is not None:
        line = f"largest batch that fits: {data['max_batch_size']}"
        if data["max_seq_len"] is not None:
            line += f"; longest sequence: {data['max_seq_len']}"
        if data.get("max_image_size") is not None:
            line += f"; largest image side: {data['max_image_size']}"
        write(line)
