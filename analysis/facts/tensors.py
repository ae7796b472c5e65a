"""Which operations are proven to return one ``torch.Tensor``.

A value with an autograd graph is not necessarily a tensor: a model may return a tuple,
a dict or a ``ModelOutput``, ``t.max(dim)`` returns a named tuple, ``t.split(n)`` a tuple.
A fix that writes ``x.detach()`` crashes on those, so it is safe only on a value the
dataflow *proved* to be a tensor (:attr:`~torchward.analysis.facts.values.Value.proven_tensor`):
a loss, the output of a ``torch.nn`` layer listed here, a result of an operation listed
here on a proven tensor, or arithmetic with one.
The lists are deliberately short: an operation missing from them makes a fix unsafe,
never wrong.
"""

from __future__ import annotations

# Tensor methods that return one tensor whatever their arguments (``max``/``min``/
# ``sort``/``topk``/``split``/``chunk``/``unbind`` may return tuples: not here).
TENSOR_METHODS = frozenset(
    {
        "abs",
        "add",
        "bfloat16",
        "clamp",
        "clip",
        "clone",
        "contiguous",
        "cpu",
        "cuda",
        "div",
        "double",
        "exp",
        "expand",
        "expand_as",
        "flatten",
        "float",
        "half",
        "log",
        "log_softmax",
        "mean",
        "mul",
        "neg",
        "norm",
        "permute",
        "pow",
        "prod",
        "repeat",
        "reshape",
        "sigmoid",
        "softmax",
        "sqrt",
        "square",
        "squeeze",
        "sub",
        "sum",
        "t",
        "tanh",
        "to",
        "transpose",
        "type_as",
        "unsqueeze",
        "view",
        "view_as",
    }
)

# ``torch.`` functions (by their last name) that return one tensor.
TORCH_FUNCTIONS = frozenset(
    {
        "abs",
        "bmm",
        "cat",
        "clamp",
        "einsum",
        "exp",
        "flatten",
        "log",
        "logsumexp",
        "matmul",
        "mean",
        "mm",
        "pow",
        "sigmoid",
        "softmax",
        "sqrt",
        "square",
        "stack",
        "sum",
        "tanh",
        "where",
    }
)

# ``torch.nn`` layers whose call returns one tensor whatever their arguments (recurrent
# layers and attention return tuples; pooling layers may, with ``return_indices=True``:
# not here; ``Identity`` returns its argument, whatever that is: not here). A
# ``Sequential`` returns what its last layer returns.
TENSOR_LAYERS = frozenset(
    f"torch.nn.{name}"
    for name in (
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
        "BatchNorm1d",
        "BatchNorm2d",
        "BatchNorm3d",
        "Bilinear",
        "Conv1d",
        "Conv2d",
        "Conv3d",
        "ConvTranspose1d",
        "ConvTranspose2d",
        "ConvTranspose3d",
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "ELU",
        "Embedding",
        "EmbeddingBag",
        "Flatten",
        "GELU",
        "GroupNorm",
        "InstanceNorm1d",
        "InstanceNorm2d",
        "InstanceNorm3d",
        "LayerNorm",
        "LazyConv1d",
        "LazyConv2d",
        "LazyConv3d",
        "LazyLinear",
        "LeakyReLU",
        "Linear",
        "LogSoftmax",
        "Mish",
        "PixelShuffle",
        "PReLU",
        "ReLU",
        "RMSNorm",
        "SiLU",
        "Sigmoid",
        "Softmax",
        "Softplus",
        "Tanh",
        "TransformerDecoder",
        "TransformerDecoderLayer",
        "TransformerEncoder",
        "TransformerEncoderLayer",
        "Unflatten",
        "Upsample",
    )
)
