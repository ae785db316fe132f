"""The words linking compares: of questions, and of a schema's tables and columns, indexed once
per schema version.

A schema's terms are computed once per schema object (a cached schema serves every question on
its database), and hold BM25 indexes (bm25s) over its tables and groups, and an inverted index
from each word to the tables that use it, so a question scores only the tables it can be about
(a catalog of 20,000 columns is not scanned column by column for every question).

Short column names are often abbreviations (`qty`, `hr`, `pcf_violation_category`): a short
word of a name matches a question word that spells it out (its letters in order, starting with
the same letter: `qty` in "quantity", `dept` in "department") or a run of question words whose
initials it is (`hr` for "home runs", `pcf` for "primary collision factor").
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from macsql.database.schema import SchemaInfo
from macsql.database.value_index import normalise

_STOPWORD_TEXT = """
a an the of in on at to for from by with and or not no is are was were be been being what
which who whom whose when where why how many much list show give find tell me all any each
every that this these those there their its it as than then do does did has have had please
name names number count total between among per into onto over under more most less least i
we you they he she them his her our your my can could would should will shall may if else
also only just both either neither out up down about after before during
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
ABBREVIATION_CHARS = 4
"""Name words of at most this many letters may be abbreviations."""


def stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def split_words(text: str) -> list[str]:
    """Lower-case words of a name or a sentence as written: camelCase and snake_case split,
    accents dropped."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "")
    return normalise(spaced.replace("_", " ")).split()


def words(text: str) -> list[str]:
    """`split_words`, plurals folded."""
    return [stem(w) for w in split_words(text)]


def spells_out(short: str, word: str) -> bool:
    """Whether `short` (a name word) abbreviates `word` (a question word): same first letter,
    its letters in order, and `word` clearly longer, or longer only by vowels (`cty` for
    "city", `nme` for "name": schemas drop vowels to shorten a word)."""
    if len(word) <= len(short) or short[0] != word[0] or not short.isalpha():
        return False
    if len(word) < len(short) + 2:
        return len(short) >= 3 and _without_vowels(word) == _without_vowels(short)
    position = 1
    for ch in short[1:]:
        position = word.find(ch, position) + 1
        if position == 0:
            return False
    return True


def truncates(short: str, word: str) -> bool:
    """Whether `short` (a table name's word) abbreviates `word` (a question word) the way
    table names are shortened: a start of `word`, then only consonants of its rest, in order
    (`emp` and `empl` for "employee", `dept` for "department", `prd` for "product", `wh` for
    "warehouse"). Stricter than `spells_out`: a short table name is as often a word of its own
    (`set`, `pit`, `post`), and "student" must not read as `set`."""
    if len(word) <= len(short) or short[0] != word[0] or not short.isalpha():
        return False
    start = 1
    while start < len(short) and short[start] == word[start]:
        start += 1
    position = start
    for ch in short[start:]:
        if ch in "aeiou":
            return False
        position = word.find(ch, position) + 1
        if position == 0:
            return False
    return True


def _without_vowels(word: str) -> str:
    return word[0] + "".join(ch for ch in word[1:] if ch not in "aeiouy")


@dataclass
class SchemaTerms:
    """A schema's words and indexes, computed once per schema version (see `schema_terms`)."""

    tables: list[str]
    table_words: dict[str, set[str]]
    """Table -> the words of its name (without its group prefix) and of its columns' names."""
    inverted: dict[str, set[str]]
    """Word (names, readable names and descriptions) -> the tables that use it."""
    short_words: dict[str, set[str]]
    """Short name words that may be abbreviations -> the tables whose columns use them."""
    long_words: set[str]
    """Name words of 4 letters or more: found inside longer question words ("rank" in
    "ranked")."""
    table_bm25: Any
    group_bm25: Any
    group_names: list[str]
    vocabulary: set[str] = field(default_factory=set)
    short_by_first: dict[str, list[str]] = field(default_factory=dict)
    table_short: dict[str, set[str]] = field(default_factory=dict)
    """Short words of table names (without their group prefix) -> those tables: `emp` of
    `tblEmp`."""


def build_terms(
    schema: SchemaInfo, local: dict[str, str], groups: dict[str, list[str]]
) -> SchemaTerms:
    import bm25s

    table_words: dict[str, set[str]] = {}
    inverted: dict[str, set[str]] = defaultdict(set)
    short_words: dict[str, set[str]] = defaultdict(set)
    long_words: set[str] = set()
    table_short: dict[str, set[str]] = defaultdict(set)
    documents: dict[str, list[str]] = {}
    for table in schema.tables:
        own = words(local.get(table.name, table.name))
        names = set(own)
        doc = list(own) * 2
        for col in table.columns:
            name_words = words(col.name) + words(col.full_name)
            names.update(name_words)
            described = words(col.description) + words(col.value_description)
            doc += name_words + described[:40]
            for w in name_words + described:
                inverted[w].add(table.name)
            for w in words(col.name):
                if len(w) <= ABBREVIATION_CHARS and w.isalpha() and w not in STOPWORDS:
                    short_words[w].add(table.name)
        for w in own + words(table.name):
            inverted[w].add(table.name)
        for w in _abbreviated_name(local.get(table.name, table.name)):
            table_short[w].add(table.name)
        names -= STOPWORDS
        table_words[table.name] = names
        long_words.update(w for w in names if len(w) >= 4)
        documents[table.name] = [w for w in doc if w not in STOPWORDS] or ["_"]
    tables = [t.name for t in schema.tables]
    table_bm25 = bm25s.BM25()
    table_bm25.index([documents[t] for t in tables], show_progress=False)
    group_names = sorted(groups)
    group_docs = []
    for g in group_names:
        doc = words(g) * 3
        for t in groups[g]:
            doc += documents[t]
        group_docs.append(doc or ["_"])
    group_bm25 = bm25s.BM25()
    group_bm25.index(group_docs, show_progress=False)
    short_by_first: dict[str, list[str]] = defaultdict(list)
    for short in short_words:
        short_by_first[short[0]].append(short)
    return SchemaTerms(
        tables,
        table_words,
        dict(inverted),
        dict(short_words),
        long_words,
        table_bm25,
        group_bm25,
        group_names,
        set(inverted),
        dict(short_by_first),
        dict(table_short),
    )


def bm25_scores(index: Any, query: Sequence[str]) -> list[float]:
    """BM25 scores of every document for the query words the index knows."""
    known = [w for w in dict.fromkeys(query) if w in index.vocab_dict]
    if not known:
        return [0.0] * int(index.scores["num_docs"])
    return [float(s) for s in index.get_scores(known)]


def abbreviated_tables(terms: SchemaTerms, asked: Sequence[str]) -> dict[str, set[str]]:
    """Short name words the question spells out or gives the initials of -> their tables.
    Initials count over the question's content words only ("home runs" for `hr`)."""
    out: dict[str, set[str]] = {}
    present = set(asked)
    content = [w for w in asked if w not in STOPWORDS]
    initials = {
        "".join(w[0] for w in content[i : i + n])
        for n in range(2, ABBREVIATION_CHARS + 1)
        for i in range(len(content) - n + 1)
    }
    by_first: dict[str, list[str]] = defaultdict(list)
    for w in dict.fromkeys(content):
        if len(w) >= 3:
            by_first[w[0]].append(w)
    for first, spelled in by_first.items():
        for short in terms.short_by_first.get(first, ()):
            if short not in present and any(spells_out(short, w) for w in spelled):
                out[short] = terms.short_words[short]
    for short in initials:
        if short in terms.short_words and short not in present:
            out[short] = terms.short_words[short]
    return out


def _abbreviated_name(name: str) -> list[str]:
    """The words of a table name that is abbreviated as a whole (`EMP`, `tblVend`, `wh_mst`):
    every word of it short and none a plural. A short word beside full words (`pitStops`,
    `car_makers`) or in a plural (`posts`, `Lots`: abbreviations do not inflect) is a word of
    the language, and reading it as an abbreviation only adds loose matches."""
    raw = [w for w in split_words(name) if w.isalpha()]
    if not raw or any(len(w) > ABBREVIATION_CHARS or stem(w) != w for w in raw):
        return []
    return [w for w in raw if w not in STOPWORDS]


def abbreviated_names(terms: SchemaTerms, asked: Sequence[str]) -> dict[str, set[str]]:
    """Short words of table names that a question word truncates (`truncates`) -> their
    tables: `EMP` and `tblEmp` for "employees"."""
    present = set(asked)
    content = {w for w in asked if w not in STOPWORDS and len(w) >= 3}
    return {
        short: tables
        for short, tables in terms.table_short.items()
        if short not in present and any(truncates(short, w) for w in content)
    }
