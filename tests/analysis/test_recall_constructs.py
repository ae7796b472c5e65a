"""The constructs issue 28's recall work taught the analysis, each with the case that
must stay quiet next to it (the positive examples themselves are in ``recall/``)."""

from __future__ import annotations

from torchward.analysis import LintSettings, analyze_source


def _lines(code: str, source: str) -> list[int]:
    report = analyze_source(source, "train.py", LintSettings(select=(code,)))
    return [f.span.line for f in report.findings if f.code == code]


DEEPSPEED_LOOP = (
    "import torch\n"
    "import deepspeed\n"
    "from torch.utils.data import DataLoader\n"
    "def train(model, dataset, config):\n"
    "    engine, _, {loader}, _ = deepspeed.initialize(model=model, config=config{data})\n"
    "{build}"
    "    for x, y in loader:\n"
    "        loss = torch.nn.functional.cross_entropy(engine(x), y)\n"
    "        engine.backward(loss)\n"
    "        engine.step()\n"
)


def test_a_deepspeed_engine_is_data_parallel_for_a_hand_built_loader():
    source = DEEPSPEED_LOOP.format(
        loader="_", data="", build="    loader = DataLoader(dataset, batch_size=8, shuffle=True)\n"
    )
    assert _lines("TW012", source) == [6]


def test_the_loader_deepspeed_builds_from_training_data_is_sharded():
    source = DEEPSPEED_LOOP.format(loader="loader", data=", training_data=dataset", build="")
    assert _lines("TW012", source) == []


SEEDED_TRAINING = (
    "import random\n"
    "import torch\n"
    "{seed}\n"
    "def train(model, loader, opt):\n"
    "    for x in loader:\n"
    "        noise = torch.randn_like(x)\n"
    "        model(x + noise).sum().backward()\n"
    "        opt.step()\n"
)


def test_torch_sampling_counts_as_using_torch_global_state():
    source = SEEDED_TRAINING.format(seed="random.seed(0)")
    report = analyze_source(source, "train.py", LintSettings(select=("TW008",)))
    [finding] = report.findings
    assert finding.span.line == 6
    assert "`torch.manual_seed(...)`" in finding.message


def test_torch_sampling_with_torch_seeded_is_quiet():
    source = SEEDED_TRAINING.format(seed="random.seed(0)\ntorch.manual_seed(0)")
    assert _lines("TW008", source) == []


ONE_BATCH_STEP = (
    "import torch\n"
    "def step(model, optimizer, x, y, micro):\n"
    "    scaler = torch.amp.GradScaler()\n"
    "    for mx, my in zip(x.chunk(micro), y.chunk(micro)):\n"
    "        loss = torch.nn.functional.cross_entropy(model(mx), my) / micro\n"
    "        scaler.scale(loss).backward()\n"
    "{inner}"
    "{outer}"
    "    scaler.step(optimizer)\n"
    "    scaler.update()\n"
)


def test_unscale_in_a_micro_batch_loop_of_a_one_batch_step():
    unscale = "scaler.unscale_(optimizer)\n"
    source = ONE_BATCH_STEP.format(inner="        " + unscale, outer="")
    assert _lines("TW025", source) == [7]
    assert _lines("TW025", ONE_BATCH_STEP.format(inner="", outer="    " + unscale)) == []


PER_FOLD = (
    "import copy\n"
    "import torch\n"
    "from accelerate import Accelerator\n"
    "def main(model, loader, folds):\n"
    "    accelerator = Accelerator()\n"
    "    for fold in range(folds):\n"
    "        {rebind}\n"
    "        optimizer = torch.optim.AdamW(model.parameters())\n"
    "        model, optimizer = accelerator.prepare(model, optimizer)\n"
    "        for x, y in loader:\n"
    "            optimizer.zero_grad()\n"
    "            torch.nn.functional.cross_entropy(model(x), y).backward()\n"
    "            optimizer.step()\n"
)


def test_parameters_rebound_to_a_wrap_of_themselves_are_the_same_parameters():
    assert _lines("TW017", PER_FOLD.format(rebind="pass")) == [8]


def test_a_fresh_copy_per_fold_is_a_fresh_model():
    assert _lines("TW017", PER_FOLD.format(rebind="model = copy.deepcopy(model)")) == []


def test_an_optimizer_built_by_a_helper_the_epoch_loop_calls():
    source = (
        "import torch\n"
        "class Trainer:\n"
        "    def __init__(self, model, loader):\n"
        "        self.model, self.loader = model, loader\n"
        "    def epoch(self):\n"
        "        self.opt = torch.optim.Adam(self.model.parameters())\n"
        "        for x in self.loader:\n"
        "            self.opt.zero_grad()\n"
        "            self.model(x).sum().backward()\n"
        "            self.opt.step()\n"
        "    def fit(self, n):\n"
        "        for _ in range(n):\n"
        "            self.epoch()\n"
    )
    report = analyze_source(source, "train.py", LintSettings(select=("TW017",)))
    [finding] = report.findings
    assert finding.span.line == 13
    assert [e.span.line for e in finding.evidence][:3] == [13, 12, 6]


PEFT_PATCH = (
    "import types\n"
    "from peft import get_peft_model, get_peft_model_state_dict\n"
    "def {name}(self):\n"
    "    return {body}\n"
    "def main(base, config, accelerator, out):\n"
    "    model = get_peft_model(base, config)\n"
    "    model.state_dict = types.MethodType(adapter_only, model)\n"
    "    accelerator.unwrap_model(model).save_pretrained(out)\n"
)


def test_a_named_patching_function_and_an_unwrapped_save():
    source = PEFT_PATCH.format(name="adapter_only", body="get_peft_model_state_dict(self)")
    assert _lines("TW027", source) == [7]


def test_a_named_function_that_builds_no_adapter_state_is_no_patch():
    source = PEFT_PATCH.format(name="adapter_only", body="{}") + (
        "def unrelated(model):\n    return get_peft_model_state_dict(model)\n"
    )
    assert _lines("TW027", source) == []


WEIGHTED = (
    "import torch\n"
    "def train(model, loader, optimizer, class_weights):\n"
    "    for x, y in loader:\n"
    "        weight = torch.tensor(class_weights).cuda()\n"
    "{extra}"
    "        optimizer.zero_grad()\n"
    "        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda(), weight=weight)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


def test_a_host_factory_over_an_untouched_parameter_is_loop_invariant():
    assert _lines("TW013", WEIGHTED.format(extra="")) == [4]


def test_a_parameter_the_loop_changes_is_not_invariant():
    changed = "        class_weights.append(1.0)\n"
    assert _lines("TW013", WEIGHTED.format(extra=changed)) == []


def test_a_model_handed_in_is_moved_once_not_per_batch():
    source = (
        "import torch\n"
        "def train(model, loader, optimizer, device):\n"
        "    for x, y in loader:\n"
        "        model.to(device)\n"
        "        optimizer.zero_grad()\n"
        "        torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()\n"
        "        optimizer.step()\n"
    )
    assert _lines("TW013", source) == [4]
    per_fold = source.replace(
        "        model.to(device)\n", "        model = make()\n        model.to(device)\n"
    )
    assert _lines("TW013", per_fold) == []


def test_two_calls_of_a_trainer_are_no_micro_batch_loop():
    """A search loop calls the whole training function per candidate and the script calls
    it once more outside the loop: the helper's unscale (in its own gated batch loop)
    and the other call's step are not one micro-step loop."""
    source = (
        "import torch\n"
        "def train(model, loader, optimizer, accum):\n"
        "    scaler = torch.amp.GradScaler()\n"
        "    for i, (x, y) in enumerate(loader):\n"
        "        scaler.scale(model(x).sum()).backward()\n"
        "        if (i + 1) % accum == 0:\n"
        "            scaler.unscale_(optimizer)\n"
        "            scaler.step(optimizer)\n"
        "            scaler.update()\n"
        "def main(model, loader, optimizer, candidates):\n"
        "    train(model, loader, optimizer, 2)\n"
        "    for accum in candidates:\n"
        "        train(model, loader, optimizer, accum)\n"
    )
    assert _lines("TW025", source) == []
