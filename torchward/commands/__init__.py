"""The subcommands of ``torchward``: one module each, found by walking this package.

A command module defines ``NAME`` (the subcommand), ``HELP`` (one line for ``--help``),
``configure(parser)`` (adds its arguments to an :class:`argparse.ArgumentParser`) and
``run(args) -> int`` (the exit status); ``ORDER`` (an int, default 100) places it in
the help listing. Adding a subcommand (``estimate``, ``gpus``, ``models``, ``lsp``) is
adding one module here; :mod:`torchward.cli` needs no edit.

Command modules import only the standard library at module level and import what they
need inside ``run``: ``torchward --help`` and the warm ``check`` path must not pay for
``libcst`` or ``pygls``.
"""
