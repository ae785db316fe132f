"""The containers a model's reply puts its answer in: fences, XML-like tags, inline code, JSON.

Each finder returns positions in the reply's text, so a reader can tell what came first and what
encloses what. `structure_text` gives the same text with full-width punctuation made ASCII,
character for character, so that positions found in one are positions in the other.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Punctuation and spaces as typography renders them, as the ASCII a reader looks for: full-width
# punctuation (Chinese and Japanese keyboards), curly quotes (word processors, chat front
# ends), non-breaking and thin spaces.
_TYPOGRAPHIC = "；：，（）！？‘’“”\u00a0\u2009\u202f\u2007"
_FULL_WIDTH = str.maketrans(_TYPOGRAPHIC, ";:,()!?''\"\"    ")
_ANY_FULL_WIDTH = re.compile(f"[{_TYPOGRAPHIC}]")


def structure_text(text: str) -> str:
    """`text` with typographic punctuation and spaces as ASCII, one character for one."""
    return text.translate(_FULL_WIDTH) if _ANY_FULL_WIDTH.search(text) else text


# Markdown around a line (a heading, a quote, a bullet, a number) and emphasis inside it; an
# underscore inside a word (`singer_id`) is kept.
_LINE_MARKDOWN = re.compile(r"^[\s>#*\-+•]*(?:\d+[.)]\s+)?|[*`]+|(?<!\w)__?|__?(?!\w)")


def without_markdown(line: str) -> str:
    """A line of a reply without its markdown (`**Verdict:** pass` -> `Verdict: pass`)."""
    return _LINE_MARKDOWN.sub("", line).strip()


def as_rendered(text: str) -> str:
    """A reply as a reader sees it rendered, one character for one: markdown's quote marks
    (`> ` before every line of a paragraph), bold marks around a span (`**...**`), the numbers
    of a listing numbered line by line from 1, and HTML line breaks are not text, and become
    blanks (a line break for `<br>`)."""
    if ">" in text:
        text = _QUOTE_RUN.sub(lambda m: _QUOTE_MARK.sub(_blank, m.group(0)), text)
        text = _LINE_BREAK_TAG.sub(lambda m: "\n" + " " * (len(m.group(0)) - 1), text)
    if "**" in text:
        text = _BOLD.sub(lambda m: " " * 2 + m.group(2) + " " * 2, text)
    if _NUMBERED_LINE.search(text):
        text = _NUMBERED_LISTING.sub(_unnumbered, text)
    return text


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


# A paragraph whose every line starts with `>` (a markdown quote), and the mark on each line.
_QUOTE_RUN = re.compile(r"(?:^|(?<=\n\n))(?:[ \t]*>[^\n]*(?:\n|$))+")
_QUOTE_MARK = re.compile(r"(?m)^[ \t]*>[ \t]?")
_LINE_BREAK_TAG = re.compile(r"<br\s*/?>", re.IGNORECASE)
# `**` only: `__` is also how a name starts and ends (`__id__`).
_BOLD = re.compile(r"(?<![\w*])(\*\*)(?=\S)([^\n]*?\S)\1(?![\w*])")
# Three or more lines numbered 1, 2, 3 ... at their start ("1  SELECT name", "2 | FROM t").
_NUMBERED_LINE = re.compile(r"(?m)^[ \t]*1[ \t]*[|:.)]?[ \t]+\S")
_NUMBERED_LISTING = re.compile(r"(?m)(?:^[ \t]*\d{1,4}[ \t]*[|:.)]?[ \t]+\S[^\n]*(?:\n|$)){3,}")
_LINE_NUMBER = re.compile(r"(?m)^([ \t]*)(\d{1,4})([ \t]*[|:.)]?[ \t]+)")


def _unnumbered(match: re.Match[str]) -> str:
    """A run of numbered lines without their numbers, when they count 1, 2, 3 ... in order."""
    block = match.group(0)
    numbers = [int(m.group(2)) for m in _LINE_NUMBER.finditer(block)]
    if numbers != list(range(numbers[0], numbers[0] + len(numbers))) or numbers[0] != 1:
        return block
    return _LINE_NUMBER.sub(lambda m: m.group(1) + " " * (len(m.group(2)) + len(m.group(3))), block)


def sql_text(sql: str) -> str:
    """A query as its writer meant it:

    - full-width punctuation outside its quotes as ASCII (`；` ends a statement);
    - a query escaped as markup text (`age &gt; 30` in HTML or XML) unescaped: when a character
      reference stands outside its quotes, where SQL never has one, the whole text was escaped.

    Inside string literals and quoted names, text is data: a query whose only references are
    in its literals (`LIKE '%&lt;p&gt;%'` on stored HTML) stays as written."""
    if _escaped(sql):  # first: an escaped quote (&#39;) opens a literal
        sql = _REFERENCE.sub(_unescape, sql)
    if _ANY_FULL_WIDTH.search(sql):
        sql = _outside_quotes(sql, lambda char: char.translate(_FULL_WIDTH))
    return sql


def original_offset(raw: str, offset: int) -> int:
    """Where position `offset` of `sql_text(raw)` is in `raw` (they differ in length only
    when `raw` was escaped: a reference is one character once read)."""
    if not _escaped(raw):
        return offset
    shift = 0
    for match in _REFERENCE.finditer(raw):
        at = match.start() - shift
        if at >= offset:
            break
        width = len(_unescape(match))
        if at + width > offset:
            return match.end()
        shift += len(match.group(0)) - width
    return offset + shift


def _escaped(sql: str) -> bool:
    return "&" in sql and bool(_REFERENCE.search(_outside_quotes(sql, str, keep=False)))


def _unescape(match: re.Match[str]) -> str:
    return html.unescape(match.group(0))


# A character reference as markup escapes text: named (&gt;), decimal (&#62;) or hex (&#x3e;).
_REFERENCE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});")


def _outside_quotes(sql: str, change: Callable[[str], str], *, keep: bool = True) -> str:
    """`sql` with `change` applied to each character outside quotes; with `keep` off, the
    quoted parts are dropped (a blank stands for each)."""
    out: list[str] = []
    closing = ""
    for char in sql:
        if closing:
            if char == closing:
                closing = ""
            out.append(char if keep else " ")
            continue
        if char in "'\"`[":
            closing = "]" if char == "[" else char
            out.append(char if keep else " ")
            continue
        out.append(change(char))
    return "".join(out)


# --------------------------------------------------------------------------- fences

# A fence: ``` (or ~~~) and its first line (a tag, or code on one line), then the body up to the
# closing fence or the end of the reply (a reply cut off by the token limit leaves it open).
_FENCE = re.compile(r"(```|~~~)([^\n`]*)(?:\n|(?=```|~~~))?(.*?)(\1|\Z)", re.S)
_STATEMENT_WORDS = frozenset({"select", "with", "values", "table", "from"})
# Fences in these languages hold code or data, never the query itself.
# Data and markup, read as text; the rest of NOT_SQL_TAGS is code, whose strings are read.
TEXT_TAGS = frozenset({"yaml", "yml", "csv", "markdown", "md", "xml", "html"})
NOT_SQL_TAGS = frozenset(
    {"python", "py", "python3", "javascript", "js", "typescript", "ts", "bash", "sh", "shell",
     "console", "yaml", "yml", "xml", "html", "csv", "markdown", "md"}
)  # fmt: skip
# A block in one of these is SQL by the model's own word: when it does not parse, it is broken SQL.
SQL_TAGS = frozenset(
    {"sql", "sqlite", "sqlite3", "postgresql", "postgres", "psql", "pgsql", "plpgsql", "mysql",
     "mariadb", "tsql", "mssql", "plsql", "duckdb", "bigquery", "snowflake", "spark", "hive"}
)  # fmt: skip
_KNOWN_TAGS = NOT_SQL_TAGS | SQL_TAGS | {"json", "text", "plaintext", "txt"}


def _starts_statement(text: str) -> bool:
    words = text.split(None, 1)
    return bool(words) and words[0].lstrip("(").lower() in _STATEMENT_WORDS


@dataclass(frozen=True)
class Fence:
    start: int
    end: int
    tag: str
    body_start: int
    """Where `body` starts in the text (code on the fence's own line starts after its tag)."""
    body: str
    closed: bool


def fences(text: str) -> list[Fence]:
    """Every fenced block; code on the fence's own line ("```SELECT 1```") is its body."""
    out = []
    for match in _FENCE.finditer(text):
        head, body, close = match.group(2), match.group(3), match.group(4)
        word, _, rest = head.strip().partition(" ")
        head_start = match.start(2) + len(head) - len(head.lstrip())
        if word.lower() in _STATEMENT_WORDS or (rest and word.lower() not in _KNOWN_TAGS):
            # Code on the fence's line: the body starts there (positions stay the text's).
            tag, body_start = "", head_start
            body = text[head_start : match.end(3)]
        elif rest and (_starts_statement(rest) or not body.strip()):
            tag = word.lower()
            body_start = head_start + len(word) + 1
            body = text[body_start : match.end(3)]
        else:
            # A language and words after it, with the code on the lines below, is markdown's info
            # string (```sql title="top.sql"```, ```sql showLineNumbers```): the words are not code.
            tag, body_start = word.lower(), match.start(3)
        out.append(Fence(match.start(), match.end(), tag, body_start, body, bool(close)))
    return out


# --------------------------------------------------------------------------- tags


@dataclass(frozen=True)
class Tag:
    """An XML-like pair `<name>...</name>` (any case); `inner_*` is what it encloses."""

    name: str
    start: int
    end: int
    inner_start: int
    inner_end: int


_TAG = re.compile(r"<(/?)([A-Za-z][\w:.-]{0,40})\s*(/?)>")


# A closing tag in square brackets (`[SQL] ... [/SQL]`, as some fine-tuned models answer): no
# name starts with `/`, so it is never a bracket-quoted identifier.
_BRACKET_CLOSE = re.compile(r"\[(/)([A-Za-z][\w:.-]{0,40})()\]")


def tag_marks(text: str) -> list[re.Match[str]]:
    """Every opening or closing tag (without attributes: `<b AND c>` in SQL is not one), and
    closing tags in square brackets. An opening tag right after a word, a quote or `%` is data
    (`x<y>z`, `LIKE '%<humor>%'`)."""
    marks = [
        m
        for m in _TAG.finditer(text)
        if not m.group(3)
        and (m.group(1) or m.start() == 0 or text[m.start() - 1] not in _BEFORE_DATA)
    ]
    if "[/" in text:
        marks = sorted([*marks, *_BRACKET_CLOSE.finditer(text)], key=lambda m: m.start())
    return marks


_BEFORE_DATA = frozenset("'\"%`_") | frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)


def tag_pairs(marks: list[re.Match[str]]) -> list[Tag]:
    """Opening and closing tags matched by name (any case), innermost first closed."""
    pairs: list[Tag] = []
    stack: list[re.Match[str]] = []
    for mark in marks:
        name = mark.group(2).lower()
        if not mark.group(1):
            stack.append(mark)
            continue
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth].group(2).lower() == name:
                opening = stack[depth]
                del stack[depth:]
                pairs.append(Tag(name, opening.start(), mark.end(), opening.end(), mark.start()))
                break
    return pairs


# --------------------------------------------------------------------------- fields

# Any HTML or XML tag, attributes included: what is left between tags is text.
_ANY_TAG = re.compile(r"</?[A-Za-z][\w:.-]{0,40}(?:\s[^<>\n]{0,200})?/?>")
_TABLE_ROW = re.compile(r"^\s*\|(?P<cells>.*)\|\s*$")
_RULE_CELL = re.compile(r"^\s*:?-{2,}:?\s*$")


def field_lines(text: str, named: Callable[[str], bool]) -> str:
    """A reply's fields as `label: value` lines, whatever holds them: a tag whose name is a
    field's (`named`: `<question>...</question>`, `<singer>keep_all</singer>`; the innermost
    when they nest) and a markdown table's two-cell rows become lines; other tags (`<p>`,
    `<b>`) are markup, and what they escape (`&gt;`) is read as text."""
    fields = [t for t in tag_pairs(tag_marks(text)) if named(t.name)]
    innermost = [t for t in fields if not any(t.start < o.start and o.end < t.end for o in fields)]
    for tag in sorted(innermost, key=lambda t: t.start, reverse=True):
        inner = " ".join(text[tag.inner_start : tag.inner_end].split())
        text = f"{text[: tag.start]}\n{tag.name}: {inner}\n{text[tag.end :]}"
    if _ANY_TAG.search(text):
        text = html.unescape(_ANY_TAG.sub("\n", text))
    return "\n".join(_table_row(line) for line in text.splitlines())


def _table_row(line: str) -> str:
    """A markdown table's row of two cells as `first: second` (a rule row as nothing)."""
    match = _TABLE_ROW.match(line)
    if match is None:
        return line
    cells = [c.strip() for c in match.group("cells").split("|")]
    if all(_RULE_CELL.match(c) or not c for c in cells):
        return ""
    return f"{cells[0]}: {cells[1]}" if len(cells) == 2 else line


# --------------------------------------------------------------------------- inline code

_INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def inline_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of the code inside each `single-backtick` span."""
    return [
        (m.start(1), m.end(1))
        for m in _INLINE.finditer(text, start, len(text) if end is None else end)
    ]


# A string literal in the text (an assignment in code or config: `sql = "SELECT ..."`,
# `query: 'SELECT ...'`) whose content starts as a statement does: one line, backslash escapes.
_QUOTED_START = r"(?:select|with|create|insert|update|delete|drop|alter|replace)\b"
_QUOTED = re.compile(
    r"""(?<![\w\\'"])(["'])(""" + _QUOTED_START + r"""(?:\\.|(?!\1)[^\\\n])*)\1(?![\w'"])""",
    re.IGNORECASE,
)
_BACKSLASH_ESCAPE = re.compile(r"""\\(["'\\])""")


def quoted_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """(start, end) of each quoted string's content in the text that starts as a statement."""
    return [
        (m.start(2), m.end(2))
        for m in _QUOTED.finditer(text, start, len(text) if end is None else end)
    ]


# A string literal of code that may span lines: Python's triple quotes, JavaScript's template.
_MULTILINE_STRING = re.compile(
    r'("""|\'\'\'|`)\s*(' + _QUOTED_START + r".*?)\1", re.IGNORECASE | re.S
)


def code_strings(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of each string literal in code (a fence's body) that starts as a statement:
    quoted on one line, triple-quoted or a template over several."""
    spans = [(m.start(2), m.end(2)) for m in _MULTILINE_STRING.finditer(text, start, end)]
    return spans + [
        (a, b) for a, b in quoted_spans(text, start, end) if not any(x <= a < y for x, y in spans)
    ]


def quoted_text(content: str) -> str:
    """A quoted string's content with its backslash escapes of quotes resolved."""
    return _BACKSLASH_ESCAPE.sub(r"\1", content)


# --------------------------------------------------------------------------- JSON


def object_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level {...} in the text, braces inside strings ignored."""
    return bracketed_spans(text, "{")


def bracketed_spans(text: str, opening: str) -> list[tuple[int, int]]:
    """(start, end) of each top-level {...} (`opening` "{") or [...] ("[") in the text,
    brackets inside strings ignored."""
    closing = "}" if opening == "{" else "]"
    if opening not in text:
        return []
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
        elif char == opening:
            if depth == 0:
                start = i
            depth += 1
        elif char == closing and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


def lenient_value(text: str, opening: str = "{") -> Any:
    """A dict (or, with `opening="["`, a list) from JSON, or from what models write for JSON
    (comments, trailing commas, single quotes, Python's True/None), repaired by `json_repair`;
    None when the text holds no such value. Only a whole value is repaired: one cut off before
    its closing bracket is not guessed at (a cut `{"verdict": "pa` is no verdict)."""
    text = text.strip()
    if not text.startswith(opening):
        return None
    kind = dict if opening == "{" else list
    whole = bracketed_spans(text, opening) == [(0, len(text))]
    for attempt in (_strict_json, _repaired_json) if whole else (_strict_json,):
        try:
            value = attempt(text)
        except (ValueError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, kind):
            return value
    return None


def lenient_object(text: str) -> dict[str, Any] | None:
    """A dict from JSON or repairable JSON (see `lenient_value`)."""
    value = lenient_value(text)
    return value if isinstance(value, dict) else None


def _strict_json(text: str) -> Any:
    return json.loads(text, strict=False)  # a raw line break inside a string is common


def _repaired_json(text: str) -> Any:
    import json_repair  # only replies that are not JSON as they stand pay for the import

    return json_repair.loads(text, skip_json_loads=True)
