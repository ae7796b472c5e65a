"""TW010 projected-oom, and where a job lands on the chosen hardware.

The editor's status bar, lens and hover say the same thing as this rule (issue 30): they
read the rule's own answers — :func:`place` (an instance's GPU count, how many of its GPUs
the script uses), :func:`is_reported` (whether an "oom" is said) and
:func:`across_the_machine` (the multi-GPU remedy) — rather than deciding again.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import attrs

from ..finding import Confidence, Evidence, Severity, Span
from ..rule import Invalid, Rule

_LINE = re.compile(r":(\d+)")


class ProjectedOom(Rule):
    """
    ## What it does
    With `target-gpu` set in `[tool.torchward]`, reads the script's run configuration
    (model, batch, sequence, precision, optimizer, checkpointing, LoRA, sharding...) and
    flags it when the projected peak GPU memory exceeds the card even at the optimistic
    end of the estimate's interval. `torchward estimate SCRIPT` shows the breakdown and
    the changes that would make it fit.

    ## Why is this bad?
    The job will run out of memory on the machine it is meant for, after the data has
    loaded, the model has downloaded and the GPU has been paid for.

    ## Example
    ```toml
    [tool.torchward]
    target-gpu = "t4"
    ```
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    args = TrainingArguments(per_device_train_batch_size=8, bf16=True)  # TW010
    ```
    Use instead: a smaller batch with gradient accumulation, gradient checkpointing,
    LoRA / QLoRA or a larger card (`torchward estimate` ranks them by saving).

    ## Fix safety
    No automatic fix: every remedy trades speed, quality or money.

    ## Known limitations
    With an instance as the target (`target-gpu = "p4d.24xlarge"`), one GPU of it is
    judged: the instance's GPU count is the world size when the script names none (so
    FSDP / ZeRO divide by it), and a script that uses one of the GPUs is told so, with
    the peak FSDP across all of them would have.
    Silent unless `target-gpu` is set, and silent when the estimate has low confidence
    (a batch size, sequence length or precision the script does not state, a model
    whose activations are not modelled) — except when the weights alone, which depend
    on none of those, already exceed the card. Unknown models are never estimated.
    Values read from `argparse` defaults can be overridden at launch; values in
    `[tool.torchward.estimate]` (`batch-size`, `seq-len`, `dtype`, ...) override the
    script's. Never touches the network: models are known from the bundled catalog,
    `[tool.torchward.models]` / `models-file`, a local `config.json` or the offline
    Hugging Face cache.
    """

    code = "TW010"
    name = "projected-oom"
    default_severity = Severity.ERROR
    summary = "The job's projected peak GPU memory exceeds the target GPU."
    EXAMPLE_SETTINGS: ClassVar[dict[str, str]] = {"target_gpu": "t4"}

    _HEAD = (
        "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained({model!r})\n"
    )
    VALID = (
        _HEAD.format(model="gpt2")
        + "args = TrainingArguments(per_device_train_batch_size=4, max_seq_length=512, fp16=True)\n",
        # no batch size: low confidence, silent (the 13.5 GB of bf16 weights alone fit)
        "import torch\nfrom transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', torch_dtype=torch.bfloat16)\n"
        "args = TrainingArguments(bf16=True)\n",
        # no model at all
        "import torch\nmodel = torch.nn.Linear(10, 10)\nfor x in range(3):\n    model(x).sum().backward()\n",
        # small vision model, stated batch
        "import torch, torchvision\nfrom torch.utils.data import DataLoader\nmodel = torchvision.models.resnet18()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nloader = DataLoader(range(8), batch_size=32)\nwith torch.autocast('cuda'):\n    for x in loader:\n        model(x).sum().backward()\n",
        # unknown model name: never an invented number
        _HEAD.format(model="my-org/private-model")
        + "args = TrainingArguments(per_device_train_batch_size=64, max_seq_length=4096, bf16=True)\n",
        # QLoRA makes a 7B fine-tune fit a 16 GB card
        "from peft import LoraConfig\n"
        + "from transformers import AutoModelForCausalLM, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-7b-hf', load_in_4bit=True)\n"
        "lora = LoraConfig(r=8)\nargs = TrainingArguments(per_device_train_batch_size=1, max_seq_length=256, bf16=True, gradient_checkpointing=True)\n",
    )
    INVALID = (
        Invalid(
            _HEAD.format(model="meta-llama/Llama-2-7b-hf")
            + "args = TrainingArguments(per_device_train_batch_size=8, max_seq_length=2048, bf16=True)\n",
            Severity.ERROR,
            line=2,
        ),
        Invalid(
            _HEAD.format(model="meta-llama/Meta-Llama-3-8B")
            + "args = TrainingArguments(per_device_train_batch_size=1, max_seq_length=512, bf16=True, gradient_checkpointing=True)\n",
            line=2,
        ),
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained('meta-llama/Llama-2-13b-hf', torch_dtype=torch.bfloat16)\n"
            "with torch.no_grad():\n    model.generate(ids, max_length=4096, max_new_tokens=128)\n",
            line=3,
        ),
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM\nfrom torch.utils.data import DataLoader\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2-xl')\nopt = torch.optim.AdamW(model.parameters())\n"
            "loader = DataLoader(tokenizer(texts, max_length=1024), batch_size=16)\nfor batch in loader:\n    model(**batch).loss.backward()\n    opt.step()\n",
            line=4,
        ),
    )

    def check(self, facts):
        target = facts.settings.target_gpu
        if not target:
            return
        from torchward.estimator.estimate import estimate
        from torchward.estimator.hardware import lookup_hardware

        from ..job.runconfig import read_source

        try:
            choice = lookup_hardware(target)
        except (LookupError, ValueError):
            return  # a bad name is the configuration's error, reported by `estimate`
        config, _ = read_source(
            "\n".join(facts.index.source_lines), facts.path, tree=facts.analyzer.tree
        )
        extra = facts.settings.estimator  # [tool.torchward.estimate] over the script's values
        models = ()
        if extra is not None:
            config, models = config.merged(extra.run_config()), extra.models
        if config.model is None:
            return
        placed = place(config, choice)
        try:
            result = estimate(placed.config, choice.gpu, models)
        except (LookupError, ValueError):
            return  # unknown model: no invented number
        if not is_reported(result, choice.gpu.usable_bytes):
            return
        line = _line(config.model.source) or 1
        evidence = [
            Evidence(_span(facts, _line(f.source)), f"{name} = {f.value!r}")
            for name, f in config.fields()
            if _line(f.source) and name != "model"
        ][:6]
        from torchward.estimator.units import gpu_name, size

        gpu = gpu_name(choice.gpu.name)
        message = (
            f"projected peak {size(result.peak)} (at least {size(result.low)}) "
            f"exceeds the {gpu}'s {size(choice.gpu.usable_bytes)}; "
            f"the peak is the {result.peak_phase.name} phase. "
            "Run `torchward estimate` on this file for the breakdown and what would make it fit."
        )
        if placed.gpu_count > 1:
            message += " " + _on_the_instance(placed, gpu, result)
        confidence = Confidence.HIGH if result.confidence == "high" else Confidence.MEDIUM
        yield self.finding(_span(facts, line), message, evidence=evidence, confidence=confidence)


ASSUMED_WORLD = "settings targetGpu"  # the source of a world size taken from the instance


@attrs.frozen
class Placement:
    """A job on the chosen hardware: ``config`` with the instance's GPU count as the world
    size when the script names none (FSDP / ZeRO divide by it), the GPUs of the hardware
    and how many of them the script uses — its own world size, all of them when it shards,
    else one."""

    config: Any = None  # the estimator's RunConfig, placed
    gpu_count: int = 1
    instance: str | None = None
    gpus_used: int = 1

    def describe(self, gpu_name: str) -> str:
        """``8× H100 80GB (p5.48xlarge) · 1 of 8 used``; the GPU's name for one GPU."""
        if self.gpu_count <= 1:
            return gpu_name
        text = f"{self.gpu_count}× {gpu_name}" + (f" ({self.instance})" if self.instance else "")
        return text + f" · {min(self.gpus_used, self.gpu_count)} of {self.gpu_count} used"


def place(config, choice) -> Placement:
    """``config`` on the hardware ``choice`` (a ``HardwareChoice``). Idempotent: a config
    already placed (its world size from :data:`ASSUMED_WORLD`) places the same."""
    from torchward.estimator.runconfig import Field, RunConfig

    count = choice.count
    instance = choice.instance.name if choice.instance is not None else None
    gpus, sharding = config.gpus, config.value("sharding")
    if gpus is not None and gpus.source != ASSUMED_WORLD:
        used = int(gpus.value)  # the script's own world size
    elif sharding not in (None, "none"):
        used = count  # DDP / FSDP / ZeRO: every GPU of the machine
    else:
        used = 1
    if count > 1 and gpus is None:
        config = config.merged(RunConfig(gpus=Field(count, ASSUMED_WORLD)))
    return Placement(config, count, instance, used)


def across_the_machine(result, placed: Placement):
    """The estimate with FSDP across every GPU of the hardware, on the same resolved model,
    when the script uses fewer of them than there are and does not fit; else None."""
    if placed.gpu_count <= 1 or placed.gpus_used >= placed.gpu_count:
        return None
    if result.verdict in (None, "fits") or result.gpu is None:
        return None
    from torchward.estimator.estimate import estimate_resolved
    from torchward.estimator.runconfig import Field, RunConfig

    source = "FSDP across the chosen instance"
    config = result.resolved.config.merged(
        RunConfig(sharding=Field("fsdp", source), gpus=Field(placed.gpu_count, source))
    )
    return estimate_resolved(attrs.evolve(result.resolved, config=config), result.gpu)


def _on_the_instance(placed: Placement, gpu_name: str, result) -> str:
    """What the rule adds for an instance: which of its GPUs the script uses, and the
    multi-GPU remedy with the peak it would have."""
    from torchward.estimator.units import size

    text = f"Judged on one GPU of {placed.describe(gpu_name)}"
    try:
        sharded = across_the_machine(result, placed)
    except (LookupError, ValueError, AttributeError):
        sharded = None
    if sharded is None:
        return text + "."
    verdict = {"oom": "still does not fit"}.get(sharded.verdict, sharded.verdict)
    return (
        text + f"; FSDP across all {placed.gpu_count} (launched with torchrun) would bring the "
        f"peak to {size(sharded.peak)} per GPU ({verdict})."
    )


def is_reported(result, usable: int) -> bool:
    """Whether TW010 reports an estimate ``result`` against ``usable`` bytes: even its low
    end does not fit and, on a low-confidence estimate, the weights alone (which depend
    on no assumed input) do not fit either. The editor's status bar reads the same
    answer, so it never says "OOM" where the rule stays silent."""
    weights_alone = result.terms["weights"] + result.context  # depends on no assumed input
    return result.low > usable and (result.confidence != "low" or weights_alone > usable)


def _line(source: str) -> int | None:
    match = (
        _LINE.search(source.rsplit("/", 1)[-1]) if source.endswith(tuple("0123456789")) else None
    )
    return int(match.group(1)) if match else None


def _span(facts, line: int | None) -> Span:
    line = line or 1
    text = facts.index.source_lines[line - 1] if line <= len(facts.index.source_lines) else ""
    start = len(text) - len(text.lstrip())
    return Span(line, start, line, max(len(text), start + 1))
