"""A corpus of real-looking model replies, for every agent and layout (issue 12).

The SQL cases are what the Decomposer, Refiner, SQLTool, SQLRefiner and R^3 writer get back from
fine-tuned text-to-SQL models, small local models, reasoning models and the papers' own layout;
all of them are read by `read_sql`. The JSON cases are the Selector's table map, the SQLReviewer's
verdict, the QueryCrafter's paraphrases, the SQLRefiner's choice and R^3's personas, read by
`extract_json_object` and the agents' parsers.
"""

from __future__ import annotations

import pytest

from macsql.linking.selection import apply_selection
from macsql.nodes.r3.reviewers import parse_personas
from macsql.nodes.sqlfix.query_crafter import parse_paraphrases
from macsql.nodes.sqlfix.reviewer import parse_verdict
from macsql.replies.reader import extract_json_object, json_field, read_sql

FINAL = "SELECT name FROM singer WHERE age > 30"
DRAFT = "SELECT * FROM concert"

# (case name, reply, the SQL it holds)
SQL_CASES: list[tuple[str, str, str]] = [
    (
        "papers' layout: sub-questions, the last block is final",
        f"Sub question 1: all singers\nSQL\n```sql\n{DRAFT}\n```\n"
        f"Sub question 2: the old ones\nSQL\n```sql\n{FINAL}\n```\nQuestion Solved.",
        FINAL,
    ),
    ("upper-case tag", f"```SQL\n{FINAL}\n```", FINAL),
    ("sqlite tag", f"```sqlite\n{FINAL};\n```", FINAL),
    ("postgresql tag", f"```postgresql\n{FINAL}\n```", FINAL),
    ("mysql tag and text around", f"Sure!\n\n```mysql\n{FINAL}\n```\n\nLet me know.", FINAL),
    ("untagged fence", f"```\n{FINAL}\n```", FINAL),
    ("fence on one line", f"```{FINAL}```", FINAL),
    ("bare SQL (fine-tuned model)", FINAL, FINAL),
    ("bare SQL with a semicolon", f"{FINAL};", FINAL),
    (
        "bare SQL over lines with comments",
        "-- singers older than 30\nSELECT name /* their names */\nFROM singer\nWHERE age > 30;",
        "SELECT name /* their names */\nFROM singer\nWHERE age > 30",
    ),
    ("SQL in a sentence, ended by ;", f"The query is: {FINAL}; it lists the names.", FINAL),
    ("SQL in a sentence, ended by a full stop", f"The query is {FINAL}. Done.", FINAL),
    (
        "SQL on its own lines after prose",
        "Here is the query:\n\nSELECT name\nFROM singer\nWHERE age > 30\n\nIt lists them.",
        "SELECT name\nFROM singer\nWHERE age > 30",
    ),
    ("fence never closed, query complete", f"```sql\n{FINAL}\n", FINAL),
    ("JSON with a sql key", f'{{"sql": "{FINAL}"}}', FINAL),
    ("JSON with a query key in another case", f'{{"Query": "{FINAL}", "Notes": "x"}}', FINAL),
    ("fenced JSON", f'```json\n{{"reasoning": "filter by age", "SQL": "{FINAL}"}}\n```', FINAL),
    ("JSON whose sql holds a markdown fence", f'{{"sql": "```sql\\n{FINAL}\\n```"}}', FINAL),
    (
        "fenced JSON whose sql holds a markdown fence",
        f'```json\n{{"sql": "```sql\\n{FINAL};\\n```"}}\n```',
        FINAL,
    ),
    ("Python-literal dict", f"{{'sql': '{FINAL}', 'ok': True}}", FINAL),
    (
        "<think> block with a wrong draft",
        f"<think>\nMaybe:\n```sql\n{DRAFT}\n```\nNo, by age.\n</think>\n```sql\n{FINAL}\n```",
        FINAL,
    ),
    (
        "<think> block with a draft, then bare SQL",
        f"<think>SELECT name FROM concert_singer</think>\n{FINAL}",
        FINAL,
    ),
    ("thinking whose opening tag is in the prompt", f"{DRAFT} is wrong.</think>\n{FINAL}", FINAL),
    (
        "several statements in one block: the last",
        f"```sql\n{DRAFT};\n{FINAL};\n```",
        FINAL,
    ),
    (
        "Python code, then the query",
        f'```python\nsql = "{DRAFT}"\n```\nFinal answer:\n```sql\n{FINAL}\n```',
        FINAL,
    ),
    (
        "explanation after the final block mentions SELECT",
        f"```sql\n{FINAL}\n```\nSelect statements like this one read only.",
        FINAL,
    ),
    (
        "a CTE",
        "```sql\nWITH old AS (SELECT * FROM singer WHERE age > 30) SELECT name FROM old\n```",
        "WITH old AS (SELECT * FROM singer WHERE age > 30) SELECT name FROM old",
    ),
]

# (case name, reply, why it holds no SQL: a word in `found`)
NO_SQL_CASES: list[tuple[str, str, str]] = [
    ("an apology", "I'm sorry, but I can't answer that from this database.", "prose"),
    ("prose starting with Select", "Select the singers table and count its rows.", "prose"),
    ("prose: Select the names from", "Select the names from singers older than 30.", "prose"),
    ("prose: Select all", "Select all singers.", "prose"),
    ("prose in a fence", "```\nThe answer is in the singer table.\n```", "prose"),
    ("an empty reply", "", "empty"),
    ("only thinking", f"<think>Let me see. {FINAL}</think>", "empty"),
    ("thinking cut off", f"<think>Let me see. {FINAL}", "empty"),
    ("JSON without a sql key", '{"answer": "the singer table"}', "prose"),
]


@pytest.mark.parametrize(
    ("reply", "expected"), [c[1:] for c in SQL_CASES], ids=[c[0] for c in SQL_CASES]
)
def test_sql_is_found_in_every_layout(reply: str, expected: str) -> None:
    reading = read_sql(reply, "sqlite")
    assert reading.sql == expected, reading.found


@pytest.mark.parametrize(
    ("reply", "why"), [c[1:] for c in NO_SQL_CASES], ids=[c[0] for c in NO_SQL_CASES]
)
def test_replies_without_sql_say_what_they_held(reply: str, why: str) -> None:
    reading = read_sql(reply, "sqlite")
    assert reading.sql is None
    assert why in reading.found


def test_a_cut_off_fence_is_incomplete_and_no_earlier_draft_wins() -> None:
    reply = (
        f"SQL\n```sql\n{DRAFT}\n```\nSub question 2:\nSQL\n```sql\nSELECT name FROM singer WHERE"
    )
    reading = read_sql(reply, "sqlite")
    assert reading.sql is None and reading.incomplete
    assert "never closed" in reading.found and "incomplete WHERE" in reading.found


def test_a_broken_final_block_is_not_replaced_by_an_earlier_one() -> None:
    reading = read_sql(f"```sql\n{DRAFT}\n```\n```sql\nSELEC name FROM singer\n```", "sqlite")
    assert reading.sql is None and "not one complete sqlite query" in reading.found


def test_bare_sql_that_does_not_parse_says_why() -> None:
    reading = read_sql("SELECT `Name` FROM `singer`", "postgres")  # backticks: not PostgreSQL
    assert reading.sql is None and "not one complete postgres query" in reading.found
    assert read_sql("SELECT `Name` FROM `singer`", "sqlite").sql == "SELECT `Name` FROM `singer`"


def test_statements_the_guard_refuses_still_count_as_sql_so_the_refiner_hears_why() -> None:
    # Found as SQL, then refused at execution with the guard's reason (not "no SQL").
    assert read_sql("```sql\nDROP TABLE singer\n```", "sqlite").sql == "DROP TABLE singer"


def test_the_dialect_decides_what_parses() -> None:
    # PostgreSQL's cast syntax is one query in postgres; T-SQL's TOP is not SQLite.
    assert (
        read_sql("SELECT age::text FROM singer", "postgres").sql == "SELECT age::text FROM singer"
    )
    assert read_sql("```sql\nSELECT TOP 1 name FROM singer\n```", "tsql").sql is not None
    assert read_sql("```sql\nSELECT name FROM singer LIMIT\n```", "sqlite").sql is None


# --------------------------------------------------------------------------- JSON agents

SELECTOR_REPLIES = [
    ("fenced JSON", '```json\n{"singer": "keep_all", "concert": "drop_all"}\n```'),
    ("bare JSON in prose", 'My choice: {"singer": "keep_all", "concert": "drop_all"}. Done.'),
    ("Python literal", "{'singer': 'keep_all', 'concert': 'drop_all'}"),
    (
        "trailing commas and comments",
        '{\n  "singer": "keep_all", // needed\n  "concert": "drop_all", # not needed\n}',
    ),
    ("keywords in another case", '{"Singer": "Keep_All", "CONCERT": "DROP_ALL"}'),
    (
        "<think> with a draft map",
        '<think>{"singer": "drop_all", "concert": "keep_all"}? no.</think>\n'
        '```json\n{"singer": "keep_all", "concert": "drop_all"}\n```',
    ),
    ("unclosed fence", '```json\n{"singer": "keep_all", "concert": "drop_all"}'),
]


@pytest.mark.parametrize(
    "reply", [r for _, r in SELECTOR_REPLIES], ids=[n for n, _ in SELECTOR_REPLIES]
)
def test_selector_maps_are_read_in_every_layout(reply: str) -> None:
    from macsql.database.schema import ColumnInfo, SchemaInfo, TableInfo

    schema = SchemaInfo(
        "concert_singer",
        "sqlite",
        [
            TableInfo("singer", [ColumnInfo("singer_id", "INTEGER", primary_key=True)]),
            TableInfo("concert", [ColumnInfo("concert_id", "INTEGER", primary_key=True)]),
        ],
        [],
    )
    selection = extract_json_object(reply)
    assert selection is not None
    result = apply_selection(schema, selection)
    assert result.applied and [t.name for t in result.schema.tables] == ["singer"]
    assert result.notes == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"verdict": "pass", "reason": "fine"}', ("pass", "fine")),
        ('Walkthrough...\n{"Verdict": "ERROR", "Reason": "wrong join"}', ("error", "wrong join")),
        ("{'verdict': 'error', 'reason': None,}", ("error", "")),
        ('```json\n{"verdict": "pass", // ok\n "reason": "x",}\n```', ("pass", "x")),
        ('<think>{"verdict": "error"}</think>{"verdict": "pass", "reason": "ok"}', ("pass", "ok")),
        ('{"VERDICT": "pass"} and later {"note": "no verdict here"}', ("pass", "")),
    ],
)
def test_reviewer_verdicts_are_read_in_every_layout(reply: str, expected: tuple[str, str]) -> None:
    assert parse_verdict(reply) == expected


def test_paraphrases_personas_and_choices_in_loose_json() -> None:
    assert parse_paraphrases("{'Paraphrases': ['A?', 'B?',],}", "Q?", 3) == ["A?", "B?"]
    assert parse_personas('{"Reviewers": ["DBA", "analyst", "QA",], // three\n}', 3) == [
        "DBA",
        "analyst",
        "QA",
    ]
    found = extract_json_object('{"Choice": 2, "EXPLANATION": "cand 2"}', ("choice",))
    assert found is not None and json_field(found, "choice") == 2


def test_unreadable_json_is_none() -> None:
    assert extract_json_object("```json\n{broken: \n```") is None
    assert extract_json_object("no braces at all") is None
    assert extract_json_object('["a", "list"]') is None
