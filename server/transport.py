"""JSON-RPC over stdio that answers every malformed message and never goes deaf.

pygls' own loop (``pygls.io_.run_async``) hands each body to ``json.loads`` and logs
whatever fails: invalid JSON, a batch, a scalar, a request whose params do not fit its
method (a position given as a string, a negative position, no params) got *no reply*,
so the editor waited forever; and a wrong ``Content-Length`` made it swallow the next
messages. This module replaces that loop for stdio:

Framing (:class:`.framing.Framer`, linear in the bytes read). Bytes are read as they
come and cut into messages by their ``Content-Length`` header; a header line inside an
expected body proves the declared length wrong (a parse error, and reading resumes at
that header), bytes that are not a header block are skipped with a parse error, and a
body that stays incomplete with no more input for :data:`STALLED_BODY_S` is answered
with a parse error and dropped.

Size limit. A message longer than ``$TORCHWARD_MAX_MESSAGE_BYTES`` (default
:data:`DEFAULT_MAX_MESSAGE_BYTES`) is dropped as it arrives, never held: a request is
answered with ``-32600`` (its id read from the body's first or last bytes), a
notification is logged (``window/logMessage``) and dropped.

Validation (:func:`dispatch`), with JSON-RPC 2.0's error codes:

- ``-32700`` parse error: not JSON, not UTF-8, or an unframed/truncated message;
- ``-32600`` invalid request: a batch (LSP has none), a scalar, a missing or wrong
  ``jsonrpc``, a ``method`` that is not a string, an ``id`` that is not a number or
  string, ``params`` that are neither object nor array (``null`` counts as absent);
- ``-32602`` invalid params: params that do not fit the method's types (integers are
  strict: ``"3"`` is not a line number) or break its constraints (a negative position);
- ``-32601`` method not found and ``-32603`` internal error: as pygls answers them.

After ``shutdown`` every request but ``exit`` is answered with ``-32600`` (the LSP
specification: "If a server receives requests after a shutdown request those requests
should error with InvalidRequest"); notifications other than ``exit`` are dropped.

A notification cannot be answered (JSON-RPC forbids it); a malformed one is logged
(``window/logMessage``) and dropped. The id of an error reply is the request's when it
could be read, else ``null``.

:class:`TorchwardProtocol` also takes the document bookkeeping away from pygls: its
workspace splits lines with ``str.splitlines`` and *clamps the client's change
positions in place* to those wrong lines before our handler sees them — the source of
the drift after a form feed or U+2028. The server keeps its own documents
(:mod:`.documents`); pygls' text documents are not kept at all.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

import cattrs
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, default_converter
from pygls.protocol.language_server import lsp_method

from .framing import Framer, oversized_message_id

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

STALLED_BODY_S = 5.0  # an incomplete body with no input for this long is dropped
MAX_MESSAGE_BYTES = "TORCHWARD_MAX_MESSAGE_BYTES"  # the environment variable setting the limit
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # far above any document the server analyses


# -- the protocol --------------------------------------------------------------------------
class TorchwardProtocol(LanguageServerProtocol):
    """pygls' protocol without its text documents (see the module docstring)."""

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    # notebooks too: their cells are kept by .notebooks, not in pygls' workspace
    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(self, params: types.DidOpenNotebookDocumentParams):
        if (handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(self, params: types.DidChangeNotebookDocumentParams):
        if (handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def lsp_notebook_document__did_close(self, params: types.DidCloseNotebookDocumentParams):
        if (handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


def _strict_int(value: Any, kind: Any) -> int:
    """JSON integers only: ``"3"``, ``true`` and ``1.5`` are not positions or versions.

    Integer enums (severities, trigger kinds) reach this hook too: they get their own
    type back (an unknown member is a ``ValueError``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected an integer, got {type(value).__name__} {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"expected an integer, got {value!r}")
    if isinstance(kind, type) and kind is not int and issubclass(kind, int):
        return kind(int(value))
    return int(value)


def _strict_bool(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__} {value!r}")
    return value


def strict_converter(base: Callable[[], cattrs.Converter] = default_converter) -> cattrs.Converter:
    """The converter ``base`` makes (pygls' by default), with integers that are integers."""
    converter = base()
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(bool, _strict_bool)  # or bool would take int's hook
    return converter


# -- replies -------------------------------------------------------------------------------
def send_error(protocol: LanguageServerProtocol, msg_id: Any, code: int, message: str) -> None:
    """An error response (``id`` null when the request's could not be read)."""
    protocol._send_data(
        {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
    )


def _report(protocol: LanguageServerProtocol, message: str) -> None:
    """A malformed message that cannot be answered: log it for the user too."""
    log.warning("%s", message)
    try:
        protocol.notify(
            types.WINDOW_LOG_MESSAGE,
            types.LogMessageParams(types.MessageType.Error, f"torchward: {message}"),
        )
    except Exception:  # no writer yet, or the pipe is gone
        log.debug("could not log to the client", exc_info=True)


def _describe(error: BaseException) -> str:
    """The leaf reasons of a cattrs validation error, in one line."""
    if isinstance(error, cattrs.ClassValidationError | cattrs.IterableValidationError):
        notes = []
        for inner in error.exceptions:
            notes.append(_describe(inner))
        return "; ".join(n for n in notes if n) or str(error)
    cause = error.__cause__ or error.__context__
    if cause is not None and not str(error):
        return _describe(cause)
    return str(error) or type(error).__name__


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def dispatch(protocol: LanguageServerProtocol, body: bytes) -> None:
    """Validate one message body and hand it to pygls, or answer why not."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        send_error(protocol, None, PARSE_ERROR, f"Parse error: {error}")
        return
    if isinstance(data, list):
        send_error(protocol, None, INVALID_REQUEST, "Invalid Request: LSP has no batch requests")
        return
    if not isinstance(data, dict):
        message = f"Invalid Request: expected a JSON object, got {type(data).__name__}"
        send_error(protocol, None, INVALID_REQUEST, message)
        return
    msg_id = data.get("id")
    answerable = "id" in data and _valid_id(msg_id)
    problem = _envelope_problem(data)
    if problem is not None:
        if "method" in data and "id" not in data:
            _report(protocol, f"dropped a malformed notification: {problem}")
        else:
            send_error(protocol, msg_id if answerable else None, INVALID_REQUEST, problem)
        return
    if getattr(protocol, "_shutdown", False) and data.get("method", types.EXIT) != types.EXIT:
        if "id" in data:
            message = f"Invalid Request: {data['method']} after shutdown; only exit is accepted"
            send_error(protocol, msg_id, INVALID_REQUEST, message)
        else:
            log.info("dropped a %s notification after shutdown", data["method"])
        return
    if "method" not in data:  # a response to one of our requests
        _structure_and_handle(protocol, data, None)
        return
    _structure_and_handle(protocol, data, msg_id if "id" in data else None)


def _envelope_problem(data: dict) -> str | None:
    if data.get("jsonrpc") != "2.0":
        return 'Invalid Request: "jsonrpc" must be "2.0"'
    if "method" in data:
        if not isinstance(data["method"], str):
            return 'Invalid Request: "method" must be a string'
        if "id" in data and not _valid_id(data["id"]):
            return 'Invalid Request: "id" must be an integer or a string'
        if data.get("params") is not None and not isinstance(data["params"], (dict, list)):
            # null is taken as absent: clients send it for shutdown and exit
            return 'Invalid Request: "params" must be an object or an array'
        return None
    if "id" not in data or not ("result" in data or "error" in data):
        return "Invalid Request: neither a request, a notification nor a response"
    return None


def _structure_and_handle(protocol: LanguageServerProtocol, data: dict, msg_id: Any) -> None:
    method = data.get("method")
    try:
        message = protocol.structure_message(data)
        problem = _constraint_problem(getattr(message, "params", None))
    except Exception as error:  # pygls raises JsonRpcInvalidParams / JsonRpcInternalError
        problem = _describe(error.__cause__ or error)
    if problem is not None:
        if method is None:
            log.warning("dropped a malformed response %r: %s", msg_id, problem)
        elif msg_id is None:
            _report(protocol, f"dropped a {method} notification with invalid params: {problem}")
        else:
            send_error(protocol, msg_id, INVALID_PARAMS, f"Invalid params for {method}: {problem}")
        return
    protocol.handle_message(message)


def _constraint_problem(params: Any, depth: int = 0) -> str | None:
    """The first broken constraint the types cannot state (negative positions)."""
    if depth > 6 or params is None:
        return None
    if isinstance(params, types.Position):
        if params.line < 0 or params.character < 0:
            return (
                f"a position cannot be negative: line {params.line}, character {params.character}"
            )
        return None
    fields = getattr(type(params), "__attrs_attrs__", None)
    if fields is None:
        return None
    for field in fields:
        problem = _constraint_problem(getattr(params, field.name, None), depth + 1)
        if problem is not None:
            return problem
    return None


def message_size_limit() -> int:
    """``$TORCHWARD_MAX_MESSAGE_BYTES`` when it is a positive integer, else the default."""
    value = os.environ.get(MAX_MESSAGE_BYTES, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if value:
        log.warning(
            "%s=%r is not a positive integer; using %d",
            MAX_MESSAGE_BYTES,
            value,
            DEFAULT_MAX_MESSAGE_BYTES,
        )
    return DEFAULT_MAX_MESSAGE_BYTES


async def serve(protocol: LanguageServerProtocol, stdin: BinaryIO, stop: threading.Event) -> None:
    """Read ``stdin`` until it closes (or ``stop``), answering every malformed message."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()
    descriptor = stdin.fileno()

    def pump() -> None:
        while True:
            try:
                data = os.read(descriptor, 1 << 16)
            except OSError:
                data = b""
            loop.call_soon_threadsafe(chunks.put_nowait, data)
            if not data:
                return

    threading.Thread(target=pump, name="torchward-stdin", daemon=True).start()

    def on_body(body: bytes) -> None:
        try:
            dispatch(protocol, body)
        except Exception:  # a bug here must not end the session
            log.exception("failed to handle a message")

    def on_junk(reason: str) -> None:
        send_error(protocol, None, PARSE_ERROR, f"Parse error: {reason}")

    def on_oversized(length: int, head: bytes, tail: bytes) -> None:
        is_request, msg_id = oversized_message_id(head, tail)
        problem = f"a message of {length:,} bytes, more than {MAX_MESSAGE_BYTES} ({limit:,})"
        if is_request:
            send_error(protocol, msg_id, INVALID_REQUEST, f"Invalid Request: {problem}")
        else:
            _report(protocol, f"dropped {problem}")

    limit = message_size_limit()
    framer = Framer(on_body, on_junk, on_oversized, limit)
    while not stop.is_set():
        try:
            data = await asyncio.wait_for(chunks.get(), STALLED_BODY_S if framer.waiting else None)
        except asyncio.TimeoutError:
            framer.stalled()
            continue
        if not data:
            break
        framer.feed(data)
