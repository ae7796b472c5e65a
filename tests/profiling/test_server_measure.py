"""“Measure with your model (runs your code)” in the language server, over LSP.

The real server (``python -m torchward.server``) on a script that trains its own model
class: the lens offers the measurement, the command runs the profile in a subprocess of
the interpreter (here the test's, which has torch), the status-bar notification switches
from estimated to measured, hover and lens say measured, and an edit to the model's code
brings the estimate back. Timeout and cancellation kill the subprocess.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip(
    "torch",
    reason="the measurement runs torch in the user's interpreter: the profile extra "
    "(pip install 'torchward[profile]') is not installed here",
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from harness import REAL_SERVER, session, uri_of  # noqa: E402
from lsprotocol import types  # noqa: E402

from .models import TINY_GPT  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="function")

SCRIPT = TINY_GPT + textwrap.dedent(
    """

    model = TinyGPT(d=64, layers=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    BATCH_SIZE = 4
    for step in range(100):
        x = torch.randint(0, 512, (BATCH_SIZE, 128))
        logits, loss = model(x, x)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """
)
SLOW = SCRIPT.replace(
    "        super().__init__()\n        self.tok",
    "        super().__init__()\n        import time; time.sleep(60)\n        self.tok",
)


def plain(value):
    """Custom messages arrive as pygls' generic objects (named tuples): as dicts."""
    if isinstance(value, dict) or value is None:
        return value
    if hasattr(value, "_asdict"):
        return {k: plain(v) if hasattr(v, "_asdict") else v for k, v in value._asdict().items()}
    return dict(vars(value))


async def latest_fit(editor, uri: str, predicate, timeout: float = 30.0) -> dict:
    for _ in range(int(timeout / 0.02)):
        fits = [plain(f) for f in editor.client.gpu_fits if plain(f)["uri"] == uri]
        if fits and predicate(fits[-1]):
            return fits[-1]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no such gpuFit: {fits[-1] if fits else None}")


async def lens_titles(editor, uri: str) -> list[str]:
    lenses = await editor.client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri))
    )
    return [lens.command.title for lens in lenses or []]


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    return tmp_path


TRAP = """\
import pathlib
pathlib.Path({marker!r}).write_text("the language server imported torch")
raise ImportError("a trap: the server process must never import torch")
"""


async def test_measuring_switches_the_editor_from_estimated_to_measured(
    project, tmp_path_factory, monkeypatch
):
    path = project / "train.py"
    path.write_text(SCRIPT)
    uri = uri_of(path)
    options = {"targetGpu": "A100 80GB"}
    # The server starts in a folder whose torch.py writes a marker: `python -m` puts the
    # working directory first on sys.path, so any `import torch` in the server process
    # would load it. The worker runs in the script's folder and finds the real torch.
    trapped = tmp_path_factory.mktemp("server-cwd")
    marker = trapped / "MARKER-server-imported-torch"
    (trapped / "torch.py").write_text(TRAP.format(marker=str(marker)))
    monkeypatch.chdir(trapped)
    async with session("vscode-1.96", server=REAL_SERVER, options=options) as editor:
        editor.open(uri, SCRIPT)
        await editor.diagnostics(uri)
        before = await latest_fit(editor, uri, lambda f: f["status"] in ("ok", "no-job"))
        assert not before.get("measured")
        assert "Measure with your model (runs your code)" in await lens_titles(editor, uri)

        answer = plain(await editor.command("torchward.measure", uri))
        assert answer["status"] == "ok", answer
        # $/progress: begin, the worker's own steps, end with the peak
        (reports,) = [
            r for t, r in editor.client.progress_reports.items() if "torchward-measure" in str(t)
        ]
        kinds = [type(r).__name__ for r in reports]
        assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
        assert "building the model" in [getattr(r, "message", None) for r in reports]
        assert reports[0].cancellable and "runs your code" in reports[0].title
        assert answer["measured"]["job"]["mode"] == "train"  # the loop, read statically
        measured = await latest_fit(editor, uri, lambda f: f.get("measured"))
        assert measured["status"] == "ok" and measured["verdict"] == "fits"
        assert measured["peak"] == answer["peak"]
        assert any(t.startswith("Measured") for t in await lens_titles(editor, uri))
        lenses = await editor.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri))
        )
        anchor = next(lens for lens in lenses if lens.command.title.startswith("Measured"))
        hover = await editor.hover(uri, types.Position(anchor.range.start.line, 6))
        assert hover is not None and "torchward memory measured" in str(hover.contents)
        # an edit to the training loop keeps the measurement (same model source and job)
        editor.type_text(uri, len(SCRIPT.splitlines()) - 1, 0, "# note\n")
        await editor.diagnostics(uri)
        await asyncio.sleep(0.3)
        assert (await latest_fit(editor, uri, lambda f: True)).get("measured")
        # an edit to the model's code brings the estimate back, until measured again
        line = SCRIPT.splitlines().index("        self.heads = heads")
        editor.type_text(uri, line, 0, "        self.extra = nn.Linear(d, d)\n")
        await editor.diagnostics(uri)
        back = await latest_fit(editor, uri, lambda f: not f.get("measured"))
        assert back["status"] in ("ok", "no-job")
        assert not marker.exists(), "the language server imported torch"


async def test_a_measurement_can_be_cancelled_and_times_out(project):
    path = project / "slow.py"
    path.write_text(SLOW)
    uri = uri_of(path)
    async with session("vscode-1.96", server=REAL_SERVER) as editor:
        editor.open(uri, SLOW)
        await editor.diagnostics(uri)
        timed = plain(await editor.command("torchward.measure", uri, {"timeout": 2}))
        assert timed["status"] == "error" and "longer than 2 s" in timed["reason"]

        running = asyncio.ensure_future(editor.command("torchward.measure", uri))
        for _ in range(200):
            if any(t.startswith("Measuring") for t in await lens_titles(editor, uri)):
                break
            await asyncio.sleep(0.05)
        cancel = plain(await editor.command("torchward.cancelMeasure", uri))
        assert cancel["status"] == "ok"
        answer = plain(await asyncio.wait_for(running, 20))
        assert answer["status"] == "cancelled"
        assert "Measure with your model (runs your code)" in await lens_titles(editor, uri)


async def test_a_broken_model_is_reported_and_the_server_keeps_serving(project):
    path = project / "broken.py"
    broken = SCRIPT.replace(
        "self.tok = nn.Embedding(vocab, d)", "self.tok = nn.Embedding(vocab, -d)"
    )
    path.write_text(broken)
    uri = uri_of(path)
    async with session("vscode-1.96", server=REAL_SERVER) as editor:
        editor.open(uri, broken)
        await editor.diagnostics(uri)
        answer = plain(await editor.command("torchward.measure", uri))
        assert answer["status"] == "error" and "TinyGPT" in answer["reason"]
        assert await editor.diagnostics(uri) is not None  # still serving
