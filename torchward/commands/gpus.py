"""``torchward gpus [--instances]``: the GPU (and cloud-instance) catalog the estimator uses."""

from __future__ import annotations

import argparse

NAME = "gpus"
HELP = "List the GPUs (and with --instances, the cloud instances) the estimator knows."
ORDER = 50


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instances", action="store_true", help="list cloud instance types too")
    parser.add_argument(
        "--format", choices=("terminal", "json"), default="terminal", help="output format"
    )


def run(args: argparse.Namespace) -> int:
    import datetime
    import json

    from ..estimator.hardware import all_gpus, all_instances
    from ..estimator.planning.prices import DEFAULT_MAX_AGE_DAYS, bundled_offers

    gpus = [
        {
            "key": g.key,
            "name": g.name,
            "vendor": g.vendor,
            "tier": g.tier,
            "memory_bytes": g.memory_bytes,
            "usable_bytes": g.usable_bytes,
            "context_bytes": g.context_bytes,
            "bf16": g.bf16,
            "flash_attention": g.flash_attention,
            "aliases": list(g.aliases),
        }
        for g in all_gpus()
    ]
    today = datetime.date.today()
    prices = {
        o.instance.name: {**o.to_dict(), "stale": o.stale(today, DEFAULT_MAX_AGE_DAYS)}
        for o in (bundled_offers() if args.instances else ())
    }
    instances = (
        [
            {
                "name": i.name,
                "provider": i.provider,
                "gpu": i.gpu.key,
                "count": i.count,
                "price": prices.get(i.name),  # dated, with its source; None: not priced
            }
            for i in all_instances()
        ]
        if args.instances
        else []
    )
    if args.format == "json":
        print(json.dumps({"gpus": gpus, "instances": instances}, indent=2))
        return 0
    for g in gpus:
        print(
            f"{g['key']:<18} {g['name']:<32} {g['usable_bytes'] / 2**30:7.1f} GiB usable  {g['tier']}"
        )
    for i in instances:
        price = i["price"]
        priced = (
            f"  ${price['usd_per_hour']:.2f}/h  {price['date']}"
            + (" STALE" if price["stale"] else "")
            + f"  {price['source']}"
            if price
            else ""
        )
        print(f"{i['name']:<34} {i['provider']:<10} {i['count']} × {i['gpu']:<18}{priced}".rstrip())
    return 0
