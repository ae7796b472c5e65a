"""``torchward models``: the architecture catalog, with computed parameter counts."""

from __future__ import annotations

import argparse

NAME = "models"
HELP = "List the model architectures the estimator knows."
ORDER = 55


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("terminal", "json"), default="terminal", help="output format"
    )


def run(args: argparse.Namespace) -> int:
    import json

    from ..estimator.architecture import all_architectures
    from ..estimator.units import count_text

    rows = [
        {
            "name": a.name,
            "family": a.family,
            "kind": a.kind,
            "model_type": a.model_type,
            "hf_id": a.hf_id,
            "params": a.params,
            "active_params": a.active_params,
            "aliases": list(a.aliases),
        }
        for a in all_architectures()
    ]
    if args.format == "json":
        print(json.dumps({"models": rows}, indent=2))
        return 0
    for r in rows:
        print(f"{r['name']:<34} {r['kind']:<22} {count_text(r['params']):>6}  {r['hf_id'] or ''}")
    return 0
