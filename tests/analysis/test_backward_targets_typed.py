"""Which value a ``backward`` call proves carries a graph: decided by the receiver's
value and the library-effects table, never by the receiver's name.

``loss.backward()`` proves ``loss``; ``accelerator.backward(loss)`` and
``self.manual_backward(loss)`` prove their argument because the table says those methods
run backward on it, for a receiver built by ``Accelerator()`` or a LightningModule's
``self`` whatever the variable is called. A tensor's ``y.backward(grad_y)`` passes an
output gradient, which proves nothing about ``grad_y``, even when ``y`` is named like a
DeepSpeed engine.
"""

from __future__ import annotations

from test_trust_classes import assert_exact, assert_quiet

# the accelerator under a short name: its backward proves the loss kept in the list
SHORT_NAMED_ACCELERATOR = """
    from accelerate import Accelerator

    def train(loader, step_fn):
        acc = Accelerator()
        history = []
        for batch in loader:
            loss = step_fn(batch)
            history.append(loss)  # expect: TW001
            acc.backward(loss)
"""

# a tensor named like an engine, given its output gradient: no proof for `grads`
TENSOR_NAMED_ENGINE = """
    def train(loader, step_fn, head):
        history = []
        for batch in loader:
            grads = step_fn(batch)
            history.append(grads)
            engine = head(batch)
            engine.backward(grads)
"""

# Lightning's manual optimization: self is the module, manual_backward proves its argument
MANUAL_BACKWARD = """
    import lightning as L

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            self.kept = []

        def training_step(self, batch, idx):
            opt = self.optimizers()
            loss = self.compute(batch)
            self.kept.append(loss)  # expect: TW001
            self.manual_backward(loss)
            opt.step()
            opt.zero_grad()
"""

# the same call on an object the run cannot type proves nothing
UNTYPED_RECEIVER = """
    def train(loader, step_fn, runner):
        history = []
        for batch in loader:
            loss = step_fn(batch)
            history.append(loss)
            runner.manual_backward(loss)
"""


def test_a_table_receiver_proves_its_argument_whatever_its_name():
    assert_exact(SHORT_NAMED_ACCELERATOR, "TW001")


def test_a_tensor_given_its_output_gradient_proves_nothing_about_the_gradient():
    assert_quiet(TENSOR_NAMED_ENGINE, "TW001")


def test_manual_backward_on_a_lightning_module_proves_its_argument():
    assert_exact(MANUAL_BACKWARD, "TW001")


def test_an_untyped_receiver_proves_nothing():
    assert_quiet(UNTYPED_RECEIVER, "TW001")
