"""A real chat-completions HTTP server on 127.0.0.1 for the model tests (no network beyond the loopback).

It speaks the OpenAI ``POST /v1/chat/completions`` protocol well enough for the
official SDK, and answers from a script: the last user message is matched
(after its last ``Question:``) against the script's keys (substrings, first match wins); each key holds a list
of steps consumed one per request (the last step repeats). Steps:

- ``"SELECT ..."`` (a plain string): a 200 answer with that text;
- ``Status(429, retry_after="1")`` / ``Status(500)``: an error response (OpenAI error JSON);
- ``Slow(seconds, text)``: answers after sleeping (past the client's timeout);
- ``Malformed()``: a 200 with a body that is not JSON.

Requests whose model is not in ``models`` get a 404 ``model_not_found``; a
request without ``Authorization: Bearer <api_key>`` gets a 401 when ``api_key``
is set. Every request is counted (``server.requests``), with its arrival time.
Usage is deterministic: prompt tokens = words in all messages, completion
tokens = words in the answer.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Status:
    code: int
    message: str = "scripted error"
    retry_after: str | None = None


@dataclass(frozen=True)
class Slow:
    seconds: float
    text: str


@dataclass(frozen=True)
class Malformed:
    body: str = '{"id": "x", "choices": [ this is not JSON'


@dataclass
class Request:
    at: float
    model: str
    messages: list[dict[str, Any]]
    body: dict[str, Any]
    authorization: str | None
    path: str = ""  # with its query string


class ChatServer:
    def __init__(self, script: dict[str, list] | None = None, *, models=("test-model",), api_key: str | None = None,
                 default: Any = "SELECT 1") -> None:
        self.script: dict[str, list] = {k: list(v) for k, v in (script or {}).items()}
        self.models = set(models)
        self.api_key = api_key
        self.default = default
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._positions: dict[str, int] = {}
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="chat-server", daemon=True)

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._positions.clear()

    def requests_for(self, needle: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if needle in _question(r.messages)]

    # -- answering -----------------------------------------------------------------
    def _step(self, messages: list[dict[str, Any]]) -> Any:
        text = _question(messages)
        with self._lock:
            for key, steps in self.script.items():
                if key in text:
                    position = self._positions.get(key, 0)
                    self._positions[key] = position + 1
                    return steps[min(position, len(steps) - 1)]
        return self.default

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                messages = body.get("messages") or []
                with server._lock:
                    server.requests.append(Request(time.monotonic(), body.get("model", ""), messages, body,
                                                   self.headers.get("Authorization"), self.path))
                if not self.path.partition("?")[0].rstrip("/").endswith("/chat/completions"):
                    return self._error(404, f"no route {self.path}", "not_found")
                if server.api_key is not None and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    return self._error(401, "Incorrect API key provided", "invalid_api_key")
                if body.get("model") not in server.models:
                    return self._error(404, f"The model `{body.get('model')}` does not exist", "model_not_found")
                step = server._step(messages)
                if isinstance(step, Status):
                    headers = {"Retry-After": step.retry_after} if step.retry_after is not None else {}
                    return self._error(step.code, step.message, "scripted", headers)
                if isinstance(step, Malformed):
                    return self._send(200, step.body.encode())
                if isinstance(step, Slow):
                    time.sleep(step.seconds)
                    step = step.text
                return self._answer(body, messages, str(step))

            def _answer(self, body, messages, text: str) -> None:
                prompt_words = sum(len(str(m.get("content", "")).split()) for m in messages)
                payload = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": prompt_words, "completion_tokens": len(text.split()),
                              "total_tokens": prompt_words + len(text.split())},
                }
                self._send(200, json.dumps(payload).encode())

            def _error(self, code: int, message: str, kind: str, headers: dict | None = None) -> None:
                payload = {"error": {"message": message, "type": "invalid_request_error", "code": kind}}
                self._send(code, json.dumps(payload).encode(), headers)

            def _send(self, code: int, data: bytes, headers: dict | None = None) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        return Handler


def _question(messages: list[dict[str, Any]]) -> str:
    """What the script matches: the text after the last ``Question:`` of the last user message (the default
    prompt ends with the case's question; earlier turns and examples come before it), else the whole message."""
    text = _last_user(messages)
    return text.rpartition("Question:")[2] if "Question:" in text else text


def _last_user(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def chat_fixture(default_script: dict[str, Any] | None = None, server_class: type[ChatServer] | None = None):
    """The ``chat`` fixture of the model tests: ``chat(script=default_script, **kwargs)`` starts a loopback server
    (a ``server_class``, default :class:`ChatServer`; stopped at the test's end) and points
    ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` at it, with proxies off."""
    import pytest

    @pytest.fixture
    def chat(monkeypatch):
        servers = []

        def start(script: dict[str, Any] | None = None, **kwargs) -> ChatServer:
            server = (server_class or ChatServer)(script if script is not None else default_script,
                                                  **kwargs).__enter__()
            servers.append(server)
            monkeypatch.setenv("OPENAI_BASE_URL", server.url)
            monkeypatch.setenv("OPENAI_API_KEY", "test-key")
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
                monkeypatch.delenv(name, raising=False)
            monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
            return server

        yield start
        for server in servers:
            server.__exit__(None, None, None)

    return chat
