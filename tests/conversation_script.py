"""A scripted three-turn conversation about concert_singer, for the conversation tests.

Turns 2 and 3 only make sense with turn 1 before them: "And the youngest?" has no subject, and
"Same, but show their age too" names neither the table nor the filter. The Decomposer answers by
the standalone question it is given, so a wrong rewrite gives a wrong (or no) SQL.
"""

from __future__ import annotations

from conftest import spider_db

CONCERT = str(spider_db("concert_singer"))
REWRITER = "You help a text-to-SQL system follow a conversation"
ANSWERER = "You turn the result of a database query"

ASKED = [
    "Who is the oldest singer from France?",
    "And the youngest?",
    "Same, but show their age too",
]
STANDALONE = {
    ASKED[1]: ("Who is the youngest singer from France?", False),
    ASKED[2]: ("What are the name and age of the youngest singer from France?", True),
}
SQL = {
    ASKED[0]: "SELECT Name FROM singer WHERE Country = 'France' ORDER BY Age DESC LIMIT 1",
    STANDALONE[ASKED[1]][0]: (
        "SELECT Name FROM singer WHERE Country = 'France' ORDER BY Age ASC LIMIT 1"
    ),
    STANDALONE[ASKED[2]][0]: (
        "SELECT Name, Age FROM singer WHERE Country = 'France' ORDER BY Age ASC LIMIT 1"
    ),
}
ROWS = [[["John Nizinik"]], [["Tribal King"]], [["Tribal King", 25]]]
"""What each turn returns; no earlier turn's values may reach the rewriter."""
RESULT_VALUES = ("John Nizinik", "Tribal King")


def newest_message(prompt: str) -> str:
    return prompt.split("Newest message:", 1)[1].splitlines()[0].strip()


def asked_question(prompt: str) -> str:
    """The question of a writer prompt (its last `[Question]` line; worked examples come first)."""
    return prompt.rsplit("[Question]", 1)[1].splitlines()[0].strip()


def respond(prompt: str) -> str:
    if prompt.startswith(REWRITER):
        standalone, builds = STANDALONE[newest_message(prompt)]
        return f"Question: {standalone}\nBuilds on the previous SQL: {'yes' if builds else 'no'}"
    if prompt.startswith("You are a database administrator checking"):
        return '{"verdict": "pass", "reason": "it matches"}'
    if prompt.startswith(("You are the Decomposer", "You are the SQL writer")):
        return f"```sql\n{SQL[asked_question(prompt)]}\n```\nQuestion Solved."
    if prompt.startswith(ANSWERER):
        return "The youngest singer from France is Tribal King."
    raise AssertionError(f"unexpected prompt {prompt[:80]!r}")
