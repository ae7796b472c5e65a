"""What an instance costs per hour, since when we know it, and whether that is too old to use.

The bundled table (``data/prices.json``) is generated from a pinned commit of SkyPilot's
public catalog (:mod:`.skypilot_catalog`); each entry keeps its source and date. A user's
own prices (negotiated, reserved, on-premises) come from ``[tool.torchward] prices`` and
replace the bundled entry of the same instance type::

    [tool.torchward]
    price-max-age-days = 180
    prices = [
      { instance = "gpu_1x_a100", usd-per-hour = 0.99, date = "2026-11-01" },
      { instance = "p4d.24xlarge", usd-per-hour = 19.0 },            # date: today
    ]

An instance named there must be in the instance catalog (``torchward gpus --instances``).

**Stale prices are flagged, never silently used**: an entry older than
``price-max-age-days`` (default :data:`DEFAULT_MAX_AGE_DAYS`) is marked ``stale``; the
planner keeps its plans out of the ranking unless asked (``--allow-stale-prices``) and
then says so on every row.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

import attrs

from ..hardware import Instance, all_instances

__all__ = [
    "DEFAULT_MAX_AGE_DAYS",
    "Offer",
    "bundled_offers",
    "offers",
    "parse_user_prices",
]

DEFAULT_MAX_AGE_DAYS = 180


@attrs.frozen
class Offer:
    """One rentable instance type with its hourly price and where that price came from."""

    instance: Instance
    usd_per_hour: float
    spot_usd_per_hour: float | None
    region: str
    source: str
    """``repo@commit:path`` for the bundled table, ``pyproject.toml`` for a user's price."""
    date: datetime.date
    date_basis: str
    """``git`` (the catalog commit's date), ``retrieved`` (the day the rows were read; the
    commit's own date was not available), ``given`` or ``user``."""
    accelerator: str = ""
    """SkyPilot's accelerator name (``A100-80GB``), for ``--format skypilot``."""
    host_memory_gib: float | None = None
    """The instance's CPU memory (catalog ``MemoryGiB``): what an optimizer or parameters
    offloaded to the CPU must fit in; ``None`` where the table does not say."""

    def age_days(self, today: datetime.date) -> int:
        return (today - self.date).days

    def stale(self, today: datetime.date, max_age_days: int) -> bool:
        return self.age_days(today) > max_age_days

    def to_dict(self) -> dict:
        return {
            "instance": self.instance.name,
            "provider": self.instance.provider,
            "usd_per_hour": self.usd_per_hour,
            "spot_usd_per_hour": self.spot_usd_per_hour,
            "region": self.region,
            "source": self.source,
            "date": self.date.isoformat(),
            "date_basis": self.date_basis,
            "accelerator": self.accelerator,
            "host_memory_gib": self.host_memory_gib,
        }


def _load() -> dict:
    text = (
        resources.files("torchward.estimator")
        .joinpath("data")
        .joinpath("prices.json")
        .read_text("utf-8")
    )
    return json.loads(text)


@functools.cache
def bundled_offers() -> tuple[Offer, ...]:
    """The package-data table, one offer per instance type the instance catalog knows."""
    data = _load()
    known = {i.name: i for i in all_instances()}
    found = []
    for entry in data["prices"]:
        inst = known.get(entry["instance"])
        if inst is None or inst.gpu.key != entry["gpu"] or inst.count != entry["count"]:
            continue  # tests/plan/test_prices.py keeps this empty
        src = entry["source"]
        found.append(
            Offer(
                instance=inst,
                usd_per_hour=float(entry["usd_per_hour"]),
                spot_usd_per_hour=entry.get("spot_usd_per_hour"),
                region=entry.get("region", ""),
                source=f"{src['repository']}@{src['commit'][:12]}:{src['path']}",
                date=datetime.date.fromisoformat(entry["date"]),
                date_basis=data.get("date_basis", "git"),
                accelerator=entry.get("accelerator", ""),
                host_memory_gib=entry.get("host_memory_gib"),
            )
        )
    return tuple(found)


def _positive_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{what}: expected a positive number, got {value!r}")
    return float(value)


def parse_user_prices(value: Any) -> tuple[tuple[str, float, str | None], ...]:
    """Validate ``[tool.torchward] prices``: (instance, usd per hour, ISO date or None)."""
    if not isinstance(value, list):
        raise ValueError("expected a list of tables like { instance = ..., usd-per-hour = ... }")
    known = {i.name for i in all_instances()}
    out = []
    for item in value:
        if not isinstance(item, dict) or set(item) - {"instance", "usd-per-hour", "date"}:
            raise ValueError(
                f"each price is {{ instance = NAME, usd-per-hour = N, date = 'YYYY-MM-DD' }}, "
                f"got {item!r}"
            )
        name = item.get("instance")
        if name not in known:
            raise ValueError(f"unknown instance type {name!r} (see `torchward gpus --instances`)")
        price = _positive_number(item.get("usd-per-hour"), f"{name} usd-per-hour")
        date = item.get("date")
        if date is not None:
            date = str(date)
            datetime.date.fromisoformat(date)  # ValueError on anything else
        out.append((name, price, date))
    return tuple(out)


def offers(
    user: Iterable[tuple[str, float, str | None]] = (),
    today: datetime.date | None = None,
    source: str = "pyproject.toml [tool.torchward] prices",
) -> tuple[Offer, ...]:
    """The bundled offers with the user's prices laid over them (same instance type)."""
    today = today or datetime.date.today()
    known: Mapping[str, Instance] = {i.name: i for i in all_instances()}
    table = {o.instance.name: o for o in bundled_offers()}
    for name, price, date in user:
        table[name] = Offer(
            instance=known[name],
            usd_per_hour=price,
            spot_usd_per_hour=None,
            region="",
            source=source,
            date=datetime.date.fromisoformat(date) if date else today,
            date_basis="user",
            accelerator=table[name].accelerator if name in table else "",
            host_memory_gib=table[name].host_memory_gib if name in table else None,
        )
    return tuple(table.values())
