"""The editor experience as a user meets it (issue 11), through the real server over LSP:
squiggles that stay while typing, the project's ``target-gpu`` everywhere, diagnostics
that follow a GPU switch without an edit, a visible "no job found", a hover that leads
with the memory breakdown, ``initializationOptions`` sent as ``[]``, "Explain" that
stays in the editor."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib

import pytest
from harness import FAKE_SERVER, REAL_SERVER, capabilities, fresh_uri, make_client, session, uri_of
from lsprotocol import types
from pygls.uris import to_fs_path as from_fs_uri
from pytest_lsp import ClientServerConfig
from test_hover_and_estimates import GPT2, _fits_for, _plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

SCRIPT = """\
def train(model, loader):
    for x in loader:
        print(x)
        breakpoint()
        input()
"""  # the stand-in rules flag each call: three findings

LLAMA = """\
from transformers import AutoModelForCausalLM, TrainingArguments
model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
args = TrainingArguments("out", per_device_train_batch_size=8, max_seq_length=2048, bf16=True)
"""

LOCAL_GPT = """\
import torch
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        return x


def build():
    return make_the_model_somehow()


model = build()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(1000):
    loss = model(torch.randn(8, 1024)).sum()
    loss.backward()
    optimizer.step()
"""


def _project(tmp_path: pathlib.Path, gpu: str | None, script: str, name: str = "train.py") -> str:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.torchward]\n" + (f'target-gpu = "{gpu}"\n' if gpu else "")
    )
    (tmp_path / name).write_text(script)
    return uri_of(tmp_path / name)


# -- 1: pull diagnostics never blank while typing ----------------------------------------
async def test_a_pull_while_the_analysis_is_pending_is_answered_at_once_with_the_shown_squiggles():
    # a long debounce: before the fix every pull below waited ~3 s for it (and VS Code,
    # which cancels the pending pull on the next keystroke, showed nothing meanwhile)
    async with session("vscode-1.96", options={"debounceMs": 3000}) as editor:
        uri = fresh_uri()
        editor.open(uri, SCRIPT)
        first = await editor.pull(uri)
        assert first.kind == "full" and len(first.items) == 3
        previous = first.result_id
        shown = list(first.items)
        for index, character in enumerate("value = 1"):
            editor.type_text(uri, 5, index, character)  # a new last line, key by key
            report = await asyncio.wait_for(editor.pull(uri, previous), 1.0)
            if report.kind == "full":
                shown = list(report.items)
            previous = report.result_id
            assert len(shown) == 3, f"squiggles blanked after key {index}"
            assert sorted(d.range.start.line for d in shown) == [2, 3, 4]
        refreshes = editor.diagnostic_refreshes()
        final = await asyncio.wait_for(editor.diagnostics(uri), 10)
        assert len(final) == 3 and editor.diagnostic_refreshes() > refreshes


async def test_a_pull_answered_early_moves_the_squiggles_with_the_edit():
    async with session("vscode-1.96", options={"debounceMs": 3000}) as editor:
        uri = fresh_uri()
        editor.open(uri, SCRIPT)
        first = await editor.pull(uri)
        editor.type_text(uri, 0, 0, "import os\n\n")
        moved = await asyncio.wait_for(editor.pull(uri, first.result_id), 1.0)
        assert moved.kind == "full" and moved.result_id != first.result_id
        assert sorted(d.range.start.line for d in moved.items) == [4, 5, 6]


async def test_a_client_that_cannot_be_refreshed_still_waits_for_the_current_version():
    async with session("neovim-0.11", options={"debounceMs": 200}) as editor:
        uri = fresh_uri()
        editor.open(uri, SCRIPT)
        await editor.pull(uri)
        editor.type_text(uri, 2, 8, "#")  # comments out the print
        report = await asyncio.wait_for(editor.pull(uri), 10)
        assert len(report.items) == 2


# -- 2: the project's target-gpu in status bar, lens and hover ---------------------------
@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
async def test_the_projects_target_gpu_is_used_by_the_gpu_fit_the_lens_and_the_hover(
    client, tmp_path
):
    uri = _project(tmp_path, "A100 80GB", GPT2)
    async with session(client, folders=[tmp_path]) as editor:
        editor.open(uri, GPT2)
        await editor.diagnostics(uri)
        (fit,) = await _fits_for(editor, uri, 1)
        assert fit["status"] == "ok" and "A100 80GB" in fit["gpu"] and fit["verdict"] == "fits"
        lenses = await editor.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri))
        )
        assert lenses and " on A100 80GB" in lenses[0].command.title
        assert "choose a GPU" not in lenses[0].command.title
        hover = await editor.hover(uri, types.Position(8, 10))
        assert "**fits**" in hover.contents.value and "for a verdict" not in hover.contents.value
        estimate = _plain(
            await editor.client.protocol.send_request_async("torchward/estimate", {"uri": uri})
        )
        assert "A100 80GB" in estimate["gpu"]


async def test_the_editor_setting_overrides_the_projects_target_gpu(tmp_path):
    uri = _project(tmp_path, "A100 80GB", GPT2)
    async with session("vscode-1.65", folders=[tmp_path], options={"targetGpu": "T4"}) as editor:
        editor.open(uri, GPT2)
        await editor.diagnostics(uri)
        (fit,) = await _fits_for(editor, uri, 1)
        assert "T4" in fit["gpu"]


# -- 3: a GPU switch refreshes the diagnostics without an edit ---------------------------
@pytest.mark.parametrize("client", ["vscode-1.96", "vscode-1.65"])
async def test_selecting_a_gpu_changes_tw010s_message_without_an_edit(client, tmp_path):
    uri = _project(tmp_path, "T4", LLAMA)
    async with session(client, server=REAL_SERVER, folders=[tmp_path]) as editor:
        editor.open(uri, LLAMA)
        (before,) = [d for d in await editor.diagnostics(uri) if d.code == "TW010"]
        assert "T4" in before.message
        refreshes = editor.diagnostic_refreshes()
        answer = _plain(await editor.command("torchward.selectGpu", "H100 80GB"))
        assert answer["status"] == "ok"

        async def tw010_message() -> str:
            while True:
                if editor.pulls:  # the server asks a pulling client to pull again
                    while editor.diagnostic_refreshes() == refreshes:
                        await asyncio.sleep(0.01)
                    diagnostics = list((await editor.pull(uri)).items)
                else:  # and pushes to the others, for the same document version
                    diagnostics = list(editor.client.published[uri].diagnostics)
                messages = [d.message for d in diagnostics if d.code == "TW010"]
                if messages and "H100" in messages[0]:
                    return messages[0]
                await asyncio.sleep(0.02)

        after = await asyncio.wait_for(tw010_message(), 20)
        assert "T4" not in after and editor.versions[uri] == 1


# -- 5: "no job found" is visible, with the reason and the next step ----------------------
async def _lenses(editor, uri: str) -> list[types.CodeLens]:
    return list(
        await editor.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri))
        )
        or []
    )


@pytest.mark.parametrize("client", ["vscode-1.96", "neovim-0.7"])
async def test_a_training_script_whose_model_is_unknown_says_no_job_found_and_why(client):
    async with session(client, options={"targetGpu": "A100 80GB"}) as editor:
        uri = fresh_uri()
        editor.open(uri, LOCAL_GPT)
        await editor.diagnostics(uri)
        (fit,) = await _fits_for(editor, uri, 1)
        assert fit["status"] == "no-job"
        assert "which model" in fit["reason"] and "[tool.torchward.estimate]" in fit["hint"]
        (lens,) = await _lenses(editor, uri)
        assert lens.command.title == "torchward: no job found — Why?"
        assert lens.command.command == "torchward.whyNoJob" and list(lens.command.arguments) == [
            uri
        ]
        assert lens.range.start.line == 15, "the training loop"
        messages = editor.client.messages
        answer = _plain(await editor.command("torchward.whyNoJob", uri))
        assert answer["status"] == "no-job" and answer["hint"] == fit["hint"]
        for _ in range(200):
            if messages:
                break
            await asyncio.sleep(0.01)
        assert messages and messages[0].message.startswith("torchward: no job found — ")
        assert "Next step: name the model in pyproject.toml" in messages[0].message
        hover = await editor.hover(uri, types.Position(15, 0))
        assert "**torchward: no job found**" in hover.contents.value
        assert "**Next step:**" in hover.contents.value


async def test_a_module_without_training_stays_quiet(editors):
    editor = await editors("vscode-1.65")
    uri = fresh_uri("utils")
    editor.open(uri, "def add(a, b):\n    return a + b\n")
    await editor.diagnostics(uri)
    (fit,) = await _fits_for(editor, uri, 1)
    assert fit["status"] == "none"
    assert await _lenses(editor, uri) == []


# -- 6: the hover leads with the memory breakdown; one line per rule ---------------------
async def test_the_hover_on_the_model_line_leads_with_the_breakdown_and_names_rules_in_one_line():
    async with session("vscode-1.96", options={"targetGpu": "A100 80GB"}) as editor:
        uri = fresh_uri()
        text = GPT2.replace("    optimizer = torch", "    print(model)\n    optimizer = torch")
        editor.open(uri, text)
        (finding,) = [d for d in await editor.diagnostics(uri) if d.range.start.line == 9]
        await _fits_for(editor, uri, 1)
        hover = (await editor.hover(uri, types.Position(12, 8))).contents.value  # the loop
        assert hover.startswith("**torchward memory estimate**")
        hover = (await editor.hover(uri, finding.range.start)).contents.value
        assert "print() in training code" not in hover, "the editor shows the message already"
        (line,) = [line for line in hover.splitlines() if "TW900" in line]
        assert line.startswith("**TW900** print-call — ") and "[Explain TW900](command:" in line
        assert "# TW900" not in hover and len(hover) < 400


# -- 7: Lua's empty table arrives as [] ---------------------------------------------------
async def test_initialization_options_sent_as_an_empty_list_are_an_empty_object():
    async with contextlib.AsyncExitStack() as stack:
        config = ClientServerConfig(server_command=FAKE_SERVER, client_factory=make_client)
        client = await config.start()
        messages = client.messages
        stack.push_async_callback(client.stop)
        params = types.InitializeParams(capabilities=capabilities("neovim-0.11"))
        params.initialization_options = []
        await asyncio.wait_for(client.initialize_session(params), 30)
        await asyncio.sleep(0.3)
        await asyncio.wait_for(client.shutdown_session(), 30)
    assert [m.message for m in messages] == []


# -- 8: Explain stays in the editor; no invented link --------------------------------------
async def test_explain_shows_the_documentation_in_the_editor_and_invents_no_link(editors):
    editor = await editors("vscode-1.96")
    shown = editor.client.shown_documents

    uri = fresh_uri()
    editor.open(uri, SCRIPT)
    diagnostics = await editor.diagnostics(uri)
    assert all(d.code_description is None for d in diagnostics), "no published rule pages"
    answer = _plain(await editor.command("torchward.explain", "TW900"))
    assert answer["markdown"].startswith("# TW900 print-call") and answer["url"] is None
    for _ in range(200):
        if shown:
            break
        await asyncio.sleep(0.01)
    (document,) = shown
    assert document.uri.startswith("file://") and document.uri.endswith("/TW900.md")
    assert not document.external
    path = pathlib.Path(from_fs_uri(document.uri))
    assert path.read_text(encoding="utf-8") == answer["markdown"]
    plain = _plain(
        await editor.client.protocol.send_request_async(
            "torchward/ruleDocumentation", {"code": "tw900"}
        )
    )
    assert plain["markdown"] == answer["markdown"] and len(shown) == 1
