"""The response cache: one JSON file per request, keyed by a hash of what was asked.

Key: sha256 of the canonical JSON of (endpoint without credentials, model, messages, parameters). Files live
under ``.sqleval_cache/`` in the rootdir (``--sqleval-cache DIR``), as ``<key[:2]>/<key>.json``. Writes go to a
temporary file in the same directory and are moved into place with ``os.replace``, which is atomic: xdist
workers (or two CI jobs sharing a directory) writing the same key at once leave one whole file. Errors are
never cached. Each file holds its key, checked on read: a file copied under another key's name is not cached.
In ``use`` mode a request is asked under a lock on its key (:meth:`ResponseCache.claim`), so processes asking the
same request at once (every xdist worker under ``--dist each``) make one call and the others read its answer.

Modes (``--sqleval-cache-mode``): ``use`` (read, then write what was missing; the default), ``refresh`` (call
again and overwrite), ``off`` (neither read nor write), ``only`` (read only: a request that is not cached fails
as ``model_error`` "not in the cache", so a CI job replaying a committed cache makes no network call).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

CACHE_MODES = ("use", "refresh", "off", "only")
DEFAULT_CACHE_DIR = ".sqleval_cache"
FORMAT = "sqleval-cache/1"


#: sampling parameters the API defines as numbers with fractions: keyed as floats (``temperature: 0`` is ``0.0``), the
#: form ``model.temperature`` always had, so ``params: {top_p: 1}`` and ``{top_p: 1.0}`` ask one request
FLOAT_PARAMETERS = frozenset({"temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty",
                              "repetition_penalty"})


def cache_key(endpoint: str, model: str, messages: Sequence[Mapping[str, Any]], parameters: Mapping[str, Any]) -> str:
    canonical = json.dumps({"endpoint": endpoint, "model": model, "messages": list(messages),
                            "parameters": canonical_parameters(parameters)},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def canonical_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` with equal numbers written one way, so equal requests share a key: a float parameter
    (:data:`FLOAT_PARAMETERS`) as a float, any other whole-number float as an int (``seed: 7.0`` is ``7``), in nested
    values too. Keys of values already in that form (the defaults, ``temperature: 0.5``, ``max_tokens: 512``) are
    unchanged; booleans stay booleans."""
    return {name: _canonical_number(value, float if name in FLOAT_PARAMETERS else None)
            for name, value in parameters.items()}


def _canonical_number(value: Any, kind: type | None = None) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and math.isfinite(value):
        if kind is float:
            return float(value)
        return int(value) if isinstance(value, float) and value.is_integer() else value
    if isinstance(value, Mapping):
        return {name: _canonical_number(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical_number(item) for item in value]
    return value


class ResponseCache:
    def __init__(self, directory: str | Path, mode: str = "use") -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"unknown cache mode {mode!r}: use one of {', '.join(CACHE_MODES)}")
        self.directory = Path(directory)
        self.mode = mode
        file_mode()  # the umask is read here, before any worker thread writes

    @property
    def reads(self) -> bool:
        return self.mode in ("use", "only")

    @property
    def writes(self) -> bool:
        return self.mode in ("use", "refresh")

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.reads:
            return None
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None  # absent, or unreadable: treated as not cached (and rewritten in `use` mode)
        return data["response"] if _problem(data, key) is None else None

    def problem(self, key: str) -> str | None:
        """Why the cached file of ``key`` cannot be used (it exists but is corrupt), or None."""
        path = self.path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            return f"cannot read it: {exc}"
        try:
            return _problem(json.loads(text), key)
        except ValueError as exc:
            return f"not valid JSON: {exc}"

    @contextmanager
    def claim(self, key: str) -> Iterator[None]:
        """In ``use`` mode, hold ``key``'s lock (``fcntl.flock`` on ``<key[:2]>/.<key>.lock``, removed when released)
        while the request is asked: another process or thread asking the same request meanwhile (each xdist worker
        under ``--dist each``, which runs every case; equal questions on two workers; two CI jobs on one directory)
        waits, then reads the answer from the cache instead of paying for the same call again. Without ``fcntl``, or
        where the lock cannot be made (a read-only directory), the request is asked unlocked."""
        handle = None
        if self.mode == "use":
            handle = _lock(self.path(key).with_name(f".{key}.lock"))
        try:
            yield
        finally:
            if handle is not None:
                try:
                    os.unlink(handle.name)  # under the lock: a waiter that then locks the unlinked file tries again
                except OSError:
                    pass
                handle.close()  # releases the lock

    def put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        if not self.writes:
            return
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        payload = json_text({"format": FORMAT, "key": key, "request": dict(request), "response": dict(response)},
                            indent=1, sort_keys=True)
        fd, temp = tempfile.mkstemp(prefix=f".{key[:12]}-", suffix=".tmp", dir=target.parent)
        try:
            os.fchmod(fd, file_mode())  # mkstemp makes 0600: a shared or committed cache is read by others too
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload + "\n")
            os.replace(temp, target)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise


def _lock(path: Path):
    """An open file holding an exclusive ``flock`` on ``path`` (the file still at ``path``), or None."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        while True:
            handle = open(path, "a")  # noqa: SIM115 - closed by claim()
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                if os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino:
                    return handle
            except FileNotFoundError:  # removed by the holder just before this process locked it
                pass
            except BaseException:
                handle.close()
                raise
            handle.close()
    except OSError:
        return None


def json_text(value: Any, **options: Any) -> str:
    """JSON that UTF-8 can encode: non-ASCII text as is, unless a lone surrogate (a model's ``\\ud800`` escape) is in
    it, which only an ASCII escape can carry."""
    text = json.dumps(value, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, **options)
    return text


_file_mode: int | None = None


def file_mode() -> int:
    """The mode ``open()`` would give a new file (0666 less the umask), read once per process."""
    global _file_mode
    if _file_mode is None:
        umask = os.umask(0o022)
        os.umask(umask)
        _file_mode = 0o666 & ~umask
    return _file_mode


def _problem(data: Any, key: str) -> str | None:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"not a {FORMAT} file"
    response = data.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("text"), str):
        return "no answer text in it"
    if data.get("key") != key:  # copied or renamed from another request's file: its answer is not this one's
        stored = data.get("key")
        return (f"it holds the answer to another request (key {stored[:16]}...)" if isinstance(stored, str)
                else "it names no key")
    return None
