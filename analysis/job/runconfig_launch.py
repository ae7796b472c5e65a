"""How the default launch runs: world size and gradient accumulation.

Read from what the script contains and what it does not: a distributed set-up skipped by
a plain ``python SCRIPT`` launch, a launcher that decides (Accelerate, the HF Trainer), a
backward in a loop whose optimizer step comes after it (``for micro in range(N)``).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from .runconfig_fields import ReaderState, positive_int

if TYPE_CHECKING:
    pass

__all__ = ["LaunchReader"]


class LaunchReader:
    """World size and accumulation of the default launch."""

    def __init__(self, state: ReaderState) -> None:
        self.state = state  # the field table this read fills, shared with the other readers

    def read(self, values) -> None:
        """World size and accumulation of the default launch (``python SCRIPT``) when the
        script sets neither: one process, one optimizer step per batch — read from what the
        script does not contain, so at most medium, and low when a distributed set-up exists
        that a plain launch skips."""
        training = (
            "train" in self.state.signals
            or "train-call" in self.state.signals
            or (
                self.state.fields.get("mode") is not None
                and self.state.fields["mode"].value == "train"
            )
        )
        if not training:
            return
        launched = _LAUNCH_COMMAND.search(values.source_text)  # "torchrun ... SCRIPT" in a comment
        if "gpus" not in self.state.fields and "sharding" not in self.state.fields:
            skipped = any(state == "multi-gpu" for _, state in self.state.skipped)
            if "world-size-env" in self.state.signals:
                pass  # WORLD_SIZE read on the default path: the launch decides, say so
            elif skipped and not self.state.distributed:
                # the set-up a launcher's variables turn on is skipped: ``python SCRIPT``
                # runs one process, whatever launch the script's comments document (one
                # GPU is also each DDP rank's memory; a sharded launch only needs less)
                documented = f"; the script documents `{launched.group(0)}`" if launched else ""
                self.state.set(
                    "gpus",
                    1,
                    0,
                    "low",
                    f"{self.state.path} (a plain launch; distributed only under a launcher{documented}: "
                    "give --gpus N for that launch)",
                )
            elif "world-size-default" in self.state.signals and not self.state.distributed:
                self.state.set(
                    "gpus",
                    1,
                    self.state.signals["world-size-default"],
                    "low",
                    f"{self.state.path}:{self.state.signals['world-size-default']} (a plain launch leaves "
                    "WORLD_SIZE unset: one process; give --gpus N for a launcher)",
                )
            elif launched:
                pass  # a launch command documented, and no plain launch visible: it decides
            elif self.state.launcher and not self.state.distributed:
                self.state.set(
                    "gpus",
                    1,
                    0,
                    "low",
                    f"{self.state.path} (a plain launch: one process; the launcher's config may set more)",
                )
            elif not self.state.distributed:
                self.state.set(
                    "gpus",
                    1,
                    0,
                    "medium",
                    f"{self.state.path} (no distributed launch in the script)",
                )
        if "accumulation" not in self.state.fields:
            self._accumulation_loop(values)
        if (
            "accumulation" not in self.state.fields
            and not self.state.accumulates
            and not _ACCUMULATES.search(values.source_text)
        ):
            self.state.set(
                "accumulation",
                1,
                0,
                "medium",
                f"{self.state.path} (no gradient accumulation in the script)",
            )

    def _accumulation_loop(self, values) -> None:
        """``for micro in range(N): ... loss.backward()`` with the optimizer step after the
        loop: N micro-batches accumulate (an unresolved N says so, it is not 1)."""
        for node in values.paths.of_type(ast.Call):
            if not (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "backward"
                and values.paths.state(node).runs
            ):
                continue
            loop = _enclosing_loop(node, values)
            if not isinstance(loop, ast.For) or _steps(loop):
                continue
            outer = _enclosing_loop(loop, values)
            if outer is None or not _steps(outer):
                continue
            self.state.accumulates = True
            iterator = loop.iter
            if (
                isinstance(iterator, ast.Call)
                and isinstance(iterator.func, ast.Name)
                and iterator.func.id == "range"
                and len(iterator.args) == 1
            ):
                found = values.get(iterator.args[0])
                if found is not None and positive_int(found[0]):
                    self.state.set("accumulation", found[0], loop.lineno, "medium")
            return


_ACCUMULATES = re.compile(r"(?i)accum")

_LAUNCH_COMMAND = re.compile(r"torchrun|nproc_per_node|accelerate launch|deepspeed --|mpirun")


def _enclosing_loop(node: ast.AST, values) -> ast.AST | None:
    current = values.paths.parent(node)
    while current is not None and not isinstance(current, (ast.For, ast.While)):
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        current = values.paths.parent(current)
    return current


def _steps(node: ast.AST) -> bool:
    """Whether ``node`` contains an optimizer step (``opt.step()``, ``scaler.step(opt)``)."""
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
        for n in ast.walk(node)
    )
