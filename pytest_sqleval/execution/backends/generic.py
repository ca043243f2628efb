"""Any other SQLAlchemy URL: used as given (the sqlglot guard is the read-only check), plain DB-API queries
with a cancelling watchdog, the driver's own connect timeout where it has one. Asked last."""

from __future__ import annotations

from typing import Any

from ...errors import DatabaseError
from ...secrets import register_url_secrets
from ...suite import hide_password
from .base import DEFAULT_CONNECT_TIMEOUT, Backend, first_line
from .connect import probe

#: The sqlglot dialect that reads SQL written for a SQLAlchemy backend (by SQLAlchemy dialect name).
SQLGLOT_DIALECTS = {
    "sqlite": "sqlite",
    "duckdb": "duckdb",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "mssql": "tsql",
    "oracle": "oracle",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "trino": "trino",
    "redshift": "redshift",
    "clickhouse": "clickhouse",
    "databricks": "databricks",
}

#: connect_args naming a connect timeout, for the drivers that take one (best effort for any other URL).
_GENERIC_TIMEOUT_ARGS = {
    "pymysql": "connect_timeout", "mysqldb": "connect_timeout", "mariadbconnector": "connect_timeout",
    "mysqlconnector": "connection_timeout", "asyncmy": "connect_timeout", "aiomysql": "connect_timeout",
    "pymssql": "login_timeout", "pyodbc": "timeout", "psycopg2": "connect_timeout", "pg8000": "timeout",
    "oracledb": "tcp_connect_timeout", "cx_oracle": None,
}


class GenericBackend(Backend):
    """Serves every URL and engine no other backend owns (so it is asked last)."""

    name = "generic"

    def owns(self, url) -> bool:
        return True

    def owns_engine(self, engine: Any) -> bool:
        return True

    def open(self, url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        return generic_engine(url, connect_timeout=connect_timeout)


def generic_engine(url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
    """Any other SQLAlchemy URL: the driver's own connect timeout where it has one, and a watchdog on the probe."""
    from sqlalchemy import create_engine

    register_url_secrets(url)
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        connect_args: dict[str, Any] = {}
        if parsed.get_backend_name() == "postgresql":
            from .postgresql import libpq_timeout

            connect_args["connect_timeout"] = libpq_timeout(connect_timeout)
        else:
            arg = _GENERIC_TIMEOUT_ARGS.get(parsed.get_driver_name())
            if arg:
                connect_args[arg] = max(1, int(round(connect_timeout)))
        engine = create_engine(url, connect_args=connect_args) if connect_args else create_engine(url)
    except Exception as exc:  # noqa: BLE001
        raise DatabaseError(f"bad database URL {hide_password(url)}: {first_line(exc)}{_driver_hint(exc)}") from None
    probe(engine, url, engine.dialect.name, connect_timeout, watchdog=True)
    return engine


def _driver_hint(exc: Exception) -> str:
    """What to do when SQLAlchemy knows no such dialect, or the dialect's driver is not installed."""
    from sqlalchemy.exc import NoSuchModuleError

    if isinstance(exc, NoSuchModuleError):
        return ("; SQLAlchemy has no such dialect+driver: check the URL's scheme (sqlite:///, duckdb:///, "
                "postgresql+psycopg://, mysql+pymysql://, ...) or install the package that provides it")
    if isinstance(exc, ImportError) and getattr(exc, "name", None):
        return f"; its driver module {exc.name!r} is not installed: pip install the package that provides it"
    return ""
