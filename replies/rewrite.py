"""Reading the rewriter's reply: the standalone question, and whether it builds on the last SQL.

The prompt asks for two lines (`Question: ...`, `Builds on the previous SQL: yes|no`), and models
answer in many forms. One rule reads them: the reply is read as fields, whatever holds them (a
JSON object's keys; XML or HTML tags, `<question>...</question>`; a markdown table's rows; a
`Label: value` line in any markdown, with either colon or an arrow or dash after the label, the
value on the same line or the next), and the question is the value of the last field whose name
mentions a question. A reply with no such field is the question itself when it has one line left
(after any introduction ending with a colon and the builds line), or one line ending with a
question mark; a sentence that quotes a question (`The standalone version is "...?"`) gives the
quoted question. SQL, an apology and an empty reply are no question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from macsql.llm.reasoning import split_reasoning
from macsql.replies.fields import is_placeholder
from macsql.replies.markup import field_lines, structure_text, without_markdown
from macsql.replies.reader import extract_json_object

_QUESTION_WORDS = re.compile(
    r"question|rewrit|standalone|stand-alone|reformulat|rephras|paraphras|"
    r"问题|問題|質問|pregunta|frage|domanda|вопрос",
    re.I,
)
_BUILDS_WORDS = re.compile(
    r"build|previous|prior|earlier|last sql|基于|上一|anterior|vorherig", re.I
)
_YES = frozenset({"yes", "true", "y", "1", "是", "是的", "sí", "si", "ja", "oui", "да"})
_NO = frozenset({"no", "false", "n", "0", "否", "不", "不是", "nein", "non", "нет"})
# A label holds no quote: a colon inside a quoted question is the question's own.
_LABEL = re.compile(r"^(?P<label>[^:\n\"“「«]{1,60}?)\s*:\s*(?P<value>.*)$")
# A label set off by an arrow, a dash or `=` instead of a colon ("Rewritten → ...",
# "Standalone question - ..."): read as one only when the label names a field of the reply.
_SEPARATED = re.compile(r"^(?P<label>[^:\n\"“「«]{1,60}?)\s*(?:->|→|=>|⇒|=|[-–—])\s+(?P<value>.*)$")
_QUOTES = "\"'“”‘’「」『』«»"
_REFUSAL = re.compile(
    r"^(?:sorry|i'm sorry|i am sorry|i can(?:no|')t|unable|as an ai|抱歉|对不起)", re.I
)
_NOT_GIVEN = re.compile(r"^(?:n/?a|none|null|nil|not applicable|[-—–]+)[.!]?$", re.I)
_SQL_START = re.compile(r"^\s*(?:select|with)\s", re.I)


@dataclass(frozen=True)
class Rewrite:
    question: str | None
    """The standalone question, or None when the reply held none."""
    builds_on_sql: bool


def read_rewrite(reply: str) -> Rewrite:
    """The standalone question of a rewriter's reply in any of the forms above."""
    answer, _thinking = split_reasoning(reply or "")
    if not answer.strip():
        return Rewrite(None, False)
    found = extract_json_object(answer)
    if found is not None:
        question = _json_question(found)
        if question is not None:
            return Rewrite(_clean(question), _json_builds(found))
    raw_lines = field_lines(answer, _is_field_name).splitlines()
    lines = [without_markdown(line) for line in raw_lines]
    labelled: list[tuple[str, str, int]] = []  # (label, value, line index)
    for index, line in enumerate(lines):
        match = _field(structure_text(line))
        if match is not None and len(match.group("label").split()) <= 8:
            label, value = match.group("label"), line[match.start("value") :].strip()
        elif _is_heading(line):
            label, value = line, ""  # a heading ("### Standalone question") over its value
        elif _quoted_question(line) and _is_question_label(_before_quote(line)):
            # A sentence that names the question and quotes it ("the rewritten question is
            # "…"") gives it as a field does.
            label, value = _before_quote(line), _quoted_question(line) or ""
        else:
            continue
        if not value:  # the value is on the next line, unless that line is a field of its own
            value = next((n for n in lines[index + 1 :] if n.strip()), "")
            named = _field(structure_text(value))
            if named is not None and _is_field_name(named.group("label")):
                value = ""
        labelled.append((label, value, index))
    builds = _builds(labelled)
    asked = [v for label, v, _ in labelled if _is_question_label(label)]
    if asked:
        return Rewrite(_clean(asked[-1]), builds)
    skip = {i for label, v, i in labelled if _BUILDS_WORDS.search(label) or not _value_of(v)}
    rest = [line for i, line in enumerate(lines) if line.strip() and i not in skip]
    rest = [line for line in rest if not structure_text(line).rstrip().endswith(":")]
    # Of several lines, the one that asks (a question mark), else the one set off in quotes or
    # bold, else the one that opens as a request.
    if len(rest) != 1:
        rest = (
            [line for line in rest if _unquoted(line).endswith(("?", "？"))]
            or [line for line in rest if _set_off(raw_lines, line)]
            or [r for r in rest if _REQUEST.match(without_markdown(_after_introduction(r)))]
        )
    if len(rest) != 1:
        return Rewrite(None, builds)
    line = _quoted_question(rest[0]) or _after_introduction(rest[0])
    question = _clean(line)
    # A line no label calls the question is one only when it asks or requests: a model that
    # answered instead ("There are 12 singers.", "Answer: 12") gave no question.
    return Rewrite(question if question and _asks(question) else None, builds)


def _after_introduction(line: str) -> str:
    """The line without an introduction before its first colon ("Here you go: Which ...?"):
    words that neither ask nor request are not part of the question ("What is the ratio:
    wins to losses?" keeps its colon)."""
    head, colon, tail = structure_text(line).partition(":")
    if colon and tail.strip() and not _opens_asking(head) and _asks(tail):
        return line[len(head) + 1 :].strip()
    return line


def _unquoted(line: str) -> str:
    return (_quoted_question(line) or line).strip().strip(_QUOTES).rstrip()


def _before_quote(line: str) -> str:
    match = _QUOTED_AT_END.search(line)
    return line[: match.start()].strip() if match is not None else ""


def _set_off(raw_lines: list[str], line: str) -> bool:
    """The line stands in quotes or emphasis of its own (`"…"`, `**…**`, `> …`)."""
    raw = next((r.strip() for r in raw_lines if without_markdown(r) == line), "")
    quoted = line[:1] in _QUOTES and line.rstrip(".")[-1:] in _QUOTES
    return quoted or (bool(raw) and raw != line and raw[0] in "*>_`")


# The first words of a question or a request to the database, in English; a line in another
# script is taken as it is written.
_ASKING = re.compile(
    r"(?:what|what's|which|who|whom|whose|where|when|why|how|is|are|was|were|do|does|did|can|"
    r"could|would|will|has|have|should|list|show|find|give|return|count|display|get|name|tell|"
    r"provide|compute|calculate|determine|identify|retrieve|fetch|report|please|sort|order|"
    r"rank|compare|select|output|print|enumerate|locate|look|check|state|describe|"
    r"summari[sz]e|sum|total|average|group|filter|exclude|include|break|tally|arrange)\b",
    re.I,
)
# A phrase that may open a request before its verb ("For each country, list ..."); a sentence
# it opens is a request only when a question or request word follows ("In 2014, there were
# 3 concerts" is an answer).
_LEADING = re.compile(
    r"(?:for|in|among|of|from|per|by|each|every|all|between|during|since|before|after|at|on|"
    r"to|excluding|including)\b",
    re.I,
)


# Of several lines, one that opens as a request or a question is the question ("List the
# names ...", after "Here you go:"); a preposition may open a sentence of reasoning too.
_REQUEST = re.compile(
    r"(?:what|which|who|whom|whose|where|when|why|how|list|show|find|give|return|count|"
    r"display|name|retrieve|calculate|compute|determine|identify)\b",
    re.I,
)
_CLARIFY = re.compile(
    r"\b(?:clarify|do you mean|you mean by|could you (?:specify|confirm)|which one do you)\b",
    re.I,
)


def _asks(question: str) -> bool:
    """A question or a request: it ends with a question mark, opens with a question or request
    word, or is not written in latin script (its words are not judged); a question that asks
    the user what they meant is neither."""
    text = question.strip()
    if _CLARIFY.search(text):
        return False  # asked back of the user, not of the database
    return text.endswith(("?", "？")) or _opens_asking(text)


def _opens_asking(text: str) -> bool:
    text = without_markdown(text).lstrip("¿¡")
    if text[:1].isalpha() and not text[:1].isascii():
        return True  # another script: its words are not judged
    if _LEADING.match(text):
        return any(_REQUEST.fullmatch(word) for word in re.split(r"[\s,;]+", text)[1:])
    return bool(_ASKING.match(text))


def _is_heading(line: str) -> bool:
    """A few words that name the question, over it ("### Standalone question"): no question
    mark and no quote, which a question's own line may have."""
    plain = structure_text(line)
    return (
        _is_question_label(line)
        and len(line.split()) <= 4
        and not any(mark in plain for mark in "?" + _QUOTES)
    )


def _field(line: str) -> re.Match[str] | None:
    """`label: value`, or a field's name set off by an arrow or a dash: the first separator
    ends the label ("Question -> What is the ratio: wins to losses?")."""
    colon = _LABEL.match(line)
    separated = _SEPARATED.match(line)
    if separated is None or not _is_field_name(separated.group("label")):
        return colon
    if colon is None or separated.end("label") < colon.end("label"):
        return separated
    return colon


def _is_field_name(name: str) -> bool:
    words = name.replace("_", " ")
    return bool(_QUESTION_WORDS.search(words) or _BUILDS_WORDS.search(words))


def _quoted_question(line: str) -> str | None:
    """The question a sentence introduces in quotes (`The standalone version is "..."`): one
    quoted span that ends the line, after words that introduce it."""
    match = _QUOTED_AT_END.search(line)
    if match is None or not match.string[: match.start()].strip():
        return None
    return next(part for part in match.groups() if part)


_QUOTED_AT_END = re.compile(r'(?:"([^"]+)"|“([^”]+)”|「([^」]+)」|«([^»]+)»)[\s.!?。:]*$')


def _value_of(value: str) -> str:
    return value.strip()


def _is_question_label(label: str) -> bool:
    return bool(_QUESTION_WORDS.search(label)) and not _BUILDS_WORDS.search(label)


def _builds(labelled: list[tuple[str, str, int]]) -> bool:
    for label, value, _ in reversed(labelled):
        if _BUILDS_WORDS.search(label) and not _QUESTION_WORDS.search(label):
            return _yes(value)
    return False


def _yes(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    words = re.findall(r"\w+", str(value).lower())
    return bool(words) and words[0] in _YES


def _json_question(found: dict[str, Any]) -> str | None:
    keys = [k for k in found if _is_question_label(str(k)) and isinstance(found[k], str)]
    return found[keys[-1]] if keys else None


def _json_builds(found: dict[str, Any]) -> bool:
    keys = [k for k in found if _BUILDS_WORDS.search(str(k)) and not _QUESTION_WORDS.search(str(k))]
    return _yes(found[keys[-1]]) if keys else False


def _clean(text: str) -> str | None:
    """The question without markdown and quotes around it; None for SQL, an apology, the
    prompt's placeholder echoed (`<the standalone question>`), a mark that none is given
    (`N/A`), or nothing at all."""
    value = without_markdown(text).strip().strip(_QUOTES).strip()
    if (
        not value
        or _SQL_START.match(value)
        or _REFUSAL.match(value)
        or is_placeholder(value)
        or _NOT_GIVEN.match(value)
    ):
        return None
    return value
