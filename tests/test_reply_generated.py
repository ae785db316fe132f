"""Generated replies (issue 24): thousands of replies composed from pieces, read by one rule.

Each property runs on at least 5,000 cases drawn by a seeded generator (`reply_pieces`), the
same every run; `MACSQL_REPLY_SEED=<n>` draws another set. A failure names the seed, the case's
number and the reply, so it can be replayed.

- SQL: whenever the reply marks exactly one final query (or, without a final marker, gives one
  last plain query), the finder returns it; when it is ambiguous (two different queries marked
  final, or only examples, alternatives and drafts), the reading says so.
- The rewriter: the standalone question and whether it builds on the last SQL, from any form;
  none from a reply that holds no question.
- The Selector: the map its reply says, in any shape and container, applied to the schema as
  the canonical map would be; a table the schema lacks is noted.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any, TypeVar

from reply_pieces import rewrite_reply, selection_reply, sql_reply

from macsql.database.schema import ColumnInfo, SchemaInfo, TableInfo
from macsql.linking.selection import apply_selection
from macsql.replies.reader import read_sql
from macsql.replies.rewrite import read_rewrite
from macsql.replies.selection import read_selection

SEED = int(os.environ.get("MACSQL_REPLY_SEED", "24"))
CASES = 5_000
T = TypeVar("T")


def _cases(make: Callable[[random.Random], T]) -> list[tuple[int, T]]:
    rng = random.Random(SEED)
    return [(i, make(rng)) for i in range(CASES)]


def _flat(sql: str | None) -> str:
    return " ".join((sql or "").split())


def _report(failures: list[str]) -> str:
    return f"seed {SEED}: {len(failures)} of {CASES} cases failed; first ones:\n" + "\n".join(
        failures[:5]
    )


def test_the_sql_finder_reads_every_generated_reply() -> None:
    failures = []
    ambiguous = 0
    for index, case in _cases(sql_reply):
        reading = read_sql(case.reply, "sqlite")
        ambiguous += case.ambiguous
        if _flat(reading.sql) != _flat(case.expected) or bool(reading.ambiguous) != case.ambiguous:
            failures.append(
                f"#{index}: {case.reply!r}\n  expected {case.expected!r} (ambiguous: "
                f"{case.ambiguous}), read {reading.sql!r} by {reading.rule!r} "
                f"({reading.ambiguous or 'not ambiguous'}; {reading.found})"
            )
    assert not failures, _report(failures)
    # The generator drew both kinds, and replies with several candidates.
    assert 0.1 * CASES < ambiguous < 0.5 * CASES


def test_the_rewriters_question_is_read_from_every_generated_reply() -> None:
    failures = []
    for index, case in _cases(rewrite_reply):
        rewrite = read_rewrite(case.reply)
        if (rewrite.question, rewrite.builds_on_sql) != (
            case.question,
            case.builds if case.question else False,
        ) and not (case.question is None and rewrite.question is None):
            failures.append(
                f"#{index}: {case.reply!r}\n  expected {case.question!r} builds={case.builds}, "
                f"read {rewrite.question!r} builds={rewrite.builds_on_sql}"
            )
    assert not failures, _report(failures)


def _schema(tables: list[tuple[str, list[str], bool]]) -> SchemaInfo:
    return SchemaInfo(
        "generated",
        "sqlite",
        [
            TableInfo(name, [ColumnInfo(c, "TEXT", primary_key=c == columns[0]) for c in columns])
            for name, columns, _ in tables
        ],
        [],
    )


def _kept(schema: SchemaInfo, selection: dict[str, Any]) -> tuple[list[Any], list[str]]:
    result = apply_selection(schema, selection)
    assert result.applied
    kept = [(t.name, [c.name for c in t.columns]) for t in result.schema.tables]
    return kept, result.notes


def test_the_selectors_map_is_read_from_every_generated_reply() -> None:
    failures = []
    for index, case in _cases(selection_reply):
        schema = _schema(case.tables)
        expected, _ = _kept(schema, case.selection)
        selection, unread = read_selection(case.reply, schema)
        if selection is None:
            failures.append(f"#{index}: {case.reply!r}\n  not read: {unread}")
            continue
        kept, notes = _kept(schema, selection)
        if kept != expected or bool(notes) != case.unknown:
            failures.append(
                f"#{index}: {case.reply!r}\n  expected {expected}, kept {kept} (notes {notes})"
            )
    assert not failures, _report(failures)
