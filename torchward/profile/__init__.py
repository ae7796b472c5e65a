"""``torchward profile``: measure the user's own model (the opt-in ``[profile]`` extra).

Unlike the rest of torchward this package imports torch and **runs the user's code**: it
builds the model under fake tensors (no real memory, no weights) and counts the live
tensor storage of one training, inference or generation step. Only ``torchward
profile``, :class:`torchward.guard.VRAMGuard` and the editor's explicit "Measure with
your model" command use it; ``check``, ``estimate`` and the language server never
import it (the server runs :mod:`.worker` in a subprocess of the user's interpreter).

This ``__init__`` imports nothing, so the worker runs with the standard library and
torch alone.
"""
