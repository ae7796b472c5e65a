"""Findings do not depend on the order of branches.

``if c: A else: B`` and ``if not c: B else: A`` are the same program; the dataflow joins
the two branches' environments where they meet, so any order dependence in that join
shows up as a finding that appears, disappears or changes severity when the bodies are
swapped. Each case is a realistic training-script shape restated in our own words; every
subset of its ``if``/``else`` statements is swapped (conditions negated) and the findings
compared by rule, severity, confidence, fixes, what the engine proved for the fixers and
the flagged source text
(lines move when bodies of different lengths swap, so line numbers are not compared).
"""

from __future__ import annotations

import ast
import itertools

import pytest
from torchward.analysis import analyze_source
from torchward.analysis.facts import values as values_module

CASES = {
    "ddp_sampler_chosen_by_flag": """
import torch
from torch.utils.data import DataLoader, DistributedSampler

def main(model, dataset, opt, distributed):
    model = torch.nn.parallel.DistributedDataParallel(model)
    if distributed:
        loader = DataLoader(dataset, batch_size=16, sampler=DistributedSampler(dataset))
    else:
        loader = DataLoader(dataset, batch_size=16, shuffle=True)
    for batch in loader:
        opt.zero_grad()
        model(batch).mean().backward()
        opt.step()
""",
    # the sampler object is chosen by rank; set_epoch is never called (TW021)
    "sampler_kind_chosen_by_rank": """
import torch
from torch.utils.data import DataLoader, RandomSampler
from torch.utils.data.distributed import DistributedSampler

def main(model, dataset, opt, local_rank, epochs):
    if local_rank == -1:
        sampler = RandomSampler(dataset)
    else:
        sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=32)
    for epoch in range(epochs):
        for batch in loader:
            opt.zero_grad()
            model(batch).mean().backward()
            opt.step()
""",
    "ddp_without_sampler_on_both_paths": """
import torch
from torch.utils.data import DataLoader

def main(model, dataset, opt, small):
    model = torch.nn.parallel.DistributedDataParallel(model)
    if small:
        loader = DataLoader(dataset, batch_size=4)
    else:
        loader = DataLoader(dataset, batch_size=64, shuffle=True)
    for batch in loader:
        opt.zero_grad()
        model(batch).mean().backward()
        opt.step()
""",
    "history_keeps_the_graph_on_one_path": """
import torch

def fit(model, loader, opt, keep_tensors):
    history = []
    for x, y in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if keep_tensors:
            history.append(loss)
        else:
            history.append(loss.item())
        loss.backward()
        opt.step()
    return history
""",
    "criterion_chosen_by_task": """
import torch
import torch.nn as nn

def train(model, loader, opt, multilabel):
    if multilabel:
        criterion = nn.BCEWithLogitsLoss()
    else:
        criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        opt.zero_grad()
        loss = criterion(torch.sigmoid(model(x)), y)
        loss.backward()
        opt.step()
""",
    "probabilities_on_one_path": """
import torch
import torch.nn.functional as F

def step(model, x, y, opt, calibrated):
    logits = model(x)
    if calibrated:
        scores = torch.softmax(logits, dim=-1)
    else:
        scores = logits
    loss = F.cross_entropy(scores, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    "accumulation_divided_on_one_path": """
def train(model, loader, opt, accum, average):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y).mean()
        if average:
            loss = loss / accum
        else:
            loss = loss * 1.0
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
""",
    "eval_mode_set_on_one_path": """
import torch

def run(model, loader, opt, evaluate_only):
    if evaluate_only:
        model.eval()
    else:
        model.train()
    for x in loader:
        out = model(x)
        if not evaluate_only:
            opt.zero_grad()
            out.mean().backward()
            opt.step()
""",
    "optimizer_or_engine_by_flag_with_elif": """
import torch

def build(model, use_sgd, use_adamw):
    if use_sgd:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    elif use_adamw:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    else:
        opt = None
    return opt

def train(model, loader, use_sgd, use_adamw):
    opt = build(model, use_sgd, use_adamw)
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
""",
    "class_trainer_with_branches": """
import torch
from torch.utils.data import DataLoader, DistributedSampler

class Trainer:
    def __init__(self, model, dataset, world_size):
        if world_size > 1:
            self.model = torch.nn.parallel.DistributedDataParallel(model)
            self.loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
        else:
            self.model = model
            self.loader = DataLoader(dataset, shuffle=True)
        self.opt = torch.optim.Adam(self.model.parameters())
        self.losses = []

    def fit(self, log_tensors):
        for x in self.loader:
            self.opt.zero_grad()
            loss = self.model(x).mean()
            if log_tensors:
                self.losses.append(loss)
            else:
                self.losses.append(float(loss))
            loss.backward()
            self.opt.step()
""",
    # an optimizer rebuilt inside the loop on one path, never reset (TW003)
    "optimizer_rebuilt_on_one_path": """
import torch

def train(model, loader, fresh):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        if fresh:
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
        else:
            pass
        model(x).sum().backward()
        opt.step()
""",
    # a validation pass whose mode is chosen by a flag, without no_grad (TW002)
    "eval_or_train_chosen_by_flag": """
import torch

def validate(model, loader, train_mode):
    if train_mode:
        model.train()
    else:
        model.eval()
    total = 0
    for x in loader:
        total += model(x).sum()
    return total
""",
    # accumulation: the loss divided on one path only (TW014)
    "loss_divided_on_one_path": """
def train(model, loader, opt, accum, scale):
    for i, x in enumerate(loader):
        loss = model(x).mean()
        if scale:
            (loss / accum).backward()
        else:
            loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
""",
    # a class keeps either the loss or a detached copy (TW001)
    "trainer_keeps_loss_or_detached": """
import torch

class Trainer:
    def __init__(self, model, opt):
        self.model, self.opt = model, opt
        self.history = []

    def fit(self, loader, detach):
        for x in loader:
            self.opt.zero_grad()
            loss = self.model(x).mean()
            if detach:
                kept = loss.detach()
            else:
                kept = loss
            self.history.append(kept)
            loss.backward()
            self.opt.step()
""",
}


def _swap(source: str, chosen: frozenset[int]) -> str:
    """The program with the ``if``/``else`` statements numbered in ``chosen`` swapped."""
    tree = ast.parse(source)
    branches = [n for n in ast.walk(tree) if isinstance(n, ast.If) and n.orelse]
    for number, node in enumerate(branches):
        if number in chosen:
            node.test = ast.UnaryOp(ast.Not(), node.test)
            node.body, node.orelse = node.orelse, node.body
    return ast.unparse(ast.fix_missing_locations(tree))


def _branch_count(source: str) -> int:
    return sum(isinstance(n, ast.If) and bool(n.orelse) for n in ast.walk(ast.parse(source)))


def results(source: str) -> list[tuple]:
    """Findings in the terms that must not change: no line numbers, no cited proofs."""
    report = analyze_source(source, "train.py")
    assert not report.problems, report.problems
    lines = source.splitlines()
    found = []
    for f in report.findings:
        flagged = lines[f.span.line - 1][f.span.column :].strip()
        fixes = tuple(fix.applicability.value for fix in f.fixes)
        proofs = tuple(sorted(proof.value for proof in f.proofs))
        found.append((f.code, f.severity.value, f.confidence.value, fixes, proofs, flagged))
    return sorted(found)


def _variants(source: str):
    count = _branch_count(source)
    for size in range(count + 1):
        for chosen in itertools.combinations(range(count), size):
            yield frozenset(chosen), _swap(source, frozenset(chosen))


@pytest.mark.parametrize("name", sorted(CASES))
def test_findings_do_not_depend_on_branch_order(name):
    source = CASES[name]
    assert _branch_count(source) >= 1
    variants = list(_variants(source))
    expected = results(variants[0][1])  # nothing swapped, but formatted the same way
    for chosen, variant in variants[1:]:
        assert results(variant) == expected, f"swapping branches {sorted(chosen)} of {name}"


def test_the_cases_exercise_rules():
    """The comparison is only worth something if the cases produce findings at all."""
    codes = {code for source in CASES.values() for code, *_ in results(_swap(source, frozenset()))}
    assert {"TW001", "TW002", "TW003", "TW012", "TW014", "TW021"} <= codes, codes


def test_the_ddp_case_is_quiet_whichever_branch_builds_the_sampler():
    source = CASES["ddp_sampler_chosen_by_flag"]
    for _, variant in _variants(source):
        assert [r for r in results(variant) if r[0] == "TW012"] == []
    both_plain = CASES["ddp_without_sampler_on_both_paths"]
    assert [r[0] for r in results(both_plain)].count("TW012") == 2  # each DataLoader


def test_an_order_dependent_merge_would_be_caught(monkeypatch):
    """The check can fail: a merge keeping the first branch's loader facts (the old
    ``a.detail or b.detail``) flips TW012 when the branches are swapped."""
    merge = values_module.merge_fields

    def first_branch_wins(a, b):
        merged = merge(a, b)
        return values_module.attrs.evolve(merged, loader_facts=a.loader_facts or b.loader_facts)

    monkeypatch.setattr(values_module, "merge_fields", first_branch_wins)
    source = CASES["ddp_sampler_chosen_by_flag"]
    outcomes = {tuple(results(variant)) for _, variant in _variants(source)}
    assert len(outcomes) == 2
