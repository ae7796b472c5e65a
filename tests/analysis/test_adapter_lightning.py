"""Lightning adapter (analysis/effects/lightning.py): LightningModule hooks as a loop.

The snippets are written the way Lightning's documentation writes a LightningModule
(an autoencoder or classifier with ``training_step``, ``validation_step`` and
``configure_optimizers``; manual optimization with ``self.optimizers()`` and
``self.manual_backward``; the 2.0 ``training_step_outputs`` list), restated in our words.
A line a rule must report ends with ``# expect: TWxxx``.
"""

from __future__ import annotations

import pytest
from test_trust_classes import assert_exact, assert_quiet, flagged, severities
from torchward.analysis import Severity

AUTOENCODER = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    import lightning as L

    class LitAutoEncoder(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 3))
            self.decoder = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 28 * 28))

        def training_step(self, batch, batch_idx):
            x, _ = batch
            x = x.view(x.size(0), -1)
            x_hat = self.decoder(self.encoder(x))
            loss = F.mse_loss(x_hat, x)
            self.log("train_loss", loss, prog_bar=True)
            self.log_dict({"loss": loss, "step": batch_idx})
            return loss

        def validation_step(self, batch, batch_idx):
            x, _ = batch
            x = x.view(x.size(0), -1)
            x_hat = self.decoder(self.encoder(x))
            self.log("val_loss", F.mse_loss(x_hat, x))

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    trainer = L.Trainer(max_epochs=10, accumulate_grad_batches=4)
"""

# Lightning 2.0 moved epoch-end outputs to a list the module keeps: kept with its graph,
# every batch's graph lives until the epoch ends
OUTPUTS_KEPT_WITH_THEIR_GRAPH = """
    import torch
    from torch import nn
    import lightning as L

    class LitClassifier(L.LightningModule):
        def __init__(self, num_classes=10):
            super().__init__()
            self.net = nn.Linear(32, num_classes)
            self.loss_fn = nn.CrossEntropyLoss()
            self.training_step_outputs = []
            self.validation_step_outputs = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = self.loss_fn(self.net(x), y)
            self.training_step_outputs.append(loss)  # expect: TW001
            return loss

        def on_train_epoch_end(self):
            epoch_mean = torch.stack(self.training_step_outputs).mean()
            self.log("training_epoch_mean", epoch_mean)
            self.training_step_outputs.clear()

        def validation_step(self, batch, batch_idx):
            x, y = batch
            preds = self.net(x)
            self.validation_step_outputs.append(preds)

        def configure_optimizers(self):
            return torch.optim.SGD(self.net.parameters(), lr=0.1)
"""

OUTPUTS_DETACHED = OUTPUTS_KEPT_WITH_THEIR_GRAPH.replace(
    "self.training_step_outputs.append(loss)  # expect: TW001",
    "self.training_step_outputs.append(loss.detach())",
)

# the loss kept through a shared step helper, the way many modules factor their steps
OUTPUTS_KEPT_IN_A_SHARED_STEP = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    from pytorch_lightning import LightningModule

    class LitModel(LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(16, 4)
            self.history = []

        def _shared_step(self, batch):
            x, y = batch
            loss = F.cross_entropy(self.layer(x), y)
            self.history.append(loss)  # expect: TW001
            return loss

        def training_step(self, batch, batch_idx):
            return self._shared_step(batch)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters())
"""

# the outputs kept as a dict per step (a segmentation module's shared step returns the
# loss with its confusion counts): the dict holds the graph of the loss
DICT_OUTPUTS_FROM_A_SHARED_STEP = """
    import torch
    from torch import nn
    import lightning as L

    class SegModule(L.LightningModule):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.loss_fn = nn.BCEWithLogitsLoss()
            self.training_step_outputs = []

        def shared_step(self, batch, stage):
            image, mask = batch
            logits = self.net(image)
            loss = self.loss_fn(logits, mask)
            hits = (logits.sigmoid() > 0.5).long()
            return {"loss": loss, "hits": hits}

        def training_step(self, batch, batch_idx):
            info = self.shared_step(batch, "train")
            self.training_step_outputs.append(info)  # expect: TW001
            return info

        def on_train_epoch_end(self):
            self.log("epoch_loss", torch.stack([x["loss"] for x in self.training_step_outputs]).mean())
            self.training_step_outputs.clear()

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-4)
"""

DICT_OUTPUTS_DETACHED = """
    import torch
    from torch import nn
    import lightning as L

    class Regressor(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = nn.Linear(8, 1)
            self.training_step_outputs = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            y_hat = self.model(x)
            loss = nn.functional.mse_loss(y_hat, y)
            self.training_step_outputs.append(
                {"loss": loss.detach().cpu(), "pred": y_hat.detach(), "value": loss.item()}
            )
            return loss

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters())
"""

# Lightning runs the evaluation hooks under no_grad, in eval mode: what they keep holds
# no graph, and they need no torch.no_grad() or .eval() of their own
EVALUATION_HOOKS = """
    import torch
    from torch import nn
    import lightning as L

    class Classifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.1), nn.Linear(16, 4))
            self.val_outputs = []
            self.test_outputs = []

        def training_step(self, batch, batch_idx):
            x, y = batch
            return nn.functional.cross_entropy(self.backbone(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            logits = self.backbone(x)
            self.val_outputs.append(logits)
            self.log("val_loss", nn.functional.cross_entropy(logits, y))

        def test_step(self, batch, batch_idx):
            x, y = batch
            for chunk in x.split(4):
                self.test_outputs.append(self.backbone(chunk))

        def predict_step(self, batch, batch_idx):
            return self.backbone(batch)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters())
"""

# the docs' autoencoder takes its encoder and decoder as arguments: nothing in the file
# types them, but Lightning backpropagates the returned loss, which proves its graph
PASSED_IN_MODULES_KEEP_THE_LOSS = """
    import torch.nn.functional as F
    import lightning as L

    class LitAutoEncoder(L.LightningModule):
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder
            self.losses = []

        def training_step(self, batch, batch_idx):
            x, _ = batch
            x = x.view(x.size(0), -1)
            x_hat = self.decoder(self.encoder(x))
            loss = F.mse_loss(x_hat, x)
            self.losses.append(loss)  # expect: TW001
            return {"loss": loss}
"""

MANUAL_OPTIMIZATION = """
    import torch
    from torch import nn
    from lightning.pytorch import LightningModule

    class MyModel(LightningModule):
        def __init__(self):
            super().__init__()
            # Important: this property switches on manual optimization
            self.automatic_optimization = False
            self.layer = nn.Linear(8, 1)

        def compute_loss(self, batch):
            x, y = batch
            return nn.functional.mse_loss(self.layer(x), y)

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            opt.zero_grad()
            loss = self.compute_loss(batch)
            self.manual_backward(loss)
            opt.step()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)
"""

MANUAL_WITHOUT_ZERO_GRAD = MANUAL_OPTIMIZATION.replace("            opt.zero_grad()\n", "").replace(
    "            opt.step()\n", "            opt.step()  # expect: TW003\n"
)

# a body built by a factory the file cannot see: ``manual_backward(loss)`` proves the
# loss carries a graph, as ``loss.backward()`` would
MANUAL_KEEPS_A_PROVEN_LOSS = """
    from lightning.pytorch import LightningModule
    from mylib import build_backbone

    class Manual(LightningModule):
        def __init__(self, cfg):
            super().__init__()
            self.automatic_optimization = False
            self.body = build_backbone(cfg)
            self.history = []

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            opt.zero_grad()
            loss = self.body(batch).mean()
            self.history.append(loss)  # expect: TW001
            self.manual_backward(loss)
            opt.step()
"""

MANUAL_ACCUMULATION = """
    import torch
    from torch import nn
    import lightning as L

    class Accumulating(L.LightningModule):
        def __init__(self, n=4):
            super().__init__()
            self.automatic_optimization = False
            self.n = n
            self.layer = nn.Linear(8, 2)

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            x, y = batch
            # scale losses by 1/N (for N batches of gradient accumulation)
            loss = nn.functional.cross_entropy(self.layer(x), y) / self.n
            self.manual_backward(loss)
            # accumulate gradients of N batches
            if (batch_idx + 1) % self.n == 0:
                opt.step()
                opt.zero_grad()

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters())
"""

MANUAL_ACCUMULATION_UNSCALED = MANUAL_ACCUMULATION.replace(" / self.n\n", "\n").replace(
    "self.manual_backward(loss)", "self.manual_backward(loss)  # expect: TW014"
)

MANUAL_GAN = """
    import torch
    from torch import nn
    import lightning as L

    class GAN(L.LightningModule):
        def __init__(self, generator, discriminator):
            super().__init__()
            self.automatic_optimization = False
            self.generator = generator
            self.discriminator = discriminator

        def training_step(self, batch, batch_idx):
            g_opt, d_opt = self.optimizers()
            x, z = batch
            self.toggle_optimizer(g_opt)
            g_loss = -self.discriminator(self.generator(z)).mean()
            self.manual_backward(g_loss)
            g_opt.step()
            g_opt.zero_grad()
            self.untoggle_optimizer(g_opt)
            self.toggle_optimizer(d_opt)
            d_loss = self.discriminator(self.generator(z).detach()).mean() - self.discriminator(x).mean()
            self.manual_backward(d_loss)
            d_opt.step()
            d_opt.zero_grad()
            self.untoggle_optimizer(d_opt)
            self.log_dict({"g_loss": g_loss, "d_loss": d_loss}, prog_bar=True)

        def configure_optimizers(self):
            g = torch.optim.Adam(self.generator.parameters(), lr=2e-4)
            d = torch.optim.Adam(self.discriminator.parameters(), lr=2e-4)
            return [g, d]
"""

MANUAL_SCHEDULER_AFTER_STEP = """
    import torch
    from torch import nn
    import lightning as L

    class WithScheduler(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.automatic_optimization = False
            self.layer = nn.Linear(4, 1)

        def training_step(self, batch, batch_idx):
            opt = self.optimizers()
            sch = self.lr_schedulers()
            opt.zero_grad()
            loss = self.layer(batch).sum()
            self.manual_backward(loss)
            opt.step()
            sch.step()

        def configure_optimizers(self):
            opt = torch.optim.SGD(self.parameters(), lr=0.1)
            return [opt], [torch.optim.lr_scheduler.StepLR(opt, step_size=1)]
"""

MANUAL_SCHEDULER_BEFORE_STEP = MANUAL_SCHEDULER_AFTER_STEP.replace(
    "            opt.step()\n            sch.step()\n",
    "            sch.step()  # expect: TW018\n            opt.step()\n",
)


def test_automatic_optimization_as_the_docs_write_it_is_clean():
    for code in ("TW001", "TW002", "TW003", "TW014", "TW018", "TW019", "TW024"):
        assert_quiet(AUTOENCODER, code)


def test_evaluation_hooks_run_under_no_grad_in_eval_mode():
    for code in ("TW001", "TW002", "TW024"):
        assert_quiet(EVALUATION_HOOKS, code)
    # the same store in training_step, which runs with gradients, keeps the graph
    in_training = EVALUATION_HOOKS.replace(
        "            return nn.functional.cross_entropy(self.backbone(x), y)\n",
        "            logits = self.backbone(x)\n"
        "            self.val_outputs.append(logits)  # expect: TW001\n"
        "            return nn.functional.cross_entropy(logits, y)\n",
    )
    assert_exact(in_training, "TW001")


def test_a_loss_kept_in_training_step_outputs_is_a_retained_graph():
    assert_exact(OUTPUTS_KEPT_WITH_THEIR_GRAPH, "TW001")
    # stored before the backward Lightning runs on the returned loss: an error
    assert severities(OUTPUTS_KEPT_WITH_THEIR_GRAPH, "TW001") == [Severity.ERROR]


def test_the_returned_loss_is_proven_by_the_backward_lightning_runs_on_it():
    assert_exact(PASSED_IN_MODULES_KEEP_THE_LOSS, "TW001")
    assert severities(PASSED_IN_MODULES_KEEP_THE_LOSS, "TW001") == [Severity.ERROR]
    logged = PASSED_IN_MODULES_KEEP_THE_LOSS.replace(
        "self.losses.append(loss)  # expect: TW001", 'self.log("loss", loss)'
    )
    assert_quiet(logged, "TW001")


@pytest.mark.parametrize(
    "spelling",
    [
        "from pytorch_lightning import LightningModule",
        "from lightning.pytorch.core import LightningModule",
        "from pytorch_lightning.core.module import LightningModule",
        "from pytorch_lightning.core.lightning import LightningModule",
    ],
)
def test_every_import_path_of_lightning_module_is_one(spelling):
    source = OUTPUTS_KEPT_WITH_THEIR_GRAPH.replace("import lightning as L", spelling).replace(
        "(L.LightningModule)", "(LightningModule)"
    )
    assert spelling in source
    assert_exact(source, "TW001")


def test_detached_training_outputs_and_validation_outputs_are_quiet():
    assert_quiet(OUTPUTS_DETACHED, "TW001")


def test_a_loss_kept_by_a_shared_step_helper_is_reported_in_the_helper():
    assert_exact(OUTPUTS_KEPT_IN_A_SHARED_STEP, "TW001")


def test_dict_outputs_keep_the_graph_of_the_loss_they_hold():
    assert_exact(DICT_OUTPUTS_FROM_A_SHARED_STEP, "TW001")
    assert_quiet(DICT_OUTPUTS_DETACHED, "TW001")


def test_manual_optimization_without_zero_grad_is_reported():
    assert_exact(MANUAL_WITHOUT_ZERO_GRAD, "TW003")
    assert_quiet(MANUAL_OPTIMIZATION, "TW003")


def test_manual_backward_proves_the_graph_of_what_it_is_given():
    assert_exact(MANUAL_KEEPS_A_PROVEN_LOSS, "TW001")
    assert severities(MANUAL_KEEPS_A_PROVEN_LOSS, "TW001") == [Severity.ERROR]


def test_manual_accumulation_must_scale_the_loss_itself():
    assert_exact(MANUAL_ACCUMULATION_UNSCALED, "TW014")
    assert_quiet(MANUAL_ACCUMULATION, "TW014")
    assert_quiet(MANUAL_ACCUMULATION, "TW003")


def test_a_manual_gan_with_two_optimizers_each_reset_is_quiet():
    for code in ("TW001", "TW003", "TW019"):
        assert_quiet(MANUAL_GAN, code)


def test_a_manual_scheduler_step_before_the_optimizer_step_is_reported():
    assert_exact(MANUAL_SCHEDULER_BEFORE_STEP, "TW018")
    assert_quiet(MANUAL_SCHEDULER_AFTER_STEP, "TW018")


def test_the_same_body_outside_a_lightning_module_has_no_framework_loop():
    # a plain class with a method named training_step is not called once per batch by
    # anyone the file shows: no loop, so nothing outlives an iteration
    plain = OUTPUTS_KEPT_WITH_THEIR_GRAPH.replace("(L.LightningModule)", "(nn.Module)").replace(
        "  # expect: TW001", ""
    )
    assert flagged(plain, "TW001") == []


# Lightning calls ``setup(stage)`` before the first training_step: what it puts on self
# is what training_step reads
OUTPUTS_LIST_BUILT_IN_SETUP = OUTPUTS_KEPT_WITH_THEIR_GRAPH.replace(
    "            self.training_step_outputs = []\n", ""
).replace(
    "        def training_step(self, batch, batch_idx):\n",
    "        def setup(self, stage):\n"
    "            self.training_step_outputs = []\n\n"
    "        def training_step(self, batch, batch_idx):\n",
)


def test_a_list_lightning_setup_builds_is_kept_across_steps():
    assert "def setup(self, stage)" in OUTPUTS_LIST_BUILT_IN_SETUP
    assert_exact(OUTPUTS_LIST_BUILT_IN_SETUP, "TW001")
    assert severities(OUTPUTS_LIST_BUILT_IN_SETUP, "TW001") == [Severity.ERROR]
