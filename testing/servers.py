"""`macsql serve` processes on a database of their own, for tests and benchmarks.

Each server is the command a user runs (`python -m macsql.cli.main serve`), in its own process
group, on a free loopback port; `ServerProcess.kill` sends it a signal (SIGKILL for the crash
tests) and `start` brings it back on the same port and database. Needs the `serve` extra
(Aegra, psycopg) and a PostgreSQL server whose admin URL the caller gives.
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

from macsql.database.loaders.postgres import psycopg_url


class ServerStartError(RuntimeError):
    """`macsql serve` exited or did not answer `/ready` in time (the log's tail says why)."""


STARTUP_SECONDS = 90
QUIET_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server_database(admin_url: str, *, create: bool = True) -> Iterator[str]:
    """The libpq URL of a fresh database on the test server, dropped afterwards; with
    `create=False` it does not exist yet (`macsql serve` creates it)."""
    import psycopg
    from psycopg import sql

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
        launcher: tuple[str, ...] = (sys.executable, "-m", "macsql.cli.main"),
    ) -> None:
        self.database_url = database_url
        self.log = log
        self.port = port or free_port()
        self.args = args
        self.extra_env = env or {}
        # What runs `serve ...`: the CLI, or a benchmark's wrapper around it.
        self.launcher = launcher
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
            *self.launcher,
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
        if self.proc is None:
            raise ServerStartError("the server was not started")
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerStartError(
                    f"macsql serve exited with {self.proc.returncode}:\n{_log_tail(self.log)}"
                )
            try:
                if httpx.get(f"{self.url}/ready", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise ServerStartError(
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
