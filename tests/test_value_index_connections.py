"""A value index's connections are shared by threads, and never carried into a forked child
(issue 31: an eval's node threads are many, and each used to open its own connection to every
index it looked up in)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_value_index import _db

from macsql.database import value_index
from macsql.database.connection import resolve_database
from macsql.database.schema import load_schema
from macsql.database.value_index import ValueIndex, open_value_index

FRESNO = {("district", "Fresno County Office of Education")}


def _found(index: ValueIndex) -> set[tuple[str, str]]:
    return {(m.column, m.value) for m in index.lookup(["Fresno county"])}


@pytest.fixture
def index(tmp_path: Path) -> ValueIndex:
    db = resolve_database(str(_db(tmp_path / "schools.sqlite")))
    return open_value_index(db, load_schema(db))


def _counting_connects(monkeypatch: pytest.MonkeyPatch, index: ValueIndex) -> list[str]:
    opened: list[str] = []
    real: Callable[..., sqlite3.Connection] = sqlite3.connect

    def connect(target: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        if str(index.path) in str(target):
            opened.append(threading.current_thread().name)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(value_index.sqlite3, "connect", connect)
    return opened


def test_threads_one_after_another_share_one_connection(
    index: ValueIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _counting_connects(monkeypatch, index)
    results: list[set[tuple[str, str]]] = []
    for _ in range(12):
        worker = threading.Thread(target=lambda: results.append(_found(index)))
        worker.start()
        worker.join()
    assert results == [FRESNO] * 12
    assert len(opened) <= 1


def test_threads_at_once_open_at_most_one_connection_each(
    index: ValueIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _counting_connects(monkeypatch, index)
    start = threading.Barrier(6)
    results: list[set[tuple[str, str]]] = []

    def work() -> None:
        start.wait()
        for _ in range(5):
            results.append(_found(index))

    workers = [threading.Thread(target=work) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert results == [FRESNO] * 30
    assert len(opened) <= 6
    index.close()
    assert _found(index) == FRESNO  # a closed index opens again on its next lookup


def _child_lookup(index: ValueIndex, out: Any) -> None:
    opened: list[str] = []
    real = sqlite3.connect

    def connect(target: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(str(target))
        return real(target, *args, **kwargs)

    value_index.sqlite3.connect = connect  # type: ignore[assignment]  # this child's own module
    out.put((sorted(_found(index)), len(opened)))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_child_opens_its_own_connection(index: ValueIndex) -> None:
    assert _found(index) == FRESNO  # the parent holds an idle connection now
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_lookup, args=(index, out))
    child.start()
    found, opened = out.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert {tuple(m) for m in found} == FRESNO
    assert opened == 1
