"""What the words that introduce a query say about it: the final answer, or one that loses.

A careful reader of a reply with several queries goes by how each is introduced: "Final answer:",
an `<answer>` tag or a JSON `answer` key mark the one to run; "for example", "alternatively",
"my first draft", "the original query" or "this is wrong" mark one not to. The cue nearest to
the query decides ("the previous query was wrong; the corrected one:" introduces a final
query). The lexicon covers English and the languages models most often answer in; a query with
no cue is a plain one. Words common in any explanation ("check", "verify") are not cues: a final
query introduced by "let me double-check the join" must not lose to an earlier draft.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache


class Rank(IntEnum):
    """How a candidate query competes: a higher rank wins; among equals the last wins."""

    DEMOTED = 0
    """Introduced as an example, an alternative or a draft, a DDL echo, or part of another."""
    PLAIN = 1
    FINAL = 2


@dataclass(frozen=True)
class Cue:
    rank: Rank
    kind: str
    """'final', 'example', 'alternative', 'draft', ... ('' for a plain query)."""
    words: str = ""
    """The words that set it, as the reply wrote them."""


PLAIN = Cue(Rank.PLAIN, "")

# Latin-script cues match whole words; CJK cues (no spaces between words) match as written.
_CUES: dict[str, tuple[str, ...]] = {
    "final": (
        r"final(?:ly)?", r"answer", r"correct(?:ed)?", r"fixed", r"solution", r"definitive",
        r"respuesta", r"réponse", r"resposta", r"antwort", r"endgültige?", r"korrigierte?",
        r"corregid[ao]", r"corrigée?", r"finale?s?", r"ответ\w*", r"окончательн\w*",
        r"итогов\w*", r"最终", r"最終", r"答案", r"正确", r"正確", r"解答", r"回答", r"最后",
    ),
    "example": (
        r"examples?", r"e\.g\.", r"for instance", r"illustrat\w*",
        r"ejemplos?", r"exemples?", r"beispiel\w*", r"exemplos?", r"пример\w*", r"例如",
        r"比如", r"示例", r"例子", r"举例", r"例えば", r"例[:：]",
    ),
    "alternative": (
        r"alternative(?:ly|s)?", r"another (?:way|option|approach|query|version|solution)",
        r"or you could", r"could also", r"equivalent(?:ly)?", r"alternativ\w*",
        r"otra (?:forma|opción|consulta)", r"autre (?:requête|façon|solution)",
        r"andere (?:abfrage|möglichkeit)", r"другой", r"альтернатив\w*", r"或者", r"另一种",
        r"另一個", r"另一个", r"也可以", r"替代", r"または", r"別の", r"代わりに",
    ),
    "draft": (
        r"drafts?", r"first (?:attempt|try|version|idea|guess)",
        r"initial (?:attempt|try|version|idea|query)", r"wrong", r"incorrect", r"mistaken?",
        r"erroneous", r"buggy", r"does ?n[o']t work", r"won't work", r"naive",
        r"(?:previous|original|old|failed|failing) (?:query|sql|statement|version|one)",
        r"borrador", r"incorrect[oa]", r"brouillon", r"erronée?", r"entwurf", r"falsch\w*",
        r"черновик\w*", r"неправильн\w*", r"草稿", r"初稿", r"错误", r"錯誤", r"下書き",
        r"誤り", r"間違",
    ),
}  # fmt: skip
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def _group(kind: str, words: tuple[str, ...], cjk: bool) -> str:
    chosen = [w for w in words if bool(_CJK.search(w)) == cjk]
    return f"(?P<{kind}{'_cjk' if cjk else ''}>{'|'.join(chosen)})"


# Whole words for Latin-script cues (one boundary check around all of them, which keeps the
# regex fast), as written for CJK ones.
_CUE = re.compile(
    r"(?<![^\W_])(?:"
    + "|".join(_group(kind, words, cjk=False) for kind, words in _CUES.items())
    + r")(?![^\W_])|"
    + "|".join(_group(kind, words, cjk=True) for kind, words in _CUES.items()),
    re.I,
)
_KIND_RANK = {"final": Rank.FINAL, "example": Rank.DEMOTED, "alternative": Rank.DEMOTED,
              "draft": Rank.DEMOTED}  # fmt: skip


def cue_in(text: str) -> Cue | None:
    """The cue nearest the end of `text` (the words right before a query), or None."""
    matches = list(_CUE.finditer(text))
    last = matches[-1] if matches else None
    if last is None or last.lastgroup is None:
        return None
    kind = last.lastgroup.removesuffix("_cjk")
    return Cue(_KIND_RANK[kind], kind, last.group(0))


# The sentence or line right before a query is what introduces it.
_CLAUSE_BREAK = re.compile(r"(?<=[.!?。！？])(?<!e\.g\.)(?<!i\.e\.)\s+|\n\s*\n")
_MARKUP = re.compile(r"```[^\n`]*|~~~[^\n]*|</[^>\n]{1,40}>|[<>`*_#|]")
_LETTER = re.compile(r"[^\W\d_]")


def intro_of(gap: str) -> str | None:
    """The words that introduce what follows `gap` (the text since the previous query): its
    last sentence or paragraph, markup removed. None when the gap holds no words at all (two
    queries in a row: the second is introduced like the first). An opening tag's name counts
    as words (`<answer>`, `<example>`); a closing tag belongs to what came before."""
    clean = _MARKUP.sub(" ", _open_tags_as_words(gap))
    if not _LETTER.search(clean):
        return None
    pieces = [p for p in _CLAUSE_BREAK.split(clean[-400:]) if _LETTER.search(p)]
    return pieces[-1] if pieces else None


_OPEN_TAG = re.compile(r"<([A-Za-z][\w:.-]{0,40})>")


def _open_tags_as_words(text: str) -> str:
    return _OPEN_TAG.sub(lambda m: " " + re.sub(r"[_:.-]", " ", m.group(1)) + ": ", text)


# JSON keys: the answer's own field is final; the reasoning beside it is not an answer.
_FINAL_KEY_WORDS = frozenset({"sql", "query", "answer", "final", "statement", "solution"})
_REASONING_KEY_WORDS = frozenset(
    {"reasoning", "reason", "explanation", "explain", "thought", "thoughts", "thinking",
     "analysis", "comment", "comments", "note", "notes", "description", "rationale"}
)  # fmt: skip


@lru_cache(maxsize=512)
def key_cue(path: tuple[str | int, ...]) -> Cue:
    """The cue of a JSON value from the keys above it: a `sql`, `query`, `answer` or `final`
    key marks the answer unless the value is one item of a list (a sequence of steps, where
    the last wins); a reasoning key, or a key that names an example or a draft, demotes."""
    words = [w for key in path if isinstance(key, str) for w in _key_words(key)]
    text = " ".join(words)
    cue = cue_in(text)
    if cue is not None and cue.rank == Rank.DEMOTED:
        return cue
    if _REASONING_KEY_WORDS.intersection(words):
        return Cue(Rank.DEMOTED, "reasoning", text)
    last = path[-1] if path else ""
    in_list = any(isinstance(key, int) for key in path)
    if isinstance(last, str) and _FINAL_KEY_WORDS.intersection(_key_words(last)) and not in_list:
        return Cue(Rank.FINAL, "final", f"the JSON key {last!r}")
    return PLAIN


def _key_words(key: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", key)
    return [w for w in re.split(r"[^0-9A-Za-z]+", spaced.lower()) if w]


def tag_cue(name: str) -> Cue | None:
    """The cue of an XML-like tag's content from the tag's name: its words, as words before a
    query say (`<answer>`, `<example>`), and a reasoning field's name demotes, as a JSON key's
    does (`<explanation>`, `<reasoning>` quote parts of the answer, never the answer)."""
    words = _key_words(name)
    said = cue_in(" ".join(words))
    if said is not None:
        return said
    if _REASONING_KEY_WORDS.intersection(words):
        return Cue(Rank.DEMOTED, "reasoning", name)
    return None
