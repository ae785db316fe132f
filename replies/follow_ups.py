"""Whether a question reads like a follow-up: it leans on something said before it.

A follow-up opens with a connective or an ellipsis ("And the youngest?", "What about 2019?",
"Of these, which ...") or refers back to something it does not name ("those", "the same", "this
country", "their" near its start). A pronoun late in a long question usually has its antecedent
in the question itself ("the courses they teach") and does not count. Used to note a follow-up
asked on a thread with no earlier question; `benchmarks/bench_follow_up_cues.py` measures the
rule on Spider's standalone questions and SParC's conversations.
"""

from __future__ import annotations

import re

_OPENERS = re.compile(
    r"(?:and|but|plus|or|then|now|so|instead|except|besides|what about|how about|what if|"
    r"same|only|just|again|ok(?:ay)?|thanks?|thank you|in that case|"
    r"(?:which|of|among|from|for|out) of (?:these|those|them)|"
    r"(?:of|among|from|for) (?:these|those|them|that|each of them))\b"
)
_BACK = re.compile(
    r"\b(?:these|those|them|they|the same|the previous|the above|that one|this one|the ones?|"
    r"as before|as above|this [a-z]+|in that [a-z]+)\b"
)
_NEAR = re.compile(r"\b(?:their|it|its)\b")
_LONG = 7
"""Past this many words, a back-reference counts only in the first four (three for their/it)."""


def follow_up_cue(question: str) -> str | None:
    """The words that make `question` read like a follow-up, or None."""
    words = re.sub(r"[^\w\s']", " ", question.lower()).split()
    text = " ".join(words)
    opener = _OPENERS.match(text)
    if opener is not None:
        return opener.group(0)
    back = _BACK.search(" ".join(words[:4]) if len(words) > _LONG else text)
    near = _NEAR.search(" ".join(words[:3]))
    found = back or near
    return found.group(0) if found is not None else None
