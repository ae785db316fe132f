"""Result comparison rules of the official BIRD and Spider (test-suite) evaluators.

BIRD: an item is correct when the predicted and gold rows are equal as sets (order, duplicates
ignored; column order matters).

Spider test-suite: both queries are first normalised the same way (``> =`` joined to ``>=``,
``DISTINCT`` removed unless kept, ``YEAR(CURDATE())`` read as 2020); then the results are equal
when some permutation of the predicted columns makes the two row lists equal as multisets, or
as sequences when the gold SQL contains ``order by``. Two empty results are equal.

Values compare with Python equality, as in the official scorers: ``1 == 1.0``, and
``0.1 + 0.2 != 0.3``.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlglot.dialects.sqlite import SQLite
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

Row = tuple[Any, ...]

_SQLITE_TOKENIZER = SQLite.tokenizer_class


# ---------------------------------------------------------------------------------------------
# BIRD


def bird_equal(pred_rows: Sequence[Row], gold_rows: Sequence[Row]) -> bool:
    """BIRD's rule: the two results hold the same set of rows."""
    return set(pred_rows) == set(gold_rows)


# ---------------------------------------------------------------------------------------------
# Spider: query normalisation

_SPACED_COMPARISONS = (("> =", ">="), ("< =", "<="), ("! =", "!="))
_CUR_YEAR = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]")
_DISTINCT_WORD = re.compile(r"\bdistinct\b", re.IGNORECASE)


def join_spaced_comparisons(sql: str) -> str:
    """``> =`` becomes ``>=`` (and ``< =``, ``! =``), as the official post-processing does."""
    for spaced, joined in _SPACED_COMPARISONS:
        sql = sql.replace(spaced, joined)
    return sql


def replace_current_year(sql: str) -> str:
    """``YEAR(CURDATE())`` (MySQL) reads as 2020, the year the Spider test suite fixed."""
    return _CUR_YEAR.sub("2020", sql)


def remove_distinct(sql: str) -> str:
    """Drop every DISTINCT keyword (also inside ``COUNT(DISTINCT x)``), as the official does.

    Quoted identifiers, string literals and comments that spell "distinct" are kept.
    """
    if "distinct" not in sql.lower():  # no such keyword to find: spare the tokenizer
        return sql
    try:
        tokens = _SQLITE_TOKENIZER().tokenize(sql)
    except SqlglotError:
        return _remove_distinct_outside_quotes(sql)
    spans = [(t.start, t.end + 1) for t in tokens if t.token_type == TokenType.DISTINCT]
    if not spans:
        return sql
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(sql[last:start])
        last = end
    pieces.append(sql[last:])
    return "".join(pieces)


def _remove_distinct_outside_quotes(sql: str) -> str:
    pieces: list[str] = []
    last = 0
    for match in _QUOTED.finditer(sql):
        pieces.append(_DISTINCT_WORD.sub("", sql[last : match.start()]))
        pieces.append(match.group(0))
        last = match.end()
    pieces.append(_DISTINCT_WORD.sub("", sql[last:]))
    return "".join(pieces)


FIRST_STATEMENT_NOTE = "first statement only, as the official Spider evaluator scores it"


def first_statement(sql: str) -> str:
    """The text up to and including the first `;` outside quotes and comments.

    The official scorer's DISTINCT removal parses the SQL with sqlparse and keeps its first
    statement, so `SELECT a; SELECT b` is scored as `SELECT a;`.
    """
    if ";" not in sql:  # one statement: spare the tokenizer
        return sql
    try:
        tokens = _SQLITE_TOKENIZER().tokenize(sql)
    except SqlglotError:
        return sql
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            head = sql[: token.end + 1]
            return head if sql[token.end + 1 :].strip() else sql
    return sql


@functools.lru_cache(maxsize=4096)
def normalize_spider_sql(sql: str, *, keep_distinct: bool = False) -> str:
    """The form in which the official Spider scorer executes a query (gold or predicted)."""
    sql = join_spaced_comparisons(sql)
    if not keep_distinct:
        sql = remove_distinct(first_statement(sql))
    return replace_current_year(sql)


def order_matters(normalized_gold_sql: str) -> bool:
    """The official test: the (normalised) gold SQL text contains ``order by``."""
    return "order by" in normalized_gold_sql.lower()


# ---------------------------------------------------------------------------------------------
# Spider: result equivalence


def spider_equal(gold_rows: Sequence[Row], pred_rows: Sequence[Row], *, ordered: bool) -> bool:
    """The test-suite rule: equal up to a column permutation, as bags or (if `ordered`) lists."""
    if gold_rows is pred_rows or (not gold_rows and not pred_rows):
        return True  # the very same result (e.g. a prediction identical to the gold)
    if len(gold_rows) != len(pred_rows):
        return False
    width = len(gold_rows[0])
    if len(pred_rows[0]) != width:
        return False
    gold = [tuple(r) for r in gold_rows]
    pred = [tuple(r) for r in pred_rows]
    if not _same_unordered_rows(gold, pred, ordered):
        return False
    gold_cols = [_column_signature(gold, i, ordered) for i in range(width)]
    pred_cols = [_column_signature(pred, j, ordered) for j in range(width)]
    # A gold column can only come from a predicted column that holds the same values (the same
    # multiset, or the same sequence when order matters): this prunes most permutations.
    candidates = [[j for j in range(width) if pred_cols[j] == gold_cols[i]] for i in range(width)]
    if any(not c for c in candidates):
        return False
    target: Counter[Row] | list[Row] = gold if ordered else Counter(gold)
    for perm in _permutations(candidates, pred, width):
        permuted = (
            pred if perm == tuple(range(width)) else [tuple(r[j] for j in perm) for r in pred]
        )
        if (permuted == target) if ordered else (Counter(permuted) == target):
            return True
    return False


def _row_as_sorted_values(row: Row) -> Row:
    return tuple(sorted(row, key=lambda v: str(v) + str(type(v))))


def _same_unordered_rows(gold: Sequence[Row], pred: Sequence[Row], ordered: bool) -> bool:
    """The official quick rejection: rows with their values sorted (by text, then type name)
    must agree, as a list when order matters, else as a set.

    It is a necessary condition for equal rows, except that it sorts ``1`` and ``1.0`` by
    their text: a row holding an int where the other holds the equal float can sort
    differently and be rejected. The official scorer rejects such pairs, so this does too.
    """
    gold_sorted = [_row_as_sorted_values(r) for r in gold]
    pred_sorted = [_row_as_sorted_values(r) for r in pred]
    if ordered:
        return gold_sorted == pred_sorted
    return set(gold_sorted) == set(pred_sorted)


def _column_signature(rows: Sequence[Row], col: int, ordered: bool) -> object:
    """What two columns must share to match: their values in order, or as a multiset."""
    values = [row[col] for row in rows]
    return tuple(values) if ordered else Counter(values)


def _permutations(candidates: list[list[int]], pred: Sequence[Row], width: int):
    """Column assignments gold column i -> predicted column perm[i], each predicted column once.

    Predicted columns with identical contents are interchangeable, so only one order of them
    is tried.
    """
    column_values = [tuple(row[j] for row in pred) for j in range(width)]
    first_with_same_values: dict[int, int] = {}
    for j in range(width):
        for k in range(j):
            if column_values[k] == column_values[j]:
                first_with_same_values[j] = k
                break
    order = sorted(range(width), key=lambda i: len(candidates[i]))
    chosen: list[int | None] = [None] * width
    used = [False] * width

    def assign(pos: int):
        if pos == width:
            yield tuple(chosen)
            return
        gold_col = order[pos]
        for j in candidates[gold_col]:
            if used[j]:
                continue
            twin = first_with_same_values.get(j)
            if twin is not None and not used[twin] and twin in candidates[gold_col]:
                continue  # its identical twin is free and tried instead
            used[j] = True
            chosen[gold_col] = j
            yield from assign(pos + 1)
            used[j] = False
        chosen[gold_col] = None

    yield from assign(0)
