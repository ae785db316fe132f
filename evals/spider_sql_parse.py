"""A parser of Spider's gold SQL into the official evaluator's structure, for the items that come
without it.

Spider's own JSON ships that structure on every item (the ``sql`` key), and `macsql.evals.hardness`
uses it when it is there. Copies of the question files that were stripped of it (this project's
``train_spider.json`` is one) and hand-made Spider-style files only have the SQL text; this
parser builds the same structure from it, with the official parser's quirks, so that the
hardness rules count alike on both (a test compares the two on every dev item). Tables and
columns are kept as their names: no schema is needed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_CLAUSE_KEYWORDS = frozenset(
    ("select", "from", "where", "group", "order", "limit", "intersect", "union", "except")
)
_JOIN_KEYWORDS = frozenset(("join", "on", "as"))
_WHERE_OPS = ("not", "between", "=", ">", "<", ">=", "<=", "!=", "in", "like", "is", "exists")
_UNIT_OPS = ("none", "-", "+", "*", "/")
_AGG_OPS = ("none", "max", "min", "count", "sum", "avg")
_SET_OPS = ("intersect", "union", "except")
_ORDER_DIRECTIONS = ("desc", "asc")
LIKE_OP = _WHERE_OPS.index("like")
"""The official operator id of LIKE in a condition unit."""


class HardnessParseError(ValueError):
    """The SQL is outside the grammar the official hardness rules are defined on."""


# ---------------------------------------------------------------------------------------------
# Tokenizer: word-tokenizer splitting rules as they apply to SQL text, with quoted values kept
# whole and comparison operators re-joined.

_SPLIT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(`+)"), r" \1 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&?!*\u2012-\u2015]"), r" \g<0> "),
    (re.compile(r"([^.])(\.)\s*$"), r"\1 \2 "),
    (re.compile(r"[\[\](){}<>]"), r" \g<0> "),
    (re.compile(r"--"), r" -- "),
)


def tokenize(sql: str) -> list[str]:
    """Lower-cased tokens of `sql`; quoted values stay one token (in double quotes)."""
    text = str(sql).replace("'", '"')
    quotes = [i for i, ch in enumerate(text) if ch == '"']
    if len(quotes) % 2:
        raise HardnessParseError("unbalanced quotes")
    values: dict[str, str] = {}
    pieces: list[str] = []
    last = 0
    for n in range(0, len(quotes), 2):
        start, end = quotes[n], quotes[n + 1]
        key = f"__val_{start}_{end}__"
        values[key] = text[start : end + 1]
        pieces.append(text[last:start])
        pieces.append(key)
        last = end + 1
    pieces.append(text[last:])
    text = "".join(pieces)
    for pattern, replacement in _SPLIT_RULES:
        text = pattern.sub(replacement, text)
    tokens = [values.get(t.lower(), t.lower()) for t in text.split()]
    merged: list[str] = []
    for tok in tokens:
        if tok == "=" and merged and merged[-1] in ("!", ">", "<"):
            merged[-1] += "="
        else:
            merged.append(tok)
    return merged


# ---------------------------------------------------------------------------------------------
# Parser: the official structure.
#   col_unit:  (agg_id, column, is_distinct)
#   val_unit:  (unit_op, col_unit1, col_unit2)
#   cond_unit: (not_op, op_id, val_unit, val1, val2)
#   condition: [cond_unit, "and"/"or", cond_unit, ...]


class _Parser:
    def __init__(self, tokens: Sequence[str]) -> None:
        self.toks = list(tokens)

    # Hooks for a parser that maps names to a schema (`macsql.evals.exact_match`); this one
    # keeps the names as written.
    def _column(self, tok: str) -> Any:
        return tok

    def _table(self, tok: str) -> Any:
        return tok

    def _limit(self, tok: str) -> Any:
        return 1  # only its presence matters to the hardness rules

    def _enter_query(self) -> None:
        """A query (or subquery) starts: its FROM tables are the default for bare columns."""

    def _leave_query(self) -> None:
        """The query that `_enter_query` opened ends."""

    def _tok(self, idx: int, toks: Sequence[str] | None = None) -> str:
        toks = self.toks if toks is None else toks
        if idx >= len(toks):
            raise HardnessParseError("unexpected end of query")
        return toks[idx]

    def _expect(self, idx: int, tok: str, toks: Sequence[str] | None = None) -> int:
        if self._tok(idx, toks) != tok:
            raise HardnessParseError(f"expected {tok!r} at token {idx}")
        return idx + 1

    def col_unit(self, idx: int, toks: Sequence[str] | None = None) -> tuple[int, tuple]:
        toks = self.toks if toks is None else toks
        in_parens = self._tok(idx, toks) == "("
        if in_parens:
            idx += 1
        if self._tok(idx, toks) in _AGG_OPS:
            agg = _AGG_OPS.index(toks[idx])
            idx = self._expect(idx + 1, "(", toks)
            distinct = self._tok(idx, toks) == "distinct"
            if distinct:
                idx += 1
            column = self._column(self._tok(idx, toks))
            idx = self._expect(idx + 1, ")", toks)
            # The official parser returns here without closing an outer parenthesis.
            return idx, (agg, column, distinct)
        distinct = self._tok(idx, toks) == "distinct"
        if distinct:
            idx += 1
        column = self._column(self._tok(idx, toks))
        idx += 1
        if in_parens:
            idx = self._expect(idx, ")", toks)
        return idx, (0, column, distinct)

    def val_unit(self, idx: int) -> tuple[int, tuple]:
        in_parens = self._tok(idx) == "("
        if in_parens:
            idx += 1
        idx, left = self.col_unit(idx)
        op, right = 0, None
        if idx < len(self.toks) and self.toks[idx] in _UNIT_OPS:
            op = _UNIT_OPS.index(self.toks[idx])
            idx, right = self.col_unit(idx + 1)
        if in_parens:
            idx = self._expect(idx, ")")
        return idx, (op, left, right)

    def value(self, start: int) -> tuple[int, Any]:
        idx = start
        in_parens = self._tok(idx) == "("
        if in_parens:
            idx += 1
        tok = self._tok(idx)
        value: Any
        if tok == "select":
            idx, value = self.query(idx)
        elif '"' in tok:
            value, idx = tok, idx + 1
        else:
            try:
                value, idx = float(tok), idx + 1
            except ValueError:
                end = idx
                while end < len(self.toks) and not (
                    self.toks[end] in (",", ")", "and")
                    or self.toks[end] in _CLAUSE_KEYWORDS
                    or self.toks[end] in _JOIN_KEYWORDS
                ):
                    end += 1
                # A column reference: everything up to the stop token belongs to it.
                _, value = self.col_unit(0, self.toks[start:end])
                idx = end
        if in_parens:
            idx = self._expect(idx, ")")
        return idx, value

    def condition(self, idx: int) -> tuple[int, list]:
        conds: list[Any] = []
        while idx < len(self.toks):
            idx, val_unit = self.val_unit(idx)
            negated = self._tok(idx) == "not"
            if negated:
                idx += 1
            op_tok = self._tok(idx)
            if op_tok not in _WHERE_OPS:
                raise HardnessParseError(f"unknown condition operator {op_tok!r}")
            op = _WHERE_OPS.index(op_tok)
            idx += 1
            val2 = None
            if op_tok == "between":
                idx, val1 = self.value(idx)
                idx = self._expect(idx, "and")
                idx, val2 = self.value(idx)
            else:
                idx, val1 = self.value(idx)
            conds.append((negated, op, val_unit, val1, val2))
            if idx < len(self.toks) and (
                self.toks[idx] in _CLAUSE_KEYWORDS
                or self.toks[idx] in (")", ";")
                or self.toks[idx] in _JOIN_KEYWORDS
            ):
                break
            if idx < len(self.toks) and self.toks[idx] in ("and", "or"):
                conds.append(self.toks[idx])
                idx += 1
        return idx, conds

    def select(self, idx: int) -> tuple[int, tuple]:
        idx = self._expect(idx, "select")
        distinct = idx < len(self.toks) and self.toks[idx] == "distinct"
        if distinct:
            idx += 1
        items: list[tuple] = []
        while idx < len(self.toks) and self.toks[idx] not in _CLAUSE_KEYWORDS:
            agg = 0
            if self.toks[idx] in _AGG_OPS:
                agg = _AGG_OPS.index(self.toks[idx])
                idx += 1
            idx, val_unit = self.val_unit(idx)
            items.append((agg, val_unit))
            if idx < len(self.toks) and self.toks[idx] == ",":
                idx += 1
        return idx, (distinct, items)

    def from_clause(self, start: int) -> tuple[int, list, list]:
        try:
            idx = self.toks.index("from", start) + 1
        except ValueError:
            raise HardnessParseError("no FROM clause") from None
        units: list[tuple] = []
        conds: list[Any] = []
        while idx < len(self.toks):
            in_parens = self.toks[idx] == "("
            if in_parens:
                idx += 1
            if self._tok(idx) == "select":
                idx, sub = self.query(idx)
                units.append(("sql", sub))
            else:
                if self.toks[idx] == "join":
                    idx += 1
                name = self._tok(idx)
                idx += 3 if idx + 1 < len(self.toks) and self.toks[idx + 1] == "as" else 1
                units.append(("table_unit", self._table(name)))
            if idx < len(self.toks) and self.toks[idx] == "on":
                idx, these = self.condition(idx + 1)
                if conds:
                    conds.append("and")
                conds.extend(these)
            if in_parens:
                idx = self._expect(idx, ")")
            if idx < len(self.toks) and (
                self.toks[idx] in _CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")
            ):
                break
        return idx, units, conds

    def group_by(self, idx: int) -> tuple[int, list]:
        units: list[tuple] = []
        if idx >= len(self.toks) or self.toks[idx] != "group":
            return idx, units
        idx = self._expect(idx + 1, "by")
        while idx < len(self.toks) and not (
            self.toks[idx] in _CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")
        ):
            idx, unit = self.col_unit(idx)
            units.append(unit)
            if idx < len(self.toks) and self.toks[idx] == ",":
                idx += 1
            else:
                break
        return idx, units

    def order_by(self, idx: int) -> tuple[int, Any]:
        if idx >= len(self.toks) or self.toks[idx] != "order":
            return idx, []
        idx = self._expect(idx + 1, "by")
        direction = "asc"
        units: list[tuple] = []
        while idx < len(self.toks) and not (
            self.toks[idx] in _CLAUSE_KEYWORDS or self.toks[idx] in (")", ";")
        ):
            idx, unit = self.val_unit(idx)
            units.append(unit)
            if idx < len(self.toks) and self.toks[idx] in _ORDER_DIRECTIONS:
                direction = self.toks[idx]
                idx += 1
            if idx < len(self.toks) and self.toks[idx] == ",":
                idx += 1
            else:
                break
        return idx, (direction, units)

    def _skip_semicolons(self, idx: int) -> int:
        while idx < len(self.toks) and self.toks[idx] == ";":
            idx += 1
        return idx

    def query(self, start: int) -> tuple[int, dict[str, Any]]:
        self._enter_query()
        try:
            return self._query(start)
        finally:
            self._leave_query()

    def _query(self, start: int) -> tuple[int, dict[str, Any]]:
        idx = start
        in_parens = self._tok(idx) == "("
        if in_parens:
            idx += 1
        from_end, units, from_conds = self.from_clause(start)
        _, select = self.select(idx)
        sql: dict[str, Any] = {
            "select": select,
            "from": {"table_units": units, "conds": from_conds},
        }
        idx = from_end
        if idx < len(self.toks) and self.toks[idx] == "where":
            idx, sql["where"] = self.condition(idx + 1)
        else:
            sql["where"] = []
        idx, sql["groupBy"] = self.group_by(idx)
        if idx < len(self.toks) and self.toks[idx] == "having":
            idx, sql["having"] = self.condition(idx + 1)
        else:
            sql["having"] = []
        idx, sql["orderBy"] = self.order_by(idx)
        sql["limit"] = None
        if idx < len(self.toks) and self.toks[idx] == "limit":
            idx += 2
            sql["limit"] = self._limit(self.toks[idx - 1] if idx - 1 < len(self.toks) else "")
        idx = self._skip_semicolons(idx)
        if in_parens:
            idx = self._expect(idx, ")")
        idx = self._skip_semicolons(idx)
        for op in _SET_OPS:
            sql[op] = None
        if idx < len(self.toks) and self.toks[idx] in _SET_OPS:
            op = self.toks[idx]
            idx, sql[op] = self.query(idx + 1)
        return idx, sql


def parse_sql(sql: str) -> dict[str, Any]:
    """Parse `sql` into the official evaluator's structure (names instead of schema ids)."""
    try:
        return _Parser(tokenize(sql)).query(0)[1]
    except HardnessParseError:
        raise
    except (IndexError, ValueError, TypeError) as exc:  # malformed input
        raise HardnessParseError(str(exc)) from exc
