"""Trust on real training code (issue 9): the classes of wrong findings and of misses.

Each class of mistake met while triaging real training scripts (docs/triage/) has at
least two positive cases (the rule must still fire) and two negative ones (it must stay
quiet), written as the multi-function and class-based code those scripts are made of.
The snippets restate the shapes in our own words; none is copied from a repository.

A line the rule must report ends with ``# expect: TWxxx``; :func:`expected` reads the
markers, so each test states where the finding goes without counting lines by hand.
"""

from __future__ import annotations

import textwrap

from torchward.analysis import Severity, analyze_source


def _report(source: str):
    return analyze_source(textwrap.dedent(source), "train.py").findings


def flagged(source: str, code: str) -> list[int]:
    """The lines ``code`` reports in ``source``."""
    return sorted(f.span.line for f in _report(source) if f.code == code)


def expected(source: str, code: str) -> list[int]:
    marker = f"# expect: {code}"
    return [n for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if marker in line]


def severities(source: str, code: str) -> list[Severity]:
    return [f.severity for f in _report(source) if f.code == code]


def assert_exact(source: str, code: str) -> None:
    want = expected(source, code)
    assert want, "a positive case needs an `# expect:` marker"
    assert flagged(source, code) == want


def assert_quiet(source: str, code: str) -> None:
    assert flagged(source, code) == []


# --- class 1: a loss built up inside one iteration is not an accumulator ---------------

CLASS1_AUX_LOSS_IN_TRAINER = """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def __init__(self, model, optimizer, loader, aux_weight):
            self.model = model
            self.optimizer = optimizer
            self.loader = loader
            self.aux_weight = aux_weight

        def train_epoch(self):
            self.model.train()
            for images, labels in self.loader:
                logits, aux_logits = self.model(images)
                loss = F.cross_entropy(logits, labels)
                loss += self.aux_weight * F.cross_entropy(aux_logits, labels)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""

CLASS1_TERMS_FROM_A_DICT_OF_PARTS = """
    import torch

    LOSS_WEIGHTS = {"box": 0.05, "cls": 0.5}

    def criterion_parts(outputs, targets, criterion):
        return criterion(outputs, targets)

    def train(model, loader, optimizer, criterion):
        for images, targets in loader:
            parts = criterion_parts(model(images), targets, criterion)
            loss = parts["box"] * LOSS_WEIGHTS["box"]
            loss += parts["cls"] * LOSS_WEIGHTS["cls"]
            for name in ("obj",):
                loss = loss + parts[name]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

CLASS1_RUNNING_TOTAL_IN_TRAINER = """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def __init__(self, model, optimizer, l2):
            self.model = model
            self.optimizer = optimizer
            self.l2 = l2

        def penalty(self):
            return sum(p.pow(2).sum() for p in self.model.parameters())

        def fit(self, loader):
            running = 0.0
            for images, labels in loader:
                loss = F.cross_entropy(self.model(images), labels)
                loss += self.l2 * self.penalty()
                running += loss  # expect: TW001
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            return running / len(loader)
"""

CLASS1_EPOCH_TOTAL_REBOUND = """
    import torch

    def compute_loss(model, batch, criterion):
        inputs, targets = batch
        loss = criterion(model(inputs), targets)
        loss = loss + 0.01 * model(inputs).abs().mean()
        return loss

    def train(model, loader, optimizer, criterion):
        epoch_loss = torch.zeros(())
        for batch in loader:
            loss = compute_loss(model, batch, criterion)
            epoch_loss = epoch_loss + loss  # expect: TW001
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch_loss.item())
"""


def test_class1_aux_loss_added_in_the_iteration_is_quiet():
    assert_quiet(CLASS1_AUX_LOSS_IN_TRAINER, "TW001")


def test_class1_loss_assembled_from_weighted_parts_is_quiet():
    assert_quiet(CLASS1_TERMS_FROM_A_DICT_OF_PARTS, "TW001")


def test_class1_running_total_outside_the_loop_is_reported():
    assert_exact(CLASS1_RUNNING_TOTAL_IN_TRAINER, "TW001")


def test_class1_epoch_total_rebound_from_itself_is_reported():
    assert_exact(CLASS1_EPOCH_TOTAL_REBOUND, "TW001")


# --- class 2: containers created in the iteration, rebinding a slice -------------------

CLASS2_DICT_FROM_AN_OPAQUE_LOSS = """
    import torch

    def backward(total, scaler):
        if scaler is not None:
            scaler.scale(total).backward()
        else:
            total.backward()

    def train_one_epoch(model, loader, clip_loss, optimizer, scaler, accum_freq):
        model.train()
        cached_images = []
        for i, images in enumerate(loader):
            optimizer.zero_grad()
            if accum_freq == 1:
                outputs = model(images)
                losses = clip_loss(**outputs, output_dict=True)
                total = sum(losses.values())
                losses["loss"] = total
                backward(total, scaler)
            else:
                cached_images.append(images)
                if (i + 1) % accum_freq > 0:
                    continue
                for j in range(accum_freq):
                    images = cached_images[j]
                    outputs = model(images)
                    losses = clip_loss(**outputs, output_dict=True)
                    total = sum(losses.values())
                    losses["loss"] = total
                    backward(total, scaler)
                cached_images = []
            optimizer.step()
            print({k: v.item() for k, v in losses.items()})
"""

CLASS2_CHUNKS_REBOUND_IN_THE_ITERATION = """
    import torch
    import torch.nn.functional as F

    def chunked_loss(logits, labels, chunk):
        pieces = logits.split(chunk, dim=1)
        pieces = list(pieces)
        pieces[-1] = pieces[-1][..., :-1, :]
        return sum(F.cross_entropy(p.flatten(0, 1), labels) for p in pieces)

    def train(model, loader, optimizer, chunk):
        for tokens, labels in loader:
            hidden = model(tokens)
            chunks = hidden.chunk(4, dim=1)
            chunks[-1] = chunks[-1][..., :-1, :]
            features = {}
            for key in ("a", "b"):
                features[key] = torch.cat([chunks[0], chunks[-1]], dim=1)
            loss = chunked_loss(features["a"], labels, chunk)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

CLASS2_OUTPUTS_KEPT_BY_STEP = """
    import torch

    class Trainer:
        def __init__(self, model, optimizer, criterion):
            self.model = model
            self.optimizer = optimizer
            self.criterion = criterion

        def fit(self, loader):
            outputs_by_step = {}
            for step, (x, y) in enumerate(loader):
                logits = self.model(x)
                outputs_by_step[step] = logits  # expect: TW001
                loss = self.criterion(logits, y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            return len(outputs_by_step)
"""

CLASS2_RING_BUFFER_OUTSIDE_THE_LOOP = """
    import torch

    def train(model, loader, optimizer, criterion, window):
        recent = [None] * window
        for i, (x, y) in enumerate(loader):
            logits = model(x)
            loss = criterion(logits, y)
            recent[i % window] = loss  # expect: TW001
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return recent
"""


def test_class2_dict_returned_by_the_loss_in_the_iteration_is_quiet():
    assert_quiet(CLASS2_DICT_FROM_AN_OPAQUE_LOSS, "TW001")


def test_class2_chunks_and_dicts_made_in_the_iteration_are_quiet():
    assert_quiet(CLASS2_CHUNKS_REBOUND_IN_THE_ITERATION, "TW001")


def test_class2_dict_created_before_the_loop_is_reported():
    assert_exact(CLASS2_OUTPUTS_KEPT_BY_STEP, "TW001")


def test_class2_ring_buffer_created_before_the_loop_is_reported():
    assert_exact(CLASS2_RING_BUFFER_OUTSIDE_THE_LOOP, "TW001")


# --- class 3: no_grad through dataflow; two variables with one name ------------------

CLASS3_INFERENCE_METHOD_CALLS_A_HELPER = """
    import torch

    class Evaluator:
        def __init__(self, model):
            self.model = model

        def _embed(self, batch):
            return self.model(batch)

        @torch.inference_mode()
        def collect(self, loader):
            feats = []
            for batch in loader:
                feats.append(self._embed(batch))
            return feats

    def main(model, loader):
        evaluator = Evaluator(model)
        bank = evaluator.collect(loader)
        print(len(bank))
"""

CLASS3_GRAD_DISABLED_FOR_THE_SCRIPT = """
    import torch
    from torch.utils.data import DataLoader

    def extract(model, loader):
        outputs = []
        for batch in loader:
            outputs.append(model(batch))
        return outputs

    def main(model, dataset):
        torch.set_grad_enabled(False)
        model.eval()
        loader = DataLoader(dataset, batch_size=8)
        outputs = extract(model, loader)
        print(len(outputs))
"""

CLASS3_GUARD_HELD_IN_A_VARIABLE = """
    import torch

    def evaluate(model, loader, criterion):
        guard = torch.no_grad()
        model.eval()
        losses = []
        with guard:
            for x, y in loader:
                losses.append(criterion(model(x), y))
        model.train()
        return sum(losses) / len(losses)

    def main(model, loader, criterion):
        print(evaluate(model, loader, criterion))
"""

CLASS3_SAME_NAME_IN_TWO_PASSES = """
    import torch
    from torch.utils.data import DataLoader
    from mylib import score_batch

    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = torch.nn.CrossEntropyLoss()
    loader = DataLoader(range(8), batch_size=2)

    val_losses = []
    for x, y in loader:
        loss = score_batch(x, y)
        val_losses.append(loss)

    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""

CLASS3_HELPER_WITHOUT_GUARD = """
    import torch

    class Evaluator:
        def __init__(self, model):
            self.model = model

        def _embed(self, batch):
            return self.model(batch)

        def collect(self, loader):
            self.model.eval()
            feats = []
            for batch in loader:
                feats.append(self._embed(batch))  # expect: TW001
            return feats

    def main(model, loader):
        evaluator = Evaluator(model)
        bank = evaluator.collect(loader)
        print(len(bank))
"""

CLASS3_TRAINING_LOSS_CITED_IN_ITS_OWN_LOOP = """
    import torch
    from torch.utils.data import DataLoader

    def validation_loss(model, loader, criterion):
        loss = 0.0
        with torch.no_grad():
            for x, y in loader:
                loss += criterion(model(x), y).item()
        return loss

    def train(model, loader, optimizer, criterion):
        history = []
        for x, y in loader:
            loss = criterion(model(x), y)
            history.append(loss)  # expect: TW001
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(validation_loss(model, loader, criterion), len(history))
"""


def test_class3_inference_mode_reaches_the_helper_a_method_calls():
    assert_quiet(CLASS3_INFERENCE_METHOD_CALLS_A_HELPER, "TW001")


def test_class3_grad_disabled_by_a_statement_reaches_later_calls():
    assert_quiet(CLASS3_GRAD_DISABLED_FOR_THE_SCRIPT, "TW001")


def test_class3_no_grad_guard_held_in_a_variable_is_followed():
    assert_quiet(CLASS3_GUARD_HELD_IN_A_VARIABLE, "TW001")


def test_class3_a_name_reused_by_an_earlier_pass_is_not_proven_by_a_later_backward():
    assert_quiet(CLASS3_SAME_NAME_IN_TWO_PASSES, "TW001")


def test_class3_helper_called_with_gradients_on_is_reported():
    assert_exact(CLASS3_HELPER_WITHOUT_GUARD, "TW001")


def test_class3_evidence_cites_the_statement_of_the_training_loop():
    assert_exact(CLASS3_TRAINING_LOSS_CITED_IN_ITS_OWN_LOOP, "TW001")
    [finding] = [
        f for f in _report(CLASS3_TRAINING_LOSS_CITED_IN_ITS_OWN_LOOP) if f.code == "TW001"
    ]
    # the graph is proven in the training loop (lines 13-19), not by the helper's `loss`
    assert 13 <= finding.evidence[0].span.line <= 19


# --- class 4: statistics stored after a helper's backward, cleared every update --------

CLASS4_WINDOW_CLEARED_AFTER_EACH_LOG = """
    import torch

    class Trainer:
        def __init__(self, model, optimizer, log_every):
            self.model = model
            self.optimizer = optimizer
            self.log_every = log_every

        def train_step(self, batch):
            loss = self.model(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return {"loss": loss, "tokens": batch.numel()}

        def fit(self, loader):
            window = []
            for step, batch in enumerate(loader):
                window.append(self.train_step(batch))
                if (step + 1) % self.log_every == 0:
                    print(sum(s["loss"].item() for s in window) / len(window))
                    window.clear()
"""

CLASS4_STATS_REBOUND_AFTER_EACH_UPDATE = """
    import torch

    def micro_step(model, batch, accum):
        loss = model(batch).mean() / accum
        loss.backward()
        return loss, loss * accum

    def train(model, loader, optimizer, accum):
        stats = []
        for i, batch in enumerate(loader):
            scaled, raw = micro_step(model, batch, accum)
            stats.append(raw)
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
                print(torch.stack(stats).mean().item())
                stats = []
"""

CLASS4_WINDOW_NEVER_CLEARED = """
    import torch

    class Trainer:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer

        def train_step(self, batch):
            loss = self.model(batch).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return {"loss": loss}

        def fit(self, loader):
            history = []
            for batch in loader:
                history.append(self.train_step(batch))  # expect: TW001
            return len(history)
"""

CLASS4_STORED_BEFORE_THE_CALLERS_BACKWARD = """
    import torch

    def forward_step(model, batch):
        return model(batch).mean()

    def train(model, loader, optimizer):
        stats = []
        for i, batch in enumerate(loader):
            loss = forward_step(model, batch)
            stats.append(loss)  # expect: TW001
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


CLASS4_STATS_SUMMED_ACROSS_MICRO_BATCHES = """
    import torch
    from mylib import StepStats

    class PolicyTrainer:
        def micro_step(self, batch):
            loss = self.policy(batch).mean()
            loss.backward()
            return StepStats(loss, loss.abs())

        def train(self, loader):
            for batch in loader:
                epoch_stats = []
                for _ in range(self.epochs):
                    for start in range(0, 8, 2):
                        micro_stats = []
                        for _ in range(2):
                            micro_stats.append(self.micro_step(batch))  # expect: TW001
                        epoch_stats.append(StepStats(*map(sum, zip(*micro_stats))))  # expect: TW001
                        self.optimizer.step()
                        self.optimizer.zero_grad()
"""


def test_class4_window_cleared_after_logging_is_quiet():
    assert_quiet(CLASS4_WINDOW_CLEARED_AFTER_EACH_LOG, "TW001")


def test_class4_stats_rebound_after_each_update_is_quiet():
    assert_quiet(CLASS4_STATS_REBOUND_AFTER_EACH_UPDATE, "TW001")


def test_class4_stats_kept_for_the_whole_run_are_a_warning():
    assert_exact(CLASS4_WINDOW_NEVER_CLEARED, "TW001")
    assert severities(CLASS4_WINDOW_NEVER_CLEARED, "TW001") == [Severity.WARNING]


def test_class4_sums_of_backpropagated_stats_are_warnings_not_errors():
    # what a helper already ran backward() on stays "after backward" through a list,
    # zip() and sum(): only the graph's nodes are kept, not the activations
    assert_exact(CLASS4_STATS_SUMMED_ACROSS_MICRO_BATCHES, "TW001")
    assert severities(CLASS4_STATS_SUMMED_ACROSS_MICRO_BATCHES, "TW001") == [Severity.WARNING] * 2


def test_class4_stored_before_backward_is_an_error():
    assert_exact(CLASS4_STORED_BEFORE_THE_CALLERS_BACKWARD, "TW001")
    assert severities(CLASS4_STORED_BEFORE_THE_CALLERS_BACKWARD, "TW001") == [Severity.ERROR]


# --- class 5: TW014 with the normalisation done elsewhere ----------------------------

CLASS5_DIVIDED_ONLY_WHEN_ACCUMULATING = """
    import torch
    from torch.nn import CrossEntropyLoss, MSELoss

    def train(args, model, loader, optimizer, n_gpu):
        model.train()
        for step, batch in enumerate(loader):
            inputs, labels = batch
            logits = model(inputs)
            if args.task == "classification":
                loss = CrossEntropyLoss()(logits, labels)
            elif args.task == "regression":
                loss = MSELoss()(logits.view(-1), labels.view(-1))
            if n_gpu > 1:
                loss = loss.mean()
            if args.gradient_accumulation_steps > 1:
                loss = loss / args.gradient_accumulation_steps
            if args.fp16:
                optimizer.backward(loss)
            else:
                loss.backward()
            if (step + 1) % args.gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
"""

CLASS5_TOKEN_SUM_THEN_GRADIENTS_DIVIDED = """
    import torch
    import torch.nn.functional as F

    class LMTrainer:
        def __init__(self, model, optimizer, accum):
            self.model = model
            self.optimizer = optimizer
            self.accum = accum

        def fit(self, loader):
            tokens_seen = 0
            for i, (tokens, labels) in enumerate(loader):
                logits = self.model(tokens)
                loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="sum")
                loss = loss + 0.0 * logits.mean()
                tokens_seen += labels.numel()
                loss.backward()
                if (i + 1) % self.accum == 0:
                    for p in self.model.parameters():
                        if p.grad is not None:
                            p.grad.div_(tokens_seen)
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    tokens_seen = 0
"""

CLASS5_MEAN_LOSS_GRADIENTS_DIVIDED_AT_THE_STEP = """
    import torch

    def train(model, loader, optimizer, criterion, accum):
        for i, (x, y) in enumerate(loader):
            loss = criterion(model(x), y)
            loss.backward()
            if (i + 1) % accum == 0:
                for p in model.parameters():
                    p.grad /= accum
                optimizer.step()
                optimizer.zero_grad()
"""

CLASS5_DIVIDED_IN_A_METHOD = """
    import torch

    class Trainer:
        def __init__(self, model, optimizer, criterion, accum_steps):
            self.model = model
            self.optimizer = optimizer
            self.criterion = criterion
            self.accum_steps = accum_steps

        def compute_loss(self, batch):
            x, y = batch
            return self.criterion(self.model(x), y) / self.accum_steps

        def fit(self, loader):
            for i, batch in enumerate(loader):
                loss = self.compute_loss(batch)
                loss.backward()
                if (i + 1) % self.accum_steps == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""

CLASS5_HELPER_THAT_DOES_NOT_DIVIDE = """
    import torch
    import torch.nn.functional as F

    class Trainer:
        def __init__(self, model, optimizer, accum_steps):
            self.model = model
            self.optimizer = optimizer
            self.accum_steps = accum_steps

        def compute_loss(self, batch):
            x, y = batch
            return F.cross_entropy(self.model(x), y)

        def fit(self, loader):
            for i, batch in enumerate(loader):
                loss = self.compute_loss(batch)
                loss.backward()  # expect: TW014
                if (i + 1) % self.accum_steps == 0:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
"""

CLASS5_LOGGED_DIVISION_DOES_NOT_COUNT = """
    import torch
    import torch.nn.functional as F

    def train(model, loader, optimizer, accum):
        for i, (x, y) in enumerate(loader):
            loss = F.cross_entropy(model(x), y)
            shown = loss.item() / accum
            loss.backward()  # expect: TW014
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
                print(shown)
"""


def test_class5_division_guarded_by_the_accumulation_count_is_quiet():
    assert_quiet(CLASS5_DIVIDED_ONLY_WHEN_ACCUMULATING, "TW014")


def test_class5_summed_loss_with_gradients_divided_by_tokens_is_quiet():
    assert_quiet(CLASS5_TOKEN_SUM_THEN_GRADIENTS_DIVIDED, "TW014")


def test_class5_gradients_divided_before_the_step_is_quiet():
    assert_quiet(CLASS5_MEAN_LOSS_GRADIENTS_DIVIDED_AT_THE_STEP, "TW014")


def test_class5_division_inside_a_method_is_quiet():
    assert_quiet(CLASS5_DIVIDED_IN_A_METHOD, "TW014")


def test_class5_helper_method_that_never_divides_is_reported():
    assert_exact(CLASS5_HELPER_THAT_DOES_NOT_DIVIDE, "TW014")


def test_class5_dividing_a_logged_copy_is_not_normalisation():
    assert_exact(CLASS5_LOGGED_DIVISION_DOES_NOT_COUNT, "TW014")


# --- wrong findings met on the development corpus, outside the five classes ---------

ENGINE_BACKWARD_TAKES_THE_LOSS = """
    import deepspeed
    from mylib import convert_to_sparse

    def train(args, model, loader, total_tokens):
        model, optimizer, _, scheduler = deepspeed.initialize(model=model, args=args)
        if args.sparse:
            model = convert_to_sparse(model)
        consumed = 0
        while consumed < total_tokens:
            for batch in loader:
                loss = model(**batch).loss
                model.backward(loss)
                length = model.sparse_scheduler.current_length()
                consumed += length * args.batch_size
                model.step()
"""

ENGINE_LOSS_KEPT_BEFORE_ITS_BACKWARD = """
    import deepspeed

    def train(args, model, loader):
        engine, optimizer, _, scheduler = deepspeed.initialize(model=model, args=args)
        losses = []
        for batch in loader:
            loss = engine(**batch).loss
            losses.append(loss)  # expect: TW001
            engine.backward(loss)
            engine.step()
"""

IMPORTED_RESET_HELPER = """
    import torch
    from .fp16 import zero_grad

    class TrainLoop:
        def __init__(self, model, optimizer, data, microbatch):
            self.model = model
            self.params = list(model.parameters())
            self.opt = optimizer
            self.data = data
            self.microbatch = microbatch

        def run(self):
            while True:
                batch = next(self.data)
                self.run_step(batch)

        def run_step(self, batch):
            self.forward_backward(batch)
            self.opt.step()

        def forward_backward(self, batch):
            zero_grad(self.params)
            for i in range(0, batch.shape[0], self.microbatch):
                loss = self.model(batch[i : i + self.microbatch]).mean()
                loss.backward()
"""

HELPER_STEPS_WITHOUT_ANY_RESET = """
    import torch

    class TrainLoop:
        def __init__(self, model, optimizer, data):
            self.model = model
            self.opt = optimizer
            self.data = data

        def run(self):
            while True:
                batch = next(self.data)
                self.run_step(batch)  # expect: TW003

        def run_step(self, batch):
            loss = self.model(batch).mean()
            loss.backward()
            self.opt.step()
"""

STATISTICS_NEXT_TO_THE_LOSS = """
    import torch
    from mylib.losses import DetectionLoss

    def train(model, loader, optimizer, scaler, hyp, epochs):
        compute_loss = DetectionLoss(model, hyp)
        for epoch in range(epochs):
            mean_items = torch.zeros(3)
            for i, (imgs, targets) in enumerate(loader):
                pred = model(imgs)
                loss, loss_items = compute_loss(pred, targets)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                mean_items = (mean_items * i + loss_items) / (i + 1)
            print(epoch, mean_items.tolist())
"""

STATISTICS_NEXT_TO_THE_LOSS_IN_A_CLASS = """
    import torch
    from mylib.losses import DetectionLoss

    class Trainer:
        def __init__(self, model, optimizer, hyp):
            self.model = model
            self.optimizer = optimizer
            self.compute_loss = DetectionLoss(model, hyp)

        def epoch(self, loader):
            history = []
            for imgs, targets in loader:
                loss, items = self.compute_loss(self.model(imgs), targets)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                history.append(items)
            print(len(history))
"""

MODEL_TUPLE_OUTPUT_KEPT = """
    import torch
    import torch.nn as nn

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(8, 8)
            self.main = nn.Linear(8, 2)
            self.aux = nn.Linear(8, 2)

        def forward(self, x):
            h = self.body(x)
            return self.main(h), self.aux(h)

    def train(loader, criterion):
        model = TwoHeads()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        aux_outputs = []
        for x, y in loader:
            logits, aux = model(x)
            aux_outputs.append(aux)  # expect: TW001
            loss = criterion(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_engine_backward_proves_nothing_about_the_engine():
    assert_quiet(ENGINE_BACKWARD_TAKES_THE_LOSS, "TW001")


def test_engine_loss_stored_before_its_backward_is_reported():
    assert_exact(ENGINE_LOSS_KEPT_BEFORE_ITS_BACKWARD, "TW001")


def test_an_imported_reset_helper_resets_the_gradients():
    assert_quiet(IMPORTED_RESET_HELPER, "TW003")


def test_a_step_in_a_helper_without_any_reset_is_reported():
    assert_exact(HELPER_STEPS_WITHOUT_ANY_RESET, "TW003")


def test_statistics_unpacked_next_to_the_loss_are_not_proven_graphs():
    assert_quiet(STATISTICS_NEXT_TO_THE_LOSS, "TW001")
    assert_quiet(STATISTICS_NEXT_TO_THE_LOSS_IN_A_CLASS, "TW001")


def test_a_tuple_returned_by_the_model_still_carries_the_graph():
    assert_exact(MODEL_TUPLE_OUTPUT_KEPT, "TW001")


# --- abs() and round() keep the graph (Tensor.__abs__ / Tensor.__round__) ------------

ABS_OF_THE_LOSS_KEPT = """
    import torch

    class Trainer:
        def __init__(self, model, optimizer, criterion):
            self.model = model
            self.optimizer = optimizer
            self.criterion = criterion
            self.history = []

        def fit(self, loader):
            for x, y in loader:
                loss = self.criterion(self.model(x), y)
                self.history.append(abs(loss))  # expect: TW001
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""

ROUNDED_LOSS_SUMMED = """
    import torch

    def train(model, loader, optimizer, criterion):
        shown = 0
        for x, y in loader:
            loss = criterion(model(x), y)
            shown += round(loss, 4)  # expect: TW001
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(shown)
"""

ROUNDED_NUMBERS_ONLY = """
    import torch

    def train(model, loader, optimizer, criterion):
        shown, drift = [], 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            shown.append(round(loss.item(), 4))
            drift += abs(float(loss) - 1.0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(shown, drift)
"""

ABS_INSIDE_THE_LOSS_IS_PART_OF_IT = """
    import torch

    def train(model, loader, optimizer, accum):
        for i, (x, y) in enumerate(loader):
            loss = abs(model(x) - y).mean() / accum
            loss.backward()
            if (i + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
"""


def test_abs_of_a_loss_still_carries_the_graph():
    assert_exact(ABS_OF_THE_LOSS_KEPT, "TW001")


def test_round_of_a_loss_still_carries_the_graph():
    assert_exact(ROUNDED_LOSS_SUMMED, "TW001")


def test_abs_and_round_of_numbers_carry_nothing():
    assert_quiet(ROUNDED_NUMBERS_ONLY, "TW001")


def test_abs_keeps_the_division_of_the_loss():
    assert_quiet(ABS_INSIDE_THE_LOSS_IS_PART_OF_IT, "TW014")
    assert_quiet(ABS_INSIDE_THE_LOSS_IS_PART_OF_IT, "TW001")


# --- class 6: misses --------------------------------------------------------------

EVAL_WITH_A_KNOWN_CALLER = """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x)

    def evaluate(model, loader):
        model.eval()
        correct = 0
        for x, y in loader:  # expect: TW002
            out = model(x)
            correct += (out.argmax(1) == y).sum().item()
        model.train()
        return correct

    def main():
        model = Net()
        loader = DataLoader(range(8), batch_size=2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        print(evaluate(model, loader))
"""

EVAL_CALLED_UNDER_NO_GRAD = EVAL_WITH_A_KNOWN_CALLER.replace(
    "        print(evaluate(model, loader))",
    "        with torch.no_grad():\n            print(evaluate(model, loader))",
).replace("  # expect: TW002", "")

HF_OUTPUT_LOGITS_KEPT = """
    import torch
    from transformers import AutoModelForSequenceClassification

    def train(loader, optimizer):
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
        all_logits = []
        for batch in loader:
            outputs = model(**batch)
            all_logits.append(outputs.logits)  # expect: TW001
            outputs.loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        return len(all_logits)
"""

HF_OUTPUT_PREDICTIONS_KEPT = """
    import torch
    from transformers import AutoModelForSequenceClassification

    def train(loader, optimizer):
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
        predictions, losses = [], []
        for batch in loader:
            outputs = model(**batch)
            predictions.append(outputs.logits.argmax(-1))
            losses.append(outputs.loss.item())
            outputs.loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        return predictions, losses
"""

LAYERS_IN_A_PLAIN_CLASS = """
    import torch
    import torch.nn as nn

    class Stack:
        def __init__(self, width):
            self.layers = [nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)]

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

        def parameters(self):
            return [p for layer in self.layers for p in layer.parameters()]

    def train(loader, width):
        net = Stack(width)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        activations = []
        for x, y in loader:
            out = net(x)
            activations.append(out)  # expect: TW001
            loss = (out - y).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(len(activations))
"""

LAYERS_IN_A_LOCAL_LIST = """
    import torch
    import torch.nn as nn

    def train(loader):
        layers = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)]
        optimizer = torch.optim.SGD([p for l in layers for p in l.parameters()], lr=0.1)
        feats = []
        for x, y in loader:
            h = x
            for layer in layers:
                h = layer(h)
            feats.append(h)  # expect: TW001
            loss = nn.functional.cross_entropy(h, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(len(feats))
"""

LAYERS_IN_A_LIST_DETACHED = LAYERS_IN_A_LOCAL_LIST.replace(
    "feats.append(h)  # expect: TW001", "feats.append(h.detach())"
)

LAYERS_IN_A_LIST_UNDER_NO_GRAD = """
    import torch
    import torch.nn as nn

    def embed(loader):
        layers = [nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)]
        feats = []
        with torch.no_grad():
            for x in loader:
                for layer in layers:
                    x = layer(x)
                feats.append(x)
        print(len(feats))
"""

HISTORY_ON_SELF_IN_A_STEP_METHOD = """
    import torch
    from collections import defaultdict

    class Trainer:
        def __init__(self, model, optimizer, criterion):
            self.model = model
            self.optimizer = optimizer
            self.criterion = criterion
            self.history = []
            self.metrics = defaultdict(list)

        def step(self, x, y):
            loss = self.criterion(self.model(x), y)
            self.history.append(loss)  # expect: TW001
            self.metrics["loss"].append(loss)  # expect: TW001
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        def fit(self, loader):
            for x, y in loader:
                self.step(x, y)
"""

HISTORY_ON_SELF_AS_NUMBERS = HISTORY_ON_SELF_IN_A_STEP_METHOD.replace(
    "self.history.append(loss)  # expect: TW001", "self.history.append(loss.item())"
).replace(
    'self.metrics["loss"].append(loss)  # expect: TW001', 'self.metrics["loss"].append(float(loss))'
)

FEATURE_BANK_ON_SELF = """
    import torch
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 8)

        def forward(self, x):
            return self.proj(x)

    class Memory:
        def __init__(self, encoder):
            self.encoder = encoder
            self.bank = {}

        def update(self, loader, optimizer):
            for idx, x in loader:
                feats = self.encoder(x)
                self.bank[idx] = feats  # expect: TW001
                loss = feats.pow(2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

    def main(loader):
        encoder = Encoder()
        memory = Memory(encoder)
        memory.update(loader, torch.optim.SGD(encoder.parameters(), lr=0.1))
"""

FEATURE_BANK_DETACHED = FEATURE_BANK_ON_SELF.replace(
    "self.bank[idx] = feats  # expect: TW001", "self.bank[idx] = feats.detach()"
)

GAN_GENERATOR_NEVER_RESET = """
    import torch

    def train_gan(net_g, net_d, loader, criterion, noise_dim):
        opt_d = torch.optim.Adam(net_d.parameters(), lr=2e-4)
        opt_g = torch.optim.Adam(net_g.parameters(), lr=2e-4)
        for real in loader:
            opt_d.zero_grad()
            out = net_d(real)
            loss_d = criterion(out, torch.ones_like(out))
            loss_d.backward()
            opt_d.step()

            fake = net_g(torch.randn(real.size(0), noise_dim))
            out = net_d(fake)
            loss_g = criterion(out, torch.ones_like(out))
            loss_g.backward()
            opt_g.step()  # expect: TW003
"""

GAN_BOTH_RESET = GAN_GENERATOR_NEVER_RESET.replace(
    "            fake = net_g(", "            opt_g.zero_grad()\n            fake = net_g("
).replace("  # expect: TW003", "")

GAN_RESET_THROUGH_THE_MODELS = """
    import torch

    def train_gan(net_g, net_d, loader, criterion, noise_dim):
        opt_d = torch.optim.Adam(net_d.parameters(), lr=2e-4)
        opt_g = torch.optim.Adam(net_g.parameters(), lr=2e-4)
        for real in loader:
            net_d.zero_grad()
            out = net_d(real)
            criterion(out, torch.ones_like(out)).backward()
            opt_d.step()
            net_g.zero_grad()
            out = net_d(net_g(torch.randn(real.size(0), noise_dim)))
            criterion(out, torch.ones_like(out)).backward()
            opt_g.step()
"""

STEP_IN_A_HELPER_FUNCTION = """
    import torch

    def update(optimizer, scheduler):
        optimizer.step()
        scheduler.step()

    def train(model, loader, optimizer, scheduler, criterion):
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            update(optimizer, scheduler)  # expect: TW003
"""

STEP_AND_RESET_IN_A_HELPER = STEP_IN_A_HELPER_FUNCTION.replace(
    "        scheduler.step()\n", "        scheduler.step()\n        optimizer.zero_grad()\n"
).replace("  # expect: TW003", "")

DDP_WITH_A_RANDOM_SAMPLER = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, RandomSampler

    def main(model, dataset, criterion, rank):
        torch.distributed.init_process_group("nccl")
        model = DDP(model.to(rank), device_ids=[rank])
        loader = DataLoader(dataset, batch_size=32, sampler=RandomSampler(dataset))  # expect: TW012
        optimizer = torch.optim.AdamW(model.parameters())
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
"""

DDP_WITH_A_SAMPLER_PER_MODE = """
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, RandomSampler

    def main(model, dataset, criterion, rank, local_rank):
        torch.distributed.init_process_group("nccl")
        model = DDP(model.to(rank), device_ids=[rank])
        if local_rank == -1:
            sampler = RandomSampler(dataset)
        else:
            sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        batches = BatchSampler(DistributedSampler(dataset), batch_size=32, drop_last=True)
        other = DataLoader(dataset, batch_sampler=batches)
        optimizer = torch.optim.AdamW(model.parameters())
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        for x, y in other:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
"""

AMP_ACCUMULATION_WITHOUT_DIVISION = """
    import torch

    class AmpTrainer:
        def __init__(self, model, optimizer, criterion, accum_steps):
            self.model = model
            self.optimizer = optimizer
            self.criterion = criterion
            self.accum_steps = accum_steps
            self.scaler = torch.amp.GradScaler("cuda")

        def fit(self, loader):
            for i, (x, y) in enumerate(loader):
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = self.criterion(self.model(x), y)
                self.scaler.scale(loss).backward()  # expect: TW014
                if (i + 1) % self.accum_steps == 0:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                    self.optimizer.zero_grad()
"""

AMP_ACCUMULATION_DIVIDED = AMP_ACCUMULATION_WITHOUT_DIVISION.replace(
    "self.scaler.scale(loss).backward()  # expect: TW014",
    "self.scaler.scale(loss / self.accum_steps).backward()",
)

AMP_ACCUMULATION_DIVIDED_BEFORE = AMP_ACCUMULATION_WITHOUT_DIVISION.replace(
    "loss = self.criterion(self.model(x), y)",
    "loss = self.criterion(self.model(x), y)\n                    loss = loss / self.accum_steps",
).replace("  # expect: TW014", "")


def test_class6_eval_loop_whose_caller_is_known_is_reported():
    assert_exact(EVAL_WITH_A_KNOWN_CALLER, "TW002")


def test_class6_eval_loop_whose_caller_disables_gradients_is_quiet():
    assert_quiet(EVAL_CALLED_UNDER_NO_GRAD, "TW002")


def test_class6_model_output_fields_carry_the_graph():
    assert_exact(HF_OUTPUT_LOGITS_KEPT, "TW001")
    assert_exact(MODEL_TUPLE_OUTPUT_KEPT, "TW001")


def test_class6_predictions_and_numbers_from_model_outputs_are_quiet():
    assert_quiet(HF_OUTPUT_PREDICTIONS_KEPT, "TW001")


def test_class6_layers_kept_in_a_list_make_a_model():
    assert_exact(LAYERS_IN_A_PLAIN_CLASS, "TW001")
    assert_exact(LAYERS_IN_A_LOCAL_LIST, "TW001")


def test_class6_layers_in_a_list_detached_or_without_grad_are_quiet():
    assert_quiet(LAYERS_IN_A_LIST_DETACHED, "TW001")
    assert_quiet(LAYERS_IN_A_LIST_UNDER_NO_GRAD, "TW001")


def test_class6_stores_on_self_in_a_step_method_are_reported_where_they_happen():
    assert_exact(HISTORY_ON_SELF_IN_A_STEP_METHOD, "TW001")


def test_class6_numbers_stored_on_self_are_quiet():
    assert_quiet(HISTORY_ON_SELF_AS_NUMBERS, "TW001")


def test_class6_dict_store_into_a_bank_on_self_is_reported():
    assert_exact(FEATURE_BANK_ON_SELF, "TW001")


def test_class6_detached_bank_entries_are_quiet():
    assert_quiet(FEATURE_BANK_DETACHED, "TW001")


def test_class6_gan_optimizer_never_reset_is_reported():
    assert_exact(GAN_GENERATOR_NEVER_RESET, "TW003")


def test_class6_gan_with_both_optimizers_or_models_reset_is_quiet():
    assert_quiet(GAN_BOTH_RESET, "TW003")
    assert_quiet(GAN_RESET_THROUGH_THE_MODELS, "TW003")


def test_class6_step_inside_a_helper_without_reset_is_reported():
    assert_exact(STEP_IN_A_HELPER_FUNCTION, "TW003")
    assert_exact(HELPER_STEPS_WITHOUT_ANY_RESET, "TW003")


def test_class6_step_and_reset_inside_a_helper_is_quiet():
    assert_quiet(STEP_AND_RESET_IN_A_HELPER, "TW003")


def test_class6_ddp_with_an_explicit_non_distributed_sampler_is_reported():
    assert_exact(DDP_WITH_A_RANDOM_SAMPLER, "TW012")


def test_class6_ddp_with_a_distributed_sampler_on_some_path_is_quiet():
    assert_quiet(DDP_WITH_A_SAMPLER_PER_MODE, "TW012")


def test_class6_grad_scaler_accumulation_without_division_is_reported():
    assert_exact(AMP_ACCUMULATION_WITHOUT_DIVISION, "TW014")


def test_class6_grad_scaler_accumulation_with_division_is_quiet():
    assert_quiet(AMP_ACCUMULATION_DIVIDED, "TW014")
    assert_quiet(AMP_ACCUMULATION_DIVIDED_BEFORE, "TW014")


# --- TW011 names the loop the eval switch is stuck in --------------------------------

VALIDATION_EVERY_N_STEPS = """
    import torch

    def fit(model, loader, optimizer, val_every):
        for epoch in range(3):
            model.train()
            for step, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
                if step % val_every == 0:
                    model.eval()  # expect: TW011
                    with torch.no_grad():
                        model(x)
"""

VALIDATION_EVERY_EPOCH = """
    import torch

    def fit(model, loader, optimizer):
        model.train()
        for epoch in range(3):
            for x, y in loader:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
            model.eval()  # expect: TW011
"""


def test_eval_stuck_inside_the_step_loop_says_the_following_steps():
    assert_exact(VALIDATION_EVERY_N_STEPS, "TW011")
    [finding] = [f for f in _report(VALIDATION_EVERY_N_STEPS) if f.code == "TW011"]
    assert "the following steps train" in finding.message


def test_eval_stuck_in_the_epoch_loop_says_later_epochs():
    assert_exact(VALIDATION_EVERY_EPOCH, "TW011")
    [finding] = [f for f in _report(VALIDATION_EVERY_EPOCH) if f.code == "TW011"]
    assert "later epochs train" in finding.message
