"""Reply layouts found by an adversarial probe of the SQL reader, each a class of its own.

Every test draws its replies from a seeded generator (`MACSQL_REPLY_SEED=<n>` draws another set)
plus the probe's own examples; a failure names the seed and the reply.

- Comments before the query in a block (```sql\\n-- top singers\\nSELECT ...```) are not part of
  it: the statement is what its first token says.
- A fence's info string may carry words after the language (```sql title="q.sql"```): the code
  is on the lines below.
- A query's string literal that holds a query's text is part of it, never a candidate of its own.
- A reply that ends right after `T1.` (cut off at the token limit) is not a complete query.
- Template tokens printed raw right after the answer (`<eos>`, `<end_of_turn>`) are no text.
- A closing tag in square brackets (`[SQL] ... [/SQL]`) ends the query.
"""

from __future__ import annotations

import json
import os
import random

import pytest

from macsql.replies.reader import read_sql

SEED = int(os.environ.get("MACSQL_REPLY_SEED", "36"))
CASES = 300

QUERIES = [
    "SELECT name FROM singer WHERE age > 30",
    "SELECT country, count(*) AS n FROM singer GROUP BY country ORDER BY n DESC LIMIT 3",
    "SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id",
    "SELECT name\nFROM singer\nWHERE country = 'France'\n  AND age < 40",
    "SELECT avg(age) FROM singer WHERE is_male = 'T'",
    "WITH old AS (SELECT * FROM singer WHERE age > 40) SELECT name FROM old",
    "SELECT name FROM singer UNION SELECT name FROM band",
    "select title from album where note = 'a;b'",
    "SELECT max(`Free Meal Count (K-12)`) FROM frpm WHERE `County Name` = 'Alameda'",
]


def _flat(sql: str | None) -> str:
    return " ".join((sql or "").split())


def _check(cases: list[tuple[str, str]]) -> None:
    failures = [
        f"{reply!r}\n  expected {expected!r}, read {read_sql(reply).sql!r}"
        for reply, expected in cases
        if _flat(read_sql(reply).sql) != _flat(expected)
    ]
    assert not failures, f"seed {SEED}: {len(failures)} of {len(cases)} failed:\n" + "\n".join(
        failures[:5]
    )


def _drawn(make: object) -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    return [make(rng) for _ in range(CASES)]  # type: ignore[operator]


def _commented(rng: random.Random) -> tuple[str, str]:
    query = rng.choice(QUERIES)
    comments = rng.sample(
        ["-- Find the matching singers", "-- Step 1: pick the table", "/* the answer */",
         "/*\n * joins on the key\n */", "-- 最终查询", "--no space after the dashes"],
        rng.randint(1, 3),
    )  # fmt: skip
    body = "\n".join([*comments, query + rng.choice(["", ";"])])
    if rng.random() < 0.3:
        body += "\n-- done"
    fence = rng.choice(["```", "~~~"])
    tag = rng.choice(["sql", "SQL", "", "sqlite"])
    intro = rng.choice(["", "Here is the query:", "Final answer:"])
    reply = f"{intro}\n{fence}{tag}\n{body}\n{fence}"
    if rng.random() < 0.3:
        reply = reply.replace("\n", "\r\n")
    return reply, query


def test_comments_before_the_query_in_a_block_are_not_part_of_it() -> None:
    _check(
        [
            ("```sql\n-- Find them\nSELECT name FROM singer\n```", "SELECT name FROM singer"),
            ("```\n/* count */ SELECT count(*) FROM t;\n```", "SELECT count(*) FROM t"),
            *_drawn(_commented),
        ]
    )


def _info_string(rng: random.Random) -> tuple[str, str]:
    query = rng.choice(QUERIES)
    head = rng.choice(
        ['sql title="query.sql"', "sql showLineNumbers", 'sql linenums="1"', "SQL (SQLite)",
         "sqlite {.line-numbers}", "mysql  -- the query", "postgresql file=top.sql"]
    )  # fmt: skip
    return f"{rng.choice(['', 'The query:'])}\n```{head}\n{query}\n```\nThat is all.", query


def test_words_after_a_fences_language_are_its_info_string_not_code() -> None:
    # Code on the fence's own line is still code.
    _check(
        [
            ('```sql title="top.sql"\nSELECT name FROM singer\n```', "SELECT name FROM singer"),
            ("```sql SELECT name FROM singer```", "SELECT name FROM singer"),
            ("```sql SELECT name\nFROM singer\n```", "SELECT name\nFROM singer"),
            *_drawn(_info_string),
        ]
    )


LITERAL_QUERIES = [
    "SELECT id FROM query_log WHERE text = 'SELECT name FROM singer'",
    "SELECT count(*) FROM snippets WHERE code LIKE 'SELECT % FROM users%'",
    "SELECT author FROM posts WHERE body = 'select title from books where id = 3'",
    "SELECT label FROM notes WHERE note = 'WITH a AS (SELECT 1) SELECT * FROM a'",
]


def _literal_holds_sql(rng: random.Random) -> tuple[str, str]:
    query = rng.choice(LITERAL_QUERIES)
    wrap = rng.choice(
        ["{q}", "SQL: {q}", "<sql>{q}</sql>", "<code>{q}</code>", "The query is {q}.",
         "Final answer: {q}", "{q};\n\nExplanation: it filters.", "$$\\text{{{q}}}$$",
         "{q}</s>", "{json}", "```json\n{json}\n```"]
    )  # fmt: skip
    key = rng.choice(["sql", "query", "final_sql", "output_sql"])
    return wrap.format(q=query, json=json.dumps({"reasoning": "one table", key: query})), query


def test_a_query_inside_a_string_literal_of_the_answer_is_part_of_it() -> None:
    _check(
        [
            (
                "SQL: SELECT label FROM notes WHERE text = 'SELECT * FROM x'",
                "SELECT label FROM notes WHERE text = 'SELECT * FROM x'",
            ),
            *_drawn(_literal_holds_sql),
        ]
    )
    # A query quoted in the explanation after the answer is still a candidate of its own.
    reply = "SELECT a FROM t\n\nFinal answer: 'SELECT b FROM u'"
    assert read_sql(reply).sql == "SELECT b FROM u"


@pytest.mark.parametrize(
    "reply",
    [
        '{"sql": "SELECT a.id FROM a WHERE a.',
        "SQL: SELECT T1.name FROM singer AS T1 WHERE T1.",
        "```sql\nSELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T2.",
        "The query: SELECT name FROM singer ORDER BY singer.",
    ],
)
def test_a_reply_cut_off_after_a_qualifier_is_not_taken_as_complete(reply: str) -> None:
    # The agent asks once more for such a query when the reply hit the token limit.
    reading = read_sql(reply)
    assert reading.sql is None or reading.open_ended, reading


def _glued_token(rng: random.Random) -> tuple[str, str]:
    query = rng.choice(QUERIES)
    token = rng.choice(["<eos>", "<end_of_turn>", "</s>", "<|im_end|>", "<bos>"])
    start = rng.choice(["", "<start_of_turn>model\n", "<bos>"])
    wrap = rng.choice(["{q}", "SQL: {q}", "```sql\n{q}\n```"])
    return start + wrap.format(q=query) + token, query


def test_template_tokens_printed_right_after_the_answer_are_not_text() -> None:
    _check(
        [
            ("SELECT a FROM t\nWHERE b = 'T'<eos>", "SELECT a FROM t\nWHERE b = 'T'"),
            (
                "<start_of_turn>model\nSELECT a FROM t WHERE b > 3<end_of_turn>",
                "SELECT a FROM t WHERE b > 3",
            ),
            *_drawn(_glued_token),
        ]
    )


def _bracket_tags(rng: random.Random) -> tuple[str, str]:
    query = rng.choice(QUERIES)
    name = rng.choice(["SQL", "sql", "QUERY", "ANSWER"])
    sep = rng.choice(["\n", " "])
    return f"[{name}]{sep}{query}{sep}[/{name}]", query


def test_a_closing_tag_in_square_brackets_ends_the_query() -> None:
    _check(
        [
            ("[SQL]\nSELECT count(*)\nFROM singer\n[/SQL]", "SELECT count(*)\nFROM singer"),
            # A bracket-quoted name is still a name.
            ("SELECT [Team Name] FROM teams", "SELECT [Team Name] FROM teams"),
            *_drawn(_bracket_tags),
        ]
    )


def _explained(rng: random.Random) -> tuple[str, str]:
    query = rng.choice(QUERIES)
    steps = rng.sample(
        ["`SELECT name` picks the names.", "`FROM singer` reads the singers.",
         "`WHERE age > 30` keeps the older ones.", "`ORDER BY n DESC` sorts them.",
         "`JOIN concert` adds the concerts.", "`GROUP BY country` counts per country."],
        rng.randint(2, 4),
    )  # fmt: skip
    bullet = rng.choice(["{i}. ", "- ", "* "])
    lines = "\n".join(bullet.format(i=i + 1) + step for i, step in enumerate(steps))
    wrap = rng.choice(["Here's the SQL:\n\n{q}", "SQL: {q}", "```sql\n{q}\n```"])
    return f"{wrap.format(q=query)}\n\nExplanation of the query:\n{lines}", query


def test_clauses_quoted_line_by_line_in_an_explanation_are_no_query() -> None:
    # Two inline code spans on two lines are not one query whose backticks quote a name.
    _check(_drawn(_explained))


def _junk_after_last_clause(rng: random.Random) -> tuple[str, str]:
    query = rng.choice(
        ["SELECT name\nFROM singer\nWHERE country = 'France'\n  AND age < 40",
         "SELECT a FROM t\nWHERE b = 'T'",
         "SELECT country, count(*)\nFROM singer\nGROUP BY country",
         "SELECT T1.name FROM singer AS T1\nJOIN concert AS T2 ON T1.id = T2.singer_id",
         "SELECT name FROM singer\nORDER BY age DESC"]
    )  # fmt: skip
    junk = rng.choice([" // the filter", '"}', " %%", " it's", "\"}}'", " ;-( don't"])
    return rng.choice(["", "SQL: ", "Here you go:\n"]) + query + junk, query


def test_text_glued_to_a_querys_last_clause_never_cuts_that_clause_off() -> None:
    # The query is read whole, or not at all (the Refiner hears why); never without its clause.
    wrong = []
    for reply, query in _drawn(_junk_after_last_clause):
        sql = read_sql(reply).sql
        if sql is not None and _flat(sql) != _flat(query):
            wrong.append(f"{reply!r}\n  read {sql!r}")
    assert not wrong, f"seed {SEED}: {len(wrong)} of {CASES} cut short:\n" + "\n".join(wrong[:5])


PROSE = [
    "Let's look at the schema first.",
    "Regardons d'abord le schéma.",
    "It's a simple filter.",
    "スキーマを確認します。",
    "We don't need the concert table.",
]
OTHERS = [
    "SELECT count(*) FROM singer",
    "SELECT name, country, age FROM singer ORDER BY age DESC",
    "SELECT id FROM orders GROUP BY id HAVING count(*) > 2",
    "SELECT max(capacity), average FROM stadium",
]


def _paragraphs(rng: random.Random) -> tuple[str, str]:
    answer = rng.choice([q for q in QUERIES if "\n" not in q and "`" not in q])
    draft, wrong, other = rng.sample(OTHERS, 3)
    pieces = [rng.choice(PROSE), answer, rng.choice(PROSE), f"This one is incorrect: \n{wrong};"]
    pieces += [rng.choice(PROSE), f"Draft: {draft}", f"Alternatively: `{other}`.", "Let me know."]
    blank = rng.choice(["\n\n", "\n \n", "\n\t\n"])
    reply = blank.join(pieces)
    return (reply.replace("\n", "\r\n") if rng.random() < 0.7 else reply), answer


def test_a_blank_line_ends_a_paragraph_whatever_the_line_endings() -> None:
    # A query in prose is read up to its paragraph's end; with Windows line endings too.
    _check(_drawn(_paragraphs))


def _explained_in_a_tag(rng: random.Random) -> tuple[str, str]:
    answer = rng.choice([q for q in QUERIES if q.startswith("SELECT")])
    quoted = rng.choice(["SELECT name FROM singer", "SELECT count(*) FROM singer", answer])
    tag = rng.choice(["explanation", "reasoning", "analysis", "notes", "Explanation", "rationale"])
    container = rng.choice(["<sql>\n{q}\n</sql>", "```sql\n{q}\n```", "<query>{q}</query>"])
    said = rng.choice(["It builds on `{x}` and filters it.", "Like {x}, but filtered.", "{x}"])
    note = f"<{tag}>{said.format(x=quoted)}</{tag}>"
    return f"{container.format(q=answer)}\n{note}", answer


def test_a_tag_named_as_reasoning_holds_no_answer() -> None:
    # As a JSON reasoning field does: what an <explanation> quotes loses to the answer.
    _check(_drawn(_explained_in_a_tag))


def test_strings_of_a_json_list_are_not_read_as_one_query_with_quoted_names() -> None:
    reply = '{"sql": ["SELECT name", "FROM singer", "WHERE age > 30"]}'
    assert read_sql(reply).sql is None
