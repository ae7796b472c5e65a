"""Script reading: which modules the default launch trains, and how many parameters that is.

Sizes a class body reads from module-level names the launch computes (an argparse
default converted with ``int``), two networks each with an optimizer of its own (a GAN:
the job holds both), and a bare ``nn`` layer trained as the model.
"""

from __future__ import annotations

from torchward.analysis.job.runconfig import read_source

_GAN = """\
import argparse
import torch
import torch.nn as nn
import torch.optim as optim

parser = argparse.ArgumentParser()
parser.add_argument('--width', type=int, default=32)
parser.add_argument('--latent', type=int, default=16)
opt = parser.parse_args()
width = int(opt.width)
latent = int(opt.latent)


class Maker(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent, width), nn.ReLU(), nn.Linear(width, 784))

    def forward(self, z):
        return self.net(z)


class Judge(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, x):
        return self.net(x)


maker = Maker().to('cuda')
judge = Judge().to('cuda')
opt_judge = optim.Adam(judge.parameters(), lr=2e-4)
opt_maker = optim.Adam(maker.parameters(), lr=2e-4)
for real in loader:
    judge.zero_grad()
    loss_j = judge(real).mean() - judge(maker(torch.randn(64, latent)).detach()).mean()
    loss_j.backward()
    opt_judge.step()
    maker.zero_grad()
    loss_m = -judge(maker(torch.randn(64, latent))).mean()
    loss_m.backward()
    opt_maker.step()
"""

MAKER = (16 * 32 + 32) + (32 * 784 + 784)
JUDGE = (784 * 32 + 32) + (32 * 1 + 1)


def _one_optimizer(source: str) -> str:
    """The GAN with the judge's optimizer gone: only the maker is trained."""
    return source.replace("opt_judge = optim.Adam(judge.parameters(), lr=2e-4)\n", "")


def test_sizes_a_class_reads_from_launch_computed_globals():
    # ``width = int(opt.width)`` is an argparse default a launch can override: counted,
    # at medium confidence, not high
    config, _ = read_source(_one_optimizer(_GAN))
    assert config.model is not None and config.model.value == "Maker"
    assert config.params is not None and config.params.value == MAKER
    assert config.params.confidence == "medium"
    # the same sizes written as literals are read where they are written: high
    literal = _GAN.replace("int(opt.width)", "32").replace("int(opt.latent)", "16")
    config, _ = read_source(_one_optimizer(literal))
    assert config.params is not None and (config.params.value, config.params.confidence) == (
        MAKER,
        "high",
    )


def test_two_networks_each_with_an_optimizer_are_both_the_job():
    config, notes = read_source(_GAN)
    assert config.model is not None and config.model.value == "Maker"  # the larger one
    assert config.params is not None and config.params.value == MAKER + JUDGE
    assert "Maker's and Judge's layers" in config.params.source
    assert any("the optimizers also train Judge" in n for n in notes), notes


def test_a_network_no_optimizer_trains_is_not_added():
    config, notes = read_source(_one_optimizer(_GAN))
    assert config.params is not None and config.params.value == MAKER
    assert "Judge" not in config.params.source
    assert not any("the optimizers also train" in n for n in notes)


def test_a_bare_sequential_trained_by_an_optimizer_is_the_model():
    config, _ = read_source(
        "import torch\nimport torch.nn as nn\n"
        "net = nn.Sequential(nn.Linear(20, 50), nn.Tanh(), nn.Linear(50, 3)).cuda()\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "for x, y in loader:\n"
        "    opt.zero_grad()\n    nn.functional.cross_entropy(net(x), y).backward()\n"
        "    opt.step()\n"
    )
    assert config.model is not None and config.model.value == "Sequential"
    assert config.params is not None and config.params.value == 20 * 50 + 50 + 50 * 3 + 3
    assert config.params.source == "<script>:3 (Sequential's parameters)"


def test_a_bare_layer_updated_by_hand_is_the_model_and_its_sizes_are_followed():
    # no optimizer: the script clears the layer's gradients and steps its parameters itself
    config, _ = read_source(
        "import argparse\nimport torch\n"
        "p = argparse.ArgumentParser()\np.add_argument('--features', type=int, default=7)\n"
        "args = p.parse_args()\n"
        "fc = torch.nn.Linear(args.features, 1)\n"
        "for x, y in batches():\n"
        "    fc.zero_grad()\n    ((fc(x) - y) ** 2).mean().backward()\n"
        "    for param in fc.parameters():\n        param.data.add_(-0.1 * param.grad)\n"
    )
    assert config.model is not None and config.model.value == "Linear"
    assert config.params is not None and (config.params.value, config.params.confidence) == (
        8,
        "medium",
    )


def test_a_layer_nothing_trains_is_not_the_model():
    # the loss module and an untrained projection are built, but no optimizer takes them
    config, notes = read_source(
        "import torch\nimport torch.nn as nn\n"
        "proj = nn.Linear(10, 10)\ncriterion = nn.MSELoss()\n"
        "with torch.no_grad():\n    out = proj(x)\n"
    )
    assert config.model is None and config.params is None


def test_a_trained_layer_whose_size_the_data_decides_is_named_not_sized():
    config, notes = read_source(
        "import torch\nweights = load_weights()\n"
        "fc = torch.nn.Linear(weights.size(0), 1)\n"
        "opt = torch.optim.SGD(fc.parameters(), lr=0.1)\n"
        "for x, y in data:\n    opt.zero_grad()\n    fc(x).sum().backward()\n    opt.step()\n"
    )
    assert config.params is None
    assert any("`fc` (Linear) is the model the script trains; not sized" in n for n in notes)


def test_a_models_package_helper_whose_result_is_a_name_is_no_model():
    # ``safe_model_name(args.model)`` is a string for a run's folder; the model is what
    # ``create_model`` builds from the flag, whose default names it
    config, _ = read_source(
        "import argparse, torch\nfrom timm.models import create_model, safe_model_name\n"
        "p = argparse.ArgumentParser()\np.add_argument('--model', default='resnet26d')\n"
        "args, _rest = p.parse_known_args()\n"
        "model = create_model(args.model, pretrained=False).cuda()\n"
        "run = '-'.join([safe_model_name(args.model), 'x'])\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in data:\n    model(x).sum().backward()\n    opt.step()\n"
    )
    assert config.model is not None and config.model.value == "resnet26d"
    # when the flag cannot be followed, the helper's name is still not the model
    config, _ = read_source(
        "import torch\nfrom timm.models import create_model, safe_model_name\n"
        "name = pick()\nmodel = create_model(name)\n"
        "run = '-'.join([safe_model_name(name), 'x'])\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in data:\n    model(x).sum().backward()\n    opt.step()\n"
    )
    assert config.model is None or config.model.value != "safe_model_name"


def test_a_torchvision_builder_wrapped_and_moved_is_still_the_model():
    config, _ = read_source(
        "import torch, torchvision\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torchvision.models.resnet18().cuda())\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in data:\n    model(x).sum().backward()\n    opt.step()\n"
    )
    assert config.model is not None and config.model.value == "resnet18"


def test_a_bare_layer_sized_by_a_tensor_of_known_shape():
    # the layer's input width is the number of rows of a tensor built from a constant
    config, _ = read_source(
        "import torch\nDEGREE = 4\nW = torch.randn(DEGREE, 1) * 5\n"
        "fc = torch.nn.Linear(W.size(0), 1)\n"
        "for step in range(100):\n"
        "    fc.zero_grad()\n    fc(x).sum().backward()\n"
        "    for p in fc.parameters():\n        p.data.add_(-0.1 * p.grad)\n"
    )
    assert config.params is not None and config.params.value == 5


def test_a_launch_computed_global_rebound_later_is_not_read_stale():
    # ``width`` doubles under a flag the launch cannot decide: its first value is not the
    # one the class reads, so the layer using it is not sized from it
    source = _GAN.replace(
        "latent = int(opt.latent)\n",
        "latent = int(opt.latent)\nif undecided():\n    width *= 2\n",
    )
    config, _ = read_source(_one_optimizer(source))
    assert config.params is None or config.params.value != MAKER


def test_a_trained_head_beside_a_backbone_the_reader_cannot_size_is_not_the_model():
    # the optimizer trains the library backbone and the new head: the head alone would be
    # a gross underestimate of the job
    config, notes = read_source(
        "import torch, timm\nbackbone = timm.create_model(pick())\n"
        "head = torch.nn.Linear(768, 10)\n"
        "opt = torch.optim.AdamW(list(backbone.parameters()) + list(head.parameters()))\n"
        "for x, y in data:\n    head(backbone(x)).sum().backward()\n    opt.step()\n"
    )
    assert config.params is None
    assert any("the optimizer also trains backbone" in n for n in notes), notes


def test_two_bare_layers_one_optimizer_trains_are_both_counted():
    config, _ = read_source(
        "import torch\nenc = torch.nn.Linear(10, 20)\ndec = torch.nn.Linear(20, 10)\n"
        "opt = torch.optim.SGD(list(enc.parameters()) + list(dec.parameters()), lr=0.1)\n"
        "for x in data:\n    dec(enc(x)).sum().backward()\n    opt.step()\n"
    )
    assert config.params is not None and config.params.value == (10 * 20 + 20) + (20 * 10 + 10)
    assert "2 trained layers" in config.params.source
