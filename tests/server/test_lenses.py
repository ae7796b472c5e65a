"""Inlay hints, code lenses and the memory-breakdown hover, from the real estimator."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from harness import fresh_uri, session
from lsprotocol import types
from test_hover_and_estimates import GPT2, _fits_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

WHOLE = types.Range(types.Position(0, 0), types.Position(100, 0))
OOM = GPT2.replace("BATCH_SIZE = 8", "BATCH_SIZE = 512")


async def _estimated(editor, uri: str, text: str) -> None:
    editor.open(uri, text)
    await editor.diagnostics(uri)
    await _fits_for(editor, uri, 1)


async def _hints(editor, uri: str) -> list[types.InlayHint]:
    return list(
        await editor.client.text_document_inlay_hint_async(
            types.InlayHintParams(types.TextDocumentIdentifier(uri), WHOLE)
        )
        or []
    )


async def _lenses(editor, uri: str) -> list[types.CodeLens]:
    return list(
        await editor.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri))
        )
        or []
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def a100():
    async with session("vscode-1.96", options={"targetGpu": "A100 80GB"}) as editor:
        yield editor


async def test_inlay_hints_show_parameters_and_weights_beside_the_model_and_activations_beside_the_batch(
    a100,
):
    uri = fresh_uri()
    await _estimated(a100, uri, GPT2)
    hints = {hint.position.line: hint for hint in await _hints(a100, uri)}
    assert sorted(hints) == [8, 10]
    assert hints[8].label == "124M params · weights 475 MiB"
    assert hints[8].position.character == len(GPT2.splitlines()[8])
    assert hints[10].label.startswith("activations ")


async def test_a_code_lens_above_the_training_loop_gives_the_peak_and_changes_the_gpu(a100):
    uri = fresh_uri()
    await _estimated(a100, uri, GPT2)
    (lens,) = await _lenses(a100, uri)
    assert lens.range.start.line == 11, "the `for x, y in loader:` line"
    assert lens.command.title.startswith("Peak ≈ ") and " on A100 80GB" in lens.command.title
    assert "· fits (" in lens.command.title
    assert lens.command.command == "torchward.selectGpu" and not lens.command.arguments


async def test_hover_on_the_model_line_shows_the_memory_breakdown(a100):
    uri = fresh_uri()
    await _estimated(a100, uri, GPT2)
    hover = await a100.hover(uri, types.Position(8, 10))
    text = hover.contents.value
    assert "**torchward memory estimate** — gpt2" in text
    assert "| weights |" in text and "| activations |" in text and "`█" in text
    assert "**fits**" in text and "Assumed (not in the script): " in text
    assert "; the script would say it with " in text and "; give --" in text  # issue 26
    assert await a100.hover(uri, types.Position(5, 0)) is None


async def test_a_job_that_does_not_fit_lists_the_top_remedies_in_the_hover(a100):
    uri = fresh_uri()
    await _estimated(a100, uri, OOM)
    hover = await a100.hover(uri, types.Position(11, 4))
    # gpt2 with an assumed sequence length: a low-confidence estimate TW010 stays silent
    # on, so the hover says what the rule (and the status bar) says
    assert "**may not fit (low confidence)**" in hover.contents.value
    assert "Top remedies:" in hover.contents.value


async def test_a_changed_estimate_asks_the_client_to_refresh_hints_and_lenses(a100):
    uri = fresh_uri()
    await _estimated(a100, uri, GPT2)
    for _ in range(200):
        if {"inlayHint", "codeLens"} <= set(a100.client.refreshes):
            break
        await asyncio.sleep(0.01)
    assert {"inlayHint", "codeLens"} <= set(a100.client.refreshes)


async def test_hints_and_lenses_are_switched_off_by_their_settings():
    options = {"targetGpu": "A100 80GB", "inlayHints": False, "codeLens": False}
    async with session("vscode-1.96", options=options) as editor:
        uri = fresh_uri()
        await _estimated(editor, uri, GPT2)
        assert await _hints(editor, uri) == []
        assert await _lenses(editor, uri) == []
