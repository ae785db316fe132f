"""Deterministic schema linking: rank a schema's groups, tables and columns against the question,
keep the best within one budget in characters.

No model is called (an embeddings model may be, when one is named). The budget counts
everything the prompt will hold: the schema blocks, the key lines and the stored-value lines.
When the whole schema fits, nothing is dropped. Otherwise:

1. groups first: the databases or schemas of a catalog (`link_groups`) are ranked by what the
   question says about them, and a group whose relevance is far under the best one's is left
   out unless the question names one of its tables;
2. then tables and columns: a column scores by how much of its name, readable name and
   descriptions the question and evidence mention (hand rules plus BM25 over the schema's
   words), by its table's name, by stored values the value index matched in it, and, with
   embeddings, by embedding similarity fused with the lexical rank (reciprocal rank fusion);
3. columns are added best first, each with its table's primary key and the join path to the
   tables of its group already kept, while the budget allows; a table that cannot be joined to
   them is not kept unless the question names it. Ties go by the table's and the group's
   relevance, then by the column's place in its table, never by alphabet. What budget is left
   then goes to the other columns of the kept tables.

Only the tables the question's words, values or embeddings reach are scored, from indexes
built once per schema version, so a question on a catalog of 20,000 columns scores a few
hundred of them.
"""

from __future__ import annotations

import functools
import math
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings

from macsql.database.schema import ForeignKey, SchemaInfo, TableInfo, once_per_schema
from macsql.database.value_index import ValueMatch
from macsql.linking.groups import Groups, table_groups
from macsql.linking.terms import (
    STOPWORDS,
    SchemaTerms,
    abbreviated_names,
    abbreviated_tables,
    bm25_scores,
    build_terms,
    words,
)
from macsql.prompts.quoting import shown_name
from macsql.prompts.schema_text import render_column

_STOPWORDS = STOPWORDS
_TIME_WORDS = frozenset(["year", "date", "time", "season", "dob", "birthday", "day"])
_NAME_WORDS = frozenset(
    {"name", "forename", "surname", "first", "last", "title", "display", "full", "nickname"}
    | {"county", "city", "district", "country", "state", "region", "location", "place"}
)
MAX_NGRAM = 4
TABLE_HEADER_CHARS = 16
NARROW_TABLE = 10
LONG_WORD = 6
MAX_CANDIDATE_TABLES = 50
"""Tables scored column by column per question, at most: the best by BM25 over their words."""
GROUP_MARGIN = 0.5
"""A group whose relevance is under this share of the best group's is left out (unless the
question names one of its tables)."""
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al.): a column's fused score is the sum over
the rankings of 1 / (RRF_K + its rank)."""
EMBEDDING_WEIGHT = 0.5
"""The embedding ranking's weight in the fusion (the lexical ranking's is 1): at full weight,
whole-column similarity crowded out lexical hits under tight budgets (BIRD dev at 4,000
characters, 300 questions: 80.7% strict recall against 85.0% at half weight, 86.3% without it),
and added nothing the stand-in words do not already bring on synonyms."""
VALUE_COLUMNS_PER_TABLE = 3
VALUE_SHARE = 4
"""Stored-value lines take at most 1/VALUE_SHARE of the character budget."""
"""Columns of one table whose stored values are shown, at most: a table must not take every
value line because its values are alike ("Maya Languages", "Mixed Languages")."""

__all__ = ["words"]


def question_phrases(question: str, evidence: str = "") -> list[str]:
    """Word n-grams (n ≤ 4) of the question and evidence that could name a stored value:
    quoted strings first, then n-grams that neither start nor end with a stopword. A hyphen
    splits words too ("Mercedes-Benz" also looks up "Mercedes" and "Benz")."""
    phrases: list[str] = []
    for text in (question, evidence):
        phrases += re.findall(r"['\"`‘“]([^'\"`’”]{1,80})['\"`’”]", text or "")
        previous: list[str] | None = None
        for pattern in (r"[\w][\w.&'-]*", r"[\w][\w.&']*"):
            tokens = re.findall(pattern, text or "")
            if tokens == previous:
                continue  # no hyphen: the same n-grams again
            previous = tokens
            stop = [token.lower() in _STOPWORDS for token in tokens]  # once per token, not n-gram
            for n in range(1, MAX_NGRAM + 1):
                for i in range(len(tokens) - n + 1):
                    if stop[i] or stop[i + n - 1]:
                        continue
                    if n == 1 and len(tokens[i]) < 2 and not tokens[i].isupper():
                        continue  # a lone letter is a stored code when quoted or a capital
                    phrases.append(" ".join(tokens[i : i + n]))
    return list(dict.fromkeys(p.strip(" .'-") for p in phrases if p.strip(" .'-")))


def strong_phrase(phrase: str, question: str, evidence: str = "") -> bool:
    """Whether a phrase names a value on its own: quoted, capitalised or of several words. A
    lone lower-case word ("student", "maximum", "pet") is as often a common word as a value,
    so its matches count only in tables the question is otherwise about."""
    if " " in phrase.strip() or phrase[:1].isupper() or any(ch.isdigit() for ch in phrase):
        return True
    for text in (question, evidence):
        for quoted in re.findall(r"['\"`‘“]([^'\"`’”]{1,80})['\"`’”]", text or ""):
            if phrase.lower() == quoted.strip().lower():
                return True
    return False


def flag_values(
    small_columns: dict[tuple[str, str], list[str]], question: str, evidence: str = ""
) -> list[ValueMatch]:
    """The values of few-valued columns ('T'/'F') whose name the question uses ("official"
    for IsOfficial): the question means one of them, though it never spells it."""
    asked = set(words(f"{question} {evidence}")) - _STOPWORDS
    out = []
    for (table, column), values in small_columns.items():
        named = _flag_words(column) & asked
        if named:
            phrase = " ".join(sorted(named))
            out += [ValueMatch(table, column, v, 0.8, phrase) for v in values]
    return out


@functools.lru_cache(maxsize=4096)
def _flag_words(column: str) -> frozenset[str]:
    """A column name's words that can name a flag: per name, not per question (a schema's
    few-valued columns are read for every question on it)."""
    return frozenset(words(column)) - _STOPWORDS - {"is", "flag"}


@dataclass
class LinkResult:
    schema: SchemaInfo
    """The linked schema (the full one when it fits the budget)."""
    route: str
    """'full' (the schema fits the budget, nothing dropped) or 'linked'."""
    reason: str
    scores: dict[tuple[str, str], float]
    values: list[ValueMatch]
    total_columns: int
    notes: list[str] = field(default_factory=list)
    chars: int = 0
    """What the kept schema, its key lines and its value lines take in a prompt."""

    @property
    def kept_columns(self) -> int:
        return self.schema.total_columns

    def summary(self) -> dict[str, Any]:
        """What the output and Studio show: the route, why, and what was kept."""
        return {
            "route": self.route,
            "reason": self.reason,
            "kept_columns": self.kept_columns,
            "total_columns": self.total_columns,
            "chars": self.chars,
            "kept_tables": {t.name: [c.name for c in t.columns] for t in self.schema.tables}
            if self.route == "linked"
            else {},
            "values": [
                {"table": m.table, "column": m.column, "value": m.value, "score": m.score}
                for m in self.values
            ],
            "notes": self.notes,
        }


@dataclass
class LinkBudget:
    max_chars: int
    """Characters of everything the linked schema puts in a prompt: schema blocks, key lines,
    value lines."""
    max_columns: int = 0
    """An optional ceiling on kept columns; 0: none (the characters alone govern)."""
    max_values: int = 10


@dataclass(frozen=True)
class _Terms:
    name: set[str]
    """Word stems of the column's name and readable name."""
    described: set[str]
    """Word stems of its description and value description."""
    flat_name: str
    flat_full: str
    labels: frozenset[str]
    """The values its value description defines ("Active: the district operates")."""
    holds_names: bool
    """Its name says it holds names or places ("name", "player_name", "city")."""
    short: frozenset[str]
    """Short words of its name that may be abbreviations."""


# "Active: in operation", "M = male", "- closed: ...": a data dictionary's list of the values
# a column holds, one per line or separated by semicolons.
_LABEL = re.compile(
    r"(?:^|[\n;,.·•])[\s\W]*?([A-Za-z][\w /-]{1,30}?)\s*(?::|=|\bmeans\b|\bstands for\b)"
)


def _value_labels(value_description: str) -> frozenset[str]:
    labels = set()
    for label in _LABEL.findall(value_description or ""):
        flat = " ".join(w for w in words(label) if w not in _STOPWORDS)
        if len(flat) >= 3 and len(flat.split()) <= 3:
            labels.add(flat)
    return frozenset(labels)


def _column_terms_of(table: TableInfo) -> dict[str, _Terms]:
    out = {}
    for col in table.columns:
        name = set(words(col.name)) | set(words(col.full_name))
        described = set(words(col.description)) | set(words(col.value_description))
        out[col.name] = _Terms(
            name - _STOPWORDS,
            described - _STOPWORDS,
            " ".join(words(col.name)),
            " ".join(words(col.full_name)),
            _value_labels(col.value_description),
            # Before the stopwords go: "name" is one, and a column called "name" is
            # exactly where a proper noun is stored.
            bool(name & _NAME_WORDS),
            frozenset(w for w in words(col.name) if len(w) <= 4 and w.isalpha()) - _STOPWORDS,
        )
    return out


def _implied_joins(
    schema: SchemaInfo, groups: Groups, known: set[tuple[str, str]]
) -> list[ForeignKey]:
    """Joins a column's name implies: `setCode` in `cards` names the `code` column of the
    table `sets`, `raceId` the `raceId` key of `races`. Tables are looked up by their name
    within the column's own group (`formula_1_races` is `races` to `formula_1_results`)."""
    # Keyed by the name's words run together: `gasstations` is the table `GasStationID` names.
    by_words: dict[tuple[str, str], TableInfo] = {}
    for table in schema.tables:
        key = (groups.of.get(table.name, ""), "".join(words(groups.local_name(table.name))))
        by_words.setdefault(key, table)
    out = []
    for table in schema.tables:
        group = groups.of.get(table.name, "")
        for col in table.columns:
            name = tuple(words(col.name))
            if (table.name, col.name) in known or len(name) < 2:
                continue
            for cut in range(1, len(name)):
                other = by_words.get((group, "".join(name[:cut])))
                if other is None or other is table:
                    continue
                prefix, rest = list(name[:cut]), list(name[cut:])
                targets = [c.name for c in other.columns if words(c.name) in (rest, prefix + rest)]
                if len(targets) == 1:
                    out.append(ForeignKey(table.name, col.name, other.name, targets[0]))
                    break
    return out


class _Adjacency:
    """The join graph between tables, with the columns each edge joins on."""

    def __init__(self, joins: Iterable[ForeignKey]) -> None:
        self.edges: dict[str, list[tuple[str, str, str]]] = {}
        for fk in joins:
            self.edges.setdefault(fk.table, []).append((fk.ref_table, fk.column, fk.ref_column))
            self.edges.setdefault(fk.ref_table, []).append((fk.table, fk.ref_column, fk.column))

    def path(
        self, start: str, targets: set[str], rank: dict[str, int]
    ) -> list[tuple[str, str, str, str]] | None:
        """The shortest list of joins (table, column, other table, other column) from `start`
        to any table in `targets` (among equally short ones, through the more relevant
        tables); None when none is reachable."""
        if start in targets:
            return []
        previous: dict[str, tuple[str, str, str]] = {start: ("", "", "")}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            edges = self.edges.get(here, [])
            for other, col, other_col in sorted(edges, key=lambda e: rank.get(e[0], 1 << 30)):
                if other in previous:
                    continue
                previous[other] = (here, col, other_col)
                if other in targets:
                    joins = []
                    node = other
                    while node != start:
                        prev, pcol, ncol = previous[node]
                        joins.append((prev, pcol, node, ncol))
                        node = prev
                    return joins[::-1]
                queue.append(other)
        return None


@dataclass
class _Model:
    """What linking derives from a schema (and the joins inferred from its values), once."""

    joins: list[ForeignKey]
    groups: Groups
    terms: SchemaTerms
    columns: dict[str, dict[str, _Terms]]
    adjacency: _Adjacency
    spread: dict[str, int]
    join_columns: set[tuple[str, str]]
    width: dict[tuple[str, str], int]
    position: dict[tuple[str, str], int]
    group_edges: set[str]
    """Groups with at least one join between their tables."""
    by_name: dict[str, TableInfo]
    join_set: set[ForeignKey]
    primary: dict[str, set[str]]
    local_words: dict[str, set[str]]
    """Table -> the words of its name without its group prefix (stopwords out)."""
    local_flat: dict[str, str]
    members: dict[str, list[str]]
    index: dict[str, int]
    """Table -> its place in the schema: the last tie-break, so the order is deterministic."""
    vocabulary: list[str]
    """The words of the schema's table and column names (for embeddings to match)."""


def _build_model(schema: SchemaInfo, inferred: tuple[ForeignKey, ...]) -> _Model:
    known = {(fk.table, fk.column) for fk in schema.foreign_keys}
    names = {t.name for t in schema.tables}
    base = list(schema.foreign_keys) + [
        fk
        for fk in inferred
        if (fk.table, fk.column) not in known and {fk.table, fk.ref_table} <= names
    ]
    first = table_groups(schema, base)
    implied = _implied_joins(schema, first, known | {(fk.table, fk.column) for fk in base})
    joins = list(dict.fromkeys(base + implied))
    groups = table_groups(schema, joins)
    local = {t.name: groups.local_name(t.name) for t in schema.tables}
    terms = build_terms(schema, local, groups.members())
    columns = {t.name: _column_terms_of(t) for t in schema.tables}
    spread: dict[str, int] = {}
    for per_table in columns.values():
        for term in per_table.values():
            spread[term.flat_name] = spread.get(term.flat_name, 0) + 1
    join_columns = {(fk.table, fk.column) for fk in joins} | {
        (fk.ref_table, fk.ref_column) for fk in joins
    }
    width = {(t.name, c.name): len(render_column(c)) + 4 for t in schema.tables for c in t.columns}
    position = {(t.name, c.name): i for t in schema.tables for i, c in enumerate(t.columns)}
    group_edges = {
        groups.of.get(fk.table, "")
        for fk in joins
        if groups.of.get(fk.table, "") == groups.of.get(fk.ref_table, "")
    }
    return _Model(
        joins,
        groups,
        terms,
        columns,
        _Adjacency(joins),
        spread,
        join_columns,
        width,
        position,
        group_edges,
        {t.name: t for t in schema.tables},
        set(joins),
        {t.name: _primary_key(t) for t in schema.tables},
        {t.name: set(words(local[t.name])) - _STOPWORDS for t in schema.tables},
        {t.name: "".join(words(local[t.name])) for t in schema.tables},
        groups.members(),
        {t.name: i for i, t in enumerate(schema.tables)},
        sorted({w for ws in terms.table_words.values() for w in ws if len(w) >= 3 and w.isalpha()}),
    )


def _model(schema: SchemaInfo, inferred: Iterable[ForeignKey] = ()) -> _Model:
    """The schema's linking model, built once per schema object and set of inferred joins (a
    cached schema serves every question on its database)."""
    key = tuple(sorted(set(inferred), key=lambda fk: (fk.table, fk.column)))
    memo: dict[tuple[ForeignKey, ...], _Model] = schema.__dict__.setdefault("_link_models", {})
    hit = memo.get(key)
    if hit is None:
        hit = memo.setdefault(key, _build_model(schema, key))
    return hit


def join_edges(schema: SchemaInfo, inferred: Iterable[ForeignKey] = ()) -> list[ForeignKey]:
    """The declared foreign keys, those inferred from stored values (`inferred`, from the
    value index), and those a column's name implies (`setCode` in `cards` names `code` in
    `sets`). Many databases declare no foreign keys at all; linking needs the join all the
    same, or it keeps a table it cannot join."""
    return list(_model(schema, inferred).joins)


@dataclass
class Ranking:
    scores: dict[tuple[str, str], float]
    """Lexical score per (table, column) of the candidate tables."""
    table: dict[str, float]
    """Relevance per candidate table (its best column's score)."""
    group: dict[str, float]
    """Relevance per group, 0..1 (1 for the best)."""
    named: set[str]
    """Tables whose name the question or evidence says."""
    group_of: dict[str, str]
    embedded: dict[tuple[str, str], float] = field(default_factory=dict)


def _candidates(
    model: _Model,
    asked: list[str],
    forced: Iterable[str],
) -> tuple[list[str], dict[str, float], dict[str, float], set[str], set[str], set[str]]:
    """The tables worth scoring column by column: those the question's words, abbreviations,
    values, qualified names or embeddings reach, at most MAX_CANDIDATE_TABLES, best first by
    BM25 over the table's words and its group's. Also returns the BM25 scores of tables and
    groups, the name words found inside longer question words, the abbreviations of column
    names the question spells out and those of table names it truncates."""
    terms = model.terms
    content = [w for w in asked if w not in _STOPWORDS]
    reached: set[str] = set()
    for w in content:
        reached |= terms.inverted.get(w, set())
    inside: set[str] = set()
    for question_word in {w for w in content if len(w) >= LONG_WORD}:
        for size in range(4, len(question_word)):
            for i in range(len(question_word) - size + 1):
                piece = question_word[i : i + size]
                if piece in terms.long_words:
                    inside.add(piece)
                    reached |= terms.inverted.get(piece, set())
    abbreviations = abbreviated_tables(terms, asked)
    for tables in abbreviations.values():
        reached |= tables
    shortened = abbreviated_names(terms, asked)
    for tables in shortened.values():
        reached |= tables
    # A table name's abbreviation the question spells out counts as said (`tblPrd` for
    # "product"): otherwise a table whose name is abbreviated never makes the candidates of a
    # catalog where many other tables spell the word out.
    table_scores = bm25_scores(terms.table_bm25, content + sorted(shortened))
    bm25 = dict(zip(terms.tables, table_scores, strict=True))
    group_lexical: dict[str, float] = {}
    if len(terms.group_names) > 1:
        group_scores = bm25_scores(terms.group_bm25, content)
        top = max(group_scores, default=0.0) or 1.0
        group_lexical = {g: s / top for g, s in zip(terms.group_names, group_scores, strict=True)}
    of = model.groups.of

    def priority(table: str) -> float:
        return bm25.get(table, 0.0) * (0.5 + 0.5 * group_lexical.get(of.get(table, ""), 1.0))

    pinned = [t for t in dict.fromkeys(forced) if t in model.by_name]
    ranked = sorted(reached - set(pinned), key=lambda t: (-priority(t), model.index[t]))
    chosen = pinned + ranked[:MAX_CANDIDATE_TABLES]
    return chosen, bm25, group_lexical, inside, set(abbreviations), set(shortened)


def rank_columns(
    schema: SchemaInfo,
    question: str,
    evidence: str,
    values: Sequence[ValueMatch] = (),
    embeddings: Embeddings | None = None,
    *,
    inferred: Iterable[ForeignKey] = (),
    embeddings_name: str = "",
) -> dict[tuple[str, str], float]:
    """A score per (table, column) of the tables the question can be about: higher is more
    likely needed. Deterministic."""
    ranking = _rank(
        schema, _model(schema, inferred), question, evidence, values, embeddings, embeddings_name
    )
    return _fused(ranking)


def _rank(
    schema: SchemaInfo,
    model: _Model,
    question: str,
    evidence: str,
    values: Sequence[ValueMatch],
    embeddings: Embeddings | None,
    embeddings_name: str,
) -> Ranking:
    asked = f"{question} {evidence}"
    asked_list = words(asked)
    asked_words = set(asked_list) - _STOPWORDS
    asked_flat = " " + " ".join(asked_list) + " "
    evidence_flat = " " + " ".join(words(evidence)) + " "
    value_score: dict[tuple[str, str], float] = {}
    for m in values:
        key = (m.table, m.column)
        value_score[key] = max(value_score.get(key, 0.0), m.score)
    qualified = {
        (t.lower(), c.lower()) for t, c in re.findall(r"`?(\w+)`?\.`?(\w+)`?", evidence or "")
    }
    qualified_tables = {
        t.name for t in schema.tables for q, _ in qualified if q == t.name.lower()
    } | {
        t.name
        for t in schema.tables
        for q, _ in qualified
        if q == model.groups.local_name(t.name).lower()
    }
    embedded: dict[tuple[str, str], float] = {}
    extra: list[str] = []
    if embeddings is not None:
        from macsql.linking.embeddings import question_semantics

        embedded, stand_ins = question_semantics(
            schema, question, model.vocabulary, embeddings, embeddings_name
        )
        # The schema's words nearest to the question's read as if the question said them.
        asked_list = asked_list + [w for w in stand_ins if w not in asked_words]
        asked_words = set(asked_list) - _STOPWORDS
        nearest = sorted(embedded, key=lambda k: -embedded[k])[:MAX_CANDIDATE_TABLES]
        extra = list(dict.fromkeys(t for t, _ in nearest))[: MAX_CANDIDATE_TABLES // 4]
    forced = [*(m.table for m in values), *qualified_tables, *extra]
    candidates, bm25, group_lexical, inside, spelled, shortened = _candidates(
        model, asked_list, forced
    )
    has_year = bool(re.search(r"\b(1[89]|20)\d\d\b", asked))
    # A capitalised word inside a sentence names something stored in a name or place column
    # (unless a stored value already matched it: then its column is known).
    matched_phrases = " ".join(m.phrase.lower() for m in values)
    proper_nouns = any(
        noun.lower() not in matched_phrases
        for noun in re.findall(r"(?<=[a-z,] )[A-Z][a-z]+", question)
    )
    top_bm25 = max(bm25.values(), default=0.0) or 1.0
    scores: dict[tuple[str, str], float] = {}
    named: set[str] = set()
    # Consecutive question words run together: "gas stations" names the table gasstations.
    runs = {
        "".join(asked_list[i : i + n]) for n in (1, 2, 3) for i in range(len(asked_list) - n + 1)
    }
    for table_name in candidates:
        table = model.by_name[table_name]
        local = model.groups.local_name(table_name)
        table_words = model.local_words[table_name]
        table_matched = table_words & (asked_words | shortened)  # `emp` for "employees"
        table_score = len(table_matched) / len(table_words) if table_words else 0.0
        if table_words and (table_score == 1.0 or model.local_flat[table_name] in runs):
            named.add(table_name)
        lexical = bm25.get(table_name, 0.0) / top_bm25
        terms = model.columns[table_name]
        for col in table.columns:
            term = terms[col.name]
            content = term.name
            # A name word inside a longer word of the question counts too: "rank" in "ranked",
            # "phone" in "telephone" (a stem or a compound the plural folding misses).
            matched = content & (asked_words | inside)
            matched |= term.short & spelled  # `qty` for "quantity", `hr` for "home runs"
            score = 3.0 * (len(matched) / len(content) if content else 0.0)
            if (table_name, col.name) in model.join_columns:
                # "raceId" matching "race" says the question is about races, not that this
                # join column is needed: it comes along with its table's join anyway.
                score *= 0.3
            if has_year and content & _TIME_WORDS:
                score += 1.5
            # A name many tables share ("name", "id") says less than a distinctive one.
            weight = 1.0 if model.spread.get(term.flat_name, 0) <= 2 else 0.4
            for flat in (term.flat_name, term.flat_full):
                if len(flat) > 2 and f" {flat} " in asked_flat:
                    score += 2.0 * weight
                if len(flat) > 2 and f" {flat} " in evidence_flat:
                    score += 3.0 * weight  # BIRD's evidence names the column it means
            if (table_name.lower(), col.name.lower()) in qualified or (
                local.lower(),
                col.name.lower(),
            ) in qualified:
                score += 5.0
            if term.described:
                score += 1.5 * len(term.described & asked_words) / math.sqrt(len(term.described))
            score += 1.5 * table_score + 0.5 * lexical
            if any(f" {label} " in asked_flat for label in term.labels):
                score += 2.0  # the question names a value the column's description defines
            score += 4.0 * value_score.get((table_name, col.name), 0.0)
            if proper_nouns and term.holds_names:
                score += 2.0  # "Lewis Hamilton" is stored in some name column
            scores[(table_name, col.name)] = round(score, 4)
    # A column of a table the question is about is likelier needed (its keys, its names);
    # but in a wide table that says little about any one column, and it must not lift a
    # hundred of them over the few columns of another table the question names.
    best: dict[str, float] = {}
    for (table_name, _), score in scores.items():
        best[table_name] = max(best.get(table_name, 0.0), score)
    for key in scores:
        table = model.by_name[key[0]]
        affinity = 0.3 * min(1.0, math.sqrt(NARROW_TABLE / max(1, len(table.columns))))
        scores[key] = round(scores[key] + affinity * best[key[0]], 4)
    group = _group_relevance(model, best, group_lexical)
    return Ranking(scores, best, group, named, model.groups.of, embedded)


def _group_relevance(
    model: _Model, best: dict[str, float], lexical: dict[str, float]
) -> dict[str, float]:
    """Each group's relevance, 0..1: BM25 of the question over the group's words, plus its
    best table's score, each relative to the best group's."""
    members = model.members
    if len(members) <= 1:
        return {g: 1.0 for g in members}
    table_best: dict[str, float] = {}
    for table, score in best.items():
        group = model.groups.of.get(table, "")
        table_best[group] = max(table_best.get(group, 0.0), score)
    top_table = max(table_best.values(), default=0.0) or 1.0
    raw = {g: lexical.get(g, 0.0) + table_best.get(g, 0.0) / top_table for g in members}
    top = max(raw.values()) or 1.0
    return {g: raw[g] / top for g in members}


def _with_values(first: Ranking, values: Sequence[ValueMatch], model: _Model) -> Ranking:
    """The ranking with the chosen stored values' columns lifted: a matched value says its
    column is needed."""
    scores = dict(first.scores)
    for m in values:
        key = (m.table, m.column)
        if key in model.position:
            scores[key] = round(scores.get(key, 0.0) + 4.0 * m.score, 4)
    best = dict(first.table)
    for (table, _), score in scores.items():
        best[table] = max(best.get(table, 0.0), score)
    return Ranking(scores, best, first.group, first.named, first.group_of, first.embedded)


def _fused(ranking: Ranking) -> dict[tuple[str, str], float]:
    """The order columns are offered to the budget in: the lexical score weighted by the
    group's relevance, fused with the embedding similarity by reciprocal rank when there is
    one. Higher first."""
    lexical = {
        key: score * (0.5 + 0.5 * ranking.group.get(ranking.group_of.get(key[0], ""), 1.0))
        for key, score in ranking.scores.items()
    }
    if not ranking.embedded:
        return lexical
    fused: dict[tuple[str, str], float] = {}
    for order, weight in ((lexical, 1.0), (ranking.embedded, EMBEDDING_WEIGHT)):
        ranked = sorted((k for k in order if order[k] > 0), key=lambda k: -order[k])
        for rank, key in enumerate(ranked):
            fused[key] = fused.get(key, 0.0) + weight / (RRF_K + rank + 1)
    return {k: round(v * 1000, 4) for k, v in fused.items()}


def pick_values(
    matches: Sequence[ValueMatch],
    limit: int,
    per_column: int = 3,
    *,
    relevance: dict[str, float] | None = None,
    per_table: int = VALUE_COLUMNS_PER_TABLE,
    weak: Iterable[str] = (),
) -> list[ValueMatch]:
    """The best `limit` matches, at most `per_column` per column and values of at most
    `per_table` columns per table.
    A match scores by how well it matches and, when `relevance` is given, by its table's
    relevance to the question (0..1); a match of a `weak` phrase (a lone lower-case word)
    counts only in a table of positive relevance. Ties go to the longer phrase, then the
    shorter value, then the more relevant table."""
    weak_phrases = set(weak)
    rel = relevance or {}

    keyed = []
    for n, m in enumerate(matches):
        table_rel = rel.get(m.table, 0.0)
        if relevance is not None and m.phrase in weak_phrases and table_rel <= 0:
            continue
        score = m.score if relevance is None else m.score * (0.6 + 0.4 * table_rel)
        keyed.append((-score, -len(m.phrase), len(m.value), -table_rel, n))
    keyed.sort()
    ordered = [matches[k[-1]] for k in keyed]
    out: list[ValueMatch] = []
    used: dict[tuple[str, str], int] = {}
    tables: dict[str, set[str]] = {}
    seen: set[tuple[str, str, str]] = set()
    for m in ordered:
        key = (m.table, m.column)
        columns = tables.setdefault(m.table, set())
        if (
            used.get(key, 0) >= per_column
            or (m.column not in columns and len(columns) >= per_table)
            or (m.table, m.column, m.value) in seen
        ):
            continue
        used[key] = used.get(key, 0) + 1
        columns.add(m.column)
        seen.add((m.table, m.column, m.value))
        out.append(m)
        if len(out) >= limit:
            break
    return out


def _value_line(m: ValueMatch, dialect: str) -> str:
    q = '"' if dialect == "postgres" else "`"
    flat = " ".join(m.value.split()).replace("'", "''")
    flat = flat.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"{m.table}.{q}{m.column}{q} = '{flat}'"


def render_value_matches(matches: Sequence[ValueMatch], dialect: str) -> str:
    """`table.column = 'value'` lines: one line each, the value as a quoted SQL literal with
    quotes doubled, space flattened and `<`/`>` escaped, so it reads as data, never as an
    instruction, and cannot close the prompt's <schema> block."""
    return "\n".join(_value_line(m, dialect) for m in matches)


def _fk_line_chars(fk: ForeignKey) -> int:
    def column(name: str) -> int:
        shown = shown_name(name)
        return len(shown) + (2 if shown == name else 0)

    return (
        len(shown_name(fk.table))
        + len(shown_name(fk.ref_table))
        + column(fk.column)
        + (column(fk.ref_column) + 5)
    )


@once_per_schema
def _schema_chars(schema: SchemaInfo) -> int:
    """The rendered schema's size with its key lines, measured once per schema object: a
    cached schema serves every question on its database."""
    blocks = sum(
        TABLE_HEADER_CHARS + len(t.name) + sum(len(render_column(c)) + 4 for c in t.columns)
        for t in schema.tables
    )
    return blocks + sum(_fk_line_chars(fk) + 1 for fk in schema.foreign_keys)


def link_schema(
    schema: SchemaInfo,
    question: str,
    evidence: str,
    budget: LinkBudget,
    values: Sequence[ValueMatch] = (),
    embeddings: Embeddings | None = None,
    *,
    inferred: Iterable[ForeignKey] = (),
    embeddings_name: str = "",
) -> LinkResult:
    """Keep what best matches the question within `budget`. `values` are the stored values
    the value index matched; `inferred` the joins it inferred from them."""
    total = schema.total_columns
    chars = _schema_chars(schema)
    quick = pick_values(values, budget.max_values)
    value_chars = sum(len(_value_line(m, schema.dialect)) + 1 for m in quick)
    under_ceiling = not budget.max_columns or total <= budget.max_columns
    if under_ceiling and chars + value_chars <= budget.max_chars:
        reason = (
            f"the schema fits the budget ({total} columns, {chars + value_chars} of "
            f"{budget.max_chars} characters with its key and value lines): nothing dropped"
        )
        return LinkResult(schema, "full", reason, {}, quick, total, chars=chars + value_chars)
    model = _model(schema, inferred)
    weak = {m.phrase for m in values if not strong_phrase(m.phrase, question, evidence)}
    first = _rank(schema, model, question, evidence, (), embeddings, embeddings_name)
    top = max(first.table.values(), default=0.0) or 1.0
    relevance = {
        t: (s / top) * first.group.get(model.groups.of.get(t, ""), 1.0)
        for t, s in first.table.items()
    }
    chosen_values = pick_values(values, budget.max_values, relevance=relevance, weak=weak)
    # Value lines take at most a quarter of the budget: the columns they belong to need room.
    while (
        chosen_values
        and sum(len(_value_line(m, schema.dialect)) + 1 for m in chosen_values)
        > budget.max_chars // VALUE_SHARE
    ):
        chosen_values.pop()
    ranking = _with_values(first, chosen_values, model)
    scores = _fused(ranking)
    kept, notes, used = _assemble(schema, model, ranking, scores, chosen_values, budget)
    linked = _restrict(schema, kept, model.joins)
    reason = (
        f"the schema is over the budget ({total} columns, {chars + value_chars} characters; "
        f"budget {budget.max_chars} characters"
        + (f", at most {budget.max_columns} columns" if budget.max_columns else "")
        + f"): kept {linked.total_columns} columns in {len(linked.tables)} tables"
    )
    return LinkResult(linked, "linked", reason, scores, chosen_values, total, notes, used)


def _assemble(
    schema: SchemaInfo,
    model: _Model,
    ranking: Ranking,
    scores: dict[tuple[str, str], float],
    values: list[ValueMatch],
    budget: LinkBudget,
) -> tuple[dict[str, set[str]], list[str], int]:
    """Columns best first, with keys and join paths, while the budget allows; then the other
    columns of the kept tables, then the other tables of the kept groups."""
    assembly = _Assembly(schema, model, ranking, scores, values, budget)
    assembly.take_columns_best_first()
    assembly.complete_kept_tables()
    assembly.fill_kept_groups()
    assembly.complete_kept_tables()  # the tables a join path brought with their keys alone
    if assembly.skipped_groups:
        assembly.notes.append(
            f"{len(assembly.skipped_groups)} groups far less relevant than the best left out"
        )
    return assembly.kept, assembly.notes, assembly.used_chars


class _Assembly:
    """What the linked schema holds so far, and what it has cost of the budget."""

    def __init__(
        self,
        schema: SchemaInfo,
        model: _Model,
        ranking: Ranking,
        scores: dict[tuple[str, str], float],
        values: list[ValueMatch],
        budget: LinkBudget,
    ) -> None:
        self.model = model
        self.ranking = ranking
        self.budget = budget
        self.forced = {(m.table, m.column) for m in values}
        self.group_order = {
            g: i
            for i, g in enumerate(sorted(ranking.group, key=lambda g: (-ranking.group[g], g == "")))
        }
        # Groups first: the best group's columns, best first, then the next group's.
        self.order = sorted(
            (k for k in scores if scores[k] > 0 or k in self.forced),
            key=lambda k: (
                k not in self.forced,
                self.group_order.get(model.groups.of.get(k[0], ""), 0),
                -scores[k],
                *self._tie(k),
            ),
        )
        if not self.order:  # the question names nothing: the schema's order, narrow tables first
            self.order = sorted(model.position, key=self._tie)
        self.table_rank = {t: i for i, t in enumerate(dict.fromkeys(t for t, _ in self.order))}
        self.kept: dict[str, set[str]] = {}
        self.notes: list[str] = []
        self.used_cols = 0
        self.used_chars = sum(len(_value_line(m, schema.dialect)) + 1 for m in values)
        self.kept_lines: set[ForeignKey] = set()
        self.kept_groups: set[str] = set()
        self.skipped_groups: set[str] = set()
        self.kept_by_group: dict[str, set[str]] = {}
        self.narrowest = min(model.width.values(), default=0)

    def _tie(self, key: tuple[str, str]) -> tuple[Any, ...]:
        table = key[0]
        return (
            -self.ranking.table.get(table, 0.0),
            -self.ranking.group.get(self.model.groups.of.get(table, ""), 0.0),
            self.model.position[key],
            len(self.model.by_name[table].columns),
        )

    def _full(self) -> bool:
        return self.budget.max_chars - self.used_chars < self.narrowest

    def _lines_for(self, additions: dict[str, set[str]]) -> list[ForeignKey]:
        """The key lines the additions bring: joins whose both columns will be kept."""
        kept = self.kept
        tables = set(kept) | set(additions)
        out = []
        for t in additions:
            for other, col, other_col in self.model.adjacency.edges.get(t, []):
                if other not in tables:
                    continue
                for fk in _edge(self.model, t, col, other, other_col):
                    has = fk.column in kept.get(fk.table, set()) | additions.get(fk.table, set())
                    ref = additions.get(fk.ref_table, set()) | kept.get(fk.ref_table, set())
                    if has and fk.ref_column in ref and fk not in self.kept_lines:
                        out.append(fk)
        return list(dict.fromkeys(out))

    def _cost(self, additions: dict[str, set[str]]) -> tuple[int, int, list[ForeignKey]]:
        model = self.model
        cols = sum(len(cs) for cs in additions.values())
        size = sum(model.width[(t, c)] for t, cs in additions.items() for c in cs)
        size += sum(TABLE_HEADER_CHARS + len(t) for t in additions if t not in self.kept)
        lines = self._lines_for(additions)
        size += sum(_fk_line_chars(fk) + 1 for fk in lines)
        return cols, size, lines

    def add(self, additions: dict[str, set[str]], force: bool = False) -> bool:
        """Keep the additions when they fit the budget (or when `force`d: the first column)."""
        budget = self.budget
        additions = {
            t: {c for c in cs if c not in self.kept.get(t, set())} for t, cs in additions.items()
        }
        additions = {t: cs for t, cs in additions.items() if cs or t not in self.kept}
        least = sum(self.model.width[(t, c)] for t, cs in additions.items() for c in cs)
        if not force and self.used_chars + least > budget.max_chars:
            return False  # cannot fit whatever its key lines cost
        add_cols, add_chars, lines = self._cost(additions)
        fits = self.used_chars + add_chars <= budget.max_chars and (
            not budget.max_columns or self.used_cols + add_cols <= budget.max_columns
        )
        if not fits and not force:
            return False
        if not fits:
            first = next(iter(additions))
            self.notes.append(
                f"the budget is smaller than the best column with its keys: kept "
                f"{first}.{', '.join(sorted(additions[first]))} anyway"
            )
        for t, cs in additions.items():
            self.kept.setdefault(t, set()).update(cs)
        self.kept_lines.update(lines)
        self.used_cols += add_cols
        self.used_chars += add_chars
        return True

    def _with_join_path(
        self, additions: dict[str, set[str]], joins: list[tuple[str, str, str, str]]
    ) -> None:
        for a, a_col, b, b_col in joins:
            additions.setdefault(a, set()).add(a_col)
            additions.setdefault(b, set()).add(b_col)
            for t in (a, b):
                if t not in self.kept:
                    additions[t] |= self.model.primary[t]

    def _remember_kept(self, additions: dict[str, set[str]]) -> None:
        for t in additions:
            self.kept_by_group.setdefault(self.model.groups.of.get(t, ""), set()).add(t)

    def take_columns_best_first(self) -> None:
        """Each column in rank order, with its table's keys and the join path to the tables
        kept already; a group far less relevant than the best is left out unless named."""
        model, budget = self.model, self.budget
        for table_name, column_name in self.order:
            if self._full():
                break  # full: nothing more can fit
            if column_name in self.kept.get(table_name, set()):
                continue
            additions = self._column_with_context(table_name, column_name)
            if additions is None or not self.add(additions, force=not self.kept):
                continue
            self._remember_kept(additions)
            self.kept_groups.add(model.groups.of.get(table_name, ""))
            if budget.max_columns and self.used_cols >= budget.max_columns:
                break

    def _column_with_context(self, table_name: str, column_name: str) -> dict[str, set[str]] | None:
        """The column with what must come along (keys, a join path), or None to skip it."""
        model, ranking = self.model, self.ranking
        additions: dict[str, set[str]] = {table_name: {column_name}}
        group = model.groups.of.get(table_name, "")
        wanted = table_name in ranking.named or (table_name, column_name) in self.forced
        if group in self.skipped_groups and not wanted:
            return None
        if table_name in self.kept:
            return additions
        if column_name in model.primary[table_name]:
            return None  # a key alone says nothing: its table comes with a column it has
        additions[table_name] |= model.primary[table_name]
        same_group = self.kept_by_group.get(group, set())
        if not same_group:
            if self.kept_groups and ranking.group.get(group, 0.0) < GROUP_MARGIN and not wanted:
                self.skipped_groups.add(group)
                return None
            return additions
        joins = model.adjacency.path(table_name, same_group, self.table_rank)
        # Only a kept table that joins something tells which tables the question spans: a
        # kept table that joins nothing (a staging copy, an archive) must not shut out the
        # joined tables the question may be about.
        if (
            joins is None
            and table_name not in ranking.named
            and group in model.group_edges
            and any(model.adjacency.edges.get(t) for t in same_group)
        ):
            self.notes.append(f"{table_name} cannot be joined to the kept tables: left out")
            return None
        self._with_join_path(additions, joins or [])
        # Every key between the new table and the kept ones, not only the shortest path.
        for other, col, other_col in model.adjacency.edges.get(table_name, []):
            if other in self.kept:
                additions[table_name].add(col)
                additions.setdefault(other, set()).add(other_col)
        return additions

    def complete_kept_tables(self) -> None:
        """What is left goes to the other columns of the kept tables, the most relevant first."""
        model = self.model
        for table_name in sorted(
            self.kept, key=lambda t: (self.table_rank.get(t, 1 << 30), model.index[t])
        ):
            if self._full():
                return
            kept = self.kept[table_name]
            rest = [c.name for c in model.by_name[table_name].columns if c.name not in kept]
            if rest and not self.add({table_name: set(rest)}):
                for name in rest:
                    self.add({table_name: {name}})

    def fill_kept_groups(self) -> None:
        """Then the other tables of the kept groups, the best group first, each whole with its
        join path: a question is about one database, and what fits of it is worth more than
        another database's best guess."""
        model, budget = self.model, self.budget
        table_rel = self.ranking.table
        for group in sorted(self.kept_groups, key=lambda g: self.group_order.get(g, 0)):
            pending = [t for t in model.members.get(group, []) if t not in self.kept]
            for table_name in sorted(
                pending, key=lambda t: (-table_rel.get(t, 0.0), model.index[t])
            ):
                if self._full():
                    break
                if table_name in self.kept or (
                    budget.max_columns and self.used_cols >= budget.max_columns
                ):
                    continue
                same_group = self.kept_by_group.get(group, set())
                joins = model.adjacency.path(table_name, same_group, self.table_rank)
                if joins is None and group in model.group_edges:
                    continue
                additions = {table_name: {c.name for c in model.by_name[table_name].columns}}
                self._with_join_path(additions, joins or [])
                if self.add(additions):
                    self._remember_kept(additions)


def _edge(model: _Model, t: str, col: str, other: str, other_col: str) -> list[ForeignKey]:
    """The join between two tables on these columns, in the direction it was declared."""
    return [
        fk
        for fk in (ForeignKey(t, col, other, other_col), ForeignKey(other, other_col, t, col))
        if fk in model.join_set
    ]


def _primary_key(table: TableInfo) -> set[str]:
    return {c.name for c in table.columns if c.primary_key}


def _restrict(
    schema: SchemaInfo, kept: dict[str, set[str]], joins: Sequence[ForeignKey]
) -> SchemaInfo:
    """The kept tables and columns, with every join (declared, implied or inferred) whose
    columns were both kept: the agents need to see how the kept tables join."""
    tables = [
        TableInfo(t.name, [c for c in t.columns if c.name in kept[t.name]])
        for t in schema.tables
        if t.name in kept
    ]
    fks = [
        fk
        for fk in joins
        if fk.column in kept.get(fk.table, set()) and fk.ref_column in kept.get(fk.ref_table, set())
    ]
    return SchemaInfo(schema.db_name, schema.dialect, tables, fks)
