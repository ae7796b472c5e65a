"""Turn a pinned commit of SkyPilot's public price catalog into ``data/prices.json``.

Prices are not typed by hand: ``skypilot-org/skypilot-catalog`` keeps one ``vms.csv`` per
cloud (schema v7: ``InstanceType, AcceleratorName, AcceleratorCount, ..., Price,
SpotPrice, Region``), refreshed by its own CI. This module reads those CSVs from a local
clone and keeps, per GPU instance type that the instance catalog (``instances.json``)
knows, **one** price: the cheapest region's on-demand price (ties: the first region by
name), the cheapest spot price seen for that type, if any, and the instance's CPU memory
(``MemoryGiB``: the host RAM an offloaded optimizer or parameters must fit in). Every entry carries where
it came from (repository, commit, path) and the date of that commit; a table is only as
current as its commit, and :mod:`.prices` flags entries older than the configured age.

Refresh (one command, from a clone of the catalog)::

    git clone https://github.com/skypilot-org/skypilot-catalog ~/skypilot-catalog
    python -m torchward.estimator.planning.skypilot_catalog --catalog ~/skypilot-catalog \\
        --out estimator/data/prices.json

The commit and its date are read with ``git`` from the clone; ``--commit`` / ``--date``
give them when the files come from elsewhere (an extract of rows), and then the table
says so. Instance types whose GPU the catalog does not know are skipped, never guessed.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping

from ..hardware import all_instances

__all__ = ["CLOUDS", "REPOSITORY", "build_table", "cheapest_rows", "main"]

REPOSITORY = "skypilot-org/skypilot-catalog"
SCHEMA = "v7"
CLOUDS = ("aws", "gcp", "azure", "lambda", "oci", "runpod")
LICENCE = (
    "No LICENSE file was found in the stored copy of skypilot-org/skypilot-catalog; the "
    "SkyPilot project that publishes it (skypilot-org/skypilot) is Apache-2.0. The table "
    "keeps facts only (instance type, GPU count, hourly price, region, host memory), no code "
    "and no CSV."
)

# SkyPilot accelerator names (vms.csv AcceleratorName) → gpus.json keys, for instance types
# the instance catalog does not list but whose GPU and count the CSV states.
ACCELERATORS = {
    "A100": "a100-sxm4-40gb",
    "A100-80GB": "a100-sxm4-80gb",
    "A10": "a10",
    "A10G": "a10g",
    "A6000": "rtx-a6000",
    "GH200": "gh200",
    "H100": "h100-sxm",
    "H100-SXM": "h100-sxm",
    "H200": "h200",
    "L4": "l4",
    "L40S": "l40s",
    "T4": "t4",
    "V100": "v100-16gb",
    "V100-32GB": "v100-32gb",
    "B200": "b200",
}


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


def cheapest_rows(rows: Iterable[Mapping[str, str]]) -> dict[str, dict]:
    """Per instance type with a GPU: the cheapest region's on-demand row, plus the lowest
    spot price of any region (``None`` where no region sells spot)."""
    best: dict[str, dict] = {}
    for row in rows:
        name = (row.get("InstanceType") or "").strip()
        count = _number(row.get("AcceleratorCount"))
        price = _number(row.get("Price"))
        if not name or not count or price is None or not row.get("AcceleratorName"):
            continue
        region = row.get("Region") or ""
        spot = _number(row.get("SpotPrice"))
        seen = best.get(name)
        if seen is None or (price, region) < (seen["price"], seen["region"]):
            lowest_spot = seen["spot"] if seen else None
            best[name] = {
                "accelerator": row["AcceleratorName"],
                "count": int(count),
                "price": price,
                "region": region,
                "spot": lowest_spot,
                "memory": _number(row.get("MemoryGiB")),
            }
        if spot is not None and (best[name]["spot"] is None or spot < best[name]["spot"]):
            best[name]["spot"] = spot
    return best


def _gpu_for(instance: str, accelerator: str, count: int) -> tuple[str, str] | None:
    """(gpus.json key, how it was matched) for one CSV instance type, or ``None``."""
    known = {i.name: i for i in all_instances()}
    if instance in known:
        inst = known[instance]
        if inst.count != count:
            return None  # the two catalogs disagree: leave it out rather than pick one
        return inst.gpu.key, "instances.json"
    key = ACCELERATORS.get(accelerator)
    if key is None:
        return None
    if accelerator == "H100" and "pcie" in instance.lower():
        key = "h100-pcie"
    return key, f"accelerator {accelerator} x {count}"


def build_table(
    catalog: str,
    commit: str | Mapping[str, str],
    date: str,
    clouds: Iterable[str] = CLOUDS,
    basis: str = "git",
) -> dict:
    """The ``prices.json`` document for the CSVs under ``catalog`` (a clone or an extract).

    ``commit``: the catalog commit, or per cloud (``{"aws": sha, "lambda": sha}``) when the
    files were read from different commits."""
    entries = []
    for cloud in clouds:
        pinned = commit if isinstance(commit, str) else commit.get(cloud)
        if pinned is None:
            continue
        path = f"catalogs/{SCHEMA}/{cloud}/vms.csv"
        full = os.path.join(catalog, path)
        if not os.path.exists(full):
            continue
        with open(full, newline="", encoding="utf-8") as handle:
            best = cheapest_rows(csv.DictReader(handle))
        for name in sorted(best):
            row = best[name]
            gpu = _gpu_for(name, row["accelerator"], row["count"])
            if gpu is None:
                continue
            entries.append(
                {
                    "instance": name,
                    "provider": cloud,
                    "gpu": gpu[0],
                    "gpu_matched_by": gpu[1],
                    "count": row["count"],
                    "accelerator": row["accelerator"],
                    "usd_per_hour": row["price"],
                    "spot_usd_per_hour": row["spot"],
                    "region": row["region"],
                    "host_memory_gib": row["memory"],
                    "source": {"repository": REPOSITORY, "commit": pinned, "path": path},
                    "date": date,
                }
            )
    return {
        "note": (
            "Hourly on-demand (and spot) prices of GPU instances, generated by "
            "estimator/planning/skypilot_catalog.py from a pinned commit of "
            f"{REPOSITORY} (schema {SCHEMA}); one price per instance type: the cheapest "
            "region's on-demand. Do not edit by hand: regenerate (docs/plan.md)."
        ),
        "licence": LICENCE,
        "date_basis": basis,
        "prices": entries,
    }


def _git(catalog: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", catalog, *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalog", required=True, help="a clone (or extract) of the catalog")
    parser.add_argument("--out", required=True, help="the prices.json to write")
    parser.add_argument(
        "--commit",
        action="append",
        help="the catalog commit (default: the clone's HEAD); CLOUD=SHA, repeated, when the "
        "clouds' files come from different commits",
    )
    parser.add_argument("--date", help="that commit's date, YYYY-MM-DD (default: from git)")
    parser.add_argument(
        "--date-basis",
        choices=("given", "retrieved"),
        default="given",
        help="what --date is: the commit's date (given) or the day the rows were read "
        "(retrieved: the commit's own date was not available)",
    )
    parser.add_argument("--clouds", default=",".join(CLOUDS), help="comma-separated clouds")
    args = parser.parse_args(argv)
    date, basis = args.date, args.date_basis
    commit: str | dict[str, str]
    if not args.commit:
        commit = _git(args.catalog, "rev-parse", "HEAD")
    elif len(args.commit) == 1 and "=" not in args.commit[0]:
        commit = args.commit[0]
    else:
        commit = dict(item.split("=", 1) for item in args.commit)
    if date is None:
        if not isinstance(commit, str):
            parser.error("--date is needed with per-cloud commits")
        stamp = _git(args.catalog, "log", "-1", "--format=%cI", commit)
        date, basis = datetime.datetime.fromisoformat(stamp).date().isoformat(), "git"
    datetime.date.fromisoformat(date)  # raises on anything but YYYY-MM-DD
    table = build_table(args.catalog, commit, date, args.clouds.split(","), basis)
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(table, handle, indent=1)
        handle.write("\n")
    print(f"{len(table['prices'])} prices from {REPOSITORY} ({date})", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line above
    raise SystemExit(main())
