"""The Python API: `macsql.ask(question, db)`, its async twin `aask`, and `macsql.connect(db)`
for asking one database many questions.

`db` is what `macsql ask --db` takes ('demo', a SQLite or DuckDB file, an SQLAlchemy URL), or
a CSV or Parquet file, a pandas DataFrame, or a mapping of table names to either: those are
loaded into a DuckDB database held in memory (a file on the memory-backed /dev/shm where the
system has one, else in the temporary folder), deleted when the connection closes, unless
`path=` names a file to keep. macsql then opens it like any DuckDB database: read-only,
through the guard, under the same timeout, row cap and byte budget.

Settings are the `Context` fields, as keywords (`max_try_times=5`, `base_url=...`); `model`
is a 'provider:name' string or a langchain chat model object. `approve=` takes a function
that sees each SQL before it runs (a `PendingApproval`) and returns True to run it, a string
to run that SQL instead, or False to stop; it turns `approve_sql` on.

Everything heavy is imported on the first call, so `import macsql` stays cheap.
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from macsql.core.context import Context
    from macsql.core.results import PendingApproval, Result

Approver = Callable[["PendingApproval"], "bool | str | Awaitable[bool | str]"]


class SettingsError(ValueError):
    """An unknown setting, or a value out of its range."""


def _context(model: Any, settings: Mapping[str, Any], approving: bool) -> Context:
    from macsql.core.context import Context, ContextError, build_context
    from macsql.core.settings_reference import unknown_settings_message

    unknown = sorted(set(settings) - {f.name for f in fields(Context)})
    if unknown:
        raise SettingsError(unknown_settings_message(unknown))
    overrides = dict(settings)
    if model is not None and not isinstance(model, str):
        from macsql.llm.models import register_chat_model

        name = f"object:{type(model).__name__}-{id(model)}"
        register_chat_model(name, model)
        model = name
    if approving:
        overrides["approve_sql"] = True
    try:
        return build_context(model=model, overrides=overrides)
    except ContextError as exc:
        raise SettingsError(str(exc)) from exc


def _memory_folder() -> str:
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    return tempfile.mkdtemp(prefix="macsql-", dir=base)


def _is_tabular(db: object) -> bool:
    from macsql.database.file_kinds import is_table_file

    if isinstance(db, Mapping):
        return True
    if type(db).__module__.split(".")[0] == "pandas":
        return True
    return is_table_file(db)


def _check_text(**values: object) -> None:
    # A TypeError naming the argument, rather than pydantic's error about `Result.question`.
    for name, value in values.items():
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")


class Connection:
    """One database, asked many questions with the same settings. Close it (or use it as a
    context manager) to drop an in-memory copy of CSV, Parquet or DataFrame data."""

    def __init__(
        self,
        db: Any,
        *,
        pipeline: str = "macsql",
        model: Any = None,
        path: str | Path | None = None,
        **settings: Any,
    ) -> None:
        from macsql.graph.registry import pipeline_names

        if pipeline not in pipeline_names():
            raise ValueError(
                f"unknown pipeline {pipeline!r}; choose from {', '.join(pipeline_names())}"
            )
        self.pipeline = pipeline
        self._model = model
        self._settings = dict(settings)
        _context(model, self._settings, approving=False)  # bad settings fail here, not later
        self._folder: str | None = None
        self.db = self._open(db, path)
        self._closer = weakref.finalize(self, _cleanup, self.db, self._folder)

    def _open(self, db: Any, path: str | Path | None) -> str:
        from macsql.database.connection import check_database, resolve_database

        if _is_tabular(db):
            from macsql.database.loaders.tables import load_tables

            if path is None:
                self._folder = _memory_folder()
                target = Path(self._folder) / "tables.duckdb"
            else:
                target = Path(path).expanduser().absolute()
            db = f"duckdb:///{load_tables(db, target)}"
        elif path is not None:
            raise ValueError("path= names where CSV, Parquet or DataFrame data is loaded")
        text = str(db)
        check_database(resolve_database(text))
        return text

    def ask(
        self,
        question: str,
        *,
        evidence: str = "",
        approve: Approver | None = None,
        **settings: Any,
    ) -> Result:
        """Answer one question; `settings` override the connection's for this question."""
        _check_text(question=question, evidence=evidence)
        context = _context(self._model, {**self._settings, **settings}, approve is not None)
        graph, config = self._graph(approve is not None)
        payload = {"question": question, "evidence": evidence, "db": self.db}
        output = graph.invoke(payload, config, context=context)
        while approve is not None and (waiting := _waiting(graph, config)):
            decisions = [_decided(approve(_pending(w)), w.sql) for w in waiting]
            output = graph.invoke(_resume(waiting, decisions), config, context=context)
        return self._result(question, output, graph, config)

    async def aask(
        self,
        question: str,
        *,
        evidence: str = "",
        approve: Approver | None = None,
        **settings: Any,
    ) -> Result:
        """`ask`, awaitable; `approve` may be a coroutine function."""
        _check_text(question=question, evidence=evidence)
        context = _context(self._model, {**self._settings, **settings}, approve is not None)
        graph, config = self._graph(approve is not None)
        payload = {"question": question, "evidence": evidence, "db": self.db}
        output = await graph.ainvoke(payload, config, context=context)
        while approve is not None and (waiting := _waiting(graph, config)):
            decisions = []
            for w in waiting:
                decision = approve(_pending(w))
                decision = await decision if inspect.isawaitable(decision) else decision
                decisions.append(_decided(decision, w.sql))
            output = await graph.ainvoke(_resume(waiting, decisions), config, context=context)
        return self._result(question, output, graph, config)

    def _graph(self, approving: bool) -> tuple[Any, dict[str, Any] | None]:
        from macsql.graph.registry import get_builder, get_pipeline

        if not approving:
            return get_pipeline(self.pipeline), None
        # A pause needs the run's state kept until it is resumed: in memory, for this call.
        from langgraph.checkpoint.memory import InMemorySaver

        from macsql.graph.approvals import new_thread_id

        graph = get_builder(self.pipeline).compile(checkpointer=InMemorySaver())
        return graph, {"configurable": {"thread_id": new_thread_id()}}

    def _result(
        self, question: str, output: dict[str, Any], graph: Any, config: dict[str, Any] | None
    ) -> Result:
        from macsql.core.results import Result

        if config is not None:  # a thread's checkpoints keep no rows: the run returned them
            rows = {"rows": output["rows"]} if "rows" in output else {}
            output = {**graph.get_state(config).values, **rows}
        return Result.from_run(output, question=question, db=self.db, pipeline=self.pipeline)

    def close(self) -> None:
        """Drop the database's pooled connections, and its in-memory copy if it has one."""
        self._closer()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"macsql.Connection({self.db!r}, pipeline={self.pipeline!r})"


def _cleanup(db: str, folder: str | None) -> None:
    from macsql.database.connection import forget_database

    forget_database(db)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _waiting(graph: Any, config: Any) -> list[Any]:
    from macsql.graph.approvals import waiting_approvals

    return waiting_approvals(graph, config)


def _pending(waiting: Any) -> PendingApproval:
    from macsql.core.results import PendingApproval

    return PendingApproval.model_validate(waiting.as_dict())


def _decided(decision: Any, sql: str) -> bool | str:
    from macsql.graph.approvals import decision_problem

    if inspect.isawaitable(decision):
        raise TypeError("approve= returned an awaitable: use `await aask(...)` with it")
    # The graph would ask again about an answer it cannot read, and so would this loop.
    problem = decision_problem(decision, sql)
    if problem is not None:
        raise TypeError(f"approve= must return True, a SQL string or False: {problem}")
    return cast("bool | str", decision)


def _resume(waiting: list[Any], decisions: list[Any]) -> Any:
    from macsql.graph.approvals import resume_command

    return resume_command(waiting, decisions)


def connect(
    db: Any, *, pipeline: str = "macsql", model: Any = None, path: str | Path | None = None,
    **settings: Any,
) -> Connection:
    """A `Connection` to `db` (see the module's docstring for what `db` may be)."""
    return Connection(db, pipeline=pipeline, model=model, path=path, **settings)


def ask(
    question: str,
    db: Any,
    *,
    pipeline: str = "macsql",
    model: Any = None,
    evidence: str = "",
    approve: Approver | None = None,
    **settings: Any,
) -> Result:
    """Answer `question` from `db` with a checked SQL query: a `Result` with `sql`, `status`,
    `rows`, `columns`, `fallbacks`, `usage` and `.to_pandas()`."""
    with connect(db, pipeline=pipeline, model=model, **settings) as connection:
        return connection.ask(question, evidence=evidence, approve=approve)


async def aask(
    question: str,
    db: Any,
    *,
    pipeline: str = "macsql",
    model: Any = None,
    evidence: str = "",
    approve: Approver | None = None,
    **settings: Any,
) -> Result:
    """`ask`, awaitable."""
    with connect(db, pipeline=pipeline, model=model, **settings) as connection:
        return await connection.aask(question, evidence=evidence, approve=approve)
