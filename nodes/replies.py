"""Reading the agents' replies, whatever layout the model answers in.

One reader for SQL (`read_sql`), shared by every agent that writes a query, and one for JSON
objects (`extract_json_object`), shared by every agent that answers in fields.

SQL is found in, by preference:
1. fenced blocks with any language tag or none, closed or cut off before their closing fence,
   and JSON objects (fenced or bare) with a `sql` or `query` key, in any case;
2. otherwise, the reply itself when it is only SQL, or SQL inside prose ("The query is:
   SELECT ...;"), ending where the statement ends.

Among the candidates of the first kind found, the last in the reply is the answer (MAC-SQL's
rule), and it counts only when sqlglot reads it as exactly one statement in the database's
dialect (`macsql.database.guard`). Prose is never executed: text counts as SQL only if it parses,
and in prose only a query with a FROM clause and no bare two-word select list ("Select the
names") is taken. A reasoning model's thinking (`<think>` blocks) is never read as the answer.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from macsql.database.guard_verdicts import GuardKind, GuardVerdict
from macsql.llm.reasoning import split_reasoning

if TYPE_CHECKING:
    from sqlglot import exp
    from sqlglot.tokens import Token

# sqlglot (and the guard, which parses with it) are imported when the first reply is read:
# the graph imports this module long before, on the way to the first model request.

# A fence: ``` and its first line (a tag, or code on one line), then the body up to the closing
# ``` or the end of the reply (a reply cut off by the token limit leaves its last fence open).
_FENCE = re.compile(r"```([^\n`]*)(?:\n|(?=```))?(.*?)(```|\Z)", re.S)
_STATEMENT_WORDS = frozenset({"select", "with", "values", "table", "from"})
# Fences in these languages hold code or data, never the query itself.
_NOT_SQL_TAGS = frozenset(
    {"python", "py", "python3", "javascript", "js", "typescript", "ts", "bash", "sh", "shell",
     "console", "yaml", "yml", "xml", "html", "csv", "markdown", "md"}
)  # fmt: skip
# A block in one of these is SQL by the model's own word: when it does not parse, it is broken SQL.
_SQL_TAGS = frozenset(
    {"sql", "sqlite", "sqlite3", "postgresql", "postgres", "psql", "pgsql", "plpgsql", "mysql",
     "mariadb", "tsql", "mssql", "plsql", "duckdb", "bigquery", "snowflake", "spark", "hive"}
)  # fmt: skip
_KNOWN_TAGS = _NOT_SQL_TAGS | _SQL_TAGS | {"json", "text", "plaintext", "txt"}
_SQL_KEYS = ("sql", "query", "sqlquery", "finalsql", "finalquery")
# Statements that, when the guard can name them, did parse as one statement (and get its
# clear refusal at execution, e.g. a DROP); the other kinds mean the text is not one statement.
_UNREADABLE = frozenset(
    {GuardKind.EMPTY, GuardKind.SYNTAX, GuardKind.UNSUPPORTED, GuardKind.TOO_LONG}
)
_PROSE_START = re.compile(r"\b(SELECT|WITH)\b", re.I)
_PROSE_END = re.compile(r";|\n|\.(?=\s|$)|```")
_MAX_PROSE_CUTS = 12


@dataclass(frozen=True)
class SqlReading:
    """What a reply held: its final query, or what was found instead."""

    sql: str | None
    found: str
    """For a reply without SQL, what it held instead (for the Refiner and the trace)."""
    incomplete: bool = False
    """The last candidate was not a complete statement (often a reply cut off mid-query)."""
    open_ended: bool = False
    """Nothing closes the query: it runs to the end of the reply (bare SQL, or a fence never
    closed). In a reply cut off by the token limit, such a query may be cut short and still
    parse ("... FROM sing"), so it is not trusted there."""


def read_sql(reply: str, dialect: str = "sqlite") -> SqlReading:
    """The final query of a reply in any layout; see the module's docstring."""
    answer, _thinking = split_reasoning(reply or "")
    if not answer.strip():
        return SqlReading(None, "an empty reply" + (" (only reasoning)" if _thinking else ""))
    marked = list(_marked_candidates(answer, dialect))
    if marked:
        sql, why = marked[-1]
        if sql is not None:
            return SqlReading(sql, "", open_ended=_ends_reply(answer, sql))
        return SqlReading(None, why, incomplete=True)
    unmarked = _unmarked_sql(answer, dialect)
    if unmarked is not None:
        return SqlReading(unmarked, "", open_ended=_ends_reply(answer, unmarked))
    first = answer.split(None, 1)[0]
    # Bare SQL that does not parse is said to be broken SQL; a sentence ("Select the ...") is not.
    if not first.istitle() and _looks_like_sql(answer, dialect):
        return SqlReading(None, _unreadable(answer, dialect), incomplete=True)
    return SqlReading(None, "only prose, no SQL query: " + _excerpt(answer))


def _ends_reply(answer: str, sql: str) -> bool:
    at = answer.rfind(sql)
    return at >= 0 and not answer[at + len(sql) :].strip(" \t\r\n;")


def extract_sql(reply: str, dialect: str = "sqlite") -> str | None:
    """The final query of a reply, or None (prose never becomes a prediction)."""
    return read_sql(reply, dialect).sql


# --------------------------------------------------------------------------- SQL candidates


def _marked_candidates(text: str, dialect: str) -> Iterable[tuple[str | None, str]]:
    """(SQL or None, why not) for each fenced block and JSON `sql` value, in reply order."""
    spans: list[tuple[int, str | None, str]] = []
    # A JSON object with a `sql` field is read whole, even when a fence in its value (or the
    # fence around it) confuses the fence reader; fences that overlap it are not read again.
    objects = [
        (a, b, value)
        for a, b in _object_spans(text)
        if (value := _sql_value(_lenient_object(text[a:b]))) is not None
    ]
    for a, _b, value in objects:
        spans.append((a, *_sql_in_value(value, dialect)))
    fences = [f for f in _fences(text) if not any(f.start < b and a < f.end for a, b, _ in objects)]
    for fence in fences:
        tag, body, close = fence.tag, fence.body, fence.closed
        value = _sql_value(_lenient_object(body.strip()))
        if value is not None:
            spans.append((fence.start, *_sql_in_value(value, dialect)))
            continue
        if tag in _NOT_SQL_TAGS or tag == "json":
            continue
        statement = _last_statement(body, dialect)
        if statement is not None:
            spans.append((fence.start, statement, ""))
        elif tag in _SQL_TAGS or _looks_like_sql(body, dialect):
            cut = " (the block was never closed: the reply was cut off?)" if not close else ""
            spans.append((fence.start, None, _unreadable(body, dialect) + cut))
        else:  # prose in a fence ("```\nThe query is: SELECT ...```")
            sql = _unmarked_sql(body, dialect)
            if sql is not None:
                spans.append((fence.start, sql, ""))
    spans.sort(key=lambda s: s[0])
    return [(sql, why) for _, sql, why in spans]


@dataclass(frozen=True)
class _Fence:
    start: int
    end: int
    tag: str
    body: str
    closed: bool


def _fences(text: str) -> list[_Fence]:
    """Every fenced block; code on the fence's own line ("```SELECT 1```") is its body."""
    out = []
    for match in _FENCE.finditer(text):
        head, body, close = match.group(1).strip(), match.group(2), match.group(3)
        word, _, rest = head.partition(" ")
        if word.lower() in _STATEMENT_WORDS or (rest and word.lower() not in _KNOWN_TAGS):
            tag, body = "", f"{head}\n{body}"
        else:
            tag, body = word.lower(), f"{rest}\n{body}" if rest else body
        out.append(_Fence(match.start(), match.end(), tag, body, bool(close)))
    return out


def _sql_in_value(value: str, dialect: str) -> tuple[str | None, str]:
    """The query in a JSON `sql` field, which may itself hold a fence or prose."""
    reading = read_sql(value, dialect)
    if reading.sql is not None:
        return reading.sql, ""
    return None, f"a JSON `sql` field that is not one query ({reading.found})"


def _sql_value(found: dict[str, Any] | None) -> str | None:
    if found is None:
        return None
    value = json_field(found, *_SQL_KEYS)
    return value if isinstance(value, str) else None


def _check(sql: str, dialect: str) -> GuardVerdict:
    from macsql.database.guard import check_statement

    return check_statement(sql, dialect)


def _statements(text: str, dialect: str) -> list[str] | None:
    """The text's statements split at its semicolons (None when it cannot be tokenized).

    A text with no comment and no semicolon but a final one is at most one statement, and its
    tokens would span it from its first to its last character that is not a blank: that span
    is taken without tokenizing (a quarter of a reply's reading). Should the text not tokenize
    after all, its one piece does not parse either, and every caller rejects it as it would
    have rejected None."""
    body = text.strip()  # what sqlglot's tokenizer skips between tokens: str.isspace()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    if not any(mark in body for mark in _SEPARATOR_OR_COMMENT):
        return [body] if body else []
    return _tokenized_statements(text, dialect)


# What starts a separator or a comment in some dialect (MySQL's #, Snowflake's //).
_SEPARATOR_OR_COMMENT = (";", "--", "/*", "#", "//")


def _tokenized_statements(text: str, dialect: str) -> list[str] | None:
    from sqlglot.tokens import TokenType

    try:
        tokens = _dialect(dialect).tokenize(text)
    except Exception:  # SqlglotError, or sqlglot's tokenizer failing on unexpected input
        return None
    # Each statement runs from its first token to its last: comments before or after it, and
    # the semicolons, are left out (a line comment would swallow the rest of a flattened line).
    pieces: list[str] = []
    current: list[Token] = []
    for token in [*tokens, None]:
        if token is None or token.token_type == TokenType.SEMICOLON:
            if current:
                pieces.append(text[current[0].start : current[-1].end + 1])
            current = []
        else:
            current.append(token)
    return pieces


def _is_statement(sql: str, dialect: str) -> bool:
    verdict = _check(sql, dialect)
    return verdict.kind not in _UNREADABLE and verdict.kind != GuardKind.MULTIPLE_STATEMENTS


def _last_statement(body: str, dialect: str) -> str | None:
    """The last statement of a block's SQL, when every statement in it parses."""
    pieces = _statements(body, dialect)
    if not pieces or not all(_is_statement(p, dialect) for p in pieces):
        return None
    return pieces[-1]


def _looks_like_sql(body: str, dialect: str) -> bool:
    """Whether a block's first word starts a statement (so a parse failure is broken SQL)."""
    words = re.sub(r"--[^\n]*|/\*.*?\*/", " ", body, flags=re.S).split()
    first = words[0].lstrip("(").upper() if words else ""
    return first in {"SELECT", "WITH", "VALUES", "TABLE", "FROM"} or (
        bool(first) and _check(first, dialect).kind not in _UNREADABLE
    )


def _unreadable(body: str, dialect: str) -> str:
    reason = _check(body.strip(), dialect).reason or "it does not parse"
    return f"SQL that is not one complete {dialect} query ({reason}): {_excerpt(body, 120)}"


def _unmarked_sql(text: str, dialect: str) -> str | None:
    """The last query in unfenced text: the whole text if it is SQL, else spans in prose."""
    whole = _statements(text, dialect)
    if whole and len(whole) == 1 and _plausible_query(whole[0], dialect):
        return whole[0]
    found: str | None = None
    position = 0
    while (match := _PROSE_START.search(text, position)) is not None:
        span = _query_from(text, match.start(), dialect)
        if span is None:
            position = match.end()
        else:
            found, position = span
    return found


def _query_from(text: str, start: int, dialect: str) -> tuple[str, int] | None:
    """The longest query starting at `start` that ends at a statement or sentence end."""
    stop = len(text)
    for end_mark in (";", "\n\n", "```"):
        at = text.find(end_mark, start)
        if at != -1:
            stop = min(stop, at)
    ends = sorted(
        {m.start() for m in _PROSE_END.finditer(text, start, stop)} | {stop}, reverse=True
    )
    for end in ends[:_MAX_PROSE_CUTS]:
        candidate = text[start:end].strip()
        if _plausible_query(candidate, dialect):
            return candidate, end
    return None


def _plausible_query(sql: str, dialect: str) -> bool:
    """Unfenced text is a query when it parses as one, reads from somewhere, and its select
    list has no two bare words in a row (prose such as "Select the names from ...")."""
    if not sql or _check(sql, dialect).kind in _UNREADABLE | {GuardKind.MULTIPLE_STATEMENTS}:
        return False
    from sqlglot import exp

    try:
        tree = _dialect(dialect).parse_one_statement(sql)
    except Exception:
        return False
    if not isinstance(tree, exp.Query) or tree.find(exp.From) is None:
        return False
    return not _bare_words_in_select(_dialect(dialect).tokenize(sql))


def _bare_words_in_select(tokens: list[Token]) -> bool:
    from sqlglot.tokens import TokenType

    depth, in_select, previous = 0, False, None
    for token in tokens:
        kind = token.token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if depth == 0 and kind == TokenType.SELECT:
            in_select = True
        elif depth == 0 and kind == TokenType.FROM:
            in_select = False
        elif in_select and kind == TokenType.VAR and previous == TokenType.VAR:
            return True
        previous = kind
    return False


@lru_cache(maxsize=16)
def _dialect(name: str) -> _ParsingDialect:
    return _ParsingDialect(name)


class _ParsingDialect:
    def __init__(self, name: str) -> None:
        from sqlglot.dialects.dialect import Dialect

        try:
            self._dialect = Dialect.get_or_raise(name or "")
        except ValueError:
            self._dialect = Dialect.get_or_raise("")

    def tokenize(self, sql: str) -> list[Token]:
        return self._dialect.tokenize(sql)

    def parse_one_statement(self, sql: str) -> exp.Expression | None:
        from sqlglot import exp

        trees = self._dialect.parse(sql)
        tree = trees[0] if len(trees) == 1 else None
        return tree if isinstance(tree, exp.Expression) else None


def _excerpt(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


# --------------------------------------------------------------------------- JSON


def extract_json_object(reply: str, keys: Iterable[str] = ()) -> dict[str, Any] | None:
    """The last JSON object of a reply (one with any of `keys`, when given), or None.

    Read from fenced or bare JSON, Python-literal dicts (single quotes, True/None), and JSON
    with comments or trailing commas. A reasoning model's thinking is never read.
    """
    answer, _thinking = split_reasoning(reply or "")
    wanted = {_norm(k) for k in keys}
    texts = [(a, answer[a:b]) for a, b in _object_spans(answer)]
    texts += [(f.start, f.body.strip()) for f in _fences(answer)]
    found: list[tuple[int, dict[str, Any]]] = []
    for position, text in texts:
        value = _lenient_object(text)
        if value is not None and (not wanted or any(_norm(str(k)) in wanted for k in value)):
            found.append((position, value))
    if not found:
        return None
    return max(found, key=lambda item: item[0])[1]


def json_field(found: Mapping[str, Any], *names: str) -> Any:
    """The value of the first of `names` in `found`, ignoring case, spaces and underscores."""
    by_norm = {_norm(str(k)): v for k, v in found.items()}
    for name in names:
        if _norm(name) in by_norm:
            return by_norm[_norm(name)]
    return None


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _object_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level {...} in the text, braces inside strings ignored."""
    spans: list[tuple[int, int]] = []
    depth, start, quote, escaped = 0, 0, "", False
    for i, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif depth and char in "\"'":
            quote = char
        elif char == "{":
            if depth == 0:
                start = i
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


_LITERALS_TO_PYTHON = {"true": "True", "false": "False", "null": "None"}
_STRING = re.compile(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", re.S)
_COMMENT = re.compile(r"//[^\n]*|#[^\n]*|/\*.*?\*/", re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_WORD = re.compile(r"\b(true|false|null)\b")


def _lenient_object(text: str) -> dict[str, Any] | None:
    """A dict from JSON, JSON with comments and trailing commas, or a Python literal."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    for attempt in (_strict_json, _cleaned_json, _python_literal):
        try:
            value = attempt(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def _strict_json(text: str) -> Any:
    return json.loads(text)


def _cleaned_json(text: str) -> Any:
    return json.loads(_clean(text, {}))


def _python_literal(text: str) -> Any:
    return ast.literal_eval(_clean(text, _LITERALS_TO_PYTHON))


def _clean(text: str, words: dict[str, str]) -> str:
    """Comments (// # /* */) and trailing commas removed, bare `words` replaced; strings kept."""
    out: list[str] = []
    position = 0
    for string in [*_STRING.finditer(text), None]:
        code = text[position : string.start() if string else len(text)]
        code = _TRAILING_COMMA.sub(r"\1", _COMMENT.sub("", code))
        if words:
            code = _WORD.sub(lambda m: words[m.group(1)], code)
        out.append(code)
        if string is not None:
            out.append(string.group(0))
            position = string.end()
    return "".join(out)
