"""Finding the final query of a reply: every candidate, then one rule to choose.

**Candidates.** Every span of the answer (the reply without its reasoning) that sqlglot reads as
exactly one statement in the database's dialect: the statements of fenced blocks (any tag but a
programming language's; in code, its string literals that hold a statement, outranked by SQL given
as SQL) and of XML-like tags (`<sql>`, `<answer>`, any name, any case), inline code, quoted strings
that hold a query (`sql = "SELECT ..."`), queries in the text (bare, after a label such as
`Query:`, inside a sentence, ended by `;`, a line end, or the first word that is not SQL), and the
string values of JSON objects under any key (tool-call shapes included). Full-width punctuation
outside quotes counts as ASCII (`；`); a query escaped as markup text (`age &gt; 30`) is read
unescaped. Text outside code must read as a query that reads FROM somewhere and has no two bare
words in its select list ("Select the names from singers" is prose).

**Choice.** Each candidate gets a rank from how it is introduced (`macsql.replies.cues`): *final*
(an explicit final marker: "Final answer:", `<answer>`, a JSON `sql`/`query`/`answer` key),
*demoted* (introduced as an example, an alternative or a draft; a string in code; a statement that
is not a query, such as echoed DDL; a query that is a subquery of another candidate or lies inside
one of its string literals), or *plain*.
The highest rank wins, and among equals the last (MAC-SQL's rule). A block that is SQL by its tag
but does not parse is a broken candidate: when it wins, the reply holds no query, and the Refiner
hears why.

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

from macsql.replies.cues import PLAIN, Cue, Rank, cue_in, intro_of, key_cue, tag_cue
from macsql.replies.markup import (
    NOT_SQL_TAGS,
    SQL_TAGS,
    TEXT_TAGS,
    Fence,
    as_rendered,
    code_strings,
    fences,
    inline_spans,
    lenient_value,
    object_spans,
    original_offset,
    quoted_spans,
    quoted_text,
    sql_text,
    structure_text,
    tag_marks,
    tag_pairs,
)
from macsql.replies.spans import (
    SpanParse,
    excerpt,
    looks_like_sql,
    parse_span,
    statements,
    unreadable,
)

if TYPE_CHECKING:
    pass

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
    answer = as_rendered(answer)
    candidates = _candidates(answer, dialect, 0, _Budget())
    if not candidates:
        # Bare SQL that does not parse is broken SQL; a sentence ("Select the ...") is not.
        if looks_like_sql(answer):
            return SqlReading(None, unreadable(answer, dialect), incomplete=True)
        return SqlReading(None, "only prose, no SQL query: " + excerpt(answer))
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
        rule = (
            "only examples, alternatives, drafts, code or statements that are not queries: the last"
        )
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
    open_ended = not chosen.closed and not answer[chosen.end :].strip(_NOT_CLOSING)
    return SqlReading(
        chosen.sql, "", open_ended=open_ended, rule=rule, candidates=len(distinct),
        passed_over=passed, ambiguous=ambiguous,
    )  # fmt: skip


_NOT_CLOSING = " \t\r\n;.,:!?"
"""What may follow a query at the very end of a reply without closing it: a reply cut off at
the token limit right after `T1.` reads as `... WHERE T1` and a full stop, and is cut short."""


def _demote_parts(candidates: list[_Candidate]) -> None:
    """A query that is a subquery of another candidate (a sub-question's query inside the final
    one, a subquery quoted in an explanation) loses to it; so does a query found inside another
    candidate's own span (the text of a string literal: `WHERE body = 'SELECT ...'`), whatever
    its rank: it is a piece of that candidate, never a query of its own."""
    texts = [(c, _same(c.sql)) for c in candidates if c.sql is not None]
    for candidate, text in texts:
        if candidate.cue.kind != "part" and any(
            text in whole and _within(candidate, other) for other, whole in texts
        ):
            candidate.cue = Cue(Rank.DEMOTED, "part", "")
            continue
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


def _within(candidate: _Candidate, other: _Candidate) -> bool:
    """Whether `candidate` was found inside `other`'s span of the reply (JSON values share their
    object's span, so they are told apart by their text alone)."""
    return (
        other is not candidate
        and "json" not in (candidate.source, other.source)
        and other.position <= candidate.position
        and candidate.end <= other.end
        and (other.position, other.end) != (candidate.position, candidate.end)
    )


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
        "code": "a string in code",
    }.get(cue.kind, cue.kind) + (f" ({cue.words!r})" if cue.words else "")


def _passed(candidate: _Candidate, chosen: _Candidate) -> str:
    """Why a candidate lost to the chosen one."""
    what = excerpt(candidate.sql, 80) if candidate.sql is not None else "a broken block"
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
_BLANK_LINE = re.compile(r"\n[ \t]*\r?\n")
"""A paragraph's end, whatever the line endings (`\r\n\r\n` from Windows and some servers)."""
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
        cue = tag_cue(pair.name)
        if cue is not None:
            layout.enclosing.append((pair.inner_start, pair.inner_end, cue))
    for fence in layout.fences:
        body_end = fence.body_start + len(fence.body)
        if fence.tag in TEXT_TAGS:  # YAML, markdown: text that may say the query
            found += _prose_candidates(
                answer, text, fence.body_start, body_end, dialect, [], budget
            )
            continue
        if fence.tag in NOT_SQL_TAGS:  # code: a query is a string in it (`execute("...")`)
            found += _code_candidates(answer, text, fence.body_start, body_end, dialect)
            continue
        if fence.tag == "json":
            continue
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


def _code_candidates(
    answer: str, text: str, start: int, end: int, dialect: str
) -> list[_Candidate]:
    """The statements in a code block's string literals (Python, JavaScript, a shell): a
    candidate each, which a query given as SQL outranks (`_rank`)."""
    found = (
        _string_candidate(answer, a, b, dialect, "code") for a, b in code_strings(text, start, end)
    )
    return [candidate for candidate in found if candidate is not None]


def _string_candidate(
    answer: str, start: int, end: int, dialect: str, source: str, *, reads_as_query: bool = False
) -> _Candidate | None:
    """A string literal's content as a candidate when it is one statement (backslash escapes of
    quotes resolved); with `reads_as_query`, a query must also read like one, as in prose."""
    sql = quoted_text(sql_text(answer[start:end])).strip().rstrip(";").strip()
    parsed = parse_span(sql, dialect)
    if not (parsed.statement and parsed.clean) or (
        reads_as_query and parsed.query and not parsed.plausible
    ):
        return None
    return _Candidate(start, sql, end, PLAIN, statement=not parsed.query, source=source)


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
        elif candidate.source == "code" and own.rank == Rank.PLAIN:
            own = Cue(Rank.DEMOTED, "code", "")  # SQL given as SQL wins over a string in code
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
    single = parse_span(whole.strip(), dialect)
    if single.statement:  # the usual block: one statement, tokenized and parsed once
        first, last = single.span
        piece = whole.strip()[first:last]
        after = whole[lead + last :].strip(" \t\r\n;")
        return [
            _Candidate(
                start + original_offset(body, lead + first),
                piece,
                start + original_offset(body, lead + last),
                PLAIN,
                closed=closed or bool(after),
                statement=not single.query,
                source=source,
            )
        ]
    several = single.first_end is not None
    pieces = statements(whole, dialect) if several else None
    if pieces and all(parse_span(p, dialect).statement for p, _ in pieces):
        out = []
        for piece, offset in pieces:
            parsed = parse_span(piece, dialect)
            after = whole[offset + len(piece) :].strip(" \t\r\n;")
            out.append(
                _Candidate(
                    start + original_offset(body, offset),
                    piece,
                    start + original_offset(body, offset + len(piece)),
                    PLAIN,
                    closed=closed or bool(after),
                    statement=not parsed.query,
                    source=source,
                )
            )
        return out
    if sql_tag or looks_like_sql(body):
        at = start + len(body) - len(body.lstrip())
        cut = " (the block was never closed: the reply was cut off?)" if not closed else ""
        why = unreadable(body, dialect) + cut
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
        parsed = parse_span(sql, dialect)
        # Inline code in an explanation quotes fragments ("`SELECT T1.name` picks the names"):
        # it counts as a query only when it reads like one, as in prose. One that does not
        # parse may be a query with `quoted names` in it, read from the text instead.
        if parsed.statement and parsed.clean and (parsed.plausible or not parsed.query):
            out.append(_Candidate(a, sql, b, PLAIN, statement=not parsed.query, source="inline"))
            covered.append((a, b))
    # A quoted string that holds a statement (`sql = "SELECT ..."` in code or config) is read
    # like inline code: the quote that closes it is not part of the statement.
    for a, b in quoted_spans(text, start, end):
        if _inside_any(a, covered):
            continue
        candidate = _string_candidate(answer, a, b, dialect, "quoted", reads_as_query=True)
        if candidate is not None:
            out.append(candidate)
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
        blank = _BLANK_LINE.search(text, at, end)
        limit = min(end if blank is None else blank.start(), at + _MAX_PROSE_SPAN)
        if query_word and _FROM.search(text, at, limit) is None:
            continue
        if not budget.spend():
            return out  # a reply that is mostly prose about SQL: enough has been tried
        found = _query_at(answer, at, limit, dialect)
        if found is None:
            continue
        sql, stop, parsed = found
        closed = bool(text[stop:end].strip(_NOT_CLOSING)) or end < len(text)
        out.append(_Candidate(at, sql, stop, PLAIN, closed=closed, statement=not parsed.query))
        position = stop


def _query_at(
    answer: str, start: int, limit: int, dialect: str
) -> tuple[str, int, SpanParse] | None:
    """The query that starts at `start` in prose: the span up to `limit`, cut back at the
    first statement's end or where sqlglot stops reading SQL (the first word of prose after
    it), until it parses; a query must also read like one (`SpanParse.plausible`)."""
    raw = answer[start:limit]
    whole = sql_text(raw)
    end = len(whole)
    for _ in range(_MAX_CUTS):
        # A sentence's full stop (or other mark) after a query is prose: "... > 30. Done."
        sql = whole[:end].rstrip().rstrip(".!?,:").rstrip()
        if not sql:
            return None
        parsed = parse_span(sql, dialect)
        if parsed.statement and parsed.clean and (parsed.plausible or not parsed.query):
            first, last = parsed.span  # a comment after the query ("-- lists them") is prose
            return sql[first:last], start + original_offset(raw, last), parsed
        cut = parsed.first_end if parsed.first_end is not None else parsed.error_at
        if cut is None and parsed.untokenized:
            cut = _tokenizable_prefix(sql, dialect)
        if cut is None:
            cut = _last_break(sql)
        if cut is None or cut <= 0 or cut >= len(sql):
            return None
        end = len(sql[:cut].rstrip(" \t\r\n,:;(-—"))
    return None


def _tokenizable_prefix(sql: str, dialect: str) -> int | None:
    """The end of the longest prefix, cut at a `;`, a line end or a quote, that sqlglot can
    tokenize: prose after a query (an apostrophe opens a string that never closes) stops the
    tokenizer.
    A cut never drops a line that goes on with the query (`_CLAUSE_LINE`)."""
    ends = sorted({m.start() for m in re.finditer(r"[;\n`'\"]", sql)}, reverse=True)
    tried = [e for e in ends[:_MAX_CUTS] if not _CLAUSE_LINE.match(sql, e)]
    return next((e for e in tried if not parse_span(sql[:e].rstrip(), dialect).untokenized), None)


_BREAK = re.compile(r"[.!?](?=\s|$)|\n|,\s|\s[—–-]{1,2}\s|\s\(|`")


# A line that opens with a clause's keyword in capitals goes on with the query: cutting at the
# line end before it would drop the clause (`WHERE b = 'T'<junk>` would leave `SELECT a FROM t`).
_CLAUSE_LINE = re.compile(
    r"\n[ \t]*(?:WHERE|AND|OR|GROUP\s+BY|ORDER\s+BY|HAVING|LIMIT|OFFSET|ON|UNION|EXCEPT|INTERSECT"
    r"|(?:(?:INNER|LEFT|RIGHT|FULL|CROSS|NATURAL)(?:\s+OUTER)?\s+)?JOIN)\b"
)


def _last_break(sql: str) -> int | None:
    """Where the last sentence or clause break of a span is (when sqlglot gave no position);
    None when it ends a line and the next one goes on with the query."""
    breaks = [m.start() for m in _BREAK.finditer(sql)]
    if not breaks or _CLAUSE_LINE.match(sql, breaks[-1]):
        return None
    return breaks[-1]


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
        if (reading is None or reading.sql is None) and cue.rank == Rank.FINAL:
            # The answer's own field is SQL by the model's word, as a fence labelled sql is:
            # a whole query that parses is the answer even when it does not read like one in
            # prose ("SELECT 1", no FROM), which was called "not one query (it does not parse)".
            # Bounded as a prose span is: a long field is parsed by the reading above already,
            # and parsing it again whole would cost seconds on a runaway reply.
            whole = text.strip().rstrip(";").strip()
            if len(whole) <= _MAX_PROSE_SPAN and looks_like_sql(whole):
                parsed = parse_span(whole, dialect)
                if parsed.statement and parsed.clean and parsed.query:
                    out.append(_Candidate(position, whole, end, cue, source="json"))
                    continue
        if reading is None or reading.sql is None:
            # The answer's own field holding broken SQL is a broken answer; other fields are
            # prose that happens to mention SQL.
            if cue.rank == Rank.FINAL and (reading is not None or looks_like_sql(text)):
                held = reading.found if reading is not None else unreadable(text, dialect)
                why = f"a JSON {_key_name(path)} field that is not one query ({held})"
                out.append(_Candidate(position, None, end, cue, why=why, source="json"))
            continue
        parsed = parse_span(reading.sql, dialect)
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
