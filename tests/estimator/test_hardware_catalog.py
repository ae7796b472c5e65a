"""The GPU and instance catalog: sizes, look-up by every alias form, errors."""

from __future__ import annotations

import pytest
from torchward.estimator.hardware import Gpu, all_gpus, all_instances, lookup_gpu, lookup_hardware
from torchward.estimator.names import AmbiguousNameError, UnknownNameError, normalize

GiB = 1024**3
REQUIRED_GPUS = [
    "t4",
    "v100-16gb",
    "v100-32gb",
    "a10",
    "a10g",
    "a30",
    "a40",
    "a100-pcie-40gb",
    "a100-sxm4-40gb",
    "a100-pcie-80gb",
    "a100-sxm4-80gb",
    "h100-pcie",
    "h100-sxm",
    "h100-nvl",
    "h200",
    "h20",
    "b200",
    "gb200",
    "l4",
    "l40",
    "l40s",
    "rtx-6000-ada",
    "rtx-a6000",
    "mi210",
    "mi250x",
    "mi300x",
    "mi325x",
    "gaudi2",
    "gaudi3",
    "rtx-3060-12gb",
    "rtx-3070",
    "rtx-3080-10gb",
    "rtx-3080-ti",
    "rtx-3090",
    "rtx-3090-ti",
    "rtx-4060-ti-16gb",
    "rtx-4070",
    "rtx-4070-ti",
    "rtx-4080",
    "rtx-4090",
    "rtx-5070",
    "rtx-5080",
    "rtx-5090",
]


def test_catalog_holds_at_least_45_gpus_and_60_instances():
    assert len(all_gpus()) >= 45
    assert len(all_instances()) >= 60


@pytest.mark.parametrize("key", REQUIRED_GPUS)
def test_every_card_the_issue_names_is_in_the_catalog(key):
    assert lookup_gpu(key).key == key


@pytest.mark.parametrize("gpu", all_gpus(), ids=lambda g: g.key)
def test_every_gpu_has_sane_memory_and_says_where_its_numbers_come_from(gpu: Gpu):
    assert 0 < gpu.usable_bytes <= gpu.memory_bytes
    assert gpu.usable_bytes > 0.85 * gpu.memory_bytes
    assert gpu.usable_basis in {"measured", "reported", "estimated"}
    assert gpu.usable_source and gpu.source and gpu.context_basis
    assert 64 * 2**20 < gpu.context_bytes < 2 * GiB


@pytest.mark.parametrize(
    "gpu", [g for g in all_gpus() if g.vendor == "nvidia"], ids=lambda g: g.key
)
def test_nvidia_flash_attention_and_bf16_follow_compute_capability(gpu: Gpu):
    assert gpu.flash_attention == (gpu.sm_version >= 80)
    assert gpu.bf16 == (gpu.sm_version >= 80)
    assert gpu.arch == f"sm{gpu.sm_version}"


def test_t4_context_is_the_calibrated_measurement():
    assert lookup_gpu("t4").context_bytes == 141_426_688
    assert lookup_gpu("t4").usable_basis == "measured"


def test_larger_cards_carry_a_larger_cuda_context_than_the_t4():
    assert (
        lookup_gpu("h100-sxm").context_bytes
        > lookup_gpu("a10").context_bytes
        > lookup_gpu("t4").context_bytes
    )


def test_no_two_gpus_or_instances_share_a_lookup_key():
    seen: dict[str, str] = {}
    for gpu in all_gpus():
        for spelling in (gpu.key, gpu.name, *gpu.aliases):
            owner = seen.setdefault(normalize(spelling), gpu.key)
            assert owner == gpu.key, f"{spelling!r} names both {owner} and {gpu.key}"
    for inst in all_instances():
        for spelling in (inst.name, *inst.aliases):
            owner = seen.setdefault(normalize(spelling), inst.name)
            assert owner == inst.name, f"{spelling!r} names both {owner} and {inst.name}"


@pytest.mark.parametrize(
    "spelling, key",
    [
        ("a100-80gb", "a100-sxm4-80gb"),
        ("A100 80GB", "a100-sxm4-80gb"),
        ("a100_80g", "a100-sxm4-80gb"),
        ("NVIDIA A100 80GB SXM4", "a100-sxm4-80gb"),
        ("rtx4090", "rtx-4090"),
        ("4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("RTX 6000 Ada", "rtx-6000-ada"),
        ("tesla t4", "t4"),
        ("H100 NVL", "h100-nvl"),
        ("MI300X", "mi300x"),
        ("gaudi 3", "gaudi3"),
    ],
)
def test_a_gpu_is_found_by_each_alias_form(spelling, key):
    choice = lookup_hardware(spelling)
    assert (choice.gpu.key, choice.count, choice.alternatives) == (key, 1, ())


@pytest.mark.parametrize(
    "name, key, count",
    [
        ("p4de.24xlarge", "a100-sxm4-80gb", 8),
        ("p4d.24xlarge", "a100-sxm4-40gb", 8),
        ("p5.48xlarge", "h100-sxm", 8),
        ("g5.xlarge", "a10g", 1),
        ("g5.12xlarge", "a10g", 4),
        ("g4dn.xlarge", "t4", 1),
        ("g6e.48xlarge", "l40s", 8),
        ("a2-ultragpu-8g", "a100-sxm4-80gb", 8),
        ("a3-highgpu-8g", "h100-sxm", 8),
        ("g2-standard-96", "l4", 8),
        ("Standard_ND96isr_H100_v5", "h100-sxm", 8),
        ("ND96isr_H100_v5", "h100-sxm", 8),
        ("Standard_NC24ads_A100_v4", "a100-pcie-80gb", 1),
        ("gpu_8x_h100_sxm5", "h100-sxm", 8),
        ("BM.GPU.MI300X.8", "mi300x", 8),
        ("n1-standard-8+4xt4", "t4", 4),
    ],
)
def test_an_instance_type_resolves_to_its_gpu_times_count(name, key, count):
    choice = lookup_hardware(name)
    assert (choice.gpu.key, choice.count, choice.matched_as) == (key, count, "instance")
    assert choice.total_usable_bytes == count * choice.gpu.usable_bytes


@pytest.mark.parametrize(
    "spelling, key, count",
    [
        ("8xh100", "h100-sxm", 8),
        ("8x H100", "h100-sxm", 8),
        ("h100x8", "h100-sxm", 8),
        ("4 x A100 80GB", "a100-sxm4-80gb", 4),
        ("2×rtx4090", "rtx-4090", 2),
    ],
)
def test_a_count_prefix_or_suffix_multiplies_the_gpu(spelling, key, count):
    choice = lookup_hardware(spelling)
    assert (choice.gpu.key, choice.count) == (key, count)


def test_an_ambiguous_family_name_resolves_to_its_smallest_member_and_names_the_others():
    choice = lookup_hardware("a100")
    assert choice.gpu.key == "a100-pcie-40gb"
    assert choice.matched_as == "family-default"
    assert "NVIDIA A100 80GB SXM4" in choice.alternatives


def test_a_bare_h100_reads_as_an_80gb_card_never_the_94gb_nvl():
    choice = lookup_hardware("H100")
    assert choice.gpu.usable_bytes < lookup_gpu("h100-nvl").usable_bytes
    assert "NVIDIA H100 NVL 94GB" in choice.alternatives


def test_strict_lookup_refuses_an_ambiguous_family_and_lists_candidates():
    with pytest.raises(AmbiguousNameError) as err:
        lookup_hardware("a100", strict=True)
    assert "NVIDIA A100 80GB SXM4" in err.value.candidates
    assert "A100 40GB" in str(err.value)


def test_an_unknown_name_raises_with_close_suggestions():
    with pytest.raises(UnknownNameError) as err:
        lookup_hardware("a1000")
    assert err.value.candidates
    assert any("A100" in c for c in err.value.candidates)
    assert "did you mean" in str(err.value)


def test_an_unknown_gpu_in_a_count_prefix_is_still_an_error():
    with pytest.raises(UnknownNameError):
        lookup_hardware("8xq9000")
