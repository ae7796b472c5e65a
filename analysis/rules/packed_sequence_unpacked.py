"""TW026 packed-sequence-unpacked."""

from __future__ import annotations

import ast

from ..finding import Evidence, Severity
from ..rule import Invalid, Rule
from ..syntax.names import qualified_name

#: the torch calls that return a ``PackedSequence``
PACKING = {
    "torch.nn.utils.rnn.pack_padded_sequence": "pack_padded_sequence",
    "torch.nn.utils.rnn.pack_sequence": "pack_sequence",
}
#: ``PackedSequence`` is a named tuple of these, since torch 1.1
FIELDS = ("data", "batch_sizes", "sorted_indices", "unsorted_indices")


class PackedSequenceUnpacked(Rule):
    """
    ## What it does
    Flags a `PackedSequence` — the result of `pack_padded_sequence(...)` or
    `pack_sequence(...)` — unpacked into a number of names other than four:
    `data, batch_sizes = pack_padded_sequence(x, lengths)`.

    ## Why is this bad?
    `PackedSequence` is a named tuple of four fields (`data`, `batch_sizes`,
    `sorted_indices`, `unsorted_indices`) since torch 1.1. Code written for torch 1.0,
    when it had two, raises `ValueError: too many values to unpack` on every current
    torch, the first time the line runs.

    ## Example
    ```python
    data, batch_sizes = pack_padded_sequence(emb, lengths, batch_first=True)  # TW026
    ```
    Use instead: keep the `PackedSequence` and read its fields,
    `packed = pack_padded_sequence(emb, lengths, batch_first=True)`, then `packed.data`
    and `packed.batch_sizes` (or pass `packed` on to the RNN).

    ## Fix safety
    No automatic fix: the names bound by the unpacking are used further on, and whether
    the code wants the fields or the packed sequence itself is the author's call.

    ## Known limitations
    Only a call unpacked where it is made is seen (`a, b = pack_padded_sequence(...)`
    or a list target; a starred target takes any count and is fine); a
    `PackedSequence` kept in a name and unpacked later is not followed. A call that resolves to torch by its
    imports is required: a project function of the same name is never flagged.
    """

    code = "TW026"
    name = "packed-sequence-unpacked"
    default_severity = Severity.ERROR
    summary = "A PackedSequence (four fields since torch 1.1) is unpacked into two names."

    VALID = (
        "import torch.nn as nn\ndef encode(rnn, emb, lengths):\n    packed = nn.utils.rnn.pack_padded_sequence(emb, lengths, batch_first=True)\n    out, hidden = rnn(packed)\n    return nn.utils.rnn.pad_packed_sequence(out, batch_first=True)\n",
        # pad_packed_sequence does return two values
        "from torch.nn.utils.rnn import pad_packed_sequence\ndef decode(out):\n    padded, lengths = pad_packed_sequence(out, batch_first=True)\n    return padded\n",
        # all four fields
        "from torch.nn.utils.rnn import pack_sequence\ndef fields(seqs):\n    data, batch_sizes, sorted_indices, unsorted_indices = pack_sequence(seqs, enforce_sorted=False)\n    return data\n",
        # a starred target takes whatever is left
        "from torch.nn.utils.rnn import pack_padded_sequence\ndef first(emb, lengths):\n    data, *rest = pack_padded_sequence(emb, lengths)\n    return data\n",
        # a project function of the same name
        "def pack_padded_sequence(x, lengths):\n    return x, lengths\n\ndef run(x, lengths):\n    a, b = pack_padded_sequence(x, lengths)\n    return a\n",
        # fields read by name
        "import torch\ndef sizes(emb, lengths):\n    packed = torch.nn.utils.rnn.pack_padded_sequence(emb, lengths)\n    return packed.data, packed.batch_sizes\n",
    )
    INVALID = (
        Invalid(
            "from torch.nn.utils.rnn import pack_padded_sequence\ndef encode(emb, lengths):\n    data, batch_sizes = pack_padded_sequence(emb, lengths, batch_first=True)\n    return data, batch_sizes\n",
            Severity.ERROR,
            line=3,
        ),
        Invalid(
            "import torch.nn as nn\nclass Encoder(nn.Module):\n    def forward(self, emb, lengths):\n        scores, _ = nn.utils.rnn.pack_padded_sequence(emb, lengths)\n        return scores\n",
            line=4,
        ),
        Invalid(
            "import torch\ndef flat(seqs):\n    [data, sizes] = torch.nn.utils.rnn.pack_sequence(seqs)\n    return data\n",
            line=3,
        ),
        Invalid(
            "from torch.nn.utils import rnn\ndef three(emb, lengths):\n    data, sizes, order = rnn.pack_padded_sequence(emb, lengths, enforce_sorted=False)\n    return data\n",
            line=3,
        ),
    )

    def check(self, facts):
        source = facts.analyzer.source
        if "pack_padded_sequence" not in source and "pack_sequence" not in source:
            return  # the names are spelt where they are imported or called
        imports = facts.index.imports
        for node in ast.walk(facts.analyzer.tree):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0], node.value
            if not isinstance(target, (ast.Tuple, ast.List)) or not isinstance(value, ast.Call):
                continue
            if any(isinstance(element, ast.Starred) for element in target.elts):
                continue
            count = len(target.elts)
            function = PACKING.get(qualified_name(value.func, imports) or "")
            if function is None or count == len(FIELDS):
                continue
            yield self.finding(
                facts.lines.span(target),
                f"`{function}` returns a `PackedSequence`, a named tuple of four fields "
                f"({', '.join(FIELDS)}) since torch 1.1: unpacking it into {count} names raises "
                "`ValueError` on any current torch. Keep the `PackedSequence` and read "
                "`.data` / `.batch_sizes` from it.",
                evidence=[Evidence(facts.lines.span(value), f"`{function}(...)` is called here")],
            )
