"""The databases and schema a suite or case names: paths, URLs, globs and setup scripts, checked, not opened.

``database: shop.sqlite`` (a SQLite or DuckDB file beside the suite), a SQLAlchemy URL with ``${VAR}``
secrets, ``databases:`` as a list or a glob (a test suite of database variants), or a mapping
``{url: "sqlite://", setup: [schema.sql]}`` built fresh for the run; ``schema:`` names a Spider
``tables.json`` entry. Files must exist; nothing is connected to here.
"""

from __future__ import annotations

import difflib
import glob
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .errors import SuiteError
from .load_context import LoadContext, check_keys, yaml_type
from .suite import DatabaseSpec, SchemaSource, database_file_kind, file_url
from .yaml_lines import LineMapping

DATABASE_KEYS = ("url", "setup")
SCHEMA_KEYS = ("tables", "db_id")
DUCKDB_SUFFIXES = (".duckdb", ".ddb")
SERVER_URL_EXAMPLE = "postgresql+psycopg://user:${PGPASSWORD}@localhost/db"


def suite_databases(ctx: LoadContext, data: LineMapping) -> tuple[DatabaseSpec, ...]:
    """The suite's `database:`/`databases:`, every case's default (empty when each case names its own)."""
    if "database" in data and "databases" in data:
        raise ctx.error("the suite has both `database:` and `databases:`", data.key_lines["databases"],
                        fix="use `databases:` for a test suite of several databases, `database:` for one")
    if "databases" in data:
        return _database_list(ctx, data["databases"], data.key_lines["databases"])
    if "database" in data:
        return (_database(ctx, data["database"], data.key_lines["database"]),)
    return ()


def case_databases(ctx: LoadContext, entry: LineMapping) -> tuple[DatabaseSpec, ...]:
    """A case's own `database:`/`databases:` (empty: it uses the suite's)."""
    if "database" in entry and "databases" in entry:
        raise ctx.error("the case has both `database:` and `databases:`", entry.key_lines["databases"],
                        fix="use one of them")
    if "databases" in entry:
        return _database_list(ctx, entry["databases"], entry.key_lines["databases"])
    if "database" in entry:
        return (_database(ctx, entry["database"], entry.key_lines["database"]),)
    return ()


def _database_list(ctx: LoadContext, value: Any, line: int) -> tuple[DatabaseSpec, ...]:
    if isinstance(value, str) and (pattern := _glob_pattern(ctx, value, line)) is not None:
        return _glob_databases(ctx, value, pattern, line, ())
    if not isinstance(value, list) or not value:
        raise ctx.error("`databases:` must be a non-empty list or a glob pattern", line,
                        fix="write `databases: [a.sqlite, b.sqlite]` or `databases: \"variants/*.sqlite\"`")
    specs: list[DatabaseSpec] = []
    entries: list[int] = []
    for i, item in enumerate(value):
        item_line = value.item_lines[i]
        pattern = _glob_pattern(ctx, item, item_line) if isinstance(item, str) else None
        found = (_glob_databases(ctx, item, pattern, item_line, specs) if pattern is not None
                 else (_database(ctx, item, item_line),))
        specs.extend(found)
        entries.extend([i] * len(found))
    _refuse_repeats(ctx, tuple(specs), entries, value.item_lines)
    return tuple(specs)


def _glob_pattern(ctx: LoadContext, text: str, line: int | None) -> str | None:
    """The glob a `databases:` text (the whole value, or one entry of a list) stands for, or None when it names one
    database: a URL, a path without glob characters, or a file whose name holds them (`a[1].sqlite`) and exists."""
    if "://" in text:
        return None
    pattern = expand_env(ctx, text.strip(), line)
    if not glob.has_magic(pattern) or ctx.resolve(pattern).is_file():
        return None
    return pattern


def _glob_databases(ctx: LoadContext, written: str, pattern: str, line: int | None,
                    listed: list[DatabaseSpec] | tuple[()]) -> tuple[DatabaseSpec, ...]:
    """The databases a glob matches, sorted, leaving out those earlier entries of the list already name (so
    `[main.sqlite, "variants/*.sqlite"]` puts one database first); `**` reaches into subfolders (Python's recursive
    glob); a folder it matches is no database, nor a file SQLite or DuckDB keeps beside a database."""
    matches = [m for m in sorted(glob.glob(str(ctx.resolve(pattern)), recursive=True))
               if os.path.isfile(m) and not _beside_a_database(m)]
    if not matches:
        raise ctx.error(f"no database matches the glob {written!r}", line, fix=_no_match_fix(ctx, pattern))
    named = {(spec.url, spec.setup) for spec in listed}
    found = (_database(ctx, m, line) for m in matches)
    return tuple(spec for spec in found if (spec.url, spec.setup) not in named)


def _no_match_fix(ctx: LoadContext, pattern: str) -> str:
    """Where the glob looked: the folder before its first glob character, which may not exist at all."""
    parts = Path(pattern).parts
    fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    folder = ctx.resolve(str(Path(*parts[:fixed]))) if fixed else ctx.directory
    where = (f"the glob matched no file under {folder}" if folder.is_dir()
             else f"the folder {folder} does not exist")
    return (f"{where}; check the pattern (it is relative to the suite file's folder, {ctx.directory}), or list "
            "the databases: `databases: [a.sqlite, b.sqlite]`")


#: Files SQLite and DuckDB keep beside a database (write-ahead log, shared memory, rollback journal): parts of it.
_SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal", ".wal")


def _beside_a_database(path: str) -> bool:
    """Is ``path`` a file SQLite or DuckDB keeps beside the database it names (``a.sqlite-wal``, ``c.duckdb.wal``)?
    A glob over a folder of databases (`variants/*`) matches them too; they are no databases of their own."""
    return any(path.endswith(suffix) and os.path.isfile(path[:-len(suffix)]) for suffix in _SIDECAR_SUFFIXES)


def _refuse_repeats(ctx: LoadContext, specs: tuple[DatabaseSpec, ...], entries: list[int], lines: list[int]) -> None:
    """A database listed twice (as written, or as `a.sqlite` and `./a.sqlite`): a test suite would run it twice.
    ``entries[i]`` is the list entry (0-based) that named ``specs[i]`` (a glob entry names several)."""
    first_of: dict[tuple[str, tuple[Path, ...]], int] = {}
    for i, spec in enumerate(specs):
        first = first_of.setdefault((spec.url, spec.setup), i)
        if first != i:
            raise ctx.error(f"`databases:` lists {spec.source} twice (entries {entries[first] + 1} and "
                            f"{entries[i] + 1})", lines[entries[i]],
                            fix="list each database once: the gold and the prediction run on every database of the "
                                "list, and the same one again adds nothing")


def _database(ctx: LoadContext, value: Any, line: int | None) -> DatabaseSpec:
    if isinstance(value, str):
        return _database_from_text(ctx, value, line)
    if isinstance(value, dict):
        check_keys(ctx, value, DATABASE_KEYS, "database")
        if "url" not in value:
            raise ctx.error("a database mapping needs `url:`", value.line,
                            fix='write `database: {url: "sqlite://", setup: [schema.sql, data.sql]}`')
        url = value["url"]
        if url is None or isinstance(url, (bool, dict, list)):  # str() would make a file named `None` or `True`
            raise ctx.error(f"`url:` of a database mapping must be a URL, not {yaml_type(url)}", value.key_lines["url"],
                            fix='write `database: {url: "sqlite://", setup: [schema.sql, data.sql]}`')
        spec = _database_from_text(ctx, str(url), value.key_lines["url"])
        setup = _setup_scripts(ctx, value)
        if setup and spec.file_path is not None:
            raise ctx.error("setup scripts build a fresh database; they cannot target an existing file", value.line,
                            fix='use `url: "sqlite://"` or `"duckdb://"` (a file is built for you) or a server URL')
        return DatabaseSpec(url=spec.url, setup=setup, source=spec.source)
    if isinstance(value, list):
        raise ctx.error("`database:` names one database, not a list", line,
                        fix="write `database: shop.sqlite`; for several databases (test-suite accuracy) write "
                            "`databases: [a.sqlite, b.sqlite]`")
    raise ctx.error(f"a database is a path, a URL or a mapping, not {yaml_type(value)}", line,
                    fix="write `database: shop.sqlite` or `database: postgresql+psycopg://...`")


def _database_from_text(ctx: LoadContext, text: str, line: int | None) -> DatabaseSpec:
    text = text.strip()  # `" sqlite:///a.db"`, `"a.db "`: read as case ids are, without the white space around
    if not text:  # resolved, "" would be the suite's own folder ("the database path is a directory")
        raise ctx.error("the database is empty", line,
                        fix="write a path or a SQLAlchemy URL (`database: shop.sqlite`), or leave the key out")
    expanded = expand_env(ctx, text, line)
    if "://" in expanded:
        prefix, _, rest = expanded.partition(":///")  # `sqlite+pysqlite:///shop.sqlite` names a file as `sqlite:///` does
        if prefix.split("+", 1)[0] in ("sqlite", "duckdb") and len(rest.split("?")[0]) > 0:
            file_part, query = (rest.split("?", 1) + [""])[:2]
            if (file_part.startswith("file:") and prefix.startswith("sqlite")  # SQLite's URI filename (`?uri=true`)
                    and not ctx.resolve(unquote(file_part)).is_file()):  # (not a file that is named so)
                plain = unquote(file_part[len("file:"):])
                plain = plain[2:] if plain.startswith("///") else plain  # file:///abs/path -> /abs/path
                raise ctx.error(f"a SQLite URI filename is not read here: {text}", line,
                                fix=f"write the file's path, `database: sqlite:///{plain}` (or `database: {plain}`); "
                                    "every database file is opened read-only, so `mode=ro` is not needed")
            if file_part != ":memory:":
                resolved = ctx.resolve(unquote(file_part))  # a URL's database part is percent-encoded
                _require_file(ctx, resolved, line)
                expanded = file_url(prefix, resolved) + (f"?{query}" if query else "")
        return DatabaseSpec(url=expanded, source=text)
    resolved = ctx.resolve(expanded)
    _require_file(ctx, resolved, line)
    scheme = "duckdb" if resolved.suffix.lower() in DUCKDB_SUFFIXES else "sqlite"
    return DatabaseSpec(url=file_url(scheme, resolved), source=text)


def _require_file(ctx: LoadContext, path: Path, line: int | None) -> None:
    if not path.is_file() and path.is_dir():
        raise ctx.error(f"the database path is a directory, not a database file: {path}", line,
                        fix="name the database file inside it (e.g. `database: data/shop.sqlite`), or use "
                            "`databases: \"data/*.sqlite\"` for every database in it")
    if not path.is_file() and path.exists():  # /dev/null, a FIFO: not a missing file
        raise ctx.error(f"the database path {path} is not a regular file (a device, FIFO or socket)", line,
                        fix="name the database file (a SQLite or DuckDB file), or give a SQLAlchemy URL such as "
                            + SERVER_URL_EXAMPLE)
    if not path.is_file():
        bare = re.search(r"\$([A-Za-z_][A-Za-z0-9_]*)", str(path))  # `$HOME/db.sqlite`: only ${VAR} expands
        nearly = None if bare else _nearly_named(path)
        raise ctx.error(f"database file not found: {path}", line,
                        fix=(f"write ${{{bare.group(1)}}} for the environment variable (a bare ${bare.group(1)} is "
                             "read as part of the path); otherwise " if bare else "")
                            + (_nearly_named_fix(ctx, path, nearly) if nearly is not None else
                               "check the path (relative to the suite file), or give a SQLAlchemy URL such as "
                               + SERVER_URL_EXAMPLE))


def _nearly_named(path: Path) -> Path | None:
    """A file beside a missing ``path`` it was probably meant to name: the same name in other letter case (a suite
    written on a case-insensitive file system), else the closest name (``shop.sqlite3`` for ``shop.sqlite``)."""
    try:
        names = sorted(entry.name for entry in path.parent.iterdir()
                       if entry.is_file() and not entry.name.endswith((*_SIDECAR_SUFFIXES, ".yaml", ".yml")))
    except OSError:  # no such folder, or not readable
        return None
    same = [name for name in names if name.lower() == path.name.lower()]
    close = same or difflib.get_close_matches(path.name, names, n=1, cutoff=0.8)
    return path.parent / close[0] if close else None


def _nearly_named_fix(ctx: LoadContext, path: Path, nearly: Path) -> str:
    written = os.path.relpath(nearly, ctx.directory) if nearly.is_relative_to(ctx.directory) else str(nearly)
    case = " (file names are case-sensitive here)" if nearly.name.lower() == path.name.lower() else ""
    return f"the folder holds `{nearly.name}`: write that path, `{written}`{case}"


def _setup_scripts(ctx: LoadContext, value: LineMapping) -> tuple[Path, ...]:
    scripts = value.get("setup")
    if scripts is None:
        return ()
    line = value.key_lines["setup"]
    if isinstance(scripts, str):
        scripts = [scripts]
    if not isinstance(scripts, list) or not all(isinstance(s, str) for s in scripts):
        raise ctx.error("`setup:` must be a list of SQL script paths", line, fix="write `setup: [schema.sql, data.sql]`")
    paths = []
    for script in scripts:
        path = ctx.resolve(expand_env(ctx, script, line))  # `${VAR}` as in `database:` paths
        if not path.is_file():
            raise ctx.error(f"setup script not found: {path}", line, fix="paths are relative to the suite file")
        _refuse_database_file_as_script(ctx, path, script.strip(), line)
        paths.append(path)
    return tuple(paths)


def _refuse_database_file_as_script(ctx: LoadContext, path: Path, written: str, line: int | None) -> None:
    """A setup script that is a database file (`setup: [shop.sqlite]`, read as "the database to start from"):
    its header says so, and the fix is to name it as the database, not "save it as UTF-8"."""
    kind = database_file_kind(path)  # None also when it cannot be read: the build reports that
    if kind == "sqlite":
        what, use = "a SQLite database", f"`database: {written}`"
    elif kind == "duckdb":
        what = "a DuckDB database"
        use = f"`database: {written}`" if path.suffix.lower() in DUCKDB_SUFFIXES else f"`database: duckdb:///{written}`"
    else:
        return
    raise ctx.error(f"setup script {path} is {what}, not a SQL script", line,
                    fix=f"use it as the database: {use} (opened read-only, as it is); `setup:` lists SQL text files "
                        "run to build a fresh database")


def expand_env(ctx: LoadContext, text: str, line: int | None) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}`` so secrets stay out of YAML.

    A value expanded into a URL's userinfo or query string is percent-encoded (a
    password ``p@ss/w#rd`` works) and masked in every message; see :mod:`.secrets`.
    """
    from .secrets import expand_env as expand

    def missing(name: str) -> SuiteError:
        return ctx.error(f"environment variable {name} is not set", line,
                         fix=f"export {name}=... before running pytest, or write ${{{name}:-default}}")

    return expand(text, os.environ.get, missing)


def schema_source(ctx: LoadContext, value: Any, line: int | None) -> SchemaSource:
    """`schema: {tables: tables.json, db_id: ...}`: the file must exist and hold the db_id."""
    if not isinstance(value, dict):
        raise ctx.error("`schema:` must be a mapping {tables: tables.json, db_id: ...}", line,
                        fix="write `schema: {tables: tables.json, db_id: concert_singer}`")
    check_keys(ctx, value, SCHEMA_KEYS, "schema")
    if "tables" not in value or "db_id" not in value:
        raise ctx.error("`schema:` needs both `tables:` and `db_id:`", value.line,
                        fix="write `schema: {tables: tables.json, db_id: concert_singer}`")
    path = ctx.resolve(str(value["tables"]))
    if not path.is_file():
        raise ctx.error(f"schema file not found: {path}", value.key_lines["tables"],
                        fix="give the path of a Spider-style tables.json, relative to the suite file")
    from .schema import SpiderTablesError, spider_db_ids

    try:
        known = ctx.memo(("spider_db_ids", path), lambda: spider_db_ids(path))
    except SpiderTablesError as exc:
        raise ctx.error(f"{exc.message} ({exc.path})", value.key_lines["tables"], fix=exc.fix) from None
    db_id = str(value["db_id"])
    if db_id not in known:
        close = difflib.get_close_matches(db_id, sorted(known), n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        shown = ", ".join(sorted(known)[:10]) + (", ..." if len(known) > 10 else "")
        raise ctx.error(f"db_id {db_id!r} is not in {path}", value.key_lines["db_id"],
                        fix=f"{hint}its db_ids are: {shown or '(none)'}")
    return SchemaSource(tables_json=path, db_id=db_id)

