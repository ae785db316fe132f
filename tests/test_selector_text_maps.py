"""A Selector reply without JSON: the table map written as text is read by the same rule.

`test_reply_generated.py` draws these forms at random; these are the examples, and the case
that decides between a JSON-looking fragment and the map around it.
"""

from __future__ import annotations

import pytest

from macsql.database.schema import ColumnInfo, SchemaInfo, TableInfo
from macsql.replies.selection import read_selection

SCHEMA = SchemaInfo(
    "d",
    "sqlite",
    [
        TableInfo("singer", [ColumnInfo("name", "text"), ColumnInfo("age", "int")]),
        TableInfo("concert", [ColumnInfo("year", "int")]),
        TableInfo("singer_in_concert", [ColumnInfo("singer_id", "int")]),
    ],
    [],
)
MAP = {"singer": ["name", "age"], "concert": "drop_all", "singer_in_concert": "keep_all"}


@pytest.mark.parametrize(
    "reply",
    [
        "singer: [name, age]\nconcert: drop_all\nsinger_in_concert: keep_all",
        "- **singer**: name, age\n- concert: drop\n- singer_in_concert: keep",
        "<singer>name, age</singer>\n<concert>drop_all</concert>"
        "<singer_in_concert>keep_all</singer_in_concert>",
        "| table | decision |\n| --- | --- |\n| singer | [name, age] |\n| concert | no |\n"
        "| singer_in_concert | yes |",
        "My choice:\n\nSINGER: [name, age]\nConcert: drop_all\nsinger_in_concert: keep_all\n\n"
        "Done.",
    ],
)
def test_a_map_written_as_text_is_read(reply: str) -> None:
    selection, notes = read_selection(reply, SCHEMA)
    assert selection is not None and not notes
    assert {table.lower(): choice for table, choice in selection.items()} == MAP  # any case


def test_tables_named_alone_are_the_tables_to_keep() -> None:
    selection, _ = read_selection("Tables to keep:\n- singer\n- singer_in_concert", SCHEMA)
    assert selection == {
        "singer": "keep_all",
        "singer_in_concert": "keep_all",
        "concert": "drop_all",
    }


def test_json_still_wins_when_it_names_more_tables() -> None:
    reply = 'Looking at singer: it matters.\n{"singer": "keep_all", "concert": "drop_all"}'
    assert read_selection(reply, SCHEMA)[0] == {"singer": "keep_all", "concert": "drop_all"}


def test_prose_holds_no_table_map() -> None:
    selection, notes = read_selection("I would keep the country table.", SCHEMA)
    assert selection is None and notes == ["the Selector's reply holds no table map"]
