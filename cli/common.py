"""What the subcommands share: model options, the Context they build, the database check.
The exit codes live in `macsql.cli.exit_codes` and are re-exported here."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import get_args, get_origin, get_type_hints

from macsql.cli.exit_codes import (  # noqa: F401  (re-exported)
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_PAUSED,
    EXIT_USAGE,
    UsageError,
)
from macsql.cli.numbers import number_in
from macsql.core.context import Agent, Context, ContextError, build_context, check_field
from macsql.database.cache_paths import cache_root
from macsql.database.connection import DatabaseNotFoundError, check_database, resolve_database
from macsql.database.connection_errors import DatabaseUnavailableError
from macsql.database.demo import DEMO_NAME, ensure_demo_database
from macsql.llm.agent_calls import settings_for
from macsql.llm.models import ModelConfigError, get_chat_model


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
        type=number_in(int, 1),
        default=None,
        help="most SQL executions in the refine loop (default 3)",
    )
    parser.add_argument(
        "--timeout",
        type=number_in(float, 0, above=True),
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
        help="set any Context field, e.g. --set num_reviewers=5 --set k_shot=3 (repeatable); "
        "--set help lists the fields",
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


def parse_context_fields(assignments: list[str]) -> dict[str, object]:
    """`FIELD=VALUE` strings as typed Context values, read by the Context's own validators in
    lax mode (text to numbers and booleans); unknown fields and bad values are errors."""
    hints = get_type_hints(Context)
    values: dict[str, object] = {}
    for assignment in assignments:
        name, sep, raw = assignment.partition("=")
        name = name.strip().replace("-", "_")
        if name not in hints:
            raise UsageError(unknown_field_message(name, assignment))
        if not sep:
            raise UsageError(f"--set takes FIELD=VALUE, not {assignment!r} (no '=')")
        text = raw.strip()
        if type(None) in get_args(hints[name]) and text.lower() in _NONE_WORDS:
            values[name] = None
            continue
        value: object = text
        if get_origin(hints[name]) is tuple:
            value = tuple(part.strip() for part in text.split(",") if part.strip())
        try:
            values[name] = check_field(Context, name, value, strict=False)
        except ContextError as exc:
            raise UsageError(f"--set {exc}") from exc
    return values


SETTINGS_HELP = "help"
"""`--set help` lists the settings instead of running the command (`macsql.cli.main`)."""


def unknown_field_message(name: str, assignment: str) -> str:
    from macsql.core.settings_reference import closest_setting

    guess = closest_setting(name) if name else None
    hint = f"; did you mean {guess!r}?" if guess else ""
    return f"--set {assignment!r}: no setting named {name!r}{hint} (--set help lists every setting)"


def settings_help() -> str:
    """Every Context field with its type, default and description, one per line block."""
    import textwrap

    from macsql.core.settings_reference import settings_by_pipeline

    lines = ["Settings for --set FIELD=VALUE (the Context fields):"]
    for group, group_fields in settings_by_pipeline().items():
        lines += ["", "every pipeline:" if group == "all" else f"pipeline {group}:"]
        for field in group_fields:
            lines.append(f"  {field.name} ({field.type}; default {field.default_text})")
            lines += textwrap.wrap(
                field.description, width=96, initial_indent=" " * 6, subsequent_indent=" " * 6
            )
    return "\n".join(lines)


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
    value = _table_file_as_database(value)
    try:
        ref = resolve_database(value)
        check_database(ref, timeout)
    except (DatabaseNotFoundError, DatabaseUnavailableError) as exc:
        raise UsageError(str(exc)) from exc
    return str(ref.sqlite_path) if ref.sqlite_path else value


def _table_file_as_database(value: str) -> str:
    """A CSV or Parquet file becomes a DuckDB database in macsql's cache directory (loaded
    once per version of the file); any other value is returned as it is."""
    from macsql.database.file_kinds import is_table_file

    if not is_table_file(value):
        return value
    path = Path(value).expanduser()
    from macsql.database.loaders.plan import LoaderError
    from macsql.database.loaders.tables import cached_table_file

    try:
        return f"duckdb:///{cached_table_file(path, cache_root() / 'tables')}"
    except LoaderError as exc:
        raise UsageError(str(exc)) from exc


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
