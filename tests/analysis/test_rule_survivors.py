"""Cases written from the survivors of the sampled mutation run (docs/mutation-report.md).

Each case is one a mutant of a rule got wrong while every earlier test passed: a
``continue`` that became ``break`` (a skipped event before a reported one), the
innermost loop read as the outermost, an event kind compared by order instead of
identity. Test names carry the rule code, so ``bench/mutation.sh`` selects them with
``-k CODE``. Snippets are our own.
"""

from __future__ import annotations

from test_trust_classes import assert_exact, assert_quiet

# a host read between the scaled backward and scaler.step is not an optimizer step
SYNC_BETWEEN_BACKWARD_AND_SCALER_STEP = """
    import torch

    def train(model, loader, opt, crit):
        scaler = torch.amp.GradScaler()
        for x, y in loader:
            loss = crit(model(x), y)
            scaler.scale(loss).backward()
            print(loss.item())
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
"""

# zeroing once per epoch does not reset the gradients of each batch's step
RESET_ONLY_IN_THE_EPOCH_LOOP = """
    import torch

    def train(model, loader, crit, epochs):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            opt.zero_grad()
            for x, y in loader:
                crit(model(x), y).backward()
                opt.step()  # expect: TW003
"""

# one finding for a loop that steps two optimizers, then the next loop is still checked
TWO_LOOPS_WITHOUT_RESET = """
    import torch

    def train(model, head, loader, crit):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        head_opt = torch.optim.SGD(head.parameters(), lr=0.1)
        for x, y in loader:
            crit(head(model(x)), y).backward()
            opt.step()  # expect: TW003
            head_opt.step()
        for x, y in loader:
            crit(head(x), y).backward()
            head_opt.step()  # expect: TW003
"""

# an unrelated tuple assignment and a starred unpacking come first in the walk
PACKED_AFTER_SKIPPED_ASSIGNMENTS = """
    from torch.nn.utils.rnn import pack_padded_sequence

    def encode(x, lengths):
        a, b = divmod(7, 2)
        data, *rest = pack_padded_sequence(x, lengths)
        scores, _ = pack_padded_sequence(x, lengths)  # expect: TW026
        return scores
"""

# the first evaluation loop is reported once for its two forwards; the second still is
TWO_EVALUATION_LOOPS = """
    import torch

    def evaluate(model, loader, other_loader):
        model.eval()
        for x in loader:  # expect: TW002
            a = model(x)
            b = model(x * 2)
        for x in other_loader:  # expect: TW002
            c = model(x)
"""

# a periodic synchronize (skipped) comes before the one that runs every step
PERIODIC_SYNC_BEFORE_EVERY_STEP_SYNC = """
    import torch

    def train(model, loader, opt, crit):
        for i, (x, y) in enumerate(loader):
            crit(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            if i % 100 == 0:
                torch.cuda.synchronize()
            torch.cuda.synchronize()  # expect: TW007
"""

# the gated step of the previous accumulation window comes first in the loop's text
STEP_BEFORE_THE_UNSCALE = """
    import torch

    def train(model, loader, opt, crit, accum):
        scaler = torch.amp.GradScaler()
        for i, (x, y) in enumerate(loader):
            if i > 0 and i % accum == 0:
                scaler.step(opt)
                scaler.update()
                opt.zero_grad()
            scaler.scale(crit(model(x), y) / accum).backward()
            scaler.unscale_(opt)  # expect: TW025
"""


def test_TW020_a_host_read_between_backward_and_scaler_step_is_not_a_step():
    assert_quiet(SYNC_BETWEEN_BACKWARD_AND_SCALER_STEP, "TW020")


def test_TW003_a_reset_once_per_epoch_leaves_the_batch_loop_unreset():
    assert_exact(RESET_ONLY_IN_THE_EPOCH_LOOP, "TW003")


def test_TW003_each_loop_without_a_reset_is_reported_once():
    assert_exact(TWO_LOOPS_WITHOUT_RESET, "TW003")


def test_TW026_skipped_assignments_do_not_end_the_search():
    assert_exact(PACKED_AFTER_SKIPPED_ASSIGNMENTS, "TW026")


def test_TW002_each_evaluation_loop_is_reported_once():
    assert_exact(TWO_EVALUATION_LOOPS, "TW002")


def test_TW007_a_skipped_periodic_sync_does_not_hide_the_next():
    assert_exact(PERIODIC_SYNC_BEFORE_EVERY_STEP_SYNC, "TW007")


def test_TW025_a_gated_step_earlier_in_the_loop_still_counts():
    assert_exact(STEP_BEFORE_THE_UNSCALE, "TW025")
