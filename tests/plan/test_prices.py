"""Dated prices: the bundled table, its generator, staleness and the user's own prices."""

from __future__ import annotations

import csv
import datetime
import json
from importlib import resources

import pytest
from torchward.estimator.hardware import all_instances
from torchward.estimator.planning import prices, skypilot_catalog
from torchward.estimator.planning.search import Request, search
from torchward.estimator.resolve import resolve
from torchward.estimator.runconfig import Field, RunConfig

from torchward.config import ConfigError, parse_table

TABLE = json.loads(
    resources.files("torchward.estimator").joinpath("data", "prices.json").read_text("utf-8")
)


def test_every_bundled_price_is_an_instance_the_catalog_knows_with_source_and_date():
    instances = {i.name: i for i in all_instances()}
    assert TABLE["licence"] and TABLE["prices"]
    for entry in TABLE["prices"]:
        inst = instances[entry["instance"]]
        assert (inst.gpu.key, inst.count) == (entry["gpu"], entry["count"])
        assert set(entry["source"]) == {"repository", "commit", "path"}
        assert len(entry["source"]["commit"]) == 40
        datetime.date.fromisoformat(entry["date"])
        assert entry["usd_per_hour"] > 0
        assert entry["host_memory_gib"] > 0  # the catalog's MemoryGiB: offload plans need it
    assert len(prices.bundled_offers()) == len(TABLE["prices"])  # none dropped on loading


HEADER = ["InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "SpotPrice", "Region"]
# invented rows in the catalog's schema: two regions of one known instance type, a CPU-only
# machine, a type the catalog does not know with a known accelerator, and one with an
# unknown accelerator
ROWS = [
    ["g5.xlarge", "A10G", "1.0", "1.10", "0.40", "us-west-2"],
    ["g5.xlarge", "A10G", "1.0", "1.00", "0.45", "us-east-1"],
    ["g5.xlarge", "A10G", "1.0", "1.00", "", "eu-west-1"],
    ["c5.large", "", "", "0.09", "0.03", "us-east-1"],
    ["made-up-2x-l4", "L4", "2.0", "1.70", "", "us-east-1"],
    ["mystery.big", "Z9000", "4.0", "9.00", "", "us-east-1"],
]


def _catalog(tmp_path, rows=ROWS):
    folder = tmp_path / "catalogs" / "v7" / "aws"
    folder.mkdir(parents=True)
    with open(folder / "vms.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return tmp_path


def test_generator_keeps_the_cheapest_region_and_the_lowest_spot_price(tmp_path):
    table = skypilot_catalog.build_table(str(_catalog(tmp_path)), "a" * 40, "2026-01-02")
    by_name = {e["instance"]: e for e in table["prices"]}
    assert set(by_name) == {"g5.xlarge", "made-up-2x-l4"}
    g5 = by_name["g5.xlarge"]
    assert (g5["usd_per_hour"], g5["region"], g5["spot_usd_per_hour"]) == (1.0, "eu-west-1", 0.4)
    assert g5["gpu_matched_by"] == "instances.json"
    assert by_name["made-up-2x-l4"]["gpu"] == "l4"
    assert by_name["made-up-2x-l4"]["count"] == 2
    assert g5["source"] == {
        "repository": "skypilot-org/skypilot-catalog",
        "commit": "a" * 40,
        "path": "catalogs/v7/aws/vms.csv",
    }
    assert g5["date"] == "2026-01-02"


def test_generator_leaves_out_a_type_whose_gpu_count_disagrees_with_the_catalog(tmp_path):
    rows = [["g5.xlarge", "A10G", "4.0", "1.00", "", "us-east-1"]]
    table = skypilot_catalog.build_table(str(_catalog(tmp_path, rows)), "b" * 40, "2026-01-02")
    assert table["prices"] == []


def test_generator_command_writes_the_table_with_a_given_date(tmp_path):
    out = tmp_path / "prices.json"
    code = skypilot_catalog.main(
        [
            "--catalog",
            str(_catalog(tmp_path)),
            "--out",
            str(out),
            "--commit",
            "c" * 40,
            "--date",
            "2026-03-04",
            "--date-basis",
            "retrieved",
            "--clouds",
            "aws",
        ]
    )
    written = json.loads(out.read_text())
    assert code == 0 and written["date_basis"] == "retrieved"
    assert {e["date"] for e in written["prices"]} == {"2026-03-04"}


def _gpt2():
    values = {"model": "gpt2", "mode": "train", "batch_size": 8, "seq_len": 512}
    return resolve(RunConfig(**{k: Field(v, "test") for k, v in values.items()}))


def test_stale_prices_are_left_out_unless_allowed_and_then_flagged():
    offer = prices.bundled_offers()[0]
    later = offer.date + datetime.timedelta(days=200)
    assert offer.stale(later, 180) and not offer.stale(later, 365)
    assert search(_gpt2(), [offer], Request(today=later, max_age_days=180)) == []
    allowed = search(_gpt2(), [offer], Request(today=later, max_age_days=180, allow_stale=True))
    assert allowed and all(p.stale for p in allowed)
    fresh = search(_gpt2(), [offer], Request(today=offer.date, max_age_days=180))
    assert fresh and not any(p.stale for p in fresh)


def test_a_users_price_replaces_the_bundled_one_for_that_instance():
    name = prices.bundled_offers()[0].instance.name
    mine = prices.offers([(name, 0.01, "2026-06-01")])
    chosen = next(o for o in mine if o.instance.name == name)
    assert (chosen.usd_per_hour, chosen.date_basis) == (0.01, "user")
    assert chosen.date == datetime.date(2026, 6, 1)
    assert len(mine) == len(prices.bundled_offers())


def test_prices_and_max_age_in_pyproject_are_validated(tmp_path):
    config = parse_table(
        str(tmp_path / "pyproject.toml"),
        {
            "price-max-age-days": 30,
            "prices": [{"instance": "gpu_1x_a10", "usd-per-hour": 0.5, "date": "2026-01-01"}],
        },
    )
    assert config.price_max_age_days == 30
    assert config.prices == (("gpu_1x_a10", 0.5, "2026-01-01"),)
    for bad in (
        {"prices": [{"instance": "no-such-machine", "usd-per-hour": 1.0}]},
        {"prices": [{"instance": "gpu_1x_a10", "usd-per-hour": -1}]},
        {"prices": [{"instance": "gpu_1x_a10", "usd-per-hour": 1, "date": "soon"}]},
        {"price-max-age-days": 0},
    ):
        with pytest.raises(ConfigError):
            parse_table(str(tmp_path / "pyproject.toml"), bad)


def test_generator_keeps_the_host_memory_of_the_row_it_prices(tmp_path):
    header = [*HEADER, "MemoryGiB"]
    rows = [
        ["g5.xlarge", "A10G", "1.0", "1.10", "", "us-west-2", "15.0"],
        ["g5.xlarge", "A10G", "1.0", "1.00", "", "us-east-1", "16.0"],
        ["made-up-2x-l4", "L4", "2.0", "1.70", "", "us-east-1", ""],
    ]
    folder = tmp_path / "catalogs" / "v7" / "aws"
    folder.mkdir(parents=True)
    with open(folder / "vms.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    table = skypilot_catalog.build_table(str(tmp_path), "c" * 40, "2026-01-02")
    by_name = {e["instance"]: e["host_memory_gib"] for e in table["prices"]}
    assert by_name == {"g5.xlarge": 16.0, "made-up-2x-l4": None}
