"""torchward: catches the silent, expensive bugs of PyTorch training code.

The distribution's face: the CLI and the reporters live here; the engine is
:mod:`torchward.analysis`, the VRAM cost model :mod:`torchward.estimator`, the language
server :mod:`torchward.server`.
"""

__version__ = "0.1.0"
