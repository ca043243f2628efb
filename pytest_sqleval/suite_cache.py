"""One reading of each suite file per run, shared by the xdist controller and its workers.

Each xdist worker collects every suite, and the controller reads them again to summarise: three readings of
the same YAML (about 0.6 s of CPU for Spider dev's 1034 cases, most of a worker's start-up). Within one run,
the first process to read a suite keeps the result, pickled, in the run's build folder (the controller's
private temporary folder, removed at the end of the run); the others load the pickle (a few milliseconds).
A file lock makes a second worker wait for the first one's reading instead of repeating it.

The key is the file's resolved path, size and modification time, the package version and the session's
execution profiles (a suite's ``execution:`` is resolved in them): an edited suite is read again. A suite
that fails to load is never kept (each process reports the error itself). The controller summarises the reading
its workers collected (a ``.collected`` file names it): their profiles may include a conftest.py's it never loads.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path
from typing import Any


def load_suite_shared(path: str | os.PathLike, folder: Path | None, profiles: Any = None, *,
                      as_collected: bool = False) -> Any:
    """``loader.load_suite(path, profiles)``, read at most once per run among the processes sharing ``folder``.

    ``as_collected`` (the xdist controller): the reading a worker collected, made with the profiles of the suite's
    folder, which may come from a conftest.py the controller never loads (``execution: mine``)."""
    # `from .loader import`, not `from . import loader`: the latter takes the package's attribute, which after an
    # in-process pytester run names a module that run imported and pytester dropped, whose profile table is not
    # the session's (a conftest.py's profile then "unknown" in the next in-process run)
    from .loader import load_suite as read_suite

    def load_suite(path):  # the session's table unless the suite's folder has its own (no argument then)
        return read_suite(path) if profiles is None else read_suite(path, profiles)

    if folder is None:
        return load_suite(path)
    path = Path(path)
    try:
        cache = folder / "suites" / f"{_key(path, profiles)}.pickle"
        pointer = folder / "suites" / f"{_key(path, 'collected')}.collected"
    except OSError:
        return load_suite(path)  # the loader reports a missing or unreadable file
    if as_collected:
        suite = _read_collected(pointer)
        if suite is not None:
            return suite
    suite = _read(cache)
    if suite is not None:
        if not as_collected:
            _point(pointer, cache)
        return suite
    from .execution.backends.setup_scripts import build_lock

    try:
        with build_lock(cache):
            suite = _read(cache)
            if suite is None:
                suite = load_suite(path)
                _write(cache, suite)
    except OSError:  # the folder went away (end of run): read it here
        return load_suite(path)
    if not as_collected:
        _point(pointer, cache)
    return suite


def _point(pointer: Path, cache: Path) -> None:
    """Say which reading a worker collected (the controller summarises that one)."""
    if not cache.exists():
        return  # not cacheable: the controller reads the file itself
    partial = pointer.with_name(f"{pointer.name}.{os.getpid()}.partial")
    try:
        partial.write_text(cache.name, encoding="utf-8")
        os.replace(partial, pointer)
    except OSError:
        pass


def _read_collected(pointer: Path) -> Any:
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return _read(pointer.with_name(name)) if name.endswith(".pickle") and "/" not in name else None


def _key(path: Path, profiles: Any = None) -> str:
    from . import __version__

    stat = path.stat()
    text = f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{__version__}\0{_profiles_key(profiles)}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _profiles_key(profiles: Any = None) -> str:
    """The profile table the suite is read with, as text: processes whose hooks built different tables share no
    reading."""
    from .comparison import active_profiles

    if isinstance(profiles, str):  # a key of its own (the pointer to the reading a worker collected)
        return profiles
    table = active_profiles() if profiles is None else profiles
    return repr(sorted((str(name), repr(options)) for name, options in table.items()))


def _read(cache: Path) -> Any:
    try:
        with open(cache, "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a damaged or incompatible entry: read the YAML instead
        return None


def _write(cache: Path, suite: Any) -> None:
    partial = cache.with_name(f"{cache.name}.{os.getpid()}.partial")
    try:
        with open(partial, "wb") as f:
            pickle.dump(suite, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, cache)
    except Exception:  # noqa: BLE001 - not cacheable (an unpicklable value): the others read the YAML
        try:
            partial.unlink()
        except OSError:
            pass
