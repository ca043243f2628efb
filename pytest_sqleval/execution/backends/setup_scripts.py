"""Running trusted setup scripts, and building database files once per run (a lock, an atomic rename)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ...errors import DatabaseError
from .base import first_line


def run_setup_scripts(scripts: tuple[Path, ...], execute: Callable[[str], Any], errors, engine_name: str,
                      locate: Callable[[list[str], str], int | None] | None = None) -> None:
    """Run each (trusted) setup script whole; a failure names the script and the engine, and, with ``locate``
    (called only on a failure: ``locate(earlier_texts, text)`` -> the failing statement's offset in ``text``),
    the line of the statement that failed."""
    done: list[str] = []
    for script in scripts:
        text = read_script(script)
        try:
            execute(text)
        except errors as exc:
            where = _statement_at(text, locate, done)
            raise DatabaseError(f"setup script {script} failed on {engine_name}: {first_line(exc)}{where}") from None
        except RecursionError:
            raise DatabaseError(f"setup script {script} failed on {engine_name}: nested too deeply") from None
        done.append(text)


def _statement_at(text: str, locate, done: list[str]) -> str:
    """`` (line N: <statement>)`` for the statement ``locate`` finds failing, else ''."""
    if locate is None:
        return ""
    try:
        offset = locate(done, text)
    except Exception:  # noqa: BLE001 - locating is a courtesy; the engine's message stands alone
        return ""
    if offset is None:
        return ""
    start = _code_start(text, offset)
    end = text.find("\n", start)
    shown = text[start:end if end != -1 else len(text)].strip()
    return f" (line {text.count(chr(10), 0, start) + 1}: {shown[:80]}{'...' if len(shown) > 80 else ''})"


def cut_around(text: str, spans: Iterable[tuple[int, int]], alone: Callable[[str], bool]) -> list[tuple[str, bool]]:
    """``text`` cut around the statements (``spans``: start and end offsets) that ``alone`` picks: ``(part, picked)``
    in order, so that a backend runs each picked statement on its own and the parts between as they are."""
    parts: list[tuple[str, bool]] = []
    start = 0
    for begin, end in spans:
        if alone(text[begin:end]):
            parts += [(text[start:begin], False), (text[begin:end], True)]
            start = end
    parts.append((text[start:], False))
    return parts


def _code_start(text: str, offset: int) -> int:
    """The offset of the statement that starts at ``offset``: past whitespace, ``--`` and ``/* */`` comments."""
    while offset < len(text):
        if text[offset].isspace():
            offset += 1
        elif text.startswith("--", offset):
            end = text.find("\n", offset)
            offset = len(text) if end == -1 else end + 1
        elif text.startswith("/*", offset):
            end = text.find("*/", offset + 2)
            offset = len(text) if end == -1 else end + 2
        else:
            break
    return offset


def failing_statement(statements, execute_one: Callable[[str], Any]) -> int | None:
    """Run ``(offset, statement)`` pairs one by one; the offset of the first that raises (None: none did)."""
    for offset, statement in statements:
        try:
            execute_one(statement)
        except Exception:  # noqa: BLE001 - any engine error marks the statement
            return offset
    return None


def read_script(script: Path) -> str:
    """The text of a setup script (a UTF-8 byte order mark, which Windows editors write, left out: PostgreSQL
    reads it as part of the first word); DatabaseError naming it when it cannot be read."""
    try:
        return script.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise DatabaseError(f"cannot read setup script {script}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise DatabaseError(f"setup script {script} is not UTF-8 text ({exc.reason} at byte {exc.start}, line {line}); "
                            "save it as UTF-8") from None


def build_file_once(path: Path, build: Callable[[Path], None]) -> None:
    """Build ``path`` with ``build(partial)`` unless it exists; processes sharing the folder (xdist workers)
    build it once, under a file lock, and readers only ever see a complete file."""
    if path.is_file():
        return
    with build_lock(path):
        if path.is_file():  # another process built it while this one waited
            return
        with built_atomically(path, partial_path(path)) as partial:
            build(partial)


def partial_path(path: Path) -> Path:
    """A build file private to this process (a shared build folder may hold another process's partial build)."""
    return path.with_name(f"{path.stem}.{os.getpid()}.partial{path.suffix}")


@contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path``'s build (``fcntl.flock`` on ``<path>.lock``); no lock where fcntl is missing
    (the atomic rename still keeps every reader on a complete file)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def built_atomically(path: Path, partial: Path) -> Iterator[Path]:
    """Build into ``partial``; it becomes ``path`` only when the build succeeded."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial.unlink(missing_ok=True)
    try:
        yield partial
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)
