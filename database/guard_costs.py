"""Work a backend cannot interrupt, refused before it starts.

A deadline stops a query only where the engine checks for interruption. Inside one function call
many do not: SQLite's `printf('%.*c', 60000000, 'x')` took 1.5 s in one step that `interrupt()`
cannot cut (whatever its length limit), DuckDB's `repeat('x', 1e9)` ran 36 s and took 3.9 GB of
this process, a KILLed MariaDB `REGEXP_REPLACE` was still running two minutes later. The caller
returns at its deadline; the work would not. So the guard refuses, in every dialect, the classes
such calls belong to:

1. **Values built to a size the query names** (`repeat`, `lpad`/`rpad`, `space`, the widths and
   precisions of `printf`/`format`, `array_fill`, DuckDB's list-building `range`): every size
   argument is a constant, and what such calls build from constants, counting each byte of data
   as one (a chain of them multiplies, calls side by side add up: a row's values are built in
   one step), fits `StatementLimits.max_built_bytes`. A `printf`/`format` pattern is a
   constant, so that its widths can be read.
2. **Edit distances**, whose work (and for `damerau_levenshtein` memory) grows with the product of
   their arguments' lengths: one argument is a constant of at most `max_pattern_chars`
   characters, so the work is linear in the other.
3. **Regular expressions in engines that backtrack without checking for interruption** (MySQL's
   ICU, MariaDB's PCRE): the pattern is a constant with no quantified group and no
   back-reference (the exponential class: `(a|ab)*c`), and the subject is a column or a
   constant, not a string the query grows (the polynomial class: `a*[bc]` on a 16 MB `REPEAT`).

4. **Searches in values the query grows** (SQLite's LIKE, GLOB, `instr`, `replace`; PostgreSQL's
   LIKE and ILIKE), whose work is the product of the subject's and the pattern's lengths in one
   step the engine does not interrupt: both sides are
   constants or stored data, traced through CTEs, subqueries and aliases to table columns
   (`_data_sized`), never a recursive CTE's column, an aggregate that joins values, a builder or
   a string the query lengthens; another scalar function holds twice what its arguments hold.

Everywhere a constant LIKE, SIMILAR TO or regular-expression pattern is at most
`max_pattern_chars` characters long.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from sqlglot import exp

from macsql.database.guard_limits import StatementLimits

_REGEX_NODES: tuple[type[exp.Expression], ...] = tuple(
    node_type
    for name in (
        "RegexpLike",
        "RegexpILike",
        "RegexpReplace",
        "RegexpInstr",
        "RegexpSubstr",
        "RegexpExtract",
        "RegexpExtractAll",
        "RegexpCount",
        "RegexpSplit",
        "RegexpFullMatch",
        "SimilarTo",
    )
    if (node_type := getattr(exp, name, None)) is not None
)
_LIKE_NODES: tuple[type[exp.Expression], ...] = tuple(
    node_type
    for name in ("Like", "ILike", "Glob", "LikeAny", "ILikeAny")
    if (node_type := getattr(exp, name, None)) is not None
)
_EDIT_DISTANCES = frozenset(
    {
        "levenshtein",
        "damerau_levenshtein",
        "levenshtein_less_equal",
        "jaro_similarity",
        "jaro_winkler_similarity",
        "editdist3",
    }
)
_FORMATTERS = frozenset({"printf", "format"})
# Engines whose regular expressions backtrack and are not interrupted by a kill or a timeout.
_UNINTERRUPTIBLE_REGEX = frozenset({"mysql"})
# Wrappers that keep a value the size of the data they wrap.
_DATA_SIZED = (exp.Lower, exp.Upper, exp.Trim, exp.Cast, exp.TryCast, exp.Paren)
_MAX_DEPTH = 64


class CostCheck:
    """The module's rules, applied node by node as the guard's one walk meets them."""

    __slots__ = ("built", "dialect", "limits", "sizes", "trace")

    SEEN: tuple[type, ...] = (exp.Func, *_LIKE_NODES, *_REGEX_NODES)
    """The node types a rule applies to (builders, edit distances and regular expressions are
    calls): `see` returns None for a node of any other type."""

    def __init__(self, dialect: str, limits: StatementLimits) -> None:
        self.dialect = dialect
        self.limits = limits
        self.sizes: dict[int, int] = {}
        self.built = 0
        self.trace = _Trace()  # one for the statement: each CTE column is traced once

    def see(self, node: object) -> str | None:
        """Why `node` asks a backend for work it cannot interrupt, or None."""
        if not isinstance(node, exp.Expression):
            return None
        problem = _node_problem(node, self.dialect, self.limits, self.sizes, self.trace)
        if problem is not None:
            return problem
        if _is_builder(node, self.dialect) and not _inside_a_builder(node, self.dialect):
            self.built += self.sizes.get(id(node), 0)
            if self.built > self.limits.max_built_bytes:
                return (
                    f"the query asks its functions to build {self.built:,} bytes from "
                    f"constants, over the {self.limits.max_built_bytes:,}-byte limit; such "
                    "calls cannot be interrupted"
                )
        return None


def cost_problem(root: exp.Expression, dialect: str, limits: StatementLimits) -> str | None:
    """Why `root` asks a backend for work it cannot interrupt (see the module), or None."""
    check = CostCheck(dialect, limits)
    for node in root.walk():
        problem = check.see(node)
        if problem is not None:
            return problem
    return None


def _inside_a_builder(node: exp.Expression, dialect: str) -> bool:
    parent, depth = node.parent, 0
    while parent is not None and depth < _MAX_DEPTH:
        if _is_builder(parent, dialect):
            return True
        parent, depth = parent.parent, depth + 1
    return False


def _call_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    if isinstance(node, exp.Func):
        func_type: Any = type(node)  # a class is hashable; mypy's Hashable check misreads it
        return _typed_name(func_type)
    return ""


@functools.cache
def _typed_name(func_type: Any) -> str:
    try:
        names = func_type.sql_names()
    except Exception:  # an abstract base without a name
        return ""
    return names[0].lower() if names else ""


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    found: list[exp.Expression] = []
    for key in ("this", "expression", "expressions"):
        value = node.args.get(key)
        values = value if isinstance(value, list) else [value]
        found += [item for item in values if isinstance(item, exp.Expression)]
    return found


def _node_problem(
    node: exp.Expression,
    dialect: str,
    limits: StatementLimits,
    sizes: dict[int, int],
    trace: _Trace | None = None,
) -> str | None:
    if isinstance(node, _LIKE_NODES):
        return _pattern_length_problem(node.args.get("expression"), limits) or _search_problem(
            node, dialect, trace
        )
    if isinstance(node, _SEARCHES):
        return _search_problem(node, dialect, trace)
    if isinstance(node, _REGEX_NODES) or (
        isinstance(node, exp.Anonymous) and _call_name(node).startswith("regexp_")
    ):
        return _regex_problem(node, dialect, limits)
    name = _call_name(node)
    if name in _EDIT_DISTANCES:
        return _edit_distance_problem(node, name, limits)
    if _is_builder(node, dialect):
        built = _built_size(node, dialect, limits, sizes, 0)
        if isinstance(built, str):
            return built
        if built > limits.max_built_bytes:
            return (
                f"{name or type(node).__name__.lower()}() would build a value of up to "
                f"{built:,} bytes, over the {limits.max_built_bytes:,}-byte limit of what a "
                "query may build from constants; one such call cannot be interrupted"
            )
    return None


# --- 1. values built to a named size -----------------------------------------------------------


def _is_builder(node: object, dialect: str) -> bool:
    if isinstance(node, exp.Repeat | exp.Pad | exp.Space | exp.Format):
        return True
    if isinstance(node, exp.GenerateSeries) and dialect == "duckdb":
        return not isinstance(node.parent, exp.Table)  # in FROM it streams rows
    return isinstance(node, exp.Anonymous) and _call_name(node) in ("printf", "array_fill")


def _constant(node: Any, depth: int = 0) -> int | None:
    """The integer a constant expression stands for, or None when it is not a constant."""
    if depth > _MAX_DEPTH or not isinstance(node, exp.Expression):
        return None
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(float(node.this))
        except (ValueError, OverflowError):
            return None
    if isinstance(node, exp.Paren | exp.Cast):
        return _constant(node.this, depth + 1)
    if isinstance(node, exp.Neg):
        inner = _constant(node.this, depth + 1)
        return None if inner is None else -inner
    if isinstance(node, exp.Add | exp.Sub | exp.Mul):
        left, right = _constant(node.this, depth + 1), _constant(node.expression, depth + 1)
        if left is None or right is None:
            return None
        if isinstance(node, exp.Add):
            return left + right
        return left - right if isinstance(node, exp.Sub) else left * right
    return None


def _size_argument(value: Any, call: str) -> int | str:
    """A size a builder names: a constant (negative counts as 0), or why it is refused."""
    constant = _constant(value)
    if constant is None:
        shown = value.sql() if isinstance(value, exp.Expression) else "?"
        return (
            f"the size argument {shown[:60]!r} of {call}() is not a constant: a value built to "
            "a size the data decides cannot be bounded before it runs. Use a constant size"
        )
    return max(0, constant)


def _built_size(
    node: Any, dialect: str, limits: StatementLimits, sizes: dict[int, int], depth: int
) -> int | str:
    """An upper bound of the bytes `node` builds from constants, counting data as 1 per byte,
    or why a size argument is refused. Memoised per node: the walk meets nested builders."""
    if not isinstance(node, exp.Expression) or depth > _MAX_DEPTH:
        return 1
    known = sizes.get(id(node))
    if known is not None:
        return known
    size = _size_of(node, dialect, limits, sizes, depth)
    if isinstance(size, int):
        sizes[id(node)] = size
    return size


def _size_of(
    node: exp.Expression, dialect: str, limits: StatementLimits, sizes: dict[int, int], depth: int
) -> int | str:
    def inner(value: Any) -> int | str:
        return _built_size(value, dialect, limits, sizes, depth + 1)

    if isinstance(node, exp.Literal):
        return max(1, len(str(node.this).encode()))
    if isinstance(node, exp.Repeat):
        times = _size_argument(node.args.get("times"), "repeat")
        unit = inner(node.this)
        if isinstance(times, str) or isinstance(unit, str):
            return times if isinstance(times, str) else unit
        return unit * times
    if isinstance(node, exp.Pad):
        length = _size_argument(node.expression, "lpad" if node.args.get("is_left") else "rpad")
        return length if isinstance(length, str) else 4 * length  # up to 4 bytes a character
    if isinstance(node, exp.Space):
        return _size_argument(node.this, "space")
    if isinstance(node, exp.Format) or (
        isinstance(node, exp.Anonymous) and _call_name(node) == "printf"
    ):
        return _formatted_size(node, inner)
    if isinstance(node, exp.Anonymous) and _call_name(node) == "array_fill":
        return _array_fill_size(node)
    if isinstance(node, exp.GenerateSeries) and dialect == "duckdb":
        return _series_size(node)
    if isinstance(node, exp.DPipe | exp.Concat | exp.ConcatWs):
        parts = [inner(part) for part in _arguments(node)]
        refused = next((part for part in parts if isinstance(part, str)), None)
        return refused if refused is not None else sum(int(part) for part in parts)
    return 1  # data, or a function of it: one unit per byte of data


# A printf directive: flags, a width or *, a precision or .*, a length, a conversion.
_PRINTF = re.compile(r"%(?:\d+\$)?[-+ #0,!]*(\*|\d+)?(?:\.(\*|\d+))?[hlLqjzt]*(.)")
_FMT_FIELD = re.compile(r"\{[^{}]*\}")


def _formatted_size(node: exp.Expression, inner: Any) -> int | str:
    arguments = _arguments(node)
    if not arguments:
        return 1
    pattern, values = arguments[0], arguments[1:]
    call = _call_name(node) or "format"
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return (
            f"the pattern of {call}() is not a constant string: its widths cannot be read "
            "before it runs. Write the pattern as a literal"
        )
    text = str(pattern.this)
    if "{" in text and re.search(r"\{[^{}]*\{", text):
        return f"a width given by an argument in the pattern of {call}() cannot be bounded"
    size = len(text.encode())
    consumed = 0
    for match in _PRINTF.finditer(text):
        width, precision, conversion = match.group(1), match.group(2), match.group(3)
        for part in (width, precision):
            if part == "*":
                if consumed >= len(values):
                    return 1 + size
                star = _size_argument(values[consumed], call)
                if isinstance(star, str):
                    return star
                size += star
                consumed += 1
            elif part:
                size += int(part)
        if conversion != "%":
            consumed += 1
    for field in _FMT_FIELD.findall(text):
        size += sum(int(digits) for digits in re.findall(r"\d+", field))
    for value in values:
        part = inner(value)
        if isinstance(part, str):
            return part
        size += part
    return size


def _array_fill_size(node: exp.Expression) -> int | str:
    arguments = _arguments(node)
    if len(arguments) < 2:
        return 1
    dimensions = arguments[1]
    lengths = dimensions.expressions if isinstance(dimensions, exp.Array) else [dimensions]
    size = 8
    for length in lengths:
        count = _size_argument(length, "array_fill")
        if isinstance(count, str):
            return count
        size *= count
    return size


def _series_size(node: exp.Expression) -> int | str:
    start = node.args.get("start")
    end = node.args.get("end")
    step = node.args.get("step")
    bounds = [_size_argument(value, "range") if value is not None else 0 for value in (start, end)]
    refused = next((b for b in bounds if isinstance(b, str)), None)
    if refused is not None:
        return refused
    stride = 1 if step is None else _constant(step)
    if stride is None:
        return _size_argument(step, "range")
    return 8 * abs(int(bounds[1]) - int(bounds[0])) // max(1, abs(stride))


# --- 2. edit distances ---------------------------------------------------------------------------


def _edit_distance_problem(node: exp.Expression, name: str, limits: StatementLimits) -> str | None:
    arguments = _arguments(node)[:2]
    for argument in arguments:
        if (
            isinstance(argument, exp.Literal)
            and argument.is_string
            and len(str(argument.this)) <= limits.max_pattern_chars
        ):
            return None
    return (
        f"{name}() does work that grows with the product of its arguments' lengths and is not "
        f"interrupted: one argument must be a constant string of at most "
        f"{limits.max_pattern_chars} characters (Context.max_pattern_chars)"
    )


# --- 4. searches in values the query grows (the tracing below, after 3) --------------------

# A search compares its pattern at every position of its subject: one call's work is the product
# of their lengths, in one step the engine does not interrupt. SQLite's LIKE of a 190-character
# constant pattern in a 16 MB string that a recursive CTE doubled took 7 s, instr() of half such
# a string in it ran past 40 s, while the caller had returned at its deadline.
_SEARCHES: tuple[type[exp.Expression], ...] = (exp.StrPosition, exp.Replace)
# The searches each engine runs in one step it does not interrupt: PostgreSQL 15's LIKE too (a
# 40,000-character pattern in a 16 MB doubled string: its session ran on for minutes after its
# caller returned, still 5 s after a pg_terminate_backend), while its strpos(), replace() and
# regular expressions in 64 MB doubled strings stopped at the deadline.
_UNINTERRUPTIBLE_SEARCH: dict[str, tuple[type[exp.Expression], ...]] = {
    "sqlite": (*_LIKE_NODES, *_SEARCHES),
    "postgres": _LIKE_NODES,
}
_SEARCH_NAMES: dict[type[exp.Expression], str] = {
    exp.StrPosition: "instr()",
    exp.Replace: "replace()",
    exp.Like: "LIKE",
    exp.ILike: "ILIKE",
    exp.Glob: "GLOB",
}


def _search_problem(node: exp.Expression, dialect: str, trace: _Trace | None = None) -> str | None:
    if not isinstance(node, _UNINTERRUPTIBLE_SEARCH.get(dialect, ())):
        return None
    if isinstance(node, exp.StrPosition):
        searched = [node.this, node.args.get("substr")]
    else:  # LIKE, GLOB (subject, pattern) and replace() (subject, what it finds)
        searched = [node.this, node.args.get("expression")]
    if all(part is None or _data_sized(part, trace=trace) for part in searched):
        return None
    shown = _SEARCH_NAMES.get(type(node), type(node).__name__.upper())
    return (
        f"{shown} searches a value the query grows (a recursive CTE, an aggregate such as "
        "group_concat(), or a function that builds a string): its work is the product of the "
        "two lengths, in one step that cannot be interrupted. Search the stored columns or "
        "constants instead"
    )


# --- 3. regular expressions and patterns --------------------------------------------------------


PATTERN_TOO_LONG = "a pattern of"
"""How a pattern-length refusal starts: a size limit (`too_complex`), not the costs' class."""


def _pattern_length_problem(pattern: Any, limits: StatementLimits) -> str | None:
    if (
        isinstance(pattern, exp.Literal)
        and pattern.is_string
        and len(str(pattern.this)) > limits.max_pattern_chars
    ):
        return (
            f"{PATTERN_TOO_LONG} {len(str(pattern.this)):,} characters; the limit is "
            f"{limits.max_pattern_chars} (Context.max_pattern_chars)"
        )
    return None


def _regex_parts(node: exp.Expression) -> tuple[Any, Any]:
    if isinstance(node, exp.Anonymous):
        arguments = list(node.expressions)
        return (arguments[0] if arguments else None, arguments[1] if len(arguments) > 1 else None)
    return node.this, node.args.get("expression")


def _regex_problem(node: exp.Expression, dialect: str, limits: StatementLimits) -> str | None:
    subject, pattern = _regex_parts(node)
    problem = _pattern_length_problem(pattern, limits)
    if problem is not None or dialect not in _UNINTERRUPTIBLE_REGEX:
        return problem
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        return (
            "a regular expression whose pattern is not a constant string: this database's "
            "regular expressions backtrack and cannot be interrupted, so the pattern must be "
            "read before it runs"
        )
    backtracking = backtracking_problem(str(pattern.this))
    if backtracking is not None:
        return (
            f"the regular expression {str(pattern.this)[:60]!r} has {backtracking}, whose "
            "matching time can grow exponentially, and this database cannot interrupt it. "
            "Simplify the pattern (or use LIKE)"
        )
    if not _stored_value(subject):
        return (
            "a regular expression applied to a value the query builds: this database cannot "
            "interrupt the match, whose time grows with that value. Apply it to a column"
        )
    return None


_MAX_DATA_COPIES = 16
"""How many stored values one data-sized value may hold (`'%' || a || ' ' || b || '%'` holds
two); past it a chain of CTEs that each concatenate a column with itself doubles a value."""

_MAX_TRACE_STEPS = 50_000
"""The most steps a statement's searches are traced through it (a query past it is not shown
to read data only; the guard's own cost stays bounded)."""


class _Trace:
    """A statement's tracing: results per (relation, column), those being traced (a column met
    again while it is traced is defined from itself), and the steps left."""

    __slots__ = ("active", "done", "scopes", "steps")

    def __init__(self) -> None:
        self.scopes: dict[int, _Scopes] = {}
        self.active: set[tuple[int, str, bool]] = set()
        self.done: dict[tuple[int, str, bool], int | None] = {}
        self.steps = _MAX_TRACE_STEPS


def _stored_value(node: Any) -> bool:
    """A column holding one stored value, a constant, or a size-keeping wrapper of one."""
    depth = 0
    while isinstance(node, _DATA_SIZED) and depth < _MAX_DEPTH:
        node, depth = node.this, depth + 1
    if isinstance(node, exp.Column):
        return _data_sized(node, most=1)
    return isinstance(node, exp.Literal | exp.Null)


def _data_sized(node: Any, most: int = _MAX_DATA_COPIES, trace: _Trace | None = None) -> bool:
    """Whether `node` is at most as large as a few values the query reads, give or take
    constants: a constant, a column holding stored data, and what keeps or shrinks such values
    (a cast, a case, a substring, a concatenation of a few, a replace() that grows nothing).
    A column of a CTE, a subquery or a projection alias is what its definition computes, so a
    recursive CTE that doubles a string, or a group_concat(), is a value the query grows."""
    copies = _copies(node, 0, trace or _Trace())
    return copies is not None and copies <= most


def _copies(node: Any, depth: int, seen: _Trace) -> int | None:
    """How many stored values `node` may hold, or None when the query grows it unboundedly."""
    seen.steps -= 1
    if depth > _MAX_DEPTH or seen.steps < 0 or not isinstance(node, exp.Expression):
        return None
    if isinstance(node, (exp.Literal, exp.Null, exp.Boolean, *_NUMERIC)):
        return 0  # a constant, or a number, whose text is short whatever it was computed from
    if isinstance(node, exp.Column):
        return _column_copies(node, depth + 1, seen)
    if isinstance(node, exp.Replace):
        found, replacement = node.expression, node.args.get("replacement")
        if not (
            isinstance(found, exp.Literal)
            and isinstance(replacement, exp.Literal)
            and len(str(replacement.this)) <= len(str(found.this))
        ):
            return None
        return _copies(node.this, depth + 1, seen)
    if isinstance(node, _CONCATENATIONS):
        return _combined(_arguments(node), depth, seen, add=True)
    if isinstance(node, _SHRINKING):
        return _copies(node.this, depth + 1, seen)
    if isinstance(node, _ONE_OF):
        return _combined(list(node.iter_expressions()), depth, seen, add=False)
    if isinstance(node, exp.Subquery):  # a scalar subquery: the value its one column holds
        selects = _leaf_selects(node.this)
        if selects is None or not all(s.expressions for s in selects):
            return None
        values = [_unaliased(s.expressions[0]) for s in selects]
        return _combined(values, depth, seen, add=False)
    if _is_formatter(node):
        return _formatted_copies(node, depth, seen)
    if isinstance(node, exp.Func) and not (isinstance(node, exp.AggFunc) or _is_builder(node, "")):
        # Any other scalar function (strftime, hex, quote, a date's or a JSON path's): at most
        # a small multiple of what its arguments hold (hex() doubles a value). Counting it
        # twice keeps nested doublings under `_MAX_DATA_COPIES` only a few levels deep.
        counted = _combined(_arguments(node), depth, seen, add=True)
        return None if counted is None else 2 * counted
    return None  # an aggregate that joins values (group_concat), a builder, a window, ...


_MAX_FORMATTED_BYTES = 4_096
"""The most a printf()/format() may add to its values and still count as a concatenation of
them (`printf('%05d', id)`, `printf('%s %s', a, b)`); a width past it is a value the query
builds (`printf('%.*c', 1000000, 'x')`)."""


def _is_formatter(node: exp.Expression) -> bool:
    return isinstance(node, exp.Format) or (
        isinstance(node, exp.Anonymous) and _call_name(node) in _FORMATTERS
    )


def _formatted_copies(node: exp.Expression, depth: int, seen: _Trace) -> int | None:
    """What a printf()/format() of a constant pattern holds: each directive prints one value (a
    positional one may print the same value again), so at most as many copies of the largest
    value as the pattern has directives; None when its widths build more than a little."""
    arguments = _arguments(node)
    if not arguments or not isinstance(arguments[0], exp.Literal):
        return None
    built = _built_size(node, "", StatementLimits(), {}, depth)
    if isinstance(built, str) or built > _MAX_FORMATTED_BYTES:
        return None
    pattern = str(arguments[0].this)
    directives = sum(m.group(3) != "%" for m in _PRINTF.finditer(pattern))
    directives += len(_FMT_FIELD.findall(pattern))
    largest = _combined(arguments[1:], depth, seen, add=False)
    return None if largest is None else directives * largest


def _unaliased(projection: exp.Expression) -> exp.Expression:
    return projection.this if isinstance(projection, exp.Alias) else projection


def _combined(parts: list[exp.Expression], depth: int, seen: _Trace, add: bool) -> int | None:
    """What a concatenation of `parts` holds (`add`), or a choice among them."""
    counts = [_copies(part, depth + 1, seen) for part in parts]
    known = [count for count in counts if count is not None]
    if len(known) < len(counts):
        return None
    return sum(known) if add else max(known, default=0)


_NUMERIC: tuple[Any, ...] = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.Neg,
    exp.Predicate,
    exp.Count,
    exp.Sum,
    exp.Avg,
    exp.Length,
    exp.Abs,
    exp.Round,
    exp.StrPosition,
)
_CONCATENATIONS = (exp.DPipe, exp.Concat, exp.ConcatWs)
# Values at most the size of their first argument (the others are positions and lengths).
_SHRINKING = (*_DATA_SIZED, exp.Substring, exp.Left, exp.Right)
# Values that are one of their arguments (conditions are read, not returned, and are counted
# alike: a number or a predicate counts nothing).
_ONE_OF = (exp.Coalesce, exp.Nullif, exp.Case, exp.If, exp.Min, exp.Max)


def _column_copies(column: exp.Column, depth: int, seen: _Trace) -> int | None:
    """How many stored values the column holds, as the database resolves it: one for a table's
    column; for a CTE's, a subquery's or a projection alias's, what its definition holds."""
    name, qualifier = column.name.lower(), column.table.lower()
    most = 1
    for scope, clause in _scopes(column, seen):
        sources = _sources(scope)
        if qualifier:
            source = sources.get(qualifier)
            if source is not None:
                return _source_copies(source, name, depth, seen)
            continue
        candidates = [_source_copies(s, name, depth, seen, True) for s in sources.values()]
        if clause != "expressions":  # WHERE, GROUP BY, HAVING, ORDER BY may name an alias
            for projection in scope.expressions:
                if isinstance(projection, exp.Alias) and projection.alias.lower() == name:
                    candidates.append(_copies(projection.this, depth + 1, seen))
        if any(count is None for count in candidates):
            return None
        # Without the tables' columns, an unqualified name may still mean an enclosing
        # query's column (a correlated subquery): every scope is read.
        most = max([most, *(int(count) for count in candidates if count is not None)])
    return most


_Scopes = tuple[tuple[exp.Select, str], ...]


def _scopes(node: exp.Expression, trace: _Trace) -> _Scopes:
    """The queries a name in `node` may resolve against, the nearest first, each with the clause
    that holds `node`: up to a CTE (which sees no outer query) or a FROM source (a subquery in
    FROM sees no columns of the query around it; a join's ON condition does). Memoised per
    node, so every column of a statement costs the tree's size once, not its depth each."""
    path: list[Any] = []
    current: Any = node
    while current.parent is not None and id(current) not in trace.scopes:
        path.append(current)
        current = current.parent
    chain = trace.scopes.get(id(current), ())
    for child in reversed(path):
        parent = child.parent
        key = str(child.arg_key or "")
        a_source = (isinstance(parent, exp.Select) and key in ("from", "from_")) or (
            isinstance(parent, exp.Join) and key == "this"
        )
        if a_source or isinstance(parent, exp.CTE):
            chain = ()
        elif isinstance(parent, exp.Select):
            chain = ((parent, key), *chain)
        trace.scopes[id(child)] = chain
    return chain


def _sources(select: exp.Select) -> dict[str, exp.Expression]:
    """The relations `select` reads, by the name a column qualifies them with."""
    found: dict[str, exp.Expression] = {}
    from_ = select.args.get("from") or select.args.get("from_")
    items = [from_.this] if isinstance(from_, exp.From) else []
    items += [join.this for join in select.args.get("joins") or ()]
    for item in items:
        if isinstance(item, exp.Expression):
            found[(item.alias_or_name or "").lower()] = item
    return found


def _source_copies(
    source: exp.Expression, name: str, depth: int, seen: _Trace, may_lack: bool = False
) -> int | None:
    """What the column `name` of a FROM source holds (`may_lack`: the source may not have it,
    an unqualified name)."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        cte = None if source.db else _cte_named(source, source.name.lower())
        if cte is None:
            return 1  # a table of the database
        key = (id(cte), name, may_lack)
        return _query_copies(cte.this, _alias_columns(cte), name, depth, seen, key, may_lack)
    if isinstance(source, exp.Subquery):
        key = (id(source), name, may_lack)
        return _query_copies(source.this, _alias_columns(source), name, depth, seen, key, may_lack)
    return None  # a table-valued function, VALUES, ...: not stored data


def _cte_named(table: exp.Table, name: str) -> exp.CTE | None:
    node: Any = table
    while node is not None:
        with_ = node.args.get("with") or node.args.get("with_")
        if isinstance(with_, exp.With):
            for cte in with_.expressions:
                if cte.alias.lower() == name:
                    return cte
        node = node.parent
    return None


def _alias_columns(node: exp.Expression) -> list[str]:
    alias = node.args.get("alias")
    return [c.name.lower() for c in alias.columns] if isinstance(alias, exp.TableAlias) else []


def _query_copies(
    query: exp.Expression,
    columns: list[str],
    name: str,
    depth: int,
    seen: _Trace,
    key: tuple[int, str, bool],
    may_lack: bool,
) -> int | None:
    """What the column `name` of a CTE's or subquery's query holds, the most of its branches;
    a column defined from itself (a recursive CTE) is grown by the query."""
    if key in seen.active:
        return None
    if key not in seen.done:
        seen.active.add(key)
        seen.done[key] = _branches_copies(query, columns, name, depth, seen, may_lack)
        seen.active.discard(key)
    return seen.done[key]


def _branches_copies(
    query: exp.Expression,
    columns: list[str],
    name: str,
    depth: int,
    seen: _Trace,
    may_lack: bool,
) -> int | None:
    selects = _leaf_selects(query)
    if selects is None:
        return None  # VALUES or another query form: not shown to be data
    positions = _positions(selects[0], columns, name)
    most = 0
    for select in selects:
        projections = select.expressions
        if positions is not None:  # a set operation's later branches are read by position
            picked = [projections[i] for i in positions if i < len(projections)]
        else:
            picked = [p for p in projections if p.alias_or_name.lower() == name]
        counts: list[int | None] = []
        if not picked and any(p.is_star for p in projections):
            sources = _sources(select).values()
            counts = [_source_copies(s, name, depth + 1, seen, True) for s in sources]
        elif not picked and not may_lack:
            return None
        for projection in picked:
            counts.append(_copies(_unaliased(projection), depth + 1, seen))
        if any(count is None for count in counts):
            return None
        most = max([most, *(int(count) for count in counts if count is not None)])
    return most


def _leaf_selects(query: exp.Expression) -> list[exp.Select] | None:
    """The SELECTs of a query, left to right through set operations and parentheses."""
    found: list[exp.Select] = []
    pending: list[exp.Expression] = [query]
    while pending:
        node = pending.pop()
        if isinstance(node, exp.SetOperation):
            pending += [node.expression, node.this]  # the left one is taken first
        elif isinstance(node, exp.Subquery):
            pending.append(node.this)
        elif isinstance(node, exp.Select):
            found.append(node)
        else:
            return None
    return found or None


def _positions(first: exp.Select, columns: list[str], name: str) -> list[int] | None:
    """Which output columns of a query the name `name` may mean: by the query's column list;
    else by the names its first SELECT gives them, where a projection with no alias is named by
    its text (any of them may be meant); None when a star leaves the names to its sources."""
    if columns:
        return [columns.index(name)] if name in columns else []
    projections = first.expressions
    named = [i for i, p in enumerate(projections) if p.alias_or_name.lower() == name]
    if named:
        return named
    if any(p.is_star for p in projections):
        return None
    return [i for i, p in enumerate(projections) if not p.alias_or_name]


def backtracking_problem(pattern: str) -> str | None:
    """'a quantified group' or 'a back-reference' when the pattern has one, else None."""
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            following = pattern[index + 1 : index + 2]
            if (following.isdigit() and following != "0") or following in ("k", "g"):
                return "a back-reference"
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # a ']' right after '[' or '[^' is a literal member of the class
            skip = 2 if pattern[index + 1 : index + 2] == "^" else 1
            if pattern[index + skip : index + skip + 1] == "]":
                index += skip
        elif char == "(" and pattern[index + 1 : index + 4] == "?P=":
            return "a back-reference"
        elif char == ")" and pattern[index + 1 : index + 2] in ("*", "+", "{"):
            return "a quantified group"
        index += 1
    return None
