"""Deterministic schema linking: rank columns against the question, keep the best within a budget.

No model is called. A column scores by how much of its name, readable name and BIRD
descriptions the question and evidence mention, by its table's name, and by stored values the
value index matched in it (optionally also by embedding similarity). When the whole schema fits
the budget nothing is dropped. Otherwise columns are added best first, each with its table's
primary key and the foreign-key path that joins its table to the tables already kept, while the
budget (columns and rendered characters) allows; so the kept tables can always be joined.
"""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.embeddings import Embeddings

from macsql.database.schema import ForeignKey, SchemaInfo, TableInfo, once_per_schema
from macsql.database.value_index import ValueMatch, normalise
from macsql.prompts.schema_text import render_column

_STOPWORD_TEXT = """
a an the of in on at to for from by with and or not no is are was were be been being what
which who whom whose when where why how many much list show give find tell me all any each
every that this these those there their its it as than then do does did has have had please
name names number count total between among per into onto over under more most less least i
we you they he she them his her our your my can could would should will shall may if else
also only just both either neither out up down about after before during
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_TIME_WORDS = frozenset(["year", "date", "time", "season", "dob", "birthday", "day"])
_NAME_WORDS = frozenset(
    {"name", "forename", "surname", "first", "last", "title", "display", "full", "nickname"}
    | {"county", "city", "district", "country", "state", "region", "location", "place"}
)
MAX_NGRAM = 4
TABLE_HEADER_CHARS = 16
NARROW_TABLE = 10
LONG_WORD = 6


def words(text: str) -> list[str]:
    """Lower-case word stems of a name or a sentence: camelCase and snake_case split, plurals
    folded, accents dropped."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text or "")
    return [_stem(w) for w in normalise(spaced.replace("_", " ")).split()]


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def question_phrases(question: str, evidence: str = "") -> list[str]:
    """Word n-grams (n ≤ 4) of the question and evidence that could name a stored value:
    quoted strings first, then n-grams that neither start nor end with a stopword."""
    phrases: list[str] = []
    for text in (question, evidence):
        phrases += re.findall(r"['\"`‘“]([^'\"`’”]{1,80})['\"`’”]", text or "")
        tokens = re.findall(r"[\w][\w.&'-]*", text or "")
        for n in range(1, MAX_NGRAM + 1):
            for i in range(len(tokens) - n + 1):
                gram = tokens[i : i + n]
                if gram[0].lower() in _STOPWORDS or gram[-1].lower() in _STOPWORDS:
                    continue
                if n == 1 and len(gram[0]) < 2 and not gram[0].isupper():
                    continue  # a lone letter is a stored code when quoted or a capital
                phrases.append(" ".join(gram))
    return list(dict.fromkeys(p.strip(" .'-") for p in phrases if p.strip(" .'-")))


def flag_values(
    small_columns: dict[tuple[str, str], list[str]], question: str, evidence: str = ""
) -> list[ValueMatch]:
    """The values of few-valued columns ('T'/'F') whose name the question uses ("official"
    for IsOfficial): the question means one of them, though it never spells it."""
    asked = set(words(f"{question} {evidence}")) - _STOPWORDS
    out = []
    for (table, column), values in small_columns.items():
        named = (set(words(column)) - _STOPWORDS - {"is", "flag"}) & asked
        if named:
            phrase = " ".join(sorted(named))
            out += [ValueMatch(table, column, v, 0.8, phrase) for v in values]
    return out


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
    max_columns: int
    max_chars: int
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


@once_per_schema
def _column_terms(schema: SchemaInfo) -> dict[tuple[str, str], _Terms]:
    """Per column: its name words, its description words, its names as flat phrases and the
    values its description defines; computed once per schema object, since a cached schema
    serves every question."""
    out = {}
    for table in schema.tables:
        for col in table.columns:
            name = set(words(col.name)) | set(words(col.full_name))
            described = set(words(col.description)) | set(words(col.value_description))
            out[(table.name, col.name)] = _Terms(
                name - _STOPWORDS,
                described - _STOPWORDS,
                " ".join(words(col.name)),
                " ".join(words(col.full_name)),
                _value_labels(col.value_description),
                # Before the stopwords go: "name" is one, and a column called "name" is
                # exactly where a proper noun is stored.
                bool(name & _NAME_WORDS),
            )
    return out


@once_per_schema
def join_edges(schema: SchemaInfo) -> list[ForeignKey]:
    """The declared foreign keys plus those a column's name implies: `setCode` in `cards`
    names the `code` column of the table `sets`, `raceId` the `raceId` key of `races`.
    Many databases declare no foreign keys at all; linking needs the join all the same, or
    it keeps a table it cannot join. Computed once per schema object."""
    declared = {(fk.table, fk.column) for fk in schema.foreign_keys}
    by_words: dict[tuple[str, ...], TableInfo] = {}
    for table in schema.tables:
        by_words.setdefault(tuple(words(table.name)), table)
    out = list(schema.foreign_keys)
    for table in schema.tables:
        for col in table.columns:
            name = tuple(words(col.name))
            if (table.name, col.name) in declared or len(name) < 2:
                continue
            for cut in range(1, len(name)):
                other = by_words.get(name[:cut])
                if other is None or other is table:
                    continue
                prefix, rest = list(name[:cut]), list(name[cut:])
                targets = [c.name for c in other.columns if words(c.name) in (rest, prefix + rest)]
                if len(targets) == 1:
                    out.append(ForeignKey(table.name, col.name, other.name, targets[0]))
                    break
    return out


def rank_columns(
    schema: SchemaInfo,
    question: str,
    evidence: str,
    values: Sequence[ValueMatch] = (),
    embeddings: Embeddings | None = None,
) -> dict[tuple[str, str], float]:
    """A score per (table, column): higher is more likely needed. Deterministic."""
    asked = f"{question} {evidence}"
    asked_words = set(words(asked)) - _STOPWORDS
    asked_flat = " " + " ".join(words(asked)) + " "
    evidence_flat = " " + " ".join(words(evidence)) + " "
    value_score: dict[tuple[str, str], float] = {}
    for m in values:
        key = (m.table, m.column)
        value_score[key] = max(value_score.get(key, 0.0), m.score)
    scores: dict[tuple[str, str], float] = {}
    terms = _column_terms(schema)
    joins = join_edges(schema)
    join_columns = {(fk.table, fk.column) for fk in joins} | {
        (fk.ref_table, fk.ref_column) for fk in joins
    }
    spread: dict[str, int] = {}
    for term in terms.values():
        spread[term.flat_name] = spread.get(term.flat_name, 0) + 1
    qualified = {
        (t.lower(), c.lower()) for t, c in re.findall(r"`?(\w+)`?\.`?(\w+)`?", evidence or "")
    }
    has_year = bool(re.search(r"\b(1[89]|20)\d\d\b", asked))
    long_asked = [w for w in asked_words if len(w) >= LONG_WORD]
    inside = functools.cache(lambda word: any(word in other for other in long_asked))
    # A capitalised word inside a sentence names something stored in a name or place column
    # (unless a stored value already matched it: then its column is known).
    matched_phrases = " ".join(m.phrase.lower() for m in values)
    proper_nouns = any(
        noun.lower() not in matched_phrases
        for noun in re.findall(r"(?<=[a-z,] )[A-Z][a-z]+", question)
    )
    for table in schema.tables:
        table_words = set(words(table.name)) - _STOPWORDS
        table_score = len(table_words & asked_words) / len(table_words) if table_words else 0.0
        for col in table.columns:
            term = terms[(table.name, col.name)]
            content, described, flat_name, flat_full = (
                term.name,
                term.described,
                term.flat_name,
                term.flat_full,
            )
            # A name word inside a longer word of the question counts too: "rank" in "ranked",
            # "phone" in "telephone" (a stem or a compound the plural folding misses).
            matched = content & asked_words
            matched |= {w for w in content - matched if len(w) >= 4 and inside(w)}
            score = 3.0 * (len(matched) / len(content) if content else 0.0)
            if (table.name, col.name) in join_columns:
                # "raceId" matching "race" says the question is about races, not that this
                # join column is needed: it comes along with its table's join anyway.
                score *= 0.3
            if has_year and content & _TIME_WORDS:
                score += 1.5
            # A name many tables share ("name", "id") says less than a distinctive one.
            weight = 1.0 if spread.get(flat_name, 0) <= 2 else 0.4
            for flat in (flat_name, flat_full):
                if len(flat) > 2 and f" {flat} " in asked_flat:
                    score += 2.0 * weight
                if len(flat) > 2 and f" {flat} " in evidence_flat:
                    score += 3.0 * weight  # BIRD's evidence names the column it means
            if (table.name.lower(), col.name.lower()) in qualified:
                score += 5.0
            if described:
                score += 1.5 * len(described & asked_words) / math.sqrt(len(described))
            score += 1.5 * table_score
            if any(f" {label} " in asked_flat for label in term.labels):
                score += 2.0  # the question names a value the column's description defines
            score += 4.0 * value_score.get((table.name, col.name), 0.0)
            if proper_nouns and term.holds_names:
                score += 2.0  # "Lewis Hamilton" is stored in some name column
            scores[(table.name, col.name)] = round(score, 4)
    # A column of a table the question is about is likelier needed (its keys, its names);
    # but in a wide table that says little about any one column, and it must not lift a
    # hundred of them over the few columns of another table the question names.
    best: dict[str, float] = {}
    for (table_name, _), score in scores.items():
        best[table_name] = max(best.get(table_name, 0.0), score)
    affinity = {
        t.name: 0.3 * min(1.0, math.sqrt(NARROW_TABLE / max(1, len(t.columns))))
        for t in schema.tables
    }
    for key in scores:
        scores[key] = round(scores[key] + affinity[key[0]] * best[key[0]], 4)
    if embeddings is not None:
        _add_embedding_scores(schema, asked, embeddings, scores)
    return scores


_embedded: dict[tuple[int, int], list[list[float]]] = {}


def _add_embedding_scores(
    schema: SchemaInfo, asked: str, embeddings: Embeddings, scores: dict[tuple[str, str], float]
) -> None:
    keys = [(t.name, c.name) for t in schema.tables for c in t.columns]
    cache_key = (id(schema), id(embeddings))
    if cache_key not in _embedded:
        docs = [
            f"{t.name} {c.name} {c.full_name} {c.description}".strip()
            for t in schema.tables
            for c in t.columns
        ]
        _embedded[cache_key] = embeddings.embed_documents(docs)
        weakref.finalize(schema, _embedded.pop, cache_key, None)
    query = embeddings.embed_query(asked)
    qn = math.sqrt(sum(x * x for x in query)) or 1.0
    for key, vector in zip(keys, _embedded[cache_key], strict=True):
        vn = math.sqrt(sum(x * x for x in vector)) or 1.0
        cosine = sum(a * b for a, b in zip(query, vector, strict=False)) / (qn * vn)
        scores[key] = round(scores[key] + 3.0 * max(0.0, cosine), 4)


def pick_values(matches: Sequence[ValueMatch], limit: int, per_column: int = 3) -> list[ValueMatch]:
    """The best `limit` matches, at most `per_column` per column, longest phrase first on ties."""
    out: list[ValueMatch] = []
    used: dict[tuple[str, str], int] = {}
    ordered = sorted(matches, key=lambda m: (-m.score, -len(m.phrase), len(m.value), m.table))
    for m in ordered:
        key = (m.table, m.column)
        if used.get(key, 0) >= per_column or any(
            o.table == m.table and o.column == m.column and o.value == m.value for o in out
        ):
            continue
        used[key] = used.get(key, 0) + 1
        out.append(m)
        if len(out) >= limit:
            break
    return out


@once_per_schema
def _schema_chars(schema: SchemaInfo) -> int:
    """The rendered schema's size, measured once per schema object: a cached schema serves
    every question on its database, and rendering it again cost about 0.6 ms a question."""
    return sum(
        TABLE_HEADER_CHARS + len(t.name) + sum(len(render_column(c)) + 4 for c in t.columns)
        for t in schema.tables
    )


class _Adjacency:
    """The foreign-key graph between tables, with the columns each edge joins on."""

    def __init__(self, schema: SchemaInfo) -> None:
        self.edges: dict[str, list[tuple[str, str, str]]] = {t.name: [] for t in schema.tables}
        for fk in join_edges(schema):
            self.edges.setdefault(fk.table, []).append((fk.ref_table, fk.column, fk.ref_column))
            self.edges.setdefault(fk.ref_table, []).append((fk.table, fk.ref_column, fk.column))

    def path(self, start: str, targets: set[str]) -> list[tuple[str, str, str, str]] | None:
        """The shortest list of joins (table, column, other table, other column) from `start`
        to any table in `targets`; None when none is reachable."""
        if start in targets:
            return []
        previous: dict[str, tuple[str, str, str]] = {start: ("", "", "")}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            for other, col, other_col in sorted(self.edges.get(here, [])):
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


def link_schema(
    schema: SchemaInfo,
    question: str,
    evidence: str,
    budget: LinkBudget,
    values: Sequence[ValueMatch] = (),
    embeddings: Embeddings | None = None,
) -> LinkResult:
    """Keep the columns that best match the question, within `budget`."""
    chosen_values = pick_values(values, budget.max_values)
    total = schema.total_columns
    chars = _schema_chars(schema)
    if total <= budget.max_columns and chars <= budget.max_chars:
        reason = (
            f"the schema fits the budget ({total} of {budget.max_columns} columns, "
            f"{chars} of {budget.max_chars} characters): nothing dropped"
        )
        return LinkResult(schema, "full", reason, {}, chosen_values, total)
    scores = rank_columns(schema, question, evidence, chosen_values, embeddings)
    by_name = {t.name: t for t in schema.tables}
    # Matched values' columns go first: they are always kept.
    forced = {(m.table, m.column) for m in chosen_values}
    order = sorted(scores, key=lambda k: (k not in forced, -scores[k], k))
    adjacency = _Adjacency(schema)
    kept: dict[str, set[str]] = {}
    used_cols = 0
    used_chars = 0
    notes: list[str] = []
    width = {(t.name, c.name): len(render_column(c)) + 4 for t in schema.tables for c in t.columns}

    def cost(additions: dict[str, set[str]]) -> tuple[int, int]:
        cols = sum(len(cs) for cs in additions.values())
        size = sum(width[(t, c)] for t, cs in additions.items() for c in cs)
        size += sum(TABLE_HEADER_CHARS + len(t) for t in additions if t not in kept)
        return cols, size

    for table_name, column_name in order:
        if column_name in kept.get(table_name, set()):
            continue
        additions: dict[str, set[str]] = {table_name: {column_name}}
        if table_name not in kept:
            additions[table_name] |= _primary_key(by_name[table_name])
            if kept:
                joins = adjacency.path(table_name, set(kept))
                for a, a_col, b, b_col in joins or []:
                    additions.setdefault(a, set()).add(a_col)
                    additions.setdefault(b, set()).add(b_col)
                    for t in (a, b):
                        if t not in kept:
                            additions[t] |= _primary_key(by_name[t])
                if joins is None:
                    notes.append(f"{table_name} has no foreign-key path to the kept tables")
                # Every key between the new table and the kept ones, not only the shortest path.
                for other, col, other_col in adjacency.edges.get(table_name, []):
                    if other in kept:
                        additions[table_name].add(col)
                        additions.setdefault(other, set()).add(other_col)
        additions = {
            t: {c for c in cs if c not in kept.get(t, set())} for t, cs in additions.items()
        }
        add_cols, add_chars = cost(additions)
        fits = (
            used_cols + add_cols <= budget.max_columns
            and used_chars + add_chars <= budget.max_chars
        )
        if not fits and kept:
            continue
        if not fits:
            notes.append(
                f"the budget is smaller than the best column with its keys: kept "
                f"{table_name}.{column_name} anyway"
            )
        for t, cs in additions.items():
            kept.setdefault(t, set()).update(cs)
        used_cols += add_cols
        used_chars += add_chars
        if used_cols >= budget.max_columns:
            break
    linked = _restrict(schema, kept)
    reason = (
        f"the schema is over the budget ({total} columns, {chars} characters; budget "
        f"{budget.max_columns} columns, {budget.max_chars} characters): kept "
        f"{linked.total_columns} columns in {len(linked.tables)} tables"
    )
    return LinkResult(linked, "linked", reason, scores, chosen_values, total, notes)


def _primary_key(table: TableInfo) -> set[str]:
    return {c.name for c in table.columns if c.primary_key}


def _restrict(schema: SchemaInfo, kept: dict[str, set[str]]) -> SchemaInfo:
    tables = [
        TableInfo(t.name, [c for c in t.columns if c.name in kept[t.name]])
        for t in schema.tables
        if t.name in kept
    ]
    fks = [
        fk
        for fk in schema.foreign_keys
        if fk.column in kept.get(fk.table, set()) and fk.ref_column in kept.get(fk.ref_table, set())
    ]
    return SchemaInfo(schema.db_name, schema.dialect, tables, fks)


def render_value_matches(matches: Sequence[ValueMatch], dialect: str) -> str:
    """`table.column = 'value'` lines: one line each, the value as a quoted SQL literal with
    quotes doubled, space flattened and `<`/`>` escaped, so it reads as data, never as an
    instruction, and cannot close the prompt's <schema> block."""
    q = '"' if dialect == "postgres" else "`"
    lines = []
    for m in matches:
        flat = " ".join(m.value.split()).replace("'", "''")
        flat = flat.replace("<", "\\u003c").replace(">", "\\u003e")
        lines.append(f"{m.table}.{q}{m.column}{q} = '{flat}'")
    return "\n".join(lines)
