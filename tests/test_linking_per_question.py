"""The linking stage's work per question: a schema's rendered size is measured once per schema
object, not once per question (it cost about 0.6 ms a question), and the size it reports is the
rendered one; phrases in plain ASCII skip the accent stripping, with the same result."""

from __future__ import annotations

import gc
import re
import string
import unicodedata
import weakref
from typing import Any

import pytest

from macsql.database.schema import ColumnInfo, SchemaInfo, TableInfo
from macsql.database.value_index import normalise
from macsql.linking import ranking as schema_linking
from macsql.linking.ranking import TABLE_HEADER_CHARS, LinkBudget, link_schema
from macsql.prompts.schema_text import render_column


def _schema(columns: int) -> SchemaInfo:
    cols = [ColumnInfo(f"col_{i}", "TEXT", primary_key=i == 0) for i in range(columns)]
    return SchemaInfo("s", "sqlite", [TableInfo("things", cols)], [])


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []

    def counted(col: ColumnInfo) -> str:
        seen.append(col)
        return render_column(col)

    monkeypatch.setattr(schema_linking, "render_column", counted)
    return seen


def test_each_schema_is_measured_once(renders: list[Any]) -> None:
    budget = LinkBudget(max_columns=100, max_chars=10**6)  # fits: nothing else renders
    schema = _schema(6)
    for question in ("How many things?", "Which thing is first?", "List all things."):
        assert link_schema(schema, question, "", budget).route == "full"
    assert len(renders) == 6
    other = _schema(4)  # another schema object is measured on its own
    link_schema(other, "How many things?", "", budget)
    assert len(renders) == 10


def test_the_size_is_the_rendered_one_and_goes_with_its_schema(renders: list[Any]) -> None:
    schema = _schema(3)
    expected = (
        TABLE_HEADER_CHARS
        + len("things")
        + sum(len(render_column(c)) + 4 for c in schema.tables[0].columns)
    )
    result = link_schema(schema, "q", "", LinkBudget(max_columns=100, max_chars=expected - 1))
    assert f"{expected} characters" in result.reason and result.route == "linked"
    assert schema_linking._schema_chars(schema) == expected
    gone = weakref.ref(schema)
    del schema, result
    gc.collect()
    assert gone() is None  # the measure is kept on the schema: nothing holds on to it


def _slow_normalise(text: str) -> str:
    """`normalise` as it was, through the accent stripping for every text."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w]+", " ", bare.lower()).split())


@pytest.mark.parametrize(
    "text",
    [
        "How many singers are from France?",
        "  Tab\tand\nnew line ",
        string.printable,
        "O'Brien's  e-mail (K-12) 50%",
        "",
    ],
)
def test_ascii_phrases_normalise_as_the_full_path_does(text: str) -> None:
    assert normalise(text) == _slow_normalise(text)


def test_accents_are_still_stripped() -> None:
    assert normalise("Café  Crème brûlée") == "cafe creme brulee"
    assert normalise("São Paulo") == "sao paulo"


def test_what_is_derived_once_per_schema_is_per_object_and_per_function() -> None:
    from macsql.database.schema import once_per_schema

    calls: list[str] = []

    @once_per_schema
    def tables(schema: SchemaInfo) -> int:
        calls.append("tables")
        return len(schema.tables)

    @once_per_schema
    def columns(schema: SchemaInfo) -> int:
        calls.append("columns")
        return sum(len(t.columns) for t in schema.tables)

    one, two = _schema(3), _schema(5)
    assert [tables(one), tables(one), columns(one), columns(two), columns(two)] == [1, 1, 3, 5, 5]
    assert calls == ["tables", "columns", "columns"]
    assert one == _schema(3)  # equality still compares the fields alone
    assert "_once_" not in str(one.to_dict())  # and the state copy carries no memo
