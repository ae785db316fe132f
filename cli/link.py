"""`macsql link` (what the linking stage keeps for a question) and `macsql index` (build or
refresh a database's value index ahead of time). Neither calls a model."""

from __future__ import annotations

import argparse
import json
from typing import Any

from macsql.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_context_fields_argument,
    context_from_args,
    resolve_db_argument,
)
from macsql.core.context import Context
from macsql.database.connection import resolve_database
from macsql.database.schema import load_schema
from macsql.database.value_index import open_value_index
from macsql.linking.stage import run_linking


def add_link_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("question")
    parser.add_argument("--db", required=True, help="SQLite file, SQLAlchemy URL or 'demo'")
    parser.add_argument("--evidence", default="", help="hints, as BIRD's evidence")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_context_fields_argument(parser)


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", required=True, help="SQLite file, SQLAlchemy URL or 'demo'")
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="rebuild even when an index exists (a server's data changed)",
    )
    add_context_fields_argument(parser)


def _load(args: argparse.Namespace) -> tuple[str, Context, Any]:
    db = resolve_db_argument(args.db, getattr(args, "timeout", None))
    context = context_from_args(args)
    schema = load_schema(
        resolve_database(db),
        num_examples=context.num_value_examples,
        sample_rows=context.sample_rows,
        timeout=context.query_timeout,
    )
    return db, context, schema


def link_main(args: argparse.Namespace) -> int:
    try:
        db, context, schema = _load(args)
    except UsageError:
        raise  # a missing database or a bad --set: exit 2 with one line
    except Exception as exc:
        print(f"macsql: error: cannot read the schema: {type(exc).__name__}: {exc}")
        return EXIT_FAILED
    result = run_linking(schema, db, args.question, args.evidence, context)
    scores = result.scores
    report = {
        **result.summary(),
        "tables": [
            {
                "table": t.name,
                "columns": [
                    {"column": c.name, "score": scores.get((t.name, c.name))} for c in t.columns
                ],
            }
            for t in result.schema.tables
        ],
    }
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return EXIT_OK
    print(f"route: {result.route} ({result.reason})")
    print(f"kept {result.kept_columns} of {result.total_columns} columns")
    for table in report["tables"]:
        shown = ", ".join(
            c["column"] if c["score"] is None else f"{c['column']} ({c['score']:.2f})"
            for c in table["columns"]
        )
        print(f"  {table['table']}: {shown}")
    print(f"matched values: {len(result.values)}")
    for m in result.values:
        print(f"  {m.table}.{m.column} = {m.value!r}  (score {m.score:.2f}, from {m.phrase!r})")
    for note in result.notes:
        print(f"note: {note}")
    return EXIT_OK


def index_main(args: argparse.Namespace) -> int:
    try:
        db, context, schema = _load(args)
        index = open_value_index(
            resolve_database(db),
            schema,
            refresh=args.refresh,
            rows_per_table=context.link_index_rows_per_table,
            values_per_column=context.link_index_values_per_column,
            max_values=context.link_index_max_values,
            timeout=context.query_timeout,
        )
    except UsageError:
        raise
    except Exception as exc:
        print(f"macsql: error: cannot build the value index: {type(exc).__name__}: {exc}")
        return EXIT_FAILED
    stats = index.stats
    verb = f"built in {stats.build_seconds:.1f} s" if stats.rebuilt else "read (unchanged)"
    print(
        f"value index {verb}: {stats.values} values from {stats.columns} columns, "
        f"{stats.size_bytes / 1e6:.1f} MB at {index.path}"
    )
    return EXIT_OK
