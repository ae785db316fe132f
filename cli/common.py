"""What the subcommands share: model options, the Context they build, the database check.
The exit codes live in `macsql.cli.exit_codes` and are re-exported here."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from functools import cache
from typing import Any, get_args, get_origin, get_type_hints

from pydantic import TypeAdapter, ValidationError

from macsql.cli.exit_codes import (  # noqa: F401  (re-exported)
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
)
from macsql.database.connection import DatabaseNotFoundError, check_database, resolve_database
from macsql.database.connection_errors import DatabaseUnavailableError
from macsql.database.demo import DEMO_NAME, ensure_demo_database
from macsql.graph.context import Agent, Context, ContextError, build_context
from macsql.llm.models import ModelConfigError, get_chat_model
from macsql.nodes.model_calls import settings_for


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default=None, help="chat model as provider:name (default openai:gpt-4o-mini)"
    )
    parser.add_argument(
        "--base-url",
        default=None,
        help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp); default OPENAI_BASE_URL",
    )
    parser.add_argument("--api-key", default=None, help="API key; default OPENAI_API_KEY")
    parser.add_argument(
        "--max-tries",
        type=int,
        default=None,
        help="most SQL executions in the refine loop (default 3)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds before a SQL query is interrupted (default 30)",
    )
    parser.add_argument(
        "--dataset-style",
        choices=["bird", "spider"],
        default=None,
        help="bird: use evidence, refine empty/NULL results; spider: do not",
    )
    add_context_fields_argument(parser)
    parser.add_argument(
        "--cache",
        default=None,
        metavar="FILE",
        help="cache model replies in this SQLite file (langchain's LLM cache)",
    )


def add_context_fields_argument(parser: argparse.ArgumentParser) -> None:
    """`--set FIELD=VALUE`, repeatable: any `Context` field, typed by `parse_context_fields`."""
    parser.add_argument(
        "--set",
        dest="context_fields",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="set any Context field, e.g. --set num_reviewers=5 --set k_shot=3 (repeatable)",
    )


def context_from_args(args: argparse.Namespace, base: Context | None = None) -> Context:
    """The Context of a subcommand's model options (`build_context` does the building)."""
    max_tries = getattr(args, "max_tries", None)
    if max_tries is not None and max_tries < 1:
        raise UsageError("--max-tries must be at least 1")
    timeout = getattr(args, "timeout", None)
    if timeout is not None and timeout <= 0:
        raise UsageError("--timeout must be positive")
    try:
        return build_context(
            base=base,
            model=getattr(args, "model", None),
            base_url=getattr(args, "base_url", None),
            api_key=getattr(args, "api_key", None),
            max_try_times=max_tries,
            query_timeout=timeout,
            dataset_style=getattr(args, "dataset_style", None),
            overrides=parse_context_fields(getattr(args, "context_fields", None) or []),
        )
    except ContextError as exc:
        raise UsageError(str(exc)) from exc


_NONE_WORDS = ("", "none", "null")


@cache
def _field_types() -> dict[str, tuple[TypeAdapter[Any], bool, bool]]:
    """Each Context field's validator of its declared type (pydantic's lax mode parses text),
    whether the field may be empty, and whether it is a tuple (given as comma-separated text)."""
    hints = get_type_hints(Context)
    return {
        f.name: (
            TypeAdapter(hints[f.name]),
            type(None) in get_args(hints[f.name]),
            get_origin(hints[f.name]) is tuple,
        )
        for f in fields(Context)
    }


def parse_context_fields(assignments: list[str]) -> dict[str, object]:
    """`FIELD=VALUE` strings as typed Context values; unknown fields and bad values are errors."""
    types = _field_types()
    values: dict[str, object] = {}
    for assignment in assignments:
        name, sep, raw = assignment.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in types:
            raise UsageError(f"--set takes FIELD=VALUE with a Context field, not {assignment!r}")
        text = raw.strip()
        adapter, may_be_empty, is_tuple = types[name]
        if may_be_empty and text.lower() in _NONE_WORDS:
            values[name] = None
            continue
        value: object = (
            tuple(part.strip() for part in text.split(",") if part.strip()) if is_tuple else text
        )
        try:
            values[name] = adapter.validate_python(value)
        except ValidationError as exc:
            raise UsageError(f"--set {name}: {exc.errors()[0]['msg']}") from exc
    return values


def enable_cache(args: argparse.Namespace) -> None:
    """`--cache FILE`: langchain's SQLite LLM cache, so identical prompts skip the model."""
    if getattr(args, "cache", None):
        # Only --cache pays for importing the cache (SQLAlchemy's ORM and langchain's loader).
        from macsql.llm.cache import enable_llm_cache

        enable_llm_cache(args.cache)


def check_models(context: Context) -> None:
    """Set up the default model and every per-agent override now, so a missing key or an
    unknown provider stops the command with one line instead of failing every question."""
    for agent in Agent:
        if agent is Agent.SQL_TOOL and context.sql_generator.strip().lower() == "decomposer":
            continue  # the SQLTool reuses the Decomposer's model
        try:
            get_chat_model(settings_for(context, agent))
        except ModelConfigError as exc:  # named by Context field; add the flags that set them
            raise UsageError(f"{exc} (flags: --model, --base-url, --api-key)") from exc


def resolve_db_argument(value: str, timeout: float | None = None) -> str:
    """`demo`, a SQLite path or a URL, checked to exist and to open (within `timeout`, the
    command's `--timeout`, when given); the string the graph takes. A database that cannot be
    opened is a configuration error (exit 2, one line)."""
    if value == DEMO_NAME:
        return str(ensure_demo_database())
    try:
        ref = resolve_database(value)
        check_database(ref, timeout)
    except (DatabaseNotFoundError, DatabaseUnavailableError) as exc:
        raise UsageError(str(exc)) from exc
    return str(ref.sqlite_path) if ref.sqlite_path else value


def warn_if_privileged(db: str | None) -> None:
    """On stderr, once per database: macsql is connected as a superuser or table owner."""
    if not db:
        return
    # Imported here: the relation inventory needs the guard and sqlglot, which `ask` needs only
    # once SQL comes back.
    from macsql.database.relation_inventory import take_privilege_warning

    try:
        warning = take_privilege_warning(resolve_database(db))
    except DatabaseNotFoundError:
        return
    if warning:
        print(f"macsql: {warning}", file=sys.stderr)
