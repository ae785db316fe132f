"""Finding the final query of a reply: every candidate, then one rule to choose.

**Candidates.** Every span of the answer (the reply without its reasoning) that sqlglot reads as
exactly one statement in the database's dialect: the statements of fenced blocks (any tag but a
programming language's) and of XML-like tags (`<sql>`, `<answer>`, any name, any case), inline
code, queries in the text (bare, after a label such as `Query:`, inside a sentence, ended by `;`,
a line end, or the first word that is not SQL), and the string values of JSON objects under any
key (tool-call shapes included). Full-width punctuation outside quotes counts as ASCII (`；`).
Text outside code must read as a query that reads FROM somewhere and has no two bare words in its
select list ("Select the names from singers" is prose).

**Choice.** Each candidate gets a rank from how it is introduced (`macsql.nodes.reply_cues`):
*final* (an explicit final marker: "Final answer:", `<answer>`, a JSON `sql`/`query`/`answer`
key), *demoted* (introduced as an example, an alternative or a draft; a statement that is not
a query, such as echoed DDL; a query that is a subquery of another candidate), or *plain*. The
highest rank wins, and among equals the last (MAC-SQL's rule). A block that is SQL by its tag
but does not parse is a broken candidate: when it wins, the reply holds no query, and the
Refiner hears why.

Every reading says which rule chose and what else was passed over (`SqlReading`), and calls the
choice ambiguous when two different queries are marked final or when the only queries were
introduced as examples, alternatives or drafts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from macsql.database.guard_verdicts import GuardKind
from macsql.nodes.reply_cues import PLAIN, Cue, Rank, cue_in, intro_of, key_cue
from macsql.nodes.reply_markup import (
    NOT_SQL_TAGS,
    SQL_TAGS,
    Fence,
    fences,
    inline_spans,
    lenient_value,
    object_spans,
    sql_text,
    structure_text,
    tag_marks,
    tag_pairs,
)

if TYPE_CHECKING:
    from sqlglot.tokens import Token

# sqlglot is imported when the first reply is read: the graph imports this module long before,
# on the way to the first model request.


@dataclass(frozen=True)
class SqlReading:
    """What a reply held: its final query, or what was found instead, and how it was chosen."""

    sql: str | None
    found: str
    """For a reply without SQL, what it held instead (for the Refiner and the trace)."""
    incomplete: bool = False
    """The chosen candidate was not a complete statement (often a reply cut off mid-query)."""
    open_ended: bool = False
    """Nothing closes the query: it runs to the end of the reply (bare SQL, or a fence never
    closed). In a reply cut off by the token limit, such a query may be cut short and still
    parse ("... FROM sing"), so it is not trusted there."""
    rule: str = ""
    """Which rule chose the query: 'the only query', 'marked final (...)', 'the last query',
    'only examples, alternatives or drafts: the last'."""
    candidates: int = 0
    """How many different queries (and broken blocks) the reply held."""
    passed_over: tuple[str, ...] = ()
    """Why each other candidate lost, shortest first ('an example: SELECT ...')."""
    ambiguous: str = ""
    """Set when the choice is not certain: two different queries marked final, or only
    examples, alternatives or drafts. Recorded as a fallback."""

    def record(self) -> dict[str, Any]:
        """The reading as a JSON record, for the attempt it wrote (empty for a lone query)."""
        if self.candidates <= 1 and not self.ambiguous:
            return {}
        out: dict[str, Any] = {"rule": self.rule, "candidates": self.candidates}
        if self.passed_over:
            out["passed_over"] = list(self.passed_over)
        if self.ambiguous:
            out["ambiguous"] = self.ambiguous
        return out


@dataclass
class _Candidate:
    position: float
    sql: str | None
    """None: SQL by its container's word that does not parse (`why` says so)."""
    end: int
    cue: Cue
    why: str = ""
    closed: bool = True
    """Something after the query closes it (a fence, a tag, a JSON string)."""
    statement: bool = False
    """Parsed as one statement that is not a query (DDL, a write)."""
    source: str = "text"


def find_sql(answer: str, dialect: str) -> SqlReading:
    """The final query of a reply's answer text (reasoning already removed)."""
    if not answer.strip():
        return SqlReading(None, "an empty reply")
    return _find(answer, dialect)


@lru_cache(maxsize=128)  # a reply is read again when a node reads what another kept
def _find(answer: str, dialect: str) -> SqlReading:
    candidates = _candidates(answer, dialect, 0, _Budget())
    if not candidates:
        # Bare SQL that does not parse is broken SQL; a sentence ("Select the ...") is not.
        if _looks_like_sql(answer):
            return SqlReading(None, _unreadable(answer, dialect), incomplete=True)
        return SqlReading(None, "only prose, no SQL query: " + _excerpt(answer))
    return _choose(answer, candidates, dialect)


# --------------------------------------------------------------------------- choosing


def _choose(answer: str, candidates: list[_Candidate], dialect: str) -> SqlReading:
    candidates.sort(key=lambda c: c.position)
    _demote_parts(candidates)
    best = max(c.cue.rank for c in candidates)
    chosen = [c for c in candidates if c.cue.rank == best][-1]
    distinct = {_same(c.sql) if c.sql is not None else f"broken:{c.why}" for c in candidates}
    passed = tuple(
        _passed(c, chosen)
        for c in candidates
        if c is not chosen and _same(c.sql) != _same(chosen.sql)
    )
    finals = {_same(c.sql) for c in candidates if c.cue.rank == Rank.FINAL and c.sql is not None}
    ambiguous = ""
    if len(distinct) <= 1:
        rule = "the only query"
    elif best == Rank.FINAL:
        rule = f"marked final ({chosen.cue.words})"
        if len(finals) > 1:
            ambiguous = f"{len(finals)} different queries are marked final; the last was used"
    elif best == Rank.PLAIN:
        rule = "the last query (MAC-SQL's rule: the last wins)"
    else:
        rule = "only examples, alternatives, drafts or statements that are not queries: the last"
    if best == Rank.DEMOTED and chosen.cue.kind in ("example", "alternative", "draft"):
        ambiguous = (
            "no query was marked final or given plainly; the last one, introduced as "
            f"{_kind_phrase(chosen.cue)}, was used"
        )
    if chosen.sql is None:
        return SqlReading(
            None, chosen.why, incomplete=True, rule=rule, candidates=len(distinct),
            passed_over=passed, ambiguous=ambiguous,
        )  # fmt: skip
    open_ended = not chosen.closed and not answer[chosen.end :].strip(" \t\r\n;")
    return SqlReading(
        chosen.sql, "", open_ended=open_ended, rule=rule, candidates=len(distinct),
        passed_over=passed, ambiguous=ambiguous,
    )  # fmt: skip


def _demote_parts(candidates: list[_Candidate]) -> None:
    """A query that is a subquery of another candidate (a sub-question's query inside the final
    one, a subquery quoted in an explanation) loses to it."""
    texts = [(c, _same(c.sql)) for c in candidates if c.sql is not None]
    for candidate, text in texts:
        if candidate.cue.rank == Rank.DEMOTED:
            continue
        inside = (f"({text})", f"( {text} )")
        for other, whole in texts:
            if (
                other is not candidate
                and other.cue.rank >= candidate.cue.rank
                and any(part in whole for part in inside)
            ):
                candidate.cue = Cue(Rank.DEMOTED, "part", "")
                break


def _same(sql: str | None) -> str:
    return " ".join((sql or "").lower().replace(";", " ").split())


def _kind_phrase(cue: Cue) -> str:
    return {
        "example": "an example",
        "alternative": "an alternative",
        "draft": "a draft or a wrong query",
        "reasoning": "reasoning",
        "part": "a part of another query",
        "statement": "a statement that is not a query",
    }.get(cue.kind, cue.kind) + (f" ({cue.words!r})" if cue.words else "")


def _passed(candidate: _Candidate, chosen: _Candidate) -> str:
    """Why a candidate lost to the chosen one."""
    what = _excerpt(candidate.sql, 80) if candidate.sql is not None else "a broken block"
    if candidate.cue.rank == Rank.DEMOTED:
        return f"{_kind_phrase(candidate.cue)}: {what}"
    if candidate.cue.rank < chosen.cue.rank:
        return f"a query not marked final: {what}"
    earlier = (
        "an earlier query marked final" if candidate.cue.rank == Rank.FINAL else "an earlier query"
    )
    return f"{earlier}: {what}"


# --------------------------------------------------------------------------- candidates


_STATEMENT_START = re.compile(
    r"(?<![\w.])(?:select|with)(?![\w])"
    r"|(?<![\w.])(?:create\s+(?:or\s+replace\s+)?(?:temp\w*\s+|unique\s+)?(?:table|view|index|trigger)"
    r"|insert\s+(?:or\s+\w+\s+)?into|delete\s+from|drop\s+(?:table|view|index)|alter\s+table"
    r"|update\s+[\w`\"\[\]]+\s+set)(?![\w])",
    re.I,
)
_CTE_HEAD = re.compile(r"with\s+(?:recursive\s+)?[\w`\"\[\]]+\s*(?:\([^)]*\)\s*)?as\s*\(", re.I)
_FROM = re.compile(r"(?<![\w.])from(?![\w])", re.I)
_MAX_CUTS = 8
_MAX_DEPTH = 2
_MAX_PROSE_SPAN = 4_000
"""A query in prose is read from at most this many characters (a paragraph, usually less)."""
_PROSE_STARTS = 64
"""At most this many places in a reply's prose are tried as the start of a query."""


class _Budget:
    """How many more prose starts one reading may try: a reply that is mostly prose about
    SQL ("select the rows from ...") costs a bounded time."""

    def __init__(self) -> None:
        self.left = _PROSE_STARTS

    def spend(self) -> bool:
        self.left -= 1
        return self.left >= 0


@dataclass
class _Layout:
    """The containers of an answer text, as positions."""

    text: str
    """The answer with full-width punctuation as ASCII (same positions as the answer)."""
    fences: list[Fence] = field(default_factory=list)
    objects: list[tuple[int, int, Any]] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)
    """Positions where an XML-like tag opens or closes: no query runs across one."""
    enclosing: list[tuple[int, int, Cue]] = field(default_factory=list)
    """(start, end, cue) of tag pairs whose name is a cue (`<answer>`, `<example>`)."""


def _candidates(answer: str, dialect: str, depth: int, budget: _Budget) -> list[_Candidate]:
    text = structure_text(answer)
    layout = _Layout(text)
    all_fences = fences(text)
    code_fences = [f for f in all_fences if f.tag in NOT_SQL_TAGS]
    found: list[_Candidate] = []
    # JSON objects first: a fence inside a JSON string (or around the object) is read with it.
    for start, end in object_spans(text):
        if any(f.start <= start < f.end for f in code_fences):
            continue
        value = lenient_value(answer[start:end])
        if value is None:
            continue
        from_json = _json_candidates(value, start, end, dialect, depth, budget)
        if from_json:
            found += from_json
            layout.objects.append((start, end, value))
    layout.fences = [
        f for f in all_fences if not any(f.start < b and a < f.end for a, b, _ in layout.objects)
    ]
    outside = _outside(
        text, [(f.start, f.end) for f in layout.fences] + [(a, b) for a, b, _ in layout.objects]
    )
    marks = [m for m in tag_marks(text) if _inside_any(m.start(), outside)]
    layout.marks = sorted({m.start() for m in marks} | {m.end() for m in marks})
    for pair in tag_pairs(marks):
        cue = cue_in(pair.name.replace("_", " "))
        if cue is not None:
            layout.enclosing.append((pair.inner_start, pair.inner_end, cue))
    for fence in layout.fences:
        if fence.tag in NOT_SQL_TAGS or fence.tag == "json":
            continue
        body_end = fence.body_start + len(fence.body)
        block = _block_candidates(
            answer, fence.body_start, body_end, dialect,
            sql_tag=fence.tag in SQL_TAGS, closed=fence.closed, source="fence",
        )  # fmt: skip
        if block is None:  # prose in a fence ("```\nThe query is: SELECT ...```")
            block = _prose_candidates(answer, text, fence.body_start, body_end, dialect, [], budget)
        found += block
    for start, end in outside:
        found += _text_candidates(answer, layout, start, end, dialect, budget)
    _rank(layout, found)
    return found


def _outside(text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The stretches of `text` outside the `taken` spans."""
    out, position = [], 0
    for start, end in sorted(taken):
        if start > position:
            out.append((position, start))
        position = max(position, end)
    if position < len(text):
        out.append((position, len(text)))
    return out


def _inside_any(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= position < b for a, b in spans)


def _rank(layout: _Layout, found: list[_Candidate]) -> None:
    """Each candidate's cue: the words that introduce it, else its enclosing tag's, else plain;
    a JSON value's key, when it says final or demotes. A query with no words before it (right
    after another) is introduced by the words that introduced the one before. Statements that
    are not queries lose."""
    found.sort(key=lambda c: c.position)
    previous_end = 0
    carried: Cue = PLAIN  # the cue of the last words that introduced a query
    for candidate in found:
        start = int(candidate.position)
        if candidate.source == "json" and candidate.cue.rank != Rank.PLAIN:
            own, carried = candidate.cue, PLAIN  # the key says what the value is
        else:
            gap = layout.text[previous_end:start] if start >= previous_end else ""
            intro = intro_of(gap) if gap else None
            if intro is None and gap and previous_end > 0 and "</" not in gap:
                own = carried  # (unless the previous query's tag closed in between)
            else:
                said = cue_in(intro) if intro else None
                own = said or _enclosing_cue(layout, start) or PLAIN
                carried = said or PLAIN
        if candidate.statement:  # echoed DDL, a write: never the answer while a query is
            own = Cue(Rank.DEMOTED, "statement", "")
        candidate.cue = own
        previous_end = max(previous_end, candidate.end)


def _enclosing_cue(layout: _Layout, position: int) -> Cue | None:
    inner = [(b - a, cue) for a, b, cue in layout.enclosing if a <= position < b]
    return min(inner, key=lambda item: item[0])[1] if inner else None


def _block_candidates(
    answer: str,
    start: int,
    end: int,
    dialect: str,
    *,
    sql_tag: bool,
    closed: bool,
    source: str,
) -> list[_Candidate] | None:
    """The statements of a code block (a fence's body, a tag's content): each one a candidate
    when every statement parses; else one broken candidate when the block is SQL by its tag
    or its first word; else None (the block is prose, to be read as such)."""
    body = answer[start:end]
    whole = sql_text(body)
    lead = len(whole) - len(whole.lstrip())
    single = _parsed(whole.strip(), dialect)
    if single.statement:  # the usual block: one statement, tokenized and parsed once
        first, last = single.span
        piece = whole.strip()[first:last]
        after = whole[lead + last :].strip(" \t\r\n;")
        return [
            _Candidate(
                start + lead + first,
                piece,
                start + lead + last,
                PLAIN,
                closed=closed or bool(after),
                statement=not single.query,
                source=source,
            )
        ]
    several = single.first_end is not None
    pieces = _statements(whole, dialect) if several else None
    if pieces and all(_parsed(p, dialect).statement for p, _ in pieces):
        out = []
        for piece, offset in pieces:
            parsed = _parsed(piece, dialect)
            after = body[offset + len(piece) :].strip(" \t\r\n;")
            out.append(
                _Candidate(
                    start + offset,
                    piece,
                    start + offset + len(piece),
                    PLAIN,
                    closed=closed or bool(after),
                    statement=not parsed.query,
                    source=source,
                )
            )
        return out
    if sql_tag or _looks_like_sql(body):
        at = start + len(body) - len(body.lstrip())
        cut = " (the block was never closed: the reply was cut off?)" if not closed else ""
        why = _unreadable(body, dialect) + cut
        return [_Candidate(at, None, end, PLAIN, why=why, closed=closed, source=source)]
    return None


def _text_candidates(
    answer: str, layout: _Layout, start: int, end: int, dialect: str, budget: _Budget
) -> list[_Candidate]:
    """Queries in a stretch of text outside fences and JSON: in inline code, in tag pairs
    whose content is code, and in the prose itself."""
    text = layout.text
    out: list[_Candidate] = []
    covered: list[tuple[int, int]] = []
    for a, b in inline_spans(text, start, end):
        if _STATEMENT_START.match(text, a) is None:
            continue
        sql = sql_text(answer[a:b]).strip().rstrip(";").strip()
        parsed = _parsed(sql, dialect)
        # Inline code in an explanation quotes fragments ("`SELECT T1.name` picks the names"):
        # it counts as a query only when it reads like one, as in prose. One that does not
        # parse may be a query with `quoted names` in it, read from the text instead.
        if parsed.statement and parsed.clean and (parsed.plausible or not parsed.query):
            out.append(_Candidate(a, sql, b, PLAIN, statement=not parsed.query, source="inline"))
            covered.append((a, b))
    bounds = [m for m in layout.marks if start < m < end]
    edges = [start, *bounds, end]
    for a, b in pairwise(edges):
        segment = text[a:b]
        if not segment.strip():
            continue
        # A tag's content that is SQL by its first word reads like a fence's body.
        lead = a + len(segment) - len(segment.lstrip())
        if a in layout.marks and b in layout.marks and _STATEMENT_START.match(text, lead):
            block = _block_candidates(
                answer, a, b, dialect, sql_tag=False, closed=True, source="tag"
            )
            if block is not None:
                out += block
                continue
        out += _prose_candidates(answer, text, a, b, dialect, covered, budget)
    return out


def _prose_candidates(
    answer: str,
    text: str,
    start: int,
    end: int,
    dialect: str,
    covered: list[tuple[int, int]],
    budget: _Budget,
) -> list[_Candidate]:
    out: list[_Candidate] = []
    position = start
    while True:
        match = _STATEMENT_START.search(text, position, end)
        if match is None:
            return out
        at = match.start()
        position = match.end()
        if _inside_any(at, covered):
            continue
        word = match.group(0).lower()
        query_word = word in ("select", "with")
        if word == "with" and _CTE_HEAD.match(text, at) is None:
            continue
        limit = text.find("\n\n", at, end)
        limit = min(end if limit == -1 else limit, at + _MAX_PROSE_SPAN)
        if query_word and _FROM.search(text, at, limit) is None:
            continue
        if not budget.spend():
            return out  # a reply that is mostly prose about SQL: enough has been tried
        found = _query_at(answer, at, limit, dialect)
        if found is None:
            continue
        sql, stop, parsed = found
        closed = bool(text[stop:end].strip(" \t\r\n;")) or end < len(text)
        out.append(_Candidate(at, sql, stop, PLAIN, closed=closed, statement=not parsed.query))
        position = stop


def _query_at(answer: str, start: int, limit: int, dialect: str) -> tuple[str, int, _Parse] | None:
    """The query that starts at `start` in prose: the span up to `limit`, cut back at the
    first statement's end or where sqlglot stops reading SQL (the first word of prose after
    it), until it parses; a query must also read like one (`_Parse.plausible`)."""
    end = limit
    for _ in range(_MAX_CUTS):
        # A sentence's full stop (or other mark) after a query is prose: "... > 30. Done."
        sql = sql_text(answer[start:end]).rstrip().rstrip(".!?,:").rstrip()
        if not sql:
            return None
        parsed = _parsed(sql, dialect)
        if parsed.statement and parsed.clean and (parsed.plausible or not parsed.query):
            first, last = parsed.span  # a comment after the query ("-- lists them") is prose
            return sql[first:last], start + last, parsed
        cut = parsed.first_end if parsed.first_end is not None else parsed.error_at
        if cut is None and parsed.untokenized:
            cut = _tokenizable_prefix(sql, dialect)
        if cut is None:
            cut = _last_break(sql)
        if cut is None or cut <= 0 or cut >= len(sql):
            return None
        end = start + len(sql[:cut].rstrip(" \t\r\n,:;(-—"))
    return None


def _tokenizable_prefix(sql: str, dialect: str) -> int | None:
    """The end of the longest prefix, cut at a `;` or a line end, that sqlglot can tokenize:
    prose after a query (an apostrophe opens a string that never closes) stops the tokenizer."""
    ends = sorted({m.start() for m in re.finditer(r"[;\n`]", sql)}, reverse=True)
    tried = ends[:_MAX_CUTS]
    return next((e for e in tried if not _parsed(sql[:e].rstrip(), dialect).untokenized), None)


_BREAK = re.compile(r"[.!?](?=\s|$)|\n|,\s|\s[—–-]{1,2}\s|\s\(|`")


def _last_break(sql: str) -> int | None:
    """Where the last sentence or clause break of a span is (when sqlglot gave no position)."""
    breaks = [m.start() for m in _BREAK.finditer(sql)]
    return breaks[-1] if breaks else None


def _json_candidates(
    value: Any, start: int, end: int, dialect: str, depth: int, budget: _Budget
) -> list[_Candidate]:
    """The queries in a JSON value's strings, each ranked by the keys above it. A string that
    is itself a JSON object (a tool call's `arguments`) is read as one."""
    out: list[_Candidate] = []
    strings = list(_strings(value, ()))
    for index, (path, text) in enumerate(strings):
        if not _STATEMENT_START.search(text) or depth >= _MAX_DEPTH:
            continue
        inner = _candidates(text, dialect, depth + 1, budget)
        position = start + (index + 1) / (len(strings) + 1)
        cue = key_cue(path)
        reading = _choose(text, inner, dialect) if inner else None
        if reading is None or reading.sql is None:
            # The answer's own field holding broken SQL is a broken answer; other fields are
            # prose that happens to mention SQL.
            if cue.rank == Rank.FINAL and (reading is not None or _looks_like_sql(text)):
                held = reading.found if reading is not None else _unreadable(text, dialect)
                why = f"a JSON {_key_name(path)} field that is not one query ({held})"
                out.append(_Candidate(position, None, end, cue, why=why, source="json"))
            continue
        parsed = _parsed(reading.sql, dialect)
        out.append(
            _Candidate(position, reading.sql, end, cue, statement=not parsed.query, source="json")
        )
    return out


def _strings(value: Any, path: tuple[str | int, ...]) -> Any:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))
    elif isinstance(value, str):
        nested = lenient_value(value) if value.lstrip().startswith("{") else None
        if nested is not None:
            yield from _strings(nested, path)
        else:
            yield path, value


def _key_name(path: tuple[str | int, ...]) -> str:
    keys = [k for k in path if isinstance(k, str)]
    return f"`{keys[-1]}`" if keys else "list"


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Parse:
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
def _parsed(sql: str, dialect: str) -> _Parse:
    from sqlglot import exp
    from sqlglot.errors import ParseError

    parser = _dialect(dialect)
    try:
        tokens = parser.tokenize(sql)
    except Exception:  # sqlglot's tokenizer failing on prose (an apostrophe opens a string)
        return _Parse(untokenized=True)
    statements = _split(tokens)
    if not statements:
        return _Parse()
    if len(statements) > 1:
        return _Parse(first_end=statements[0][-1].end + 1)
    prose = _prose_start(statements[0])
    span = (statements[0][0].start, statements[0][-1].end + 1)
    if not _QUERY_START.match(sql):
        # DDL and other statements are not parsed (sqlglot would parse many as a generic
        # command, with a warning): one statement that is not a query, up to any prose.
        named = _names_a_statement(sql, dialect)
        line_end = _line_end_of(statements[0])
        if line_end is not None and (prose is None or line_end < prose):
            prose = line_end
        return _Parse(statement=named, clean=prose is None, error_at=prose, span=span)
    try:
        trees = parser.parse_tokens(statements[0], sql)
    except ParseError as exc:
        return _Parse(error_at=prose if prose is not None else _error_offset(sql, exc))
    except Exception:  # sqlglot's own failure (recursion on absurd nesting, ...)
        return _Parse()
    roots = [t for t in trees if isinstance(t, exp.Expression)]
    if len(roots) != 1:
        return _Parse()
    root = roots[0]
    if isinstance(root, exp.Command | exp.Alias | exp.Column | exp.Identifier | exp.Literal):
        return _Parse()  # not a statement sqlglot understood ("SELECT" alone, a name)
    query = isinstance(root, exp.Query | exp.Values)
    plausible = query and root.find(exp.From) is not None and not _bare_words_in_select(tokens)
    return _Parse(
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
    from sqlglot.tokens import TokenType

    statements: list[list[Token]] = []
    current: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                statements.append(current)
            current = []
        else:
            current.append(token)
    if current:
        statements.append(current)
    return statements


@lru_cache(maxsize=2048)
def _statements(text: str, dialect: str) -> tuple[tuple[str, int], ...] | None:
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


def _looks_like_sql(body: str) -> bool:
    """Whether a block's first word starts a statement (so a parse failure is broken SQL)."""
    words = re.sub(r"--[^\n]*|/\*.*?\*/", " ", body, flags=re.S).split()
    word = words[0].lstrip("(") if words else ""
    if len(word) > 1 and word.istitle():  # "Select the singers ...": a sentence
        return False
    first = word.upper()
    return first in {"SELECT", "WITH", "VALUES", "TABLE", "FROM", "CREATE", "INSERT", "UPDATE",
                     "DELETE", "DROP", "ALTER"}  # fmt: skip


def _unreadable(body: str, dialect: str) -> str:
    from macsql.database.guard import check_statement

    reason = check_statement(sql_text(body.strip()), dialect).reason or "it does not parse"
    return f"SQL that is not one complete {dialect} query ({reason}): {_excerpt(body, 120)}"


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


def _excerpt(text: str | None, limit: int = 200) -> str:
    flat = " ".join((text or "").split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")
