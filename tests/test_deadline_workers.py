"""SQL statements run in reused worker threads (`macsql.core.worker_threads`), and their deadlines
hold as before: a statement past its timeout, or one that cannot be interrupted at all, gives
the caller control back in time, and the statement that follows is not held up by the abandoned
worker. (Model calls: tests/test_model_deadlines.py.)"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from conftest import concert_db
from timing import generous

from macsql.core.worker_threads import WorkerThreads
from macsql.database import execution
from macsql.database.connection import resolve_database
from macsql.database.execution import ABANDON_GRACE, Outcome, execute_sql

TIMEOUT = 1.0
ENDLESS_CTE = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
)


def until_idle(pool: WorkerThreads) -> None:
    """A worker goes back to its pool just after waking its caller: wait for that."""
    deadline = time.monotonic() + 5
    while pool.idle() == 0 and time.monotonic() < deadline:
        time.sleep(0.002)
    assert pool.idle() > 0


def test_statements_reuse_a_worker_and_a_runaway_one_is_still_stopped() -> None:
    pool = execution._SQL_WORKERS
    ref = resolve_database(str(concert_db()))
    assert execute_sql(ref, "SELECT count(*) FROM singer").outcome == Outcome.OK
    until_idle(pool)
    started = pool.started
    for _ in range(5):
        assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]
        until_idle(pool)
    assert pool.started == started
    began = time.monotonic()
    result = execute_sql(ref, ENDLESS_CTE, timeout=TIMEOUT)
    assert result.outcome == Outcome.TIMEOUT
    assert time.monotonic() - began <= generous(TIMEOUT + 0.5)


def test_an_uninterruptible_statement_is_abandoned_and_the_next_one_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ref = resolve_database(str(concert_db()))
    real_run = execution._run_on_connection
    release = threading.Event()
    stuck = threading.Event()

    def one_stuck_step(*args: Any) -> Any:
        if not stuck.is_set():  # the first statement: one step that no interrupt ends
            stuck.set()
            release.wait(10)
        return real_run(*args)

    monkeypatch.setattr(execution, "_run_on_connection", one_stuck_step)
    began = time.monotonic()
    result = execute_sql(ref, "SELECT count(*) FROM singer", timeout=0.3)
    elapsed = time.monotonic() - began
    assert result.outcome == Outcome.TIMEOUT
    assert 0.3 + ABANDON_GRACE - 0.05 <= elapsed <= generous(0.3 + ABANDON_GRACE)
    # The abandoned worker is still busy; the next statement gets another at once.
    began = time.monotonic()
    assert execute_sql(ref, "SELECT count(*) FROM singer").rows == [(6,)]
    assert time.monotonic() - began < generous(0.0)  # not after the stuck one's 10 s
    release.set()
