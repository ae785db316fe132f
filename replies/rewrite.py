"""Reading the rewriter's reply: the standalone question, and whether it builds on the last SQL.

The prompt asks for two lines (`Question: ...`, `Builds on the previous SQL: yes|no`), and models
answer in many forms: a bare question, JSON, `**Question:**`, `Standalone question:`,
`Rewritten question:`, a full-width colon, a sentence that introduces the question on the next
line. One rule reads them: the question is the value of the last field whose name mentions a
question (a JSON key, or a `Label:` line in any markdown and either colon, its value on the same
line or the next); a reply with no such field is the question itself when it has one line left
(after any introduction ending with a colon and the builds line), or one line ending with a
question mark. SQL, an apology and an empty reply are no question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from macsql.llm.reasoning import split_reasoning
from macsql.replies.markup import structure_text
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
_LABEL = re.compile(r"^(?P<label>[^:\n]{1,60}?)\s*:\s*(?P<value>.*)$")
# Markdown around a line (a heading, a quote, a bullet, a number) and emphasis inside it; an
# underscore inside a word (`singer_id`) is kept.
_MARKDOWN = re.compile(r"^[\s>#*\-+•]*(?:\d+[.)]\s+)?|[*`]+|(?<!\w)__?|__?(?!\w)")
_QUOTES = "\"'“”‘’「」『』«»"
_REFUSAL = re.compile(
    r"^(?:sorry|i'm sorry|i am sorry|i can(?:no|')t|unable|as an ai|抱歉|对不起)", re.I
)
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
    lines = [_plain(line) for line in answer.splitlines()]
    labelled: list[tuple[str, str, int]] = []  # (label, value, line index)
    for index, line in enumerate(lines):
        match = _LABEL.match(structure_text(line))
        if match is not None and len(match.group("label").split()) <= 8:
            label, value = match.group("label"), line[match.start("value") :].strip()
        elif _is_question_label(line) and len(line.split()) <= 4 and "?" not in line:
            label, value = line, ""  # a heading ("### Standalone question") over its value
        else:
            continue
        if not value:  # the value is on the next line
            value = next((n for n in lines[index + 1 :] if n.strip()), "")
        labelled.append((label, value, index))
    builds = _builds(labelled)
    asked = [v for label, v, _ in labelled if _is_question_label(label)]
    if asked:
        return Rewrite(_clean(asked[-1]), builds)
    skip = {i for label, v, i in labelled if _BUILDS_WORDS.search(label) or not _value_of(v)}
    rest = [line for i, line in enumerate(lines) if line.strip() and i not in skip]
    rest = [line for line in rest if not structure_text(line).rstrip().endswith(":")]
    if len(rest) != 1:
        rest = [line for line in rest if line.rstrip().endswith(("?", "？"))]
    return Rewrite(_clean(rest[0]) if len(rest) == 1 else None, builds)


def _plain(line: str) -> str:
    return _MARKDOWN.sub("", line).strip()


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
    """The question without markdown and quotes around it; None for SQL, an apology, or
    nothing at all."""
    value = _plain(text).strip().strip(_QUOTES).strip()
    if not value or _SQL_START.match(value) or _REFUSAL.match(value):
        return None
    return value
