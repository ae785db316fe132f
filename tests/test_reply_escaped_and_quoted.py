"""Two containers of a query that read like text: markup that escapes it, and a quoted string.

- A reply written as HTML or XML escapes its text (`age &gt; 30`, `&#39;Joe&#39;`). A character
  reference outside a query's quotes, where SQL never has one, means the whole query was
  escaped: it is read unescaped. A query whose only references are inside its literals (a
  search over stored HTML) is data and stays as written.
- A query assigned in code or config (`sql = "SELECT ..."`, `query: 'SELECT ...'`) is the
  quoted string's content, without the closing quote.
"""

from __future__ import annotations

import html
import random

import pytest
from reply_pieces import QUERIES, misread_queries

from macsql.replies.finder import find_sql
from macsql.replies.markup import original_offset, sql_text

GOLD = "SELECT name FROM singer WHERE age > 30"


@pytest.mark.parametrize(
    "reply",
    [
        '<pre><code class="language-sql">SELECT name FROM singer WHERE age &gt; 30</code></pre>',
        "<answer><sql>SELECT name FROM singer WHERE age &gt; 30</sql></answer>",
        "The query is SELECT name FROM singer WHERE age &gt; 30 which works.",
        "```sql\nSELECT name FROM singer WHERE age &#62; 30\n```",
        "<p>SELECT name FROM singer WHERE age &#x3E; 30;</p>",
        'sql = "SELECT name FROM singer WHERE age > 30"',
        "query: 'SELECT name FROM singer WHERE age > 30'",
        'cursor.execute("SELECT name FROM singer WHERE age > 30")',
    ],
)
def test_escaped_and_quoted_queries_are_read(reply: str) -> None:
    assert find_sql(reply, "sqlite").sql == GOLD


def test_references_inside_literals_only_are_data() -> None:
    sql = "SELECT Id FROM posts WHERE Body LIKE '%&lt;p&gt;%' AND Title = 'AT&amp;T'"
    assert sql_text(sql) == sql
    assert find_sql(f"```sql\n{sql}\n```", "sqlite").sql == sql


def test_an_escaped_query_is_unescaped_inside_its_literals_too() -> None:
    escaped = "SELECT a FROM t WHERE b &lt;&gt; &#39;x &amp; y&#39;"
    assert sql_text(escaped) == "SELECT a FROM t WHERE b <> 'x & y'"


def test_quoted_prose_is_not_a_query() -> None:
    reply = 'He wrote "Select the names from singers" to me. SELECT name FROM singer'
    assert find_sql(reply, "sqlite").sql == "SELECT name FROM singer"


def test_a_quoted_query_keeps_its_own_escaped_quotes() -> None:
    reply = r'q = "SELECT \"Team Name\" FROM teams WHERE wins > 10"'
    assert find_sql(reply, "sqlite").sql == 'SELECT "Team Name" FROM teams WHERE wins > 10'


def _containers(rng: random.Random, sql: str) -> str:
    escaped = html.escape(sql, quote=rng.random() < 0.5)
    tag = rng.choice(["sql", "query", "code", "answer", "pre"])
    return rng.choice(
        [
            f"<{tag}>{escaped}</{tag}>",
            f"<pre><code>{escaped};</code></pre>",
            f"Here it is:\n\n{escaped}\n\nDone." if "\n" not in sql else f"<pre>{escaped}</pre>",
        ]
    )


def test_every_query_escaped_in_any_container_reads_as_written() -> None:
    failures = misread_queries(_containers, seed=7, cases=600)
    assert not failures, failures[:5]


def test_offsets_map_back_to_the_escaped_text() -> None:
    rng = random.Random(11)
    for _ in range(300):
        sql = rng.choice(QUERIES)
        raw = html.escape(sql, quote=rng.random() < 0.5)
        read = sql_text(raw)
        assert read == sql or read == sql.replace("；", ";")
        for offset in range(len(read) + 1):
            # the escaped text up to the mapped position reads as the read text up to offset
            assert sql_text(raw[: original_offset(raw, offset)]).startswith(read[:offset][:-1])


@pytest.mark.parametrize(
    "reply",
    [
        '```python\ncursor.execute("SELECT name FROM singer WHERE age > 30")\n```',
        '```python\nsql = """\nSELECT name FROM singer WHERE age > 30\n"""\n```',
        "```js\nconst q = `SELECT name FROM singer WHERE age > 30`;\n```",
        "```bash\nsqlite3 concert.db 'SELECT name FROM singer WHERE age > 30'\n```",
        "```yaml\nquery: SELECT name FROM singer WHERE age > 30\n```",
        'Final answer:\n```python\nq = "SELECT name FROM singer WHERE age > 30"\n```',
    ],
)
def test_a_query_in_a_code_block_s_string_is_read(reply: str) -> None:
    assert " ".join((find_sql(reply, "sqlite").sql or "").split()) == GOLD


def test_sql_given_as_sql_outranks_a_string_in_code_after_it() -> None:
    reply = (
        f"```sql\n{GOLD}\n```\nFrom Python:\n```python\n"
        'cur.execute("SELECT name FROM singer WHERE age > ?", (30,))\n```'
    )
    reading = find_sql(reply, "sqlite")
    assert reading.sql == GOLD
    assert reading.passed_over and reading.passed_over[0].startswith("a string in code")
