"""Reading an agent's answer fields (a verdict, a choice, a list) from a reply in any layout.

The agents that answer in fields ask for one JSON object, and models answer with that object,
with other keys for the same field (`decision` for `verdict`, `chosen_candidate` for
`choice`), with the field as a `Label: value` line, a bare list, a numbered list, or a draft
followed by a final answer. One rule reads them: every field of the reply whose name means the
one asked for, from its JSON objects (nested ones too) and its `Label: value` lines, in the
order the reply gives them; the last one whose value reads is the answer. A reasoning model's
thinking is never read. A value that is the prompt's own placeholder (`<pass or error>`,
`"..."`) is no answer, nor is one that says both (`pass | error`), so an echoed template never
becomes one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from macsql.llm.reasoning import split_reasoning
from macsql.replies.markup import (
    bracketed_spans,
    fences,
    field_lines,
    lenient_value,
    without_markdown,
)

# `Label: value` (also `Label - value`, `Label = value`), the label a few words with no quote.
_LABEL = re.compile(r"^(?P<label>[^:\n\"“«{\[]{1,50}?)\s*(?::|：|\s[-–—=]\s|=)\s*(?P<value>.*)$")
_PLACEHOLDER = re.compile(r"^\s*(?:<[^<>]*>|\.{3}|…|\[[^\[\]]*\]|\{[^{}]*\})?\s*$")


def is_placeholder(value: Any) -> bool:
    """A prompt's placeholder echoed as a value: `<...>`, `...`, `[...]`, or empty."""
    return isinstance(value, str) and bool(_PLACEHOLDER.match(value))


def answer_text(reply: str) -> str:
    """The reply without a reasoning model's thinking."""
    return split_reasoning(reply or "")[0]


def fields(reply: str, named: Callable[[str], bool]) -> list[tuple[str, Any]]:
    """Every (name, value) of the reply whose name `named` accepts, in the reply's order: the
    keys of its JSON objects (nested too) and its `Label: value` lines (in any markdown, tags
    named as the field, a table's two-cell rows); thinking is never read."""
    answer = answer_text(reply)
    found: list[tuple[int, str, Any]] = []
    covered: list[tuple[int, int]] = []
    spans = [(a, b, answer[a:b]) for a, b in bracketed_spans(answer, "{")]
    spans += [(f.start, f.end, f.body.strip()) for f in fences(answer)]
    for start, end, text in sorted(spans, key=lambda s: s[0]):
        value = lenient_value(text, "{")
        if not isinstance(value, dict):
            continue
        covered.append((start, end))
        found += [(start, k, v) for k, v in _items(value) if named(str(k))]
    offset = 0
    lines = answer.splitlines(keepends=True)
    for index, line in enumerate(lines):
        start, offset = offset, offset + len(line)
        if any(a <= start < b for a, b in covered):
            continue
        for part in field_lines(line, named).splitlines():
            plain = without_markdown(part)
            match = _LABEL.match(plain)
            if match is not None and named(match.group("label").strip()):
                label, value = match.group("label").strip(), match.group("value").strip()
            elif plain and len(plain.split()) <= 3 and named(plain):
                label, value = plain, ""  # a heading over its value ("## Verdict")
            else:
                continue
            if not value:  # the value is on the next line
                later = (without_markdown(n) for n in lines[index + 1 :])
                value = next((n for n in later if n), "")
            found.append((start, label, value))
    return [(k, v) for _, k, v in sorted(found, key=lambda f: f[0])]


def _items(value: Any, depth: int = 0) -> list[tuple[str, Any]]:
    """The key-value pairs of a JSON value and of the objects nested in it, outer ones first."""
    if depth > 4:
        return []
    out: list[tuple[str, Any]] = []
    children: list[Any] = []
    if isinstance(value, dict):
        out += [(str(k), v) for k, v in value.items()]
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    for child in children:
        if isinstance(child, dict | list):
            out += _items(child, depth + 1)
    return out


# --------------------------------------------------------------------------- verdicts

_PASS = frozenset(
    {"pass", "passed", "passes", "correct", "ok", "okay", "approve", "approved", "valid",
     "accept", "accepted", "fine", "good", "right", "lgtm"}
)  # fmt: skip
_ERROR = frozenset(
    {"error", "errors", "incorrect", "wrong", "fail", "failed", "fails", "reject", "rejected",
     "invalid", "mismatch", "mismatches", "issue", "issues", "problem", "problems", "bug",
     "bugs", "mistake", "mistakes", "needs_fix", "fix", "flawed"}
)  # fmt: skip
_NEGATORS = frozenset({"no", "not", "never", "without", "nothing", "none", "isn't", "doesn't",
                       "don't", "didn't", "cannot"})  # fmt: skip
# "No" as the whole answer, or before a comma or a dash ("No - the sort is wrong"), not "no rows".
_BARE_NO = re.compile(r"\s*no\s*(?:[.,;:!\-–—]|$)", re.I)
_YES = frozenset({"yes", "true", "y", "1"})
_NO = frozenset({"no", "false", "n", "0"})
_VERDICT_NAME = re.compile(
    r"verdict|decision|judge?ment|conclusion|assessment|outcome|evaluation|status|result|answer",
    re.I,
)


def polarity(value: Any) -> bool | None:
    """True for a value that says pass, False for error, None when it says neither or both.
    A word after a negation within three words counts the other way ("no issues found" is a
    pass, "does not pass" an error); a bare "no" opening the value is an error."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, str) or is_placeholder(value):
        return None
    words = re.findall(r"[a-z_']+", value.lower())
    said: set[bool] = set()
    negated_until = -1
    for index, word in enumerate(words):
        if word in _NEGATORS:
            negated_until = index + 3
            continue
        side = True if word in _PASS else False if word in _ERROR else None
        if side is None:
            continue
        said.add(side != (index <= negated_until))
    if not said and _BARE_NO.match(value):
        said.add(False)
    return said.pop() if len(said) == 1 else None


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    words = re.findall(r"\w+", str(value).lower())
    if len(words) == 1 and words[0] in _YES | _NO:
        return words[0] in _YES
    return None


def read_verdict(reply: str, found: dict[str, Any] | None = None) -> tuple[bool, str] | None:
    """(passed, reason) of a reviewer's reply (or of its structured fields), or None.

    The verdict is the last field named as one (`verdict`, `decision`, `result`, ...) whose
    value says pass or error, or a field named by the verdict itself (`correct`, `has_error`)
    holding yes or no."""

    def named(name: str) -> bool:
        return (
            bool(_VERDICT_NAME.search(name))
            or _polar_name(name) is not None
            or _word(name) == "reason"
        )

    pairs = list(found.items()) if found is not None else fields(reply, named)
    reasons = [v for k, v in pairs if _word(k) == "reason" and isinstance(v, str)]
    reason = reasons[-1].strip() if reasons else ""
    for name, value in reversed(pairs):
        if _VERDICT_NAME.search(str(name)):
            side = polarity(value)
            side = _truth(value) if side is None else side  # "verdict: yes"
            if side is not None:
                return side, reason
        own = _polar_name(str(name))
        truth = _truth(value)
        if own is not None and truth is not None:
            return own == truth, reason
    return None


def _polar_name(name: str) -> bool | None:
    """True for a field named as a pass (`correct`, `is_valid`), False as an error
    (`has_error`), None otherwise."""
    words = [w for w in _word(name).split("_") if w not in {"is", "has", "the", "query", "sql"}]
    if len(words) != 1:
        return None
    return True if words[0] in _PASS else False if words[0] in _ERROR else None


def _word(text: Any) -> str:
    return "_".join(re.findall(r"[a-z0-9]+", str(text).lower()))


# --------------------------------------------------------------------------- a choice

_CHOICE_NAME = re.compile(r"choice|chosen|choose|select|candidate|pick", re.I)
_NONE_WORDS = frozenset({"none", "null", "own", "0", "zero", "no"})


def read_choice(reply: str, found: dict[str, Any] | None = None) -> int | None:
    """The number of the candidate a reply chooses (0: none, its own fix), or None when it
    names none: the last field named as a choice whose value holds one number."""
    pairs = list(found.items()) if found is not None else fields(reply, _is_choice_name)
    for name, value in reversed(pairs):
        if not _is_choice_name(str(name)) or is_placeholder(value):
            continue
        number = _number(value)
        if number is not None:
            return number
    return None


def _is_choice_name(name: str) -> bool:
    """A field named as the choice: not the SQL or the explanation, and no number in the name
    ("Candidate 3: returns 5 rows" is about a candidate, not the choice)."""
    return bool(_CHOICE_NAME.search(name)) and not re.search(
        r"sql|query|reason|explan|\d", name, re.I
    )


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if value is None:
        return 0
    if isinstance(value, int | float):
        return int(value) if float(value).is_integer() else None
    if isinstance(value, list):
        return _number(value[0]) if len(value) == 1 else None
    # A remark in parentheses ("Candidate 2 (it returns 5 rows)") is not the choice.
    numbers = re.findall(r"\d+(?:\.0+)?(?!\.?\d)", re.sub(r"\([^()]*\)", "", str(value)))
    if len(numbers) == 1:
        return int(float(numbers[0]))
    if not numbers and _word(value).split("_")[0] in _NONE_WORDS:
        return 0
    return None


# --------------------------------------------------------------------------- a list

_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(?P<item>.+?)\s*$")
# A field of a numbered series, its name the list's ("Paraphrase 2: ...", "Reviewer 1 - ...").
_NUMBERED_FIELD = re.compile(
    r"^(?P<label>[^\W\d][\w ]{0,30}?)\s*\d+\s*(?::|\s[-–—]\s)\s*(?P<item>.+)$"
)
# A label before an item ("**Paraphrase 1:**", "Rewording:"): a few words, maybe numbered.
_ITEM_LABEL = re.compile(r"^(?P<label>[\w ]{1,30}?)\s*\d*\s*:\s+(?=\S)")


def read_list(reply: str, named: Callable[[str], bool]) -> list[str]:
    """The list a reply answers with: the last JSON list under a key `named` accepts, else its
    last JSON list of text on its own, else its numbered or bulleted lines; an item that is an
    object gives its text values, and a placeholder is no item. Thinking is never read."""
    answer = answer_text(reply)
    listed = [v for k, v in fields(answer, named) if isinstance(v, list)]
    if not listed:
        spans = [(a, b, answer[a:b]) for a, b in bracketed_spans(answer, "[")]
        spans += [(f.start, f.end, f.body.strip()) for f in fences(answer)]
        inside = bracketed_spans(answer, "{")
        for start, _end, text in sorted(spans, key=lambda s: s[0]):
            if any(a < start < b for a, b in inside):
                continue  # a list inside an object is one of its fields
            value = lenient_value(text, "[")
            if isinstance(value, list) and value:
                listed.append(value)
    if listed:
        items = [_item_text(item) for item in listed[-1]]
    else:
        items = []
        for line in answer.splitlines():
            bullet = _LIST_ITEM.match(line)
            if bullet is not None:
                item = without_markdown(bullet.group("item"))
                label = _ITEM_LABEL.match(item)
                if label is not None and named(label.group("label")):
                    item = item[label.end() :]  # "- Rewording: ..."; a question's colon stays
                items.append(item)
                continue
            numbered = _NUMBERED_FIELD.match(without_markdown(line))
            if numbered is not None and named(numbered.group("label")):
                items.append(numbered.group("item"))  # "Paraphrase 2: ..."
    out = [" ".join(item.split()).strip().strip("\"'“”").strip() for item in items]
    return [item for item in out if item and not is_placeholder(item)]


def _item_text(item: Any) -> str:
    if isinstance(item, dict):
        return ", ".join(str(v) for v in item.values() if isinstance(v, str) and v.strip())
    return "" if item is None else str(item)
