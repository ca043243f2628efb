"""A throwaway PostgreSQL server for the tests, in the manner of pytest-postgresql.

``SQLEVAL_TEST_POSTGRES_URL`` (a SQLAlchemy URL of a superuser on a running
server, as ``.ci/run`` exports) is used when set. Otherwise, when ``initdb``
and ``pg_ctl`` are installed, a server is started in a temporary directory on
a free port and stopped at the end of the session; as root, the server runs as
the ``postgres`` system user. When neither is possible the tests skip with the
reason.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

ENV_URL = "SQLEVAL_TEST_POSTGRES_URL"


class Unavailable(Exception):
    pass


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return candidate
    raise Unavailable(f"{name} not found (install PostgreSQL, e.g. `apt-get install postgresql`, or set {ENV_URL})")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThrowawayServer:
    def __init__(self) -> None:
        self.initdb = _binary("initdb")
        self.pg_ctl = _binary("pg_ctl")
        self.root = Path(tempfile.mkdtemp(prefix="sqleval-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.user = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args: str) -> None:
        command = list(args)
        if self.user:
            if not shutil.which("runuser"):
                raise Unavailable("running as root without runuser: cannot start PostgreSQL")
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(args[:2])} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> str:
        if self.user:
            shutil.chown(self.root, user=self.user)
            self.root.chmod(0o700)
        self._run(self.initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8",
                  "--locale=C")
        options = f"-p {self.port} -k {self.root} -h 127.0.0.1 -c fsync=off -c full_page_writes=off"
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        try:
            self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop")
        except Unavailable:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


def server_url() -> tuple[str, ThrowawayServer | None]:
    """The URL of a usable server and the server to stop afterwards (None when given by the environment)."""
    if os.environ.get(ENV_URL):
        return os.environ[ENV_URL], None
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise Unavailable("psycopg is not installed: pip install 'pytest-sqleval[postgres]'") from None
    server = ThrowawayServer()
    try:
        return server.start(), server
    except Exception:
        server.stop()
        raise
