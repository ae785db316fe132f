"""`macsql serve` processes for the tests, on a database of their own in the test PostgreSQL.

Each server is the command a user runs (`python -m macsql.cli.main serve`), in its own process
group, on a free loopback port; `ServerProcess.kill` sends it a signal (SIGKILL for the crash
tests) and `start` brings it back on the same port and database. Under CI=true a missing
PostgreSQL or a missing engine fails the tests, elsewhere it skips them (`pg_support`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import psycopg
from pg_support import skip_or_fail_in_ci
from psycopg import sql

from macsql.database.loaders.postgres import psycopg_url

STARTUP_SECONDS = 90
QUIET_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
}


def require_engine() -> None:
    """Aegra and the SDK are the `serve` extra (in `dev` too)."""
    try:
        import aegra_api  # noqa: F401
        import langgraph_sdk  # noqa: F401
    except ImportError as exc:
        skip_or_fail_in_ci(f"the server engine is not installed (pip install -e '.[dev]'): {exc}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server_database(admin_url: str, *, create: bool = True) -> Iterator[str]:
    """The libpq URL of a fresh database on the test server, dropped afterwards; with
    `create=False` it does not exist yet (`macsql serve` creates it)."""
    name = f"macsql_server_{uuid.uuid4().hex[:10]}"
    admin = libpq_url(admin_url)
    if create:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield libpq_url(admin_url, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def libpq_url(url: str, database: str | None = None) -> str:
    parsed = psycopg_url(url).set(drivername="postgresql")
    if database:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class ServerProcess:
    """One `macsql serve` process (and its workers) on `port`, logging to `log`."""

    def __init__(
        self,
        database_url: str,
        log: Path,
        *,
        port: int | None = None,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.database_url = database_url
        self.log = log
        self.port = port or free_port()
        self.args = args
        self.extra_env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_"))
        }
        env.update(QUIET_ENV, **self.extra_env)
        command = [
            sys.executable,
            "-m",
            "macsql.cli.main",
            "serve",
            "--database-url",
            self.database_url,
            "--port",
            str(self.port),
            *self.args,
        ]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                command,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: its workers stop with it
            )
        return self

    def wait_ready(self) -> ServerProcess:
        assert self.proc is not None
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"macsql serve exited with {self.proc.returncode}:\n{_log_tail(self.log)}"
                )
            try:
                if httpx.get(f"{self.url}/ready", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(
            f"macsql serve not ready after {STARTUP_SECONDS}s:\n{_log_tail(self.log)}"
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """`sig` to the server's whole process group, then wait for it to go."""
        if self.proc is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def log_tail(self) -> str:
        return _log_tail(self.log)
