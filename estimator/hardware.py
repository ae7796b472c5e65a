"""The GPU and cloud-instance catalog: which card a name means, and how much of it a job gets.

The numbers live in ``data/gpus.json`` and ``data/instances.json`` (hardware is data, not
code, so a new card is a JSON edit); this module reads them into frozen values and
answers forgiving look-ups.

What a name can be, tried in this order:

1. an instance type: ``p4de.24xlarge``, ``Standard_ND96isr_H100_v5`` → GPU × count;
2. a GPU key or alias: ``a100-80gb``, ``A100 80GB``, ``a100_80g``, ``rtx4090``, ``4090``;
3. ``N x GPU`` or ``GPU x N``: ``8xh100``, ``4 x A100 80GB``, ``h100x8`` → GPU × N;
4. a family name shared by several cards (``a100``, ``h100``, ``v100``, ``rtx 3080``).

**Ambiguous names resolve to a documented default**: the family member with the least
memory left for the job (usable minus context). An estimate made for the smaller card can only err towards "does not
fit", never towards an OOM on the rented machine. The choice is not silent: the returned
:class:`HardwareChoice` carries ``alternatives``, which the CLI names ("a100 read as
A100 40GB SXM4; also: ..."). Callers that must refuse to guess call
:func:`lookup_hardware` with ``strict=True``, which raises :class:`AmbiguousNameError`
listing the candidates instead.

Unknown names raise :class:`UnknownNameError` with the closest known names.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType

import attrs

from .names import AmbiguousNameError, UnknownNameError, normalize, suggestions

__all__ = [
    "Gpu",
    "HardwareChoice",
    "Instance",
    "all_gpus",
    "all_instances",
    "lookup_gpu",
    "lookup_hardware",
]

# "8xh100", "8 x A100 80GB", "8×H100", "8*h100"; and the suffix form "h100x8".
_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*[x×*]\s*(.+?)\s*$", re.IGNORECASE)
_COUNT_SUFFIX = re.compile(r"^\s*(.+?)\s*[x×*]\s*(\d+)\s*$", re.IGNORECASE)


@attrs.frozen
class Gpu:
    """One accelerator as PyTorch sees it (for an MI250X: one of its two GCDs)."""

    key: str
    name: str
    family: str
    vendor: str
    tier: str
    arch: str
    compute_capability: str
    memory_type: str
    memory_bytes: int
    """Marketed capacity, GB read as GiB."""
    usable_bytes: int
    """What the driver gives PyTorch: ``get_device_properties().total_memory``."""
    usable_basis: str
    usable_source: str
    context_bytes: int
    """CUDA (or ROCm / HPU runtime) context: outside PyTorch's own accounting."""
    context_basis: str
    sm_count: int | None
    max_threads_per_sm: int | None
    devices_per_card: int
    bf16: bool
    flash_attention: bool
    """Whether an SDPA kernel that never materialises the s² scores exists for fp16/bf16."""
    aliases: tuple[str, ...]
    source: str
    notes: str = ""

    @property
    def sm_version(self) -> int | None:
        """``80`` for compute capability 8.0; ``None`` for non-NVIDIA devices."""
        if self.vendor != "nvidia":
            return None
        major, minor = self.compute_capability.split(".")
        return int(major) * 10 + int(minor)


@attrs.frozen
class Instance:
    """A rentable machine type: ``count`` GPUs of one kind."""

    name: str
    provider: str
    gpu: Gpu
    count: int
    aliases: tuple[str, ...]
    source: str


@attrs.frozen
class HardwareChoice:
    """The answer to a hardware name: which GPU, how many, and how the name was read."""

    gpu: Gpu
    count: int
    query: str
    matched_as: str
    """``gpu``, ``instance``, ``family-default`` or ``count-prefix`` (with one of the former)."""
    instance: Instance | None = None
    alternatives: tuple[str, ...] = ()
    """Other GPUs the name could have meant (non-empty only for a family default)."""

    @property
    def total_usable_bytes(self) -> int:
        return self.gpu.usable_bytes * self.count


def _load(name: str) -> dict:
    text = resources.files("torchward.estimator").joinpath("data", name).read_text("utf-8")
    return json.loads(text)


def _gpu_from_record(record: Mapping) -> Gpu:
    fields = {a.name for a in attrs.fields(Gpu)}
    values = {k: v for k, v in record.items() if k in fields}
    values["aliases"] = tuple(record.get("aliases", ()))
    return Gpu(**values)


@functools.cache
def _catalog() -> tuple[Mapping[str, Gpu], Mapping[str, Instance]]:
    gpus = {r["key"]: _gpu_from_record(r) for r in _load("gpus.json")["gpus"]}
    instances = {}
    for r in _load("instances.json")["instances"]:
        instances[r["name"]] = Instance(
            name=r["name"],
            provider=r["provider"],
            gpu=gpus[r["gpu"]],
            count=int(r["count"]),
            aliases=tuple(r.get("aliases", ())),
            source=r["source"],
        )
    return MappingProxyType(gpus), MappingProxyType(instances)


@functools.cache
def _indexes() -> tuple[dict[str, Gpu], dict[str, list[Gpu]], dict[str, Instance]]:
    gpus, instances = _catalog()
    by_name: dict[str, Gpu] = {}
    families: dict[str, list[Gpu]] = {}
    for gpu in gpus.values():
        for spelling in (gpu.key, gpu.name, *gpu.aliases):
            by_name[normalize(spelling)] = gpu
        family = normalize(gpu.family)
        families.setdefault(family, []).append(gpu)
        if family.startswith("rtx") and family[3:4].isdigit():
            # "3080" names the RTX 3080 family as much as "rtx 3080" does.
            families.setdefault(family[3:], []).append(gpu)
    by_instance = {}
    for inst in instances.values():
        for spelling in (inst.name, *inst.aliases):
            key = normalize(spelling)
            by_instance[key] = inst
            # Azure sizes are written with and without the "Standard_" prefix.
            if key.startswith("standard"):
                by_instance[key[len("standard") :]] = inst
    return by_name, families, by_instance


def all_gpus() -> tuple[Gpu, ...]:
    """Every GPU in the catalog, in data-file order."""
    return tuple(_catalog()[0].values())


def all_instances() -> tuple[Instance, ...]:
    """Every cloud instance type in the catalog, in data-file order."""
    return tuple(_catalog()[1].values())


def lookup_gpu(name: str, *, strict: bool = False) -> Gpu:
    """The GPU a single-card name means (no instance types, no counts)."""
    choice = _lookup_single(name, strict=strict)
    if choice is None:
        raise UnknownNameError("GPU", name, _suggest(name))
    return choice.gpu


def lookup_hardware(name: str, *, strict: bool = False) -> HardwareChoice:
    """Resolve an instance type, a GPU name, or ``N x GPU`` to a :class:`HardwareChoice`."""
    by_instance = _indexes()[2]
    inst = by_instance.get(normalize(name))
    if inst is not None:
        return HardwareChoice(inst.gpu, inst.count, name, "instance", instance=inst)
    single = _lookup_single(name, strict=strict)
    if single is not None:
        return single
    for pattern, count_group, name_group in ((_COUNT_PREFIX, 1, 2), (_COUNT_SUFFIX, 2, 1)):
        match = pattern.match(name)
        if match:
            inner = _lookup_single(match.group(name_group), strict=strict)
            if inner is not None:
                count = int(match.group(count_group))
                if count < 1:
                    raise ValueError(f"GPU count must be at least 1 in {name!r}")
                return attrs.evolve(
                    inner, count=count, query=name, matched_as=f"count-prefix+{inner.matched_as}"
                )
    raise UnknownNameError("GPU or instance", name, _suggest(name))


def _lookup_single(name: str, *, strict: bool) -> HardwareChoice | None:
    by_name, families, _ = _indexes()
    key = normalize(name)
    members = families.get(key, [])
    if len(members) <= 1:
        gpu = by_name.get(key) or (members[0] if members else None)
        return HardwareChoice(gpu, 1, name, "gpu") if gpu is not None else None
    # Least memory left for the job first (usable minus context), so the default errs
    # towards "does not fit"; ties broken by key for determinism.
    ordered = sorted(members, key=lambda g: (g.usable_bytes - g.context_bytes, g.key))
    if strict:
        raise AmbiguousNameError("GPU", name, [g.name for g in ordered])
    return HardwareChoice(
        ordered[0], 1, name, "family-default", alternatives=tuple(g.name for g in ordered[1:])
    )


def _suggest(name: str) -> list[str]:
    by_name, _families, by_instance = _indexes()
    keys: dict[str, str] = {}
    for key, gpu in by_name.items():
        keys.setdefault(key, gpu.name)
    for key, inst in by_instance.items():
        keys.setdefault(key, inst.name)
    return suggestions(name, keys)
