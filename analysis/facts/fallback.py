"""The last resort: a kind guessed from a name, and marked as a guess.

Binding beats names: a value's kind comes from its constructor, a factory, a framework
API, an annotation or the value a caller passed. Only when none of those is known — a
function parameter with no annotation that no call in the file reaches — does the
analysis look at the name, and then every fact derived from it has LOW confidence,
which lowers the severity of any finding one step and says so in the message. The
reference tool's worst false positives (a tokenizer taken for a model) came from
trusting names first; here a name is never used when a binding exists.
"""

from __future__ import annotations

import re

from .values import Kind

_PATTERNS: tuple[tuple[re.Pattern[str], Kind], ...] = (
    (
        re.compile(
            r"^(model|net|network|module_to_train|student|classifier|backbone|encoder_model|ddp_model)$"
        ),
        Kind.MODEL,
    ),
    (re.compile(r"^(optimizer|optim|opt|optimiser)(_\w+)?$"), Kind.OPTIMIZER),
    (
        re.compile(r"^(criterion|crit|loss_fn|loss_func|loss_function|lossfn|loss_fct)$"),
        Kind.CRITERION,
    ),
    (re.compile(r"^(\w+_)?(loader|dataloader|data_loader)$"), Kind.LOADER),
    (re.compile(r"^(scheduler|lr_scheduler)$"), Kind.SCHEDULER),
    (re.compile(r"^(tokenizer|processor|feature_extractor|image_processor)$"), Kind.TOKENIZER),
)


def kind_from_name(name: str) -> Kind | None:
    """The kind a bare name suggests (``train_loader`` → loader), or None."""
    leaf = name.rsplit(".", 1)[-1].lower()
    for pattern, kind in _PATTERNS:
        if pattern.match(leaf):
            return kind
    return None
