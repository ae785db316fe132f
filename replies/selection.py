"""Reading the Selector's reply as MAC-SQL's table map, whatever shape the model gave it.

MAC-SQL asks for `{table: "keep_all" | "drop_all" | [columns]}`. Models also answer with that map
inside a wrapper (`{"tables": {...}}`), with other words for the decision (`keep`/`drop`,
`true`/`false`, `yes`/`no`), with a list of the tables to keep, with `table.column` names, with
`{"keep": [...], "drop": [...]}`, or in the structured layout (`{"tables": [{"table", "keep",
"columns"}]}`). One rule reads them all: of the reply's JSON value and every value nested in it,
the one that names the most of the schema's tables is the selection, read by its shape. Table
names match in any case. A list of tables to keep drops the tables it does not name; a map keeps
them whole (MAC-SQL's default).

A reply with no JSON is read as fields the same way (`text_value`): a `table: decision` line in
any markdown (a YAML map, a bulleted list), a tag named as a table (`<singer>keep_all</singer>`),
a markdown table's rows, and lines that are only a table's name (a list of tables to keep).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from macsql.database.schema import SchemaInfo, TableInfo
from macsql.llm.reasoning import split_reasoning
from macsql.replies.markup import field_lines
from macsql.replies.reader import extract_json_value

Selection = dict[str, Any]
"""MAC-SQL's map: table -> "keep_all" | "drop_all" | [columns] (as `apply_selection` takes it)."""

_KEEP_WORDS = frozenset(
    {"keep_all", "keep", "keepall", "all", "all_columns", "yes", "true", "include", "included",
     "relevant", "select", "selected", "use", "used", "needed", "required", "*", "1", "y"}
)  # fmt: skip
_DROP_WORDS = frozenset(
    {"drop_all", "drop", "dropall", "none", "no", "false", "exclude", "excluded", "irrelevant",
     "remove", "removed", "ignore", "ignored", "skip", "unused", "not_needed", "0", "n"}
)  # fmt: skip
_PARTIAL_WORDS = frozenset({"columns", "some", "partial", "keep_columns", "subset"})
_TABLE_KEYS = ("table", "table_name", "tablename", "name")
_COLUMN_KEYS = ("columns", "column", "keep_columns", "fields", "cols")


def selection_of(found: Any, schema: SchemaInfo) -> tuple[Selection | None, list[str]]:
    """The table map a Selector reply holds, in MAC-SQL's form, and notes on what in it could
    not be used; None (with why) when it names no table of the schema."""
    best: tuple[int, Selection] | None = None
    for value in _values(found):
        read = _read(value, schema)
        if read is not None and (best is None or read[0] > best[0]):
            best = read
    if best is None or best[0] == 0:
        return None, ["the Selector's reply names no table of the schema"]
    return best[1], []


def read_selection(text: str, schema: SchemaInfo) -> tuple[Selection | None, list[str]]:
    """The table map of a Selector reply's text: of its last JSON value and the map it writes
    as text (`text_value`), the one that names more of the schema's tables (a JSON-looking
    fragment, `[name, age]`, is a column list inside a map written as text)."""
    best: tuple[Selection | None, list[str]] = (None, ["the Selector's reply holds no table map"])
    named = -1
    answer, _thinking = split_reasoning(text or "")  # a text map in the thinking is a draft
    for found in (extract_json_value(text), text_value(answer, schema)):
        if found is None:
            continue
        selection, notes = selection_of(found, schema)
        count = sum(_table(schema, t) is not None for t in selection or {})
        if count > named:
            best, named = (selection, notes), count
    return best


def text_value(text: str, schema: SchemaInfo) -> dict[str, Any] | list[str] | None:
    """The table map a reply without JSON writes as text: `{table: decision}` from its field
    lines, else the list of tables named alone on their lines; None when it names none."""

    def named(name: str) -> bool:
        return _table(schema, name) is not None

    fields: dict[str, Any] = {}
    alone: list[str] = []
    for line in field_lines(text, named).splitlines():
        plain = _MARKDOWN.sub("", line).strip()
        label, colon, value = plain.partition(":")
        if colon and _table(schema, _unquoted(label)) is not None:
            fields[_unquoted(label)] = _listed(value)
        elif _table(schema, _unquoted(plain)) is not None:
            alone.append(_unquoted(plain))
    return fields or alone or None


# Markdown around a line (a bullet, a number, a heading, a quote) and emphasis inside it.
_MARKDOWN = re.compile(r"^[\s>#*\-+•]*(?:\d+[.)]\s+)?|[*`]+")


def _unquoted(text: str) -> str:
    return text.strip().strip("\"'`[]").strip()


# A remark after a value written as text: a comment or a parenthesis at the end of the line.
_REMARK = re.compile(r"\s+(?:#|//|--)\s.*$|\s+#$|\s*\([^()]*\)\s*$")


def _listed(value: str) -> Any:
    """A decision word, or the columns of `[a, b]` / `a, b` as a list; a remark after it
    (`# why`, `(needed)`) is not part of it."""
    text = _REMARK.sub("", value.strip()).strip().rstrip(",;.").strip()
    if text.startswith("[") and text.endswith("]"):
        return [_unquoted(c) for c in text[1:-1].split(",") if _unquoted(c)]
    return _unquoted(text)


def _values(value: Any, depth: int = 0) -> Iterator[Any]:
    """The value, then every dict and list nested in it (outer ones first)."""
    yield value
    if depth >= 4:
        return
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    )
    for child in children:
        if isinstance(child, dict | list):
            yield from _values(child, depth + 1)


def _read(value: Any, schema: SchemaInfo) -> tuple[int, Selection] | None:
    """(how many schema tables the value names, the selection it says), by the value's shape."""
    if isinstance(value, dict):
        named = [k for k in value if _table(schema, k) is not None]
        if named:  # MAC-SQL's map, with any words for the decision
            # Other keys are tables the schema lacks (noted when applied) when they hold a
            # decision, and remarks ("reasoning") when they do not.
            return len(named), {
                _name(schema, k): _choice(v, _table(schema, k))
                for k, v in value.items()
                if _table(schema, k) is not None or _is_decision(v)
            }
        lists = {str(k): v for k, v in value.items() if isinstance(v, list)}
        if lists and all(_word(k) in _KEEP_WORDS | _DROP_WORDS for k in lists):
            return _keep_and_drop(lists, schema)
        return None
    if isinstance(value, list):
        if value and all(isinstance(item, dict) for item in value):
            return _rows(value, schema)
        if value and all(isinstance(item, str) for item in value):
            return _kept_names(value, schema, rest="drop_all")
    return None


def _keep_and_drop(lists: dict[str, list[Any]], schema: SchemaInfo) -> tuple[int, Selection]:
    """`{"keep": [...], "drop": [...]}`: a keep list alone drops the rest; a drop list alone
    keeps it; both leave unnamed tables whole."""
    keeps = [v for k, v in lists.items() if _word(k) in _KEEP_WORDS]
    drops = [v for k, v in lists.items() if _word(k) in _DROP_WORDS]
    rest = "drop_all" if keeps and not drops else "keep_all"
    count, selection = _kept_names([n for v in keeps for n in v], schema, rest=rest)
    for names in drops:
        for name in names:
            table = _table(schema, str(name))
            if table is not None:
                count += 1
                selection[table.name] = "drop_all"
    return count, selection


def _kept_names(names: list[Any], schema: SchemaInfo, *, rest: str) -> tuple[int, Selection]:
    """A list of tables (or `table.column` names) to keep; the tables it does not name get
    `rest`. Names that are no table of the schema are passed on, to be noted."""
    selection: Selection = {}
    count = 0
    for raw in names:
        name = str(raw)
        table = _table(schema, name)
        if table is not None:
            count += 1
            selection[table.name] = "keep_all"
            continue
        owner, _, column = name.rpartition(".")
        table = _table(schema, owner) if owner else None
        if table is None:
            selection[name] = "keep_all"  # unknown: noted when applied
            continue
        count += 1
        kept = selection.get(table.name)
        if kept != "keep_all":
            selection[table.name] = [*(kept if isinstance(kept, list) else []), column]
    for table in schema.tables:
        selection.setdefault(table.name, rest)
    return count, selection


def _rows(rows: list[dict[str, Any]], schema: SchemaInfo) -> tuple[int, Selection] | None:
    """The structured layout: `[{"table": ..., "keep": ..., "columns": [...]}]`."""
    selection: Selection = {}
    count = 0
    for row in rows:
        name = next((row[k] for k in row if _word(k) in _TABLE_KEYS), None)
        if not isinstance(name, str):
            continue
        table = _table(schema, name)
        count += table is not None
        columns = next((row[k] for k in row if _word(k) in _COLUMN_KEYS), None)
        keep = _decision({k: v for k, v in row.items() if _word(k) not in _TABLE_KEYS})
        if isinstance(columns, list) and columns and (keep is None or _is_partial(keep)):
            selection[name] = _choice(columns, table)
        else:
            selection[name] = _choice("keep_all" if keep is None else keep, table)
    return (count, selection) if selection else None


def _choice(value: Any, table: TableInfo | None) -> Any:
    """A table's decision in MAC-SQL's words: 'keep_all', 'drop_all' or a list of columns;
    a value it cannot read is passed on as it is (and noted when applied)."""
    if isinstance(value, bool):
        return "keep_all" if value else "drop_all"
    if isinstance(value, int | float):
        return "keep_all" if value else "drop_all"
    if isinstance(value, list):
        return [_column(str(c), table) for c in value]
    if isinstance(value, dict):
        columns = next((value[k] for k in value if _word(k) in _COLUMN_KEYS), None)
        keep = _decision(value)
        if isinstance(columns, list) and columns and (keep is None or _is_partial(keep)):
            return _choice(columns, table)
        return _choice(keep, table) if keep is not None else value
    if isinstance(value, str):
        word = _word(value)
        if word in _KEEP_WORDS:
            return "keep_all"
        if word in _DROP_WORDS:
            return "drop_all"
        if "," in value:
            return [_column(c.strip(), table) for c in value.split(",") if c.strip()]
        known = {c.name.lower() for c in table.columns} if table is not None else set()
        if _column(value, table).lower() in known:
            return [_column(value, table)]
    return value


def _column(name: str, table: TableInfo | None) -> str:
    """A column's name without its table's (`singer.name` under `singer` is `name`)."""
    owner, dot, column = name.strip().rpartition(".")
    if dot and table is not None and owner.strip('`"[] ').lower() == table.name.lower():
        return column
    return name.strip()


def _decision(fields: dict[str, Any]) -> Any:
    """The value of a row's decision field, whatever its key ("keep", "selected", "action"):
    the first value, other than the columns, that reads as keep, drop or columns."""
    for key, value in fields.items():
        if _word(key) in _COLUMN_KEYS:
            continue
        if _is_decision(value) and not isinstance(value, list):
            return value
    return None


def _is_decision(value: Any) -> bool:
    if isinstance(value, bool | int | float | list):
        return True
    return isinstance(value, str) and _word(value) in _KEEP_WORDS | _DROP_WORDS | _PARTIAL_WORDS


def _is_partial(keep: Any) -> bool:
    return isinstance(keep, str) and _word(keep) in _PARTIAL_WORDS


def _name(schema: SchemaInfo, name: Any) -> str:
    """The schema's own name for a table written in another case, quoted or qualified."""
    table = _table(schema, name)
    return table.name if table is not None else str(name)


def _table(schema: SchemaInfo, name: Any) -> TableInfo | None:
    """The schema's table of that name in any case, also when written `main.name` or quoted."""
    if not isinstance(name, str) or not name.strip():
        return None
    name = name.strip().strip("`\"'[]")
    table = schema.table(name)
    if table is None and "." in name:
        table = schema.table(name.rsplit(".", 1)[-1])
        if table is not None and _column_named(schema, name):
            return None  # `table.column`, not a qualified table name
    return table


def _column_named(schema: SchemaInfo, name: str) -> bool:
    owner, _, column = name.rpartition(".")
    table = schema.table(owner)
    return table is not None and any(c.name.lower() == column.lower() for c in table.columns)


def _word(text: Any) -> str:
    """A decision in one form: lower case, words joined by `_`, no full stop or quotes around
    it ("Keep All." is `keep_all`)."""
    plain = str(text).strip().strip("`\"'").rstrip(".,;!").strip()
    return "_".join(plain.lower().replace("-", " ").split())
