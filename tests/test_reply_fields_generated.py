"""Generated replies for the agents that answer in fields: the reviewer's verdict, the
refiner's choice, the paraphrases and the reviewers' professions, the rewriter's question and
the Selector's map, in the forms models write them.

Each property draws 300 replies from a seeded generator (`MACSQL_REPLY_SEED=<n>` draws
another set) and knows what a careful reader takes from each one, or that it holds nothing to
take. The reader must give the same, or nothing (the agent then falls back and says so); it must
never give another value.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from typing import Any

import pytest

from macsql.database.schema import ColumnInfo, SchemaInfo, TableInfo
from macsql.linking.selection import apply_selection
from macsql.nodes.r3.reviewers import parse_personas
from macsql.nodes.sqlfix.query_crafter import parse_paraphrases
from macsql.nodes.sqlfix.refiner import parse_choice
from macsql.nodes.sqlfix.reviewer import parse_verdict
from macsql.replies.agents import WrittenSql
from macsql.replies.reader import read_sql
from macsql.replies.rewrite import read_rewrite
from macsql.replies.selection import read_selection

SEED = int(os.environ.get("MACSQL_REPLY_SEED", "37"))
CASES = 300
Case = tuple[str, Any]
EXPLANATION = "1. `SELECT name` lists the names.\n2. `WHERE country = 'France'` keeps France."


def _around(rng: random.Random, core: str) -> str:
    """The answer as model families write it: bare, after a preamble, with thinking, with a
    chat template's end token, before a closing remark."""
    return rng.choice(
        [core, f"Here is my answer:\n\n{core}", f"<think>\nLet me check. Hmm.\n</think>\n\n{core}",
         f"{core}<|im_end|>", f"{core}\n\nLet me know if you need anything else."]
    )  # fmt: skip


def _check(make: Callable[[random.Random], Case], read: Callable[[str], Any]) -> None:
    rng = random.Random(f"{SEED}-{make.__name__}")
    wrong, missed = [], 0
    for index in range(CASES):
        reply, expected = make(rng)
        got = read(reply)
        if got is None and expected is not None:
            missed += 1
        if got != expected and got is not None:
            wrong.append(f"#{index}: {reply!r}\n  expected {expected!r}, read {got!r}")
    assert not wrong, f"seed {SEED}: {len(wrong)} of {CASES} misread:\n" + "\n".join(wrong[:4])
    assert missed == 0, f"seed {SEED}: {missed} of {CASES} readable replies were not read"


# --------------------------------------------------------------------------- verdicts


def verdict_reply(rng: random.Random) -> Case:
    """A verdict under another key, as a boolean, a label line, words after the label, a
    draft then a final verdict; or a reply with none (an echoed template, no verdict)."""
    v = rng.choice(["pass", "error"])
    other = "error" if v == "pass" else "pass"
    ok = v == "pass"
    form = rng.choice(["key", "boolean", "line", "words", "draft", "none"])
    if form == "key":
        key = rng.choice(["decision", "Verdict", "judgement", "final_verdict", "status"])
        word = rng.choice([v, v.upper(), f"{v.title()}.", "correct" if ok else "incorrect"])
        core = json.dumps({key: word, "reason": "checked"})
    elif form == "boolean":
        key, value = rng.choice(
            [("correct", ok), ("is_correct", "yes" if ok else "no"), ("has_error", not ok),
             ("passed", ok)]
        )  # fmt: skip
        core = json.dumps({key: value, "reason": "checked"})
    elif form == "line":
        label = rng.choice(["Verdict", "**Verdict:**", "Decision", "## Verdict\n", "Verdict -"])
        sep = "" if label.endswith((":**", "\n", "-")) else ":"
        core = f"{label}{sep} {rng.choice([v, v.upper(), f'**{v}**'])}"
    elif form == "words":
        tail = rng.choice(
            ["no issues found", "no mismatch with the question", "the query is correct"]
            if ok
            else ["not correct", "does not pass", "there is an error in WHERE"]
        )
        core = f"Verdict: {tail}."
    elif form == "draft":
        draft = rng.choice([json.dumps({"verdict": other}), f"Draft verdict: {other}"])
        final = rng.choice([json.dumps({"verdict": v, "reason": "again"}), f"Final verdict: {v}"])
        core = f"{draft}\n\nOn reflection, the filter needs another look.\n\n{final}"
    else:
        core = rng.choice(
            ['{"verdict": "<pass or error>", "reason": "<one sentence>"}',
             'I will end with {"verdict": "pass" | "error"}.', "Verdict: pending the data.",
             "Result: no rows, as expected for this filter."]
        )  # fmt: skip
        return _around(rng, f"{EXPLANATION}\n\n{core}"), None
    return _around(rng, f"{EXPLANATION}\n\n{core}"), v


def _verdict(reply: str) -> Any:
    found = parse_verdict(reply)
    return None if found is None else found[0]


def test_the_reviewers_verdict_is_read_in_every_form() -> None:
    _check(verdict_reply, _verdict)


def test_a_verdict_after_its_label_is_read_by_its_words() -> None:
    assert parse_verdict("Verdict: no issues found.") == ("pass", "")
    assert parse_verdict("Verdict: does not pass, the sort is wrong.") == ("error", "")
    assert parse_verdict("Verdict: No - the sort is wrong.") == ("error", "")
    assert parse_verdict('{"verdict": "pass", "reason": "no errors in any clause"}') == (
        "pass",
        "no errors in any clause",
    )
    # An echoed template names both verdicts, and says neither.
    assert parse_verdict('{"verdict": "pass" | "error", "reason": "..."}') is None


# --------------------------------------------------------------------------- choices

CANDIDATES = [
    "SELECT name FROM singer WHERE country = 'France'",
    "SELECT name FROM singer WHERE lower(country) = 'france'",
    "SELECT DISTINCT name FROM singer WHERE country = 'France'",
]
OWN_FIX = "SELECT name FROM singer WHERE country LIKE 'France%'"


def choice_reply(rng: random.Random) -> Case:
    """A candidate's number in other words, under another key, as a label line, after the
    SQL of another candidate quoted in the explanation; or the model's own fix."""
    k = rng.randint(1, 3)
    form = rng.choice(["value", "key", "line", "quoted", "own", "none"])
    if form == "value":
        value = rng.choice([str(k), f"Candidate {k}", f"#{k}", float(k), [k]])
        core = json.dumps({"choice": value, "explanation": "it matches"})
    elif form == "key":
        key = rng.choice(["chosen_candidate", "candidate", "selected", "best_candidate"])
        core = json.dumps({key: k, "explanation": "it matches"})
    elif form == "line":
        core = rng.choice([f"Choice: {k}", f"**Choice:** Candidate {k}", f"Chosen candidate: {k}"])
    elif form == "quoted":
        other = k % 3 + 1
        pick = rng.choice([f"Choice: {k}", json.dumps({"choice": k}), f"Choice: candidate {k}"])
        core = (
            f"Candidate {other} is wrong:\n```sql\n{CANDIDATES[other - 1]}\n```\n"
            f"Candidate {other}: returns 5 rows.\n\n{pick}"
        )
    elif form == "own":
        value = rng.choice([0, "0", "none", None])
        core = (
            f"{json.dumps({'choice': value, 'explanation': 'none fits'})}\n```sql\n{OWN_FIX}\n```"
        )
        return _around(rng, core), OWN_FIX
    else:
        core = rng.choice(['{"choice": <the number>}', "I am not sure which one is best."])
        return _around(rng, core), None
    return _around(rng, core), CANDIDATES[k - 1]


def _choice(reply: str) -> Any:
    written = WrittenSql(read_sql(reply).sql, reply, {})
    return parse_choice(written, [{"sql": s} for s in CANDIDATES])[0]


def test_the_refiners_choice_is_read_in_every_form() -> None:
    _check(choice_reply, _choice)


# --------------------------------------------------------------------------- lists

QUESTION = "What are the names of singers from France?"
WORDINGS = [
    "Which singers come from France?",
    "List the French singers.",
    "What are the names of the singers from France?",
]
PROFESSIONS = ["SQL engineer who checks joins", "music analyst", "QA engineer for NULLs"]


def list_reply(items: list[str], key: str) -> Callable[[random.Random], Case]:
    def make(rng: random.Random) -> Case:
        """A list under another key, bare, of objects, numbered or labelled lines, with
        drafts in the thinking; or an echoed template."""
        form = rng.choice(["key", "bare", "objects", "numbered", "labelled", "none"])
        if form == "key":
            core = json.dumps({rng.choice([key.title(), f"{key}_list", f"my_{key}"]): items})
        elif form == "bare":
            core = rng.choice(
                [json.dumps(items), repr(items), f"```json\n{json.dumps(items)}\n```"]
            )
        elif form == "objects":
            core = json.dumps({key: [{rng.choice(["text", "value"]): t} for t in items]})
        elif form == "numbered":
            core = "\n".join(f"{i}. {t}" for i, t in enumerate(items, 1))
        elif form == "labelled":
            name = key.rstrip("s").title()
            core = "\n".join(f"**{name} {i}:** {t}" for i, t in enumerate(items, 1))
        else:
            return _around(rng, json.dumps({key: ["<item 1>", "<item 2>", "..."]})), None
        reply = _around(rng, core)
        if rng.random() < 0.3:
            reply = f"<think>Drafts:\n1. a draft\n2. another\n3. a third</think>\n{reply}"
        return reply, items

    make.__name__ = f"{key}_reply"
    return make


def test_paraphrases_are_read_in_every_form() -> None:
    _check(
        list_reply(WORDINGS, "paraphrases"),
        lambda reply: parse_paraphrases(reply, QUESTION, 3) or None,
    )


def test_reviewers_are_read_in_every_form() -> None:
    _check(list_reply(PROFESSIONS, "reviewers"), lambda reply: parse_personas(reply, 3) or None)


# --------------------------------------------------------------------------- the rewriter

ASKED = [
    "What is the average age of singers from France?",
    "List the names of stadiums with a capacity above 5000.",
]


def rewrite_reply(rng: random.Random) -> Case:
    """The question quoted in a sentence that names it, set off in quotes or bold among
    other lines, after an introduction on its line; or an answer instead of a question, or
    the prompt's template echoed."""
    q = rng.choice(ASKED)
    form = rng.choice(["named", "set_off", "introduced", "answer", "template"])
    if form == "named":
        core = f'I merge the two messages.\n\nTherefore, the rewritten question is "{q}"'
    elif form == "set_off":
        core = f"I merge the two messages.\n\n{rng.choice([f'**{q}**', f'“{q}”', f'> {q}'])}"
    elif form == "introduced":
        core = f"{rng.choice(['Here you go', 'Sure', 'Done'])}: {q}"
    elif form == "answer":
        core = rng.choice(
            ["There are 12 singers from France.", "Answer: 12", "Result: 3",
             "The average age of singers from France is 34.5.",
             "Could you clarify what you mean by 'those'?"]
        )  # fmt: skip
        return _around(rng, core), None
    else:
        core = "Question: <the standalone question>\nBuilds on the previous SQL: <yes|no>"
        return _around(rng, core), None
    return _around(rng, f"{core}\nBuilds on the previous SQL: no"), q


def _question(reply: str) -> Any:
    return read_rewrite(reply).question


def test_the_rewriters_question_is_read_and_an_answer_is_not_taken_for_one() -> None:
    _check(rewrite_reply, _question)


# --------------------------------------------------------------------------- the Selector

SCHEMA = SchemaInfo(
    "generated",
    "sqlite",
    [
        TableInfo(name, [ColumnInfo(c, "TEXT", primary_key=c == columns[0]) for c in columns])
        for name, columns in [
            ("singer", ["singer_id", "name", "age", "country"]),
            ("concert", ["concert_id", "year", "theme"]),
            ("stadium", ["stadium_id", "name", "capacity"]),
        ]
    ],
    [],
)


def _kept(selection: dict[str, Any] | None) -> Any:
    if selection is None:
        return None
    result = apply_selection(SCHEMA, selection)
    if result.notes or not result.applied:
        return None  # noted: the Selector's fallback says what could not be applied
    return [(t.name, [c.name for c in t.columns]) for t in result.schema.tables]


def selection_reply(rng: random.Random) -> Case:
    """A map with a full stop after a decision, a remark after it, table names quoted or
    qualified, or written as text after a draft in the thinking."""
    selection = {
        "singer": rng.choice(["keep_all", ["name", "age"]]),
        "concert": rng.choice(["keep_all", "drop_all"]),
        "stadium": rng.choice(["drop_all", ["name"]]),
    }
    form = rng.choice(["stop", "remark", "names", "thinking"])
    if form == "stop":
        shown = {t: f"{v}." if isinstance(v, str) else v for t, v in selection.items()}
        core = json.dumps(shown)
    elif form == "names":
        shown = {
            rng.choice([f"`{t}`", f"main.{t}", f"[{t}]", t.upper()]): v
            for t, v in selection.items()
        }
        core = json.dumps(shown)
    else:
        remark = rng.choice(["  # why", " (needed)", " // note"]) if form == "remark" else ""
        core = "\n".join(
            f"{t}: {'[' + ', '.join(v) + ']' if isinstance(v, list) else v}{remark}"
            for t, v in selection.items()
        )
        if form == "thinking":
            core = (
                "<think>\nsinger: drop_all\nconcert: drop_all\nstadium: keep_all\n</think>\n" + core
            )
    return _around(rng, core), _kept(selection)


def test_the_selectors_map_is_read_with_remarks_and_quoted_names() -> None:
    _check(selection_reply, lambda reply: _kept(read_selection(reply, SCHEMA)[0]))


def test_a_label_is_taken_off_a_list_item_only_when_it_names_the_list() -> None:
    reply = "- What is the ratio: wins to losses?\n- Rewording: Which team wins most?"
    assert parse_paraphrases(reply, QUESTION, 3) == [
        "What is the ratio: wins to losses?",
        "Which team wins most?",
    ]
    assert parse_verdict('{"verdict": "yes"}') == ("pass", "")


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        ("In 2014, there were 3 concerts.", None),
        ("From the data, the youngest singer is Joe Sharp.", None),
        ("Answer: 12", None),
        ("For each country, list the singers.", "For each country, list the singers."),
        ("Here you go: Which concerts took place in 2015?", "Which concerts took place in 2015?"),
        ("Do you mean singers or bands?", None),
        ("Rewritten question: N/A", None),
    ],
)  # fmt: skip
def test_a_line_no_label_calls_the_question_must_ask(reply: str, question: str | None) -> None:
    assert read_rewrite(reply).question == question
