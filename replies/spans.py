"""What sqlglot makes of a span of a reply: one statement or not, a query or not, and where
prose starts inside it.

The SQL finder (`macsql.replies.finder`) asks this of many spans of a reply (the statements of
its blocks, the stretches of its prose from each SELECT), so each answer is small and cached by
the span's text. sqlglot is imported when the first span is read: the graph imports this module
long before, on the way to the first model request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from macsql.database.guard_verdicts import GuardKind
from macsql.replies.markup import sql_text

if TYPE_CHECKING:
    from sqlglot.tokens import Token


@dataclass(frozen=True)
class SpanParse:
    """What sqlglot made of a text (kept small: many texts are cached)."""

    statement: bool = False
    """Exactly one statement."""
    query: bool = False
    """...and it is a query (SELECT, WITH, set operations, VALUES)."""
    plausible: bool = False
    """...and it reads FROM somewhere with no two bare words in its select list."""
    clean: bool = False
    """...and no prose runs into it (`_prose_start`)."""
    untokenized: bool = False
    """sqlglot could not even split it into tokens (prose with an apostrophe, often)."""
    span: tuple[int, int] = (0, 0)
    """From the statement's first token to its last: the comments around it left out."""
    first_end: int | None = None
    """Where the first of several statements ends."""
    error_at: int | None = None
    """Where sqlglot met a token it could not read, when text follows it, or where a word of
    prose starts that sqlglot read as a name ("... FROM singer which lists them")."""


@lru_cache(maxsize=8192)
def parse_span(sql: str, dialect: str) -> SpanParse:
    from sqlglot import exp
    from sqlglot.errors import ParseError

    parser = _dialect(dialect)
    try:
        tokens = parser.tokenize(sql)
    except Exception:  # sqlglot's tokenizer failing on prose (an apostrophe opens a string)
        return SpanParse(untokenized=True)
    statements = _split(tokens)
    if not statements:
        return SpanParse()
    if len(statements) > 1:
        return SpanParse(first_end=statements[0][-1].end + 1)
    prose = _prose_start(statements[0])
    span = (statements[0][0].start, statements[0][-1].end + 1)
    # What a statement is, its first token says: comments before it ("-- top singers") are not.
    if not _QUERY_START.match(sql, span[0]):
        # DDL and other statements are not parsed (sqlglot would parse many as a generic
        # command, with a warning): one statement that is not a query, up to any prose.
        named = _names_a_statement(sql, dialect)
        line_end = _line_end_of(statements[0])
        if line_end is not None and (prose is None or line_end < prose):
            prose = line_end
        return SpanParse(statement=named, clean=prose is None, error_at=prose, span=span)
    try:
        trees = parser.parse_tokens(statements[0], sql)
    except ParseError as exc:
        return SpanParse(error_at=prose if prose is not None else _error_offset(sql, exc))
    except Exception:  # sqlglot's own failure (recursion on absurd nesting, ...)
        return SpanParse()
    roots = [t for t in trees if isinstance(t, exp.Expression)]
    if len(roots) != 1:
        return SpanParse()
    root = roots[0]
    if isinstance(root, exp.Command | exp.Alias | exp.Column | exp.Identifier | exp.Literal):
        return SpanParse()  # not a statement sqlglot understood ("SELECT" alone, a name)
    query = isinstance(root, exp.Query | exp.Values)
    plausible = query and root.find(exp.From) is not None and not _bare_words_in_select(tokens)
    return SpanParse(
        statement=True,
        query=query,
        plausible=plausible,
        clean=prose is None,
        error_at=prose,
        span=span,
    )


def _error_offset(sql: str, exc: Exception) -> int | None:
    """The offset of the token sqlglot stopped at, when text follows it (a word of prose after
    the query); None when it stopped at the end (an incomplete query, not one to cut back)."""
    errors = getattr(exc, "errors", None) or []
    if not errors:
        return None
    first = errors[0]
    line, col, highlight = first.get("line"), first.get("col"), first.get("highlight") or ""
    # "Unexpected token": a word that is not SQL, to cut before even at the end; other errors
    # at the end mean the query itself is incomplete.
    unexpected = str(first.get("description", "")).startswith("Invalid expression")
    if not isinstance(line, int) or not isinstance(col, int):
        return None
    if not first.get("end_context") and not unexpected:
        return None
    lines = sql.split("\n")
    if line < 1 or line > len(lines):
        return None
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + col - len(highlight)
    return offset if 0 < offset < len(sql) else None


# Words of prose that sqlglot would read as names (an alias, a comma join): a query written in a
# sentence ends before the first of them. Function words and the verbs of an explanation, in the
# languages models answer in; one-letter words are left out (aliases such as `a`).
_PROSE_WORDS = frozenset(
    {"the", "this", "that", "these", "those", "which", "who", "whom", "whose", "it", "its",
     "they", "them", "their", "we", "our", "you", "your", "me", "my", "he", "she", "his", "her",
     "are", "was", "were", "be", "been", "being", "will", "would", "can", "could", "should",
     "must", "may", "might", "shall", "here", "there", "so", "because", "since", "also", "just",
     "now", "returns", "gives", "shows", "selects", "finds", "gets", "yields", "produces",
     "retrieves", "displays", "means", "que", "el", "los", "las", "esta", "este", "son",
     "cette", "est", "qui", "sont", "der", "die", "das", "diese", "ist", "sind", "und"}
)  # fmt: skip
_NAME_CHAR = re.compile(r"[^\W_]")
_QUERY_START = re.compile(r"[\s(]*(?:select|with|values|table|from)\b", re.I)


def _prose_start(tokens: list[Token]) -> int | None:
    """Where prose starts inside a span sqlglot may still read: a function word read as a name,
    or a bare word opening a new line right after a complete term (an alias on its own line is
    not how SQL is written; a sentence after the query is)."""
    from sqlglot.tokens import TokenType

    expecting = _expecting()
    previous = None
    for token in tokens:
        kind = token.token_type
        if kind == TokenType.VAR and token.text.lower() in _PROSE_WORDS:
            return token.start
        if kind == TokenType.IDENTIFIER and (
            "\n" in token.text or not _NAME_CHAR.search(token.text)
        ):
            # No quoted name spans lines or is only punctuation; between two inline code spans
            # of an explanation ("1. `SELECT name` picks ...\n2. `FROM singer` ...") or two
            # strings of a JSON list (`"SELECT name", "FROM singer"`), a pair of quotes does.
            return token.start
        if (
            previous is not None
            and token.line > previous.line
            and previous.token_type not in expecting
            and (kind in (TokenType.VAR, TokenType.STAR) or token.text.istitle())
        ):
            # A line that opens with a bare word, markdown (**Note:**) or a capitalised word
            # ("Schema:", "This ...") after a complete term starts a sentence, not a clause.
            return token.start
        previous = token
    return None


def _line_end_of(tokens: list[Token]) -> int | None:
    """Where a statement that is not a query ends in prose: the first line that starts after
    its parentheses have closed."""
    from sqlglot.tokens import TokenType

    depth, previous = 0, None
    for token in tokens:
        if previous is not None and token.line > previous.line and depth == 0:
            return token.start
        depth += (token.token_type == TokenType.L_PAREN) - (token.token_type == TokenType.R_PAREN)
        previous = token
    return None


def _names_a_statement(sql: str, dialect: str) -> bool:
    """Whether the guard knows the text's first word as a statement that is not a query (it
    refuses it by name at execution: DDL, a write, a PRAGMA); "SELEC ..." or prose is not."""
    from macsql.database.guard import check_statement

    return check_statement(sql, dialect).kind in _NAMED_STATEMENTS


_NAMED_STATEMENTS = frozenset(
    {GuardKind.WRITE, GuardKind.DDL, GuardKind.TRANSACTION, GuardKind.SESSION, GuardKind.LOCKING,
     GuardKind.FORBIDDEN_COMMAND}
)  # fmt: skip


@lru_cache(maxsize=1)
def _expecting() -> frozenset[Any]:
    """Tokens after which SQL must go on (a comma, an operator, a keyword such as FROM or AND):
    a word on the next line continues the query. After any other token the query may be
    complete, and a new line that opens like a sentence is prose."""
    from sqlglot.tokens import TokenType

    names = (
        "COMMA L_PAREN DOT EQ NEQ GT GTE LT LTE PLUS DASH STAR SLASH MOD DPIPE PIPE AMP CARET "
        "SELECT FROM WHERE AND OR NOT ON JOIN ALIAS IN IS LIKE ILIKE BETWEEN WHEN THEN ELSE CASE "
        "HAVING DISTINCT UNION INTERSECT EXCEPT ALL WITH USING INNER LEFT RIGHT FULL OUTER CROSS "
        "NATURAL GROUP_BY ORDER_BY LIMIT OFFSET VALUES INTO SET PARTITION_BY OVER SEMI ANTI "
        "EXISTS ANY SOME ESCAPE COLLATE FILTER WINDOW QUALIFY"
    )
    return frozenset(getattr(TokenType, n) for n in names.split() if hasattr(TokenType, n))


def _split(tokens: list[Token]) -> list[list[Token]]:
    from macsql.database.guard import split_statements  # with sqlglot, on the first reply

    return split_statements(tokens)


@lru_cache(maxsize=2048)
def statements(text: str, dialect: str) -> tuple[tuple[str, int], ...] | None:
    """The text's statements split at its semicolons, with their offsets; comments before or
    after each are left out (None when it cannot be tokenized)."""
    try:
        tokens = _dialect(dialect).tokenize(text)
    except Exception:
        return None
    return tuple((text[s[0].start : s[-1].end + 1], s[0].start) for s in _split(tokens))


def _bare_words_in_select(tokens: list[Token]) -> bool:
    from sqlglot.tokens import TokenType

    depth, in_select, previous, before = 0, False, None, None
    for token in tokens:
        kind = token.token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if depth == 0 and kind == TokenType.SELECT:
            in_select = True
        elif depth == 0 and kind == TokenType.FROM:
            in_select = False
        elif (
            in_select
            and kind == TokenType.VAR
            and previous == TokenType.VAR
            and before != TokenType.DOT  # `T2.birthday age`: a column and its alias
        ):
            return True
        previous, before = kind, previous
    return False


def looks_like_sql(body: str) -> bool:
    """Whether a block's first word starts a statement (so a parse failure is broken SQL)."""
    words = re.sub(r"--[^\n]*|/\*.*?\*/", " ", body, flags=re.S).split()
    word = words[0].lstrip("(") if words else ""
    if len(word) > 1 and word.istitle():  # "Select the singers ...": a sentence
        return False
    first = word.upper()
    return first in {"SELECT", "WITH", "VALUES", "TABLE", "FROM", "CREATE", "INSERT", "UPDATE",
                     "DELETE", "DROP", "ALTER"}  # fmt: skip


def unreadable(body: str, dialect: str) -> str:
    from macsql.database.guard import check_statement

    reason = check_statement(sql_text(body.strip()), dialect).reason or "it does not parse"
    return f"SQL that is not one complete {dialect} query ({reason}): {excerpt(body, 120)}"


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

    def parse_tokens(self, tokens: list[Token], sql: str) -> list[Any]:
        return self._dialect.parser().parse(tokens, sql)


def excerpt(text: str | None, limit: int = 200) -> str:
    flat = " ".join((text or "").split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")
