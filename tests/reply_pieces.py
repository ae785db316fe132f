"""A seeded generator of model replies composed from pieces (issue 24).

`sql_reply(rng)` writes a reply that holds several candidate queries, each in a container (a
fence with any tag, an XML-like tag in any case, inline code, a labelled line with prose after
it, a line of its own, a JSON key, a tool call) and introduced by its role (the final answer, a
plain query, an example, an alternative, a draft, echoed DDL), with prose in several languages,
reasoning blocks holding drafts, line endings and trailing punctuation. It returns the reply and
what the documented rule must read from it, worked out from the roles alone: the last query
marked final, else the last plain one, else the last demoted one, and whether the choice is
ambiguous (two different queries marked final, or only examples, alternatives and drafts).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

QUERIES = [
    "SELECT name FROM singer WHERE age > 30",
    "SELECT count(*) FROM singer",
    "SELECT name, country, age FROM singer ORDER BY age DESC",
    "SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'",
    "SELECT song_name FROM singer WHERE age > (SELECT avg(age) FROM singer)",
    "SELECT DISTINCT country FROM singer WHERE age > 20",
    "SELECT country, count(*) FROM singer GROUP BY country",
    "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = T2.singer_id",
    "SELECT stadium_id, capacity FROM stadium ORDER BY capacity DESC LIMIT 1",
    "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
    "select concert_name, theme from concert where year = 2014",
    "SELECT count(*) FROM concert WHERE year = 2014 OR year = 2015",
    "SELECT location FROM stadium WHERE capacity BETWEEN 5000 AND 10000",
    "SELECT name FROM singer WHERE name LIKE '%Hey%'",
    "SELECT title FROM album WHERE note = 'a;b'",
    "SELECT name FROM city WHERE district = '北京；东城'",
    "SELECT max(capacity), average FROM stadium",
    "SELECT T1.name, count(*) FROM stadium AS T1 JOIN concert AS T2 ON T1.stadium_id = "
    "T2.stadium_id GROUP BY T1.stadium_id",
    "SELECT name FROM pets WHERE weight < 10 UNION SELECT name FROM owners WHERE age < 20",
    "WITH old AS (SELECT * FROM singer WHERE age > 40) SELECT name FROM old",
    "SELECT sum(amount) FROM payments WHERE paid_on >= '2020-01-01'",
    "SELECT id FROM orders GROUP BY id HAVING count(*) > 2",
    "SELECT first_name, last_name FROM students\nWHERE gpa > 3.5\nORDER BY last_name",
    'SELECT "Team Name" FROM teams WHERE wins > 10',
]
DDL = [
    "CREATE TABLE singer (singer_id INT, name TEXT, age INT)",
    "INSERT INTO singer VALUES (1, 'Joe', 31)",
    "CREATE TABLE concert (concert_id INT, year TEXT)",
]

PROSE = [
    "Let me look at the schema first.",
    "Veamos primero el esquema.",
    "我们先看看表结构。",
    "Regardons d'abord le schéma.",
    "スキーマを確認します。",
    "Zuerst schauen wir uns das Schema an.",
    "I joined the tables on their keys.",
]
CLOSING = ["Hope this helps!", "希望有帮助。", "¡Espero que ayude!", "", "Let me know."]

INTROS = {
    "final": ["Final answer:", "The final query is:", "**Final SQL:**", "最终答案：",
              "Respuesta final:", "Réponse finale :", "Antwort:", "The corrected query:"],
    "plain": ["Here is the query:", "SQL", "Query:", "Sub question 2: the rest\nSQL",
              "查询如下：", "La consulta:", "Voici la requête :", "Die Abfrage:"],
    "example": ["For example:", "Here is an example:", "Por ejemplo:", "例如：",
                "Zum Beispiel:", "e.g."],
    "alternative": ["Alternatively:", "An equivalent query:", "或者：", "Alternativamente:",
                    "Another way:"],
    "draft": ["My first attempt (wrong):", "Draft:", "This one is incorrect:", "草稿：",
              "Borrador:"],
    "ddl": ["The table looks like this:", "Schema:", "表结构：", "La tabla:"],
}  # fmt: skip
DEMOTING_KEYS = {"example": "example", "alternative": "alternative_sql", "draft": "draft"}
FINAL_KEYS = ["answer", "final", "sql", "final_sql", "SQL", "Query", "finalAnswer"]
FENCE_TAGS = ["sql", "SQL", "sqlite", "", "postgresql", "mysql"]
XML_TAGS = ["sql", "SQL", "query", "Query", "code"]
ANSWER_TAGS = ["answer", "Answer", "ANSWER", "final_answer", "final"]
LABEL_TAILS = [", which lists them.", " -- this lists them", ". This is it.", "", " which works."]


@dataclass(frozen=True)
class SqlCase:
    reply: str
    expected: str
    ambiguous: bool


def _distinct_queries(rng: random.Random, n: int) -> list[str]:
    """n queries, none a part of another (that would be a rule of its own)."""
    chosen: list[str] = []
    pool = QUERIES[:]
    rng.shuffle(pool)
    for query in pool:
        flat = _flat(query)
        if any(flat in _flat(q) or _flat(q) in flat for q in chosen):
            continue
        chosen.append(query)
        if len(chosen) == n:
            break
    return chosen


def _flat(sql: str) -> str:
    return " ".join(sql.lower().split())


def _container(rng: random.Random, role: str, sql: str, explicit_final: bool) -> str:
    """The candidate in a container; for the final role, sometimes the container is the mark."""
    if explicit_final:
        kind = rng.choice(["answer_tag", "json", "tool_call"])
        if kind == "answer_tag":
            tag = rng.choice(ANSWER_TAGS)
            inner = rng.choice([sql, f"\n```sql\n{sql}\n```\n", f"\n{sql};\n"])
            return f"<{tag}>{inner}</{tag}>"
        if kind == "json":
            body = json.dumps({"reasoning": "joined the tables", rng.choice(FINAL_KEYS): sql})
            return rng.choice([body, f"```json\n{body}\n```"])
        call = {"name": "execute_sql", "arguments": {"query": sql}}
        if rng.random() < 0.5:
            call = {"name": "execute_sql", "arguments": json.dumps({"query": sql})}
        body = json.dumps(call)
        return rng.choice([body, f"<tool_call>\n{body}\n</tool_call>"])
    end = rng.choice(["", ";", "；"])
    kind = rng.choice(["fence", "fence", "xml", "inline", "label", "line", "json"])
    if kind == "json" and role not in ("plain", *DEMOTING_KEYS):
        kind = "fence"
    if kind == "fence":
        return f"```{rng.choice(FENCE_TAGS)}\n{sql}{end}\n```"
    if kind == "xml":
        tag = rng.choice(XML_TAGS)
        return f"<{tag}>{sql}{end}</{tag}>"
    if kind == "inline" and "\n" not in sql:
        return f"`{sql}`{rng.choice([' works here.', '.', ' is enough.'])}"
    if kind == "json":
        key = DEMOTING_KEYS.get(role, "result")
        return json.dumps({key: sql})
    if kind == "label" and "\n" not in sql:
        return f"{sql}{rng.choice(LABEL_TAILS)}"
    return f"\n{sql}{end}\n"


def sql_reply(rng: random.Random) -> SqlCase:
    mode = rng.choice(["one_final", "one_final", "no_marker", "two_finals"])
    n = rng.randint(1, 4)
    roles = [rng.choice(["plain", "example", "alternative", "draft", "ddl"]) for _ in range(n)]
    if mode == "one_final":
        roles[rng.randrange(n)] = "final"
    elif mode == "two_finals":
        roles = [*roles, "final"]
        roles[rng.randrange(len(roles) - 1)] = "final"
    queries = _distinct_queries(rng, len(roles))
    ddl = iter(rng.sample(DDL, len(DDL)))
    pieces: list[str] = []
    written: list[tuple[str, str]] = []  # (role, sql)
    for index, role in enumerate(roles):
        sql = next(ddl, DDL[0]) if role == "ddl" else queries[index]
        written.append((role, sql))
        if rng.random() < 0.5:
            pieces.append(rng.choice(PROSE))
        explicit = role == "final" and rng.random() < 0.5
        intro = "" if explicit else rng.choice(INTROS[role])
        if index == 0 and role == "plain" and rng.random() < 0.3:
            intro = ""  # a reply that starts with its query
        pieces.append(f"{intro} {_container(rng, role, sql, explicit)}".strip())
    closing = rng.choice(CLOSING)
    if closing:
        pieces.append(closing)
    answer = rng.choice(["\n", "\n\n"]).join(pieces)
    reply = _with_reasoning(rng, answer)
    if rng.random() < 0.3:
        reply = reply.replace("\n", "\r\n")
    return SqlCase(reply, *_expected(written))


def _expected(written: list[tuple[str, str]]) -> tuple[str, bool]:
    finals = [sql for role, sql in written if role == "final"]
    plain = [sql for role, sql in written if role == "plain"]
    if finals:
        return finals[-1], len(set(finals)) > 1
    if plain:
        return plain[-1], False
    role, sql = written[-1]
    return sql, role != "ddl"


def _with_reasoning(rng: random.Random, answer: str) -> str:
    """A reasoning block before the answer, holding a draft query that must never be read."""
    draft = "SELECT * FROM reasoning_draft WHERE x = 1"
    kind = rng.choice(["none", "none", "think", "channels", "think_open"])
    if kind == "think":
        return f"<think>\nMaybe:\n```sql\n{draft}\n```\nNo.\n</think>\n{answer}"
    if kind == "think_open":  # the template put <think> in the prompt
        return f"First idea: {draft}. Not right.\n</think>\n\n{answer}"
    if kind == "channels":
        return (
            f"<|channel|>analysis<|message|>Try {draft}; no.<|end|>"
            f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>"
        )
    return answer
