"""The built-in OpenAI-compatible chat client, on the official ``openai`` SDK (``pytest-sqleval[openai]``).

The SDK sends the request, retries 429/5xx/timeouts/connection errors with exponential backoff and jitter,
honours ``Retry-After`` (and ``retry-after-ms``), and enforces the request timeout; we only set
``max_retries`` and ``timeout``. It speaks to anything that implements ``/chat/completions``: vLLM, Ollama,
llama.cpp server, LM Studio, hosted APIs.
"""

from __future__ import annotations

import codecs
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .config import DEFAULT_MODEL_RETRIES, DEFAULT_MODEL_TIMEOUT, DEFAULT_URL, ModelConfig

#: Sent when no key is set: local servers (vLLM, Ollama, llama.cpp) ignore it, hosted APIs answer 401.
NO_KEY = "sqleval-no-key"


class ModelCallError(Exception):
    """A call that failed after the SDK's retries. ``fatal``: retrying other cases is pointless (401/403/404)."""

    def __init__(self, message: str, *, fatal: bool = False, status: int | None = None, called: bool = True) -> None:
        super().__init__(message)
        self.message = message
        self.fatal = fatal
        self.status = status
        self.called = called  # False: no request was sent (not cached under --sqleval-cache-mode only, no SDK)
        self.latency_s: float | None = None  # how long the failed request (with its retries) took, when one was sent


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cached_tokens: int | None = None  # of the prompt tokens, those the endpoint served from its prompt cache
    #: "length" when the endpoint cut the answer at its token limit (``max_tokens``), else None
    truncated_by: str | None = None


class ChatClient:
    """One SDK client per (endpoint, key, timeout, retries), shared by the worker threads (the SDK is thread-safe)."""

    def __init__(self, config: ModelConfig) -> None:
        try:
            import openai
        except ImportError:
            raise ModelCallError("the built-in model client needs the openai SDK: pip install 'pytest-sqleval[openai]'",
                                 fatal=True, called=False) from None
        self.config = config
        self._openai = openai
        if config.key_env and not os.environ.get(config.key_env):
            raise ModelCallError(f"the environment variable {config.key_env} (the model's key_env) is not set; "
                                 f"fix: export {config.key_env}=... before running pytest", fatal=True, called=False)
        url = config.url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_URL
        if urlsplit(url).scheme.lower() not in ("http", "https"):  # every call would fail alike: stop once
            raise ModelCallError(f"the model URL {config.endpoint} does not start with http:// or https://; fix: "
                                 f"write it in full, e.g. http://{config.endpoint}", fatal=True, called=False)
        key = os.environ.get(config.key_env or "OPENAI_API_KEY") or NO_KEY
        from ..secrets import is_secret_key, register_secret

        if key != NO_KEY:  # a server may quote the key it refused: every message masks it
            register_secret(key)
        odd = next(((n, c) for n, c in enumerate(key) if not (" " <= c <= "~")), None)
        if odd is not None:  # an HTTP header carries ASCII only: no request could be sent (a key copied with a `…`)
            raise ModelCallError(f"the API key in {config.key_env or 'OPENAI_API_KEY'} holds a character an HTTP header "
                                 f"cannot carry (U+{ord(odd[1]):04X} at position {odd[0] + 1} of {len(key)}); fix: copy "
                                 "the key again, without spaces, line breaks or typographic characters",
                                 fatal=True, called=False)
        http_client = _deadline_client(openai, config.timeout or DEFAULT_MODEL_TIMEOUT)
        # the SDK appends `chat/completions` to the base URL's text, query string included (`...?api-version=1chat/
        # completions`): the query (Azure's api-version, a key) is sent with every request as the SDK's default_query
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        for value in (v for k, v in query.items() if is_secret_key(k)):
            register_secret(value)
        self.client = openai.OpenAI(
            base_url=urlunsplit(parts._replace(query="", fragment="")),
            **({"default_query": query} if query else {}),
            api_key=key,
            timeout=config.timeout or DEFAULT_MODEL_TIMEOUT,
            max_retries=DEFAULT_MODEL_RETRIES if config.retries is None else config.retries,
            **({"http_client": http_client} if http_client is not None else {}),
        )

    def complete(self, messages: Sequence[Mapping[str, Any]], parameters: Mapping[str, Any]) -> Completion:
        started = time.perf_counter()
        try:
            return self._complete(messages, parameters, started)
        except ModelCallError as exc:  # the failed request's own time (not the SDK's import by the first call)
            exc.latency_s = time.perf_counter() - started
            raise

    def _complete(self, messages: Sequence[Mapping[str, Any]], parameters: Mapping[str, Any],
                  started: float) -> Completion:
        openai = self._openai
        known = {k: v for k, v in parameters.items() if k in ("temperature", "max_tokens", "seed", "top_p", "stop")}
        extra = {k: v for k, v in parameters.items() if k not in known}
        try:
            response = self.client.chat.completions.create(
                model=self.config.name, messages=list(messages), **known, **({"extra_body": extra} if extra else {}))
        except openai.AuthenticationError as exc:
            raise ModelCallError(self._fatal_text(exc, "the endpoint refused the API key",
                                                  f"set {self.config.key_env or 'OPENAI_API_KEY'} (or --sqleval-model-key-env VAR)"),
                                 fatal=True, status=exc.status_code) from None
        except openai.PermissionDeniedError as exc:
            raise ModelCallError(self._fatal_text(exc, "the API key may not use this model or endpoint",
                                                  "check the key's permissions"), fatal=True, status=exc.status_code) from None
        except openai.NotFoundError as exc:
            raise ModelCallError(self._fatal_text(exc, f"unknown model {self.config.name!r} or wrong URL",
                                                  "check --sqleval-model and --sqleval-model-url (it usually ends in /v1)"),
                                 fatal=True, status=exc.status_code) from None
        except openai.APITimeoutError as exc:
            raise ModelCallError(f"the request timed out after {self.client.timeout} s "
                                 f"(and {_retries_made(exc, self.client.max_retries)} retries)") from None
        except openai.APIStatusError as exc:  # 400, 422, ... are not retried: say how many retries were made
            if exc.status_code == 402 or _error_code(exc) == "insufficient_quota":  # no call can work: stop once
                raise ModelCallError(self._fatal_text(exc, "the account has no quota or credit left",
                                                      "check the plan and billing of the key's account"),
                                     fatal=True, status=exc.status_code) from None
            raise ModelCallError(f"HTTP {exc.status_code}: {_server_message(exc)} "
                                 f"(after {_retries_made(exc, self.client.max_retries)} retries)",
                                 status=exc.status_code) from None
        except openai.APIConnectionError as exc:
            raise ModelCallError(f"cannot reach {self.config.endpoint}: {exc.__cause__ or exc}") from None
        except UnicodeDecodeError as exc:  # bytes that are not UTF-8, and no charset said what they are
            raise ModelCallError(f"the endpoint's answer is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                                 f"position {exc.start}): JSON is sent as UTF-8, or the Content-Type names its "
                                 "charset") from None
        except ValueError as exc:  # a body that is not JSON
            raise ModelCallError(f"the endpoint's answer is not valid JSON: {exc}{_body_shown(exc)}") from None
        except openai.OpenAIError as exc:
            raise ModelCallError(f"{type(exc).__name__}: {exc}") from None
        latency = time.perf_counter() - started
        try:
            message = response.choices[0].message
            text = message.content
        except (AttributeError, IndexError, KeyError, TypeError):  # KeyError: `choices` a mapping, not a list
            raise ModelCallError(_no_message(response)) from None
        if text is None and isinstance(getattr(message, "refusal", None), str):
            text = message.refusal  # the model declined (OpenAI's `refusal` field): its answer, a no_sql miss
        if isinstance(text, list):  # content as parts (Mistral's reasoning models, some gateways): the text parts
            try:
                text = _text_parts(text)
            except ModelCallError as exc:  # thinking parts only: cut at the token limit before any text?
                if _cut_at_token_limit(response) is None:
                    raise
                raise ModelCallError(_cut_before_text("content: thinking parts only", self.config.max_tokens)) from exc
        if not isinstance(text, str) or (not text.strip() and getattr(message, "tool_calls", None)):
            raise ModelCallError(_no_text(response, message, self.config.max_tokens))
        usage = getattr(response, "usage", None)
        return Completion(text=text, prompt_tokens=getattr(usage, "prompt_tokens", None),
                          completion_tokens=getattr(usage, "completion_tokens", None), latency_s=latency,
                          cached_tokens=_cached_tokens(usage), truncated_by=_cut_at_token_limit(response))

    def _fatal_text(self, exc, what: str, fix: str) -> str:
        return (f"{what}: HTTP {exc.status_code} from {self.config.endpoint} (model {self.config.name}): "
                f"{_server_message(exc)}; fix: {fix}")


def _cut_at_token_limit(response) -> str | None:
    """``"length"`` when the answer ends because it reached the token limit (OpenAI's ``finish_reason: "length"``;
    vLLM, Ollama and llama.cpp send the same), else None: its SQL is likely cut off mid-query."""
    try:
        reason = response.choices[0].finish_reason
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    return "length" if reason == "length" else None


def _text_parts(parts: list) -> str:
    """The answer in a list of content parts: its ``{"type": "text", "text": ...}`` parts joined (a thinking or
    image part is not the answer); a list without one is a clear model_error."""
    texts = []
    for part in parts:
        get = part.get if isinstance(part, dict) else lambda name, p=part: getattr(p, name, None)
        if get("type") in ("text", None) and isinstance(get("text"), str):
            texts.append(get("text"))
    if not texts:
        kinds = ", ".join(sorted({str((p.get("type") if isinstance(p, dict) else getattr(p, "type", None)))
                                  for p in parts})) or "none"
        raise ModelCallError(f"the model's answer has no text part (content is a list of parts: {kinds})")
    return "".join(texts)


def _cached_tokens(usage) -> int | None:
    """The prompt tokens served from the endpoint's prompt cache: OpenAI's ``usage.prompt_tokens_details.cached_tokens``
    (vLLM and others send the same), else DeepSeek's ``usage.prompt_cache_hit_tokens``; None when not reported."""
    details = getattr(usage, "prompt_tokens_details", None)
    value = details.get("cached_tokens") if isinstance(details, dict) else getattr(details, "cached_tokens", None)
    if value is None:
        value = getattr(usage, "prompt_cache_hit_tokens", None)
    import math

    if (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0
            or (value >= 2**53 if isinstance(value, int) else not math.isfinite(value))):  # 10**400 overflows a float
        return None
    return int(value)


def _deadline_client(openai, seconds: float):
    """The SDK's own HTTP client, plus a deadline on the whole answer. The SDK's timeout bounds each read, so an
    endpoint that sends its answer a byte at a time would hold a case as long as it likes; past the deadline the
    answer's next bytes raise the HTTP library's read timeout, which the SDK retries and reports like any other."""
    factory = getattr(openai, "DefaultHttpxClient", None)
    base = next((c for c in getattr(factory, "__mro__", ()) if c.__name__ == "Client"), None)
    httpx = sys.modules.get(base.__module__.partition(".")[0]) if base is not None else None
    if httpx is None or not hasattr(httpx, "SyncByteStream") or not hasattr(httpx, "ReadTimeout"):
        return None
    started = threading.local()

    class DeadlineStream(httpx.SyncByteStream):
        def __init__(self, inner, request, deadline: float, charset: str | None = None) -> None:
            self.inner, self.request, self.deadline = inner, request, deadline
            # a body in the charset its Content-Type names (`application/json; charset=iso-8859-1`), as UTF-8: the SDK
            # reads JSON bytes as UTF-8 whatever the header says
            self.decoder = codecs.getincrementaldecoder(charset)("replace") if charset else None

        def __iter__(self):
            for chunk in self.inner:
                if time.monotonic() > self.deadline:
                    raise httpx.ReadTimeout(f"no whole answer within {seconds} s", request=self.request)
                yield self.decoder.decode(chunk).encode("utf-8") if self.decoder is not None else chunk
            if self.decoder is not None:
                yield self.decoder.decode(b"", final=True).encode("utf-8")

        def close(self) -> None:
            self.inner.close()

    def on_request(request) -> None:
        started.at = time.monotonic()

    def on_response(response) -> None:
        charset = _other_charset(response.headers.get("content-type"))
        response.stream = DeadlineStream(response.stream, response.request,
                                         getattr(started, "at", time.monotonic()) + seconds, charset)
        if charset is not None:  # the body is UTF-8 now: so says its header (an error body is read as text)
            response.headers["content-type"] = _content_type(response.headers["content-type"], "utf-8")

    return factory(event_hooks={"request": [on_request], "response": [on_response]})


def _content_type(value: str, charset: str | None = None):
    """The Content-Type header ``value`` parsed; with ``charset``: its text with that charset instead."""
    from email.message import Message

    header = Message()
    header["content-type"] = value
    if charset is None:
        return header
    header.set_param("charset", charset)
    return header["content-type"]


def _other_charset(content_type: str | None) -> str | None:
    """The charset a Content-Type names when it is not UTF-8 (which the SDK reads anyway) and Python knows it."""
    if not content_type:
        return None
    charset = _content_type(content_type).get_param("charset")
    if not isinstance(charset, str):
        return None
    try:
        name = codecs.lookup(charset.strip()).name
    except LookupError:
        return None
    return None if name in ("utf-8", "ascii") else name


def _no_message(response) -> str:
    """Why an answer holds no message: an error body sent with status 200 (some gateways do), else what came."""
    from ..secrets import mask_secrets

    error = getattr(response, "error", None)
    if isinstance(error, dict) and error.get("message"):
        return f"the endpoint answered with an error: {mask_secrets(str(error['message']))[:300]}"
    if isinstance(error, str) and error.strip():
        return f"the endpoint answered with an error: {mask_secrets(error)[:300]}"
    if isinstance(response, str) and response.lstrip().startswith(("data:", "event:")):
        return ("the endpoint streamed its answer (server-sent events) though the request asked for no stream; fix: "
                "turn forced streaming off on the server or proxy")
    return f"the endpoint's answer has no message: {mask_secrets(str(response))[:200]}"


def _no_text(response, message, max_tokens: int | None = None) -> str:
    """Why a chat completion's message holds no text: a tool call (named, with its arguments), or `content: null`
    (with ``finish_reason: "length"``: cut off at the token limit, often by a reasoning model's thinking)."""
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        function = getattr(calls[0], "function", None)
        call = f"{getattr(function, 'name', '?')}({getattr(function, 'arguments', '')})"
        return (f"the model answered with a tool call, not text: {call[:200]}; fix: ask for the SQL as text "
                "(no `tools` or `tool_choice` in model.params)")
    if getattr(message, "content", "") is None:
        try:
            reason = response.choices[0].finish_reason
        except (AttributeError, IndexError, TypeError):
            reason = None
        if reason == "length":
            return _cut_before_text("content: null", max_tokens)
        return f"the model's answer has no text (content: null, finish_reason: {reason})"
    return f"the endpoint's answer is not a chat completion: {str(response)[:200]}"


def _cut_before_text(what: str, max_tokens: int | None) -> str:
    """The miss of an answer the endpoint cut at its token limit before any text (a reasoning model thinking)."""
    limit = f"max_tokens {max_tokens}" if max_tokens is not None else "the endpoint's default max_tokens"
    return (f"the model's answer was cut off at its token limit before any text ({what}, finish_reason: length, "
            f"{limit}); fix: raise `max_tokens` in the suite's `model:`")


def _body_shown(exc: ValueError) -> str:
    """``; the answer: <its first 80 characters>`` of a body that is not JSON (a proxy's login page, a plain-text
    error sent with status 200), masked; empty when the parser did not keep the body."""
    from ..secrets import mask_secrets
    from .extract import preview

    body = getattr(exc, "doc", None)
    if not isinstance(body, str) or not body.strip():
        return ""
    import re

    title = re.search(r"<title[^>]*>(.*?)</title>", body, re.IGNORECASE | re.DOTALL)
    return f"; the answer: {mask_secrets(preview(title.group(1) if title and title.group(1).strip() else body))}"


def _retries_made(exc, default: int) -> int:
    """The retries the SDK made before giving up: it numbers each attempt in its ``x-stainless-retry-count`` header
    (none for a status it does not retry, such as 400)."""
    try:
        return int(exc.request.headers["x-stainless-retry-count"])
    except (AttributeError, KeyError, TypeError, ValueError):
        return default


def _error_code(exc) -> str | None:
    """The ``code`` (else ``type``) of an OpenAI error body, e.g. ``insufficient_quota`` on a 429."""
    body = getattr(exc, "body", None)
    inner = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else body
    if not isinstance(inner, dict):
        return None
    code = inner.get("code") or inner.get("type")
    return code if isinstance(code, str) else None


def _server_message(exc) -> str:
    from ..secrets import mask_secrets

    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body["error"] if isinstance(body.get("error"), dict) else body
        if inner.get("message"):
            return mask_secrets(str(inner["message"]))
    if isinstance(body, str) and body.strip():  # not JSON: a proxy's HTML page (its title), or plain text
        import re

        from .extract import preview

        title = re.search(r"<title[^>]*>(.*?)</title>", body, re.IGNORECASE | re.DOTALL)
        return mask_secrets(preview(title.group(1) if title and title.group(1).strip() else body, 200))
    return mask_secrets(str(getattr(exc, "message", None) or exc))


_clients: dict[Any, ChatClient] = {}
_lock = threading.Lock()


def client_for(config: ModelConfig) -> ChatClient:
    """One client per endpoint, key, timeout and retries (the key only as a hash, and only in memory)."""
    import hashlib

    secret = os.environ.get(config.key_env or "OPENAI_API_KEY") or ""
    key = (config.url or os.environ.get("OPENAI_BASE_URL"), config.key_env, hashlib.sha256(secret.encode()).hexdigest(),
           config.name, config.timeout, config.retries)
    with _lock:
        if key not in _clients:
            _clients[key] = ChatClient(config)
        return _clients[key]
