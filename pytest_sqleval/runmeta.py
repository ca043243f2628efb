"""Run metadata for the report's ``run`` block: times, git state, versions, file hashes, options.

Nothing here fails a run: a missing ``git``, a path that is not a repository or an unreadable
file only leaves the corresponding entry out (``git`` becomes null).
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

#: Distributions whose versions are recorded (report key -> distribution name), when installed.
PACKAGES = {
    "pytest": "pytest",
    "pytest-xdist": "pytest-xdist",
    "sqlglot": "sqlglot",
    "sqlalchemy": "SQLAlchemy",
    "duckdb": "duckdb",
    "duckdb-engine": "duckdb-engine",
    "psycopg": "psycopg",
    "pyyaml": "PyYAML",
}
_CHUNK = 1 << 20


def timestamp(seconds: float) -> str:
    """ISO 8601 in UTC with a Z, to the second."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def versions() -> dict[str, str]:
    import sqlite3
    from importlib.metadata import PackageNotFoundError, version

    # the SQLite library the default engine runs on: its version is not Python's (a distribution's, or a build's)
    found = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for key, distribution in PACKAGES.items():
        try:
            found[key] = version(distribution)
        except PackageNotFoundError:
            continue
    return found


def git_state(rootdir: str | Path) -> dict[str, Any] | None:
    """``{"commit": sha, "dirty": bool}`` of the repository holding rootdir; None without git or a repository."""
    try:
        head = subprocess.run(["git", "-C", str(rootdir), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=False)
        if head.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", str(rootdir), "status", "--porcelain"], capture_output=True, text=True,
                                timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}


def sha256_file(path: Path) -> str | None:
    """The file's SHA-256; None for a path that is no regular file (a FIFO read already: opening it again would
    wait for a writer forever) or that cannot be read."""
    digest = hashlib.sha256()
    try:
        if not Path(path).is_file():
            return None
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def display(path: Path, rootdir: Path) -> str:
    """The path relative to rootdir (so CI checkouts in different places compare), else absolute."""
    resolved = path.resolve()
    try:
        return resolved.relative_to(rootdir.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def suite_files(suites: Iterable[Any], predictions: Path | None) -> list[Path]:
    """Every file a score depends on, once each, in order: suite files, database files, setup scripts, schemas,
    predictions."""
    paths: list[Path] = []
    for suite in suites:
        paths.append(Path(suite.path))
        if suite.predictions_file is not None:
            paths.append(Path(suite.predictions_file))
        for case in suite.cases:
            for spec in case.databases:
                if spec.file_path is not None and not spec.setup:
                    paths.append(spec.file_path)
                paths.extend(Path(s) for s in spec.setup)
            if case.schema is not None:
                paths.append(Path(case.schema.tables_json))
    if predictions is not None:
        paths.append(Path(predictions))
    return list(dict.fromkeys(paths))  # the cases of a suite share their files: resolve and hash each once


def prediction_file_names(suites: Iterable[Any], predictions: Path | None, rootdir: Path) -> list[str]:
    """The predictions files among ``files`` (named as there): a new model's predictions differ from the
    deployed one's by design, so their change is no warning against a baseline."""
    paths = [Path(s.predictions_file) for s in suites if s.predictions_file is not None]
    if predictions is not None:
        paths.append(Path(predictions))
    return sorted({display(path.resolve(), rootdir) for path in paths})


def file_hashes(paths: Iterable[Path], rootdir: Path) -> dict[str, str]:
    hashes: dict[str, str] = {}
    done: set[Path] = set()
    for path in paths:
        resolved = Path(path).resolve()
        if resolved in done:
            continue
        done.add(resolved)
        digest = sha256_file(resolved)
        if digest is not None:
            hashes[display(resolved, rootdir)] = digest
    return dict(sorted(hashes.items()))


def run_block(*, rootdir: Path, started: float, finished: float, suites: Iterable[Any], predictions: Path | None,
              options: dict[str, Any], shard: str | None, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``run`` block: ``base`` (plugin_version, pytest_version) first, then the metadata."""
    run = dict(base or {})
    run.update({
        "started": timestamp(started),
        "finished": timestamp(finished),
        "duration_s": round(finished - started, 3),
        "git": git_state(rootdir),
        "versions": versions(),
        "files": file_hashes(suite_files(suites, predictions), rootdir),
        "prediction_files": prediction_file_names(suites, predictions, rootdir),
        "options": options,
        "shard": shard,
    })
    return run
