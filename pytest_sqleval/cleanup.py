"""Drop databases and roles that interrupted runs left on a PostgreSQL server.

Every run drops what it built, also when it is stopped with SIGTERM or Ctrl-C.
A run killed with SIGKILL (or a machine that went away) cannot, so::

    python -m pytest_sqleval.cleanup postgresql://admin:${PGPASSWORD}@db/postgres --dry-run
    python -m pytest_sqleval.cleanup postgresql://admin:${PGPASSWORD}@db/postgres

lists, then drops, every ``sqleval_%`` database that no session is connected to
(a database in use belongs to a running evaluation and is kept), and the
``sqleval_ro_%`` roles of the databases it dropped or that no longer exist.
``${VAR}`` in the URL is expanded (the value URL-encoded); the password never
shows. Exit status: 0 when everything found was dropped (or listed), 1 when
something could not be dropped, 2 for a bad URL or an unreachable server.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field

from .errors import DatabaseError
from .secrets import expand_env, mask_secrets


@dataclass
class CleanupReport:
    dropped: list[str] = field(default_factory=list)
    in_use: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    roles_dropped: list[str] = field(default_factory=list)


def find_leftovers(url: str, *, connect_timeout: float = 10.0) -> tuple[list[str], list[str], list[str]]:
    """(databases not in use, databases in use, sqleval roles) on the server of ``url``."""
    from .execution.backends.postgresql import BUILT_DATABASE_PREFIX, RESTRICTED_ROLE_PREFIX, admin_connect

    with admin_connect(url, connect_timeout) as conn:
        rows = conn.execute(
            "SELECT d.datname, EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname "
            "AND a.pid <> pg_backend_pid()) FROM pg_database d WHERE d.datname LIKE %s ORDER BY d.datname",
            (_like_prefix(BUILT_DATABASE_PREFIX),),
        ).fetchall()
        roles = [r[0] for r in conn.execute(
            "SELECT rolname FROM pg_roles WHERE rolname LIKE %s ORDER BY rolname",
            (_like_prefix(RESTRICTED_ROLE_PREFIX),),
        )]
        current = conn.execute("SELECT current_database()").fetchone()[0]
    idle = [name for name, busy in rows if not busy and name != current]
    busy = [name for name, busy in rows if busy or name == current]
    return idle, busy, roles


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%"


def cleanup(url: str, *, dry_run: bool = False, connect_timeout: float = 10.0) -> CleanupReport:
    """Drop leftover built databases (not in use) and their roles; nothing is dropped with ``dry_run``."""
    import psycopg
    from psycopg import sql as pgsql

    from .execution.backends.postgresql import BUILT_DATABASE_PREFIX, RESTRICTED_ROLE_PREFIX, admin_connect

    idle, busy, roles = find_leftovers(url, connect_timeout=connect_timeout)
    report = CleanupReport(in_use=busy)
    kept_roles = {RESTRICTED_ROLE_PREFIX + name[len(BUILT_DATABASE_PREFIX):] for name in busy}
    if dry_run:
        report.dropped = idle
        report.roles_dropped = [r for r in roles if r not in kept_roles]
        return report
    with admin_connect(url, connect_timeout) as conn:
        for name in idle:
            try:
                # No FORCE: a session that connected since the listing keeps its database.
                conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {}").format(pgsql.Identifier(name)))
                report.dropped.append(name)
            except psycopg.Error as exc:
                report.failed.append((name, _first_line(exc)))
                kept_roles.add(RESTRICTED_ROLE_PREFIX + name[len(BUILT_DATABASE_PREFIX):])
        for role in roles:
            if role in kept_roles:
                continue
            try:
                conn.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))
                report.roles_dropped.append(role)
            except psycopg.Error as exc:
                report.failed.append((role, _first_line(exc)))
    return report


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return mask_secrets(text.splitlines()[0] if text else type(exc).__name__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_sqleval.cleanup",
        description="Drop the sqleval_* databases (and sqleval_ro_* roles) that interrupted pytest-sqleval runs "
                    "left on a PostgreSQL server. Databases in use are kept.",
    )
    parser.add_argument("url", help="SQLAlchemy URL of a user allowed to drop them, e.g. "
                                    "postgresql://admin:${PGPASSWORD}@db/postgres (${VAR} expands)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be dropped, drop nothing")
    parser.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                        help="connect timeout (default 10 s)")
    args = parser.parse_args(argv)
    try:
        url = expand_env(args.url, os.environ.get, lambda name: DatabaseError(f"environment variable {name} is not set"))
        report = cleanup(url, dry_run=args.dry_run, connect_timeout=args.connect_timeout)
    except DatabaseError as exc:
        print(f"sqleval cleanup: {exc}", file=sys.stderr)
        return 2
    verb = "would drop" if args.dry_run else "dropped"
    for name in report.dropped:
        print(f"{verb} database {name}")
    for role in report.roles_dropped:
        print(f"{verb} role {role}")
    for name in report.in_use:
        print(f"kept database {name} (in use by a running session)")
    for name, reason in report.failed:
        print(f"could not drop {name}: {reason}", file=sys.stderr)
    if not (report.dropped or report.roles_dropped or report.in_use or report.failed):
        print("no sqleval databases or roles found")
    return 1 if report.failed else 0


if __name__ == "__main__":  # pragma: no cover - exercised through `python -m`
    sys.exit(main())
