"""A seeded generator of model replies composed from pieces (issue 24).

`sql_reply(rng)` writes a reply that holds several candidate queries, each in a container (a fence
with any tag, an XML-like tag in any case, inline code, a labelled line with prose after it, a line
of its own, a JSON key, a tool call, markup that escapes its text (`&gt;`), a quoted string
assigned in code or config, a string in a code block) and introduced by its role (the final answer,
a plain query, an example, an alternative, a draft, echoed DDL), with prose in several languages,
reasoning blocks holding drafts, line endings and trailing punctuation. It returns the reply and
what the documented rule must read from it, worked out from the roles alone: the last query marked
final, else the last plain one, else the last demoted one, and whether the choice is ambiguous (two
different queries marked final, or only examples, alternatives and drafts).
"""

from __future__ import annotations

import html
import json
import random
from collections.abc import Callable
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
            inner = rng.choice([sql, f"\n```sql\n{sql}\n```\n", f"\n{sql};\n", _escape(rng, sql)])
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
    kind = rng.choice(
        ["fence", "fence", "xml", "inline", "label", "line", "json", "escaped", "quoted"]
    )
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
    if kind == "quoted" and role in ("final", *DEMOTING_KEYS) and rng.random() < 0.5:
        kind = "code"  # a string in code: it competes by the words that introduce it
    if kind == "code":
        call = rng.choice(
            [f'cursor.execute("""\n{sql}\n""")', f"const q = `{sql}`;", f"sqlite3 db '{sql}'"]
        )
        if "\n" not in sql and "'" not in sql:
            return f"```{rng.choice(['python', 'js', 'bash'])}\n{call}\n```"
        return f'```python\nquery = """{sql}"""\n```'
    if kind == "escaped":
        tag = rng.choice(XML_TAGS)
        body = _escape(rng, sql) + end
        return rng.choice([f"<pre><code>{body}</code></pre>", f"<{tag}>{body}</{tag}>"])
    if kind == "quoted" and "\n" not in sql:
        quote = "'" if '"' in sql else rng.choice(["'", '"'])
        if quote == "'" and "'" in sql:
            quote = '"'
        name = rng.choice(["q", "stmt", "sql", "query", "SQL_TEXT"])
        return rng.choice([f"{name} = {quote}{sql}{quote}", f"{name}: {quote}{sql}{quote}"])
    if kind == "label" and "\n" not in sql:
        return f"{sql}{rng.choice(LABEL_TAILS)}"
    return f"\n{sql}{end}\n"


def _escape(rng: random.Random, sql: str) -> str:
    """The query as HTML or XML text escapes it: `<`, `>`, `&`, and the quotes or not."""
    return html.escape(sql, quote=rng.random() < 0.5)


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


# --------------------------------------------------------------------------- the rewriter

QUESTIONS = [
    "What is the minimum age of the singers from France?",
    "How many concerts were held in 2014 or 2015?",
    "Show the name and capacity of the stadium with the most concerts.",
    "List the singer_id and name of every singer older than 30",
    "What is the ratio: wins to losses for each team?",
    "Which “classic” albums sold over 1,000 copies?",
    "北京的歌手有多少位？",
    "¿Cuántos cantantes hay en Francia?",
]
REWRITE_INTROS = [
    "",
    "Sure! Here is the standalone question:\n\n",
    "Voici la question reformulée :\n",
    "Here it is:\n",
    "The rewritten question follows.\n\n",
]


@dataclass(frozen=True)
class RewriteCase:
    reply: str
    question: str | None
    builds: bool


def rewrite_reply(rng: random.Random) -> RewriteCase:
    """A rewriter's reply in one of the forms models use, and what it says."""
    if rng.random() < 0.08:  # a reply with no question to read
        unreadable = rng.choice(
            ["", "I'm sorry, I can't help with that.", "SELECT name FROM singer",
             "<think>Question: What is it?</think>", "   \n  "]
        )  # fmt: skip
        return RewriteCase(unreadable, None, False)
    question = rng.choice(QUESTIONS)
    builds = rng.random() < 0.5
    said = rng.random() < 0.8  # whether the reply says if it builds on the SQL
    yes = rng.choice(["yes", "Yes", "YES", "yes."]) if builds else rng.choice(["no", "No", "NO"])
    shown = rng.choice([question, question, f'"{question}"', f"“{question}”", f"「{question}」"])
    colon = rng.choice([":", ":", "："])
    label = rng.choice(
        ["Question", "**Question:**", "Standalone question", "Rewritten question",
         "**Standalone Question**", "Reformulated question", "### Standalone question"]
    )  # fmt: skip
    builds_line = f"Builds on the previous SQL{colon} {yes}" if said else ""
    form = rng.choice(
        ["label", "label", "label_next_line", "json", "bare", "intro", "tags", "html", "table",
         "separated", "quoted"]
    )  # fmt: skip
    name = rng.choice(["question", "standalone_question", "rewritten_question", "Question"])
    builds_name = rng.choice(["builds_on_previous_sql", "uses_previous_sql", "builds"])
    if form == "tags":
        said_tag = f"<{builds_name}>{yes}</{builds_name}>" if said else ""
        body = rng.choice(["\n", ""]).join(
            x for x in [f"<{name}>{question}</{name}>", said_tag] if x
        )
        reply = rng.choice([body, f"<answer>\n{body}\n</answer>", f"<result>{body}</result>"])
    elif form == "html":
        shown_html = html.escape(question, quote=False)
        pieces = [f"<p><b>{label.strip('#* :')}:</b> {shown_html}</p>"]
        if said:
            pieces.append(f"<p>Builds on the previous SQL: <i>{yes}</i></p>")
        reply = rng.choice(["", "\n"]).join(pieces)
    elif form == "table":
        rows = [f"| {name} | {question} |"] + ([f"| {builds_name} | {yes} |"] if said else [])
        reply = "\n".join(["| field | value |", "| --- | --- |", *rows])
    elif form == "separated":
        arrow = rng.choice([" → ", " -> ", " - ", " — ", " = ", " => "])
        line = f"{label.strip('#* :')}{arrow}{shown}"
        reply = "\n".join(x for x in [line, builds_line] if x)
    elif form == "quoted":
        intro = rng.choice(["The standalone version is", "Rewritten, it reads", "So the user asks"])
        reply = "\n".join(x for x in [f'{intro} "{question}"', builds_line] if x)
    elif form == "json":
        fields: dict[str, object] = {rng.choice(["question", "standalone_question",
                                                 "rewritten_question"]): question}  # fmt: skip
        if said:
            fields["builds_on_previous_sql"] = rng.choice([builds, yes])
        body = json.dumps(fields, ensure_ascii=False)
        reply = rng.choice([body, f"```json\n{body}\n```", f"Result: {body}"])
    elif form == "bare":
        reply = "\n".join(x for x in [shown, builds_line] if x)
    elif form == "intro":
        reply = rng.choice(REWRITE_INTROS) + "\n".join(x for x in [shown, builds_line] if x)
    else:
        heading = label.endswith(("**", "question")) and label.startswith("###")
        if label.endswith(":**"):
            line = f"{label} {shown}"
        elif heading or form == "label_next_line":
            line = f"{label}{'' if heading else colon}\n{shown}"
        else:
            line = f"{label}{colon} {shown}"
        reply = "\n".join(x for x in [line, builds_line] if x)
        if builds_line and rng.random() < 0.3:
            reply = "\n".join([builds_line, line])
    if rng.random() < 0.2:
        reply = f"<think>The user means: Question: What about it?</think>\n{reply}"
    if rng.random() < 0.3:
        reply = reply.replace("\n", "\r\n")
    if rng.random() < 0.2:
        reply += rng.choice(["\n", "  ", "\n\n"])
    return RewriteCase(reply, question, builds and said)


# --------------------------------------------------------------------------- the Selector

TABLE_NAMES = ["singer", "Concert", "STADIUM", "singer_in_concert", "Orders", "pets", "teams"]
COLUMN_NAMES = ["name", "age", "country", "year", "capacity", "title", "amount", "theme"]


@dataclass(frozen=True)
class SelectionCase:
    reply: str
    tables: list[tuple[str, list[str], bool]]
    """(table, columns, primary key?) of the schema."""
    selection: dict[str, object]
    """The canonical MAC-SQL map the reply says."""
    unknown: bool
    """The reply names a table the schema lacks (to be noted)."""


def selection_reply(rng: random.Random) -> SelectionCase:
    """A Selector reply in one of the shapes models use, for a random schema."""
    names = rng.sample(TABLE_NAMES, rng.randint(3, 6))
    tables = [
        (t, [f"{t.lower()}_id", *rng.sample(COLUMN_NAMES, rng.randint(1, 5))], True) for t in names
    ]
    selection: dict[str, object] = {}
    for table, columns, _ in tables:
        choice = rng.choice(["keep_all", "drop_all", "columns"])
        selection[table] = (
            rng.sample(columns[1:], rng.randint(1, len(columns) - 1))
            if choice == "columns"
            else choice
        )
    if all(v == "drop_all" for v in selection.values()):
        selection[names[0]] = "keep_all"
    whole = all(isinstance(v, str) for v in selection.values())
    shape = rng.choice(
        ["map", "map_words", "wrapper", "rows", "dotted"] + (["list", "keep_drop"] if whole else [])
    )
    written = {_case(rng, t): v for t, v in selection.items()}
    unknown = shape in ("map", "map_words", "wrapper") and rng.random() < 0.15
    if unknown:  # a table the schema lacks: the rest is applied, and it is noted
        written["no_such_table"] = "keep_all"
    value: object
    if shape == "map":
        value = written
    elif shape == "map_words":
        value = {t: _word_for(rng, v) for t, v in written.items()}
    elif shape == "wrapper":
        value = {rng.choice(["tables", "selection", "schema"]): written}
        if rng.random() < 0.3:
            value = {"result": value, "reasoning": "only what the question needs"}
    elif shape == "rows":
        value = {"tables": [_row(t, v) for t, v in written.items()]}
    elif shape == "dotted":
        columns = {t: c for t, c, _ in tables}
        dotted = [
            f"{t}.{c}"
            for t, v in written.items()
            if v != "drop_all"
            for c in (v if isinstance(v, list) else columns[_schema_name(t, names)])
        ]
        value = rng.choice([dotted, {"columns": dotted}])
        selection = {t: v if v != "keep_all" else columns[t] for t, v in selection.items()}
    elif shape == "list":
        kept = [t for t, v in written.items() if v == "keep_all"]
        value = rng.choice([kept, {"tables": kept}, {"keep": kept}])
    else:
        value = {
            "keep": [t for t, v in written.items() if v == "keep_all"],
            "drop": [t for t, v in written.items() if v == "drop_all"],
        }
    text = json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict) and rng.random() < 0.2:
        text = repr(value)  # a Python literal
    reply = rng.choice(
        [text, f"```json\n{text}\n```", f"My choice: {text} Done.", f"```\n{text}\n```"]
    )
    if shape in ("map", "map_words", "list") and not unknown and rng.random() < 0.4:
        text = _as_text(rng, value)  # no JSON: YAML, bullets, tags, a table, names on lines
        reply = rng.choice([text, f"My choice:\n\n{text}\n\nDone.", f"```\n{text}\n```"])
    if rng.random() < 0.2:
        reply = f'<think>{{"{names[0]}": "drop_all"}}? no.</think>\n{reply}'
    return SelectionCase(reply, tables, selection, unknown)


def _as_text(rng: random.Random, value: object) -> str:
    """A table map or a list of tables written as text, the ways models write one."""
    if isinstance(value, dict) and set(value) <= {"tables", "keep"}:
        value = next(iter(value.values()))
    if isinstance(value, list):
        bullet = rng.choice(["- ", "* ", "", "1. "])
        return "Tables to keep:\n" + "\n".join(f"{bullet}{t}" for t in value)
    assert isinstance(value, dict)

    def shown(v: object) -> str:
        if isinstance(v, list):
            return rng.choice([f"[{', '.join(v)}]", ", ".join(v)])
        return str(v).lower() if isinstance(v, bool) else str(v)

    form = rng.choice(["yaml", "bullets", "tags", "table"])
    if form == "yaml":
        return "\n".join(f"{t}: {shown(v)}" for t, v in value.items())
    if form == "bullets":
        return "\n".join(f"- **{t}**: {shown(v)}" for t, v in value.items())
    if form == "tags":
        return rng.choice(["", "\n"]).join(f"<{t}>{shown(v)}</{t}>" for t, v in value.items())
    rows = [f"| {t} | {shown(v)} |" for t, v in value.items()]
    return "\n".join(["| table | decision |", "| --- | --- |", *rows])


def _row(table: str, value: object) -> dict[str, object]:
    if isinstance(value, list):
        return {"table": table, "keep": "columns", "columns": value}
    return {"table": table, "keep": value}


def _case(rng: random.Random, name: str) -> str:
    return rng.choice([name, name.lower(), name.upper(), name.title()])


def _schema_name(written: str, names: list[str]) -> str:
    return next(n for n in names if n.lower() == written.lower())


def _word_for(rng: random.Random, value: object) -> object:
    if value == "keep_all":
        return rng.choice(["keep", "Keep_All", True, "yes", "KEEP"])
    if value == "drop_all":
        return rng.choice(["drop", "DROP_ALL", False, "no", "exclude"])
    return value


def misread_queries(wrap: Callable[[random.Random, str], str], seed: int, cases: int) -> list[str]:
    """The replies, of `cases` drawn with `seed`, each one of QUERIES put in a reply by
    `wrap`, whose query the SQL finder does not read back as written (blanks aside)."""
    from macsql.replies.finder import find_sql

    rng = random.Random(seed)
    failures = []
    for index in range(cases):
        sql = rng.choice(QUERIES)
        reply = wrap(rng, sql)
        read = find_sql(reply, "sqlite").sql
        if " ".join((read or "").split()) != " ".join(sql.split()):
            failures.append(f"#{index}: {reply!r} -> {read!r}")
    return failures
