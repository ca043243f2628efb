"""The gate every predicted SQL passes before it reaches an engine.

Predicted SQL is untrusted model output. It runs only if sqlglot reads it, in
the suite's dialect, as exactly one query (SELECT, WITH ... SELECT, VALUES or
a set operation) with no statement, clause or function that writes, changes
settings, or touches files or the network anywhere in its tree. Anything else
is refused with kind ``rejected`` (or ``syntax`` when it does not parse) and
never executed. The engines are read-only on their own side as well
(see :mod:`pytest_sqleval.execution.engines`), so a gap here cannot become a
write.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..errors import QueryError

#: Longest prediction the guard accepts (characters).
MAX_SQL_LENGTH = 200_000

_QUERY_ROOTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)


def _node_types(*names: str) -> tuple[type[exp.Expression], ...]:
    return tuple(getattr(exp, name) for name in names if hasattr(exp, name))


#: Statement and clause nodes that must not appear anywhere in a prediction.
FORBIDDEN_NODES = _node_types(
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable", "Copy", "Command",
    "Attach", "Detach", "Pragma", "Set", "Install", "Use", "Transaction", "Commit", "Rollback", "LoadData",
    "Into", "Lock", "Grant", "Revoke", "Analyze", "Refresh", "Cache", "Uncache", "Kill", "Export",
)

#: Functions that read or write files, reach the network, run dynamic SQL,
#: load code, change settings or signal other sessions (lower-case names).
FORBIDDEN_FUNCTIONS = frozenset(
    {
        # SQLite
        "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer",
        # DuckDB: file/network readers, dynamic SQL, settings
        "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema",
        "parquet_file_metadata", "parquet_kv_metadata", "read_json", "read_json_auto", "read_json_objects",
        "read_json_objects_auto", "read_ndjson", "read_ndjson_auto", "read_ndjson_objects", "read_text",
        "read_blob", "read_xlsx", "sniff_csv", "glob", "iceberg_scan", "iceberg_metadata", "iceberg_snapshots",
        "delta_scan", "sqlite_scan", "sqlite_attach", "postgres_scan", "postgres_attach", "postgres_query",
        "mysql_scan", "mysql_query", "query", "query_table", "current_setting_set", "duckdb_secrets",
        "install_extension", "load_extension_duckdb",
        # PostgreSQL: server files, large objects, remote databases, dynamic SQL, settings, signals
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_ls_logdir", "pg_ls_waldir", "pg_ls_tmpdir",
        "pg_ls_archive_statusdir", "pg_stat_file", "pg_file_write", "pg_file_rename", "pg_file_unlink",
        "lo_import", "lo_export", "lo_from_bytea", "lo_put", "lo_create", "lo_creat", "lo_unlink", "lo_truncate",
        "lo_open", "lo_write", "dblink", "dblink_exec", "dblink_connect", "dblink_connect_u", "dblink_open",
        "dblink_fetch", "dblink_send_query", "dblink_get_result", "query_to_xml", "query_to_xmlschema",
        "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema", "set_config",
        "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
        "pg_promote", "pg_switch_wal", "pg_create_restore_point", "pg_advisory_lock", "pg_advisory_lock_shared",
        "pg_advisory_xact_lock", "pg_advisory_xact_lock_shared", "pg_try_advisory_lock",
        "pg_try_advisory_xact_lock", "pg_notify", "txid_current", "pg_current_xact_id", "nextval", "setval",
        "pg_logical_emit_message", "pg_replication_origin_create", "pg_drop_replication_slot",
        "pg_create_logical_replication_slot", "pg_create_physical_replication_slot", "pg_import_system_collations",
    }
)

#: Suffixes of a table name that is really a file path (DuckDB reads ``FROM 'data.csv'``).
_FILE_SUFFIXES = (".csv", ".tsv", ".parquet", ".json", ".jsonl", ".ndjson", ".txt", ".gz", ".zst", ".xlsx", ".db",
                  ".duckdb", ".sqlite", ".arrow", ".avro")


@dataclass(frozen=True)
class CheckedQuery:
    """A prediction that passed the guard: its text and its sqlglot tree."""

    sql: str
    tree: exp.Expression


def check_prediction(sql: str, dialect: str) -> CheckedQuery:
    """Return the parsed query, or raise QueryError(kind="syntax" | "rejected")."""
    _check_text(sql)
    statements = _parse(sql, dialect)
    if len(statements) != 1:
        raise QueryError(
            "rejected",
            f"{len(statements)} statements; only a single query runs" if statements else "no statement",
        )
    tree = statements[0]
    if not isinstance(tree, _QUERY_ROOTS):
        raise QueryError("rejected", f"a {_describe(tree)} statement is not a query; only a single read-only query runs")
    _check_tree(tree)
    return CheckedQuery(sql=sql, tree=tree)


def _check_text(sql: str) -> None:
    if len(sql) > MAX_SQL_LENGTH:
        raise QueryError("rejected", f"the prediction is {len(sql)} characters long (limit {MAX_SQL_LENGTH})")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryError("syntax", f"the prediction is not valid UTF-8 text (bad character at position {exc.start})") from None
    if "\x00" in sql:
        raise QueryError("syntax", "the prediction contains a NUL character")


def _parse(sql: str, dialect: str) -> list[exp.Expression]:
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except RecursionError:
        raise QueryError("rejected", "the query is nested too deeply to check") from None
    except SqlglotError as exc:
        keyword = _leading_keyword(sql, dialect)
        if keyword is not None:
            raise QueryError("rejected", f"a {keyword} statement is not a query; only a single read-only query runs") from None
        raise QueryError("syntax", f"does not parse as {dialect} SQL: {_first_line(exc)}") from None
    return [s for s in statements if s is not None]


_QUERY_START_TOKENS = {"SELECT", "WITH", "VALUES", "L_PAREN", "FROM", "TABLE"}

#: Statement words some dialect has but sqlglot does not parse; a statement starting with one is not a query.
_STATEMENT_WORDS = frozenset({
    "EXPORT", "IMPORT", "VACUUM", "REINDEX", "CHECKPOINT", "CALL", "LOAD", "INSTALL", "ATTACH", "DETACH", "COPY",
    "PRAGMA", "SET", "RESET", "DO", "EXECUTE", "EXEC", "PREPARE", "DEALLOCATE", "LISTEN", "NOTIFY", "UNLISTEN",
    "LOCK", "REFRESH", "CLUSTER", "DISCARD", "GRANT", "REVOKE", "SHOW", "DESCRIBE", "EXPLAIN", "ANALYZE", "BEGIN",
    "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "USE", "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "REPLACE",
    "CREATE", "DROP", "ALTER", "TRUNCATE", "RENAME", "COMMENT", "SECURITY", "FORCE", "UNINSTALL",
})


def _leading_keyword(sql: str, dialect: str) -> str | None:
    """The first keyword of SQL that does not parse, when it cannot start a query (e.g. EXPORT)."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, RecursionError, ValueError):
        return None
    if not tokens or tokens[0].token_type.name in _QUERY_START_TOKENS:
        return None
    word = tokens[0].text.upper()
    return word if word in _STATEMENT_WORDS else None


def _check_tree(tree: exp.Expression) -> None:
    try:
        nodes = list(tree.walk())
    except RecursionError:
        raise QueryError("rejected", "the query is nested too deeply to check") from None
    for node in nodes:
        if isinstance(node, FORBIDDEN_NODES):
            raise QueryError("rejected", f"contains {_describe(node)}, which is not allowed in a read-only query")
        if isinstance(node, exp.Func):
            name = function_name(node)
            if name in FORBIDDEN_FUNCTIONS:
                raise QueryError("rejected", f"calls {name}(), which can reach files, the network or server state")
        if isinstance(node, exp.Table) and _is_file_reference(node):
            raise QueryError("rejected", f"reads the file {node.name!r}; predictions may only read tables")


def function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _is_file_reference(table: exp.Table) -> bool:
    identifier = table.this
    if not isinstance(identifier, exp.Identifier) or not identifier.quoted:
        return False
    name = identifier.name.lower()
    return any(mark in name for mark in ("/", "\\", "://", "*", "?")) or name.endswith(_FILE_SUFFIXES)


def _describe(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    if isinstance(node, exp.Into):
        return "SELECT ... INTO"
    if isinstance(node, exp.Lock):
        return "a row-locking clause (FOR UPDATE/SHARE)"
    return type(node).__name__.upper()


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
