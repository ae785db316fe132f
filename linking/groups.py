"""Groups of tables: the schemas or databases a catalog is made of.

A question is about one database of a catalog, so linking ranks the groups before the tables in
them. A group is what the names say:

- a qualified name (`sales.orders`: PostgreSQL schemas, MySQL databases, DuckDB catalogs seen
  through one connection) is grouped by its qualifier;
- `app__table` by the part before the double underscore;
- otherwise by a shared prefix of underscore-separated words (`auth_user`, `auth_group`; many
  applications' tables in one SQLite file). A prefix is a group only when at least two tables
  have it and no join (declared, implied or inferred) links a table under it to a table outside
  it: a database's tables join each other, not another database's. Of the prefixes that pass,
  the longest is taken, so `college_1_` and `college_2_` stay apart when `college_` would also
  pass. A prefix whose tables join none of each other is not a group, since without joins
  nothing tells its boundary: enterprise copies and stages of tables (`stg_orders`,
  `stg_customer`; `DEPT_HISTORY`, `DEPT_ARCHIVE_2017` beside `DEPT`) share prefixes without
  being a database, and a group of them would crowd out the table the question is about.

A table with no such prefix belongs to the unnamed group: a single database is one group, and
grouping changes nothing for it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from macsql.database.schema import ForeignKey, SchemaInfo


@dataclass(frozen=True)
class Groups:
    of: dict[str, str]
    """Table name -> group name ('' for the unnamed group)."""
    prefix: dict[str, str]
    """Table name -> the part of its name that names its group (with the separator)."""

    def members(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for table, group in self.of.items():
            out[group].append(table)
        return dict(out)

    def local_name(self, table: str) -> str:
        """The table's name without its group's prefix (`california_schools_frpm` -> `frpm`)."""
        return table[len(self.prefix.get(table, "")) :]


def _explicit(name: str) -> str | None:
    for separator in (".", "__"):
        head, found, _ = name.rpartition(separator) if separator == "." else name.partition("__")
        if found and head:
            return head + separator
    return None


def _prefixes(name: str) -> list[str]:
    """The proper prefixes of a name that end at an underscore, shortest first."""
    return [name[: i + 1] for i, ch in enumerate(name[:-1]) if ch == "_" and i > 0]


def table_groups(schema: SchemaInfo, joins: Iterable[ForeignKey] = ()) -> Groups:
    names = [t.name for t in schema.tables]
    of: dict[str, str] = {}
    prefix: dict[str, str] = {}
    rest = []
    for name in names:
        head = _explicit(name)
        if head is None:
            rest.append(name)
        else:
            of[name], prefix[name] = head.rstrip("._"), head
    under: dict[str, set[str]] = defaultdict(set)
    for name in rest:
        for p in _prefixes(name.lower()):
            under[p].add(name)
    neighbours: dict[str, set[str]] = defaultdict(set)
    for fk in joins:
        if fk.table != fk.ref_table:
            neighbours[fk.table].add(fk.ref_table)
            neighbours[fk.ref_table].add(fk.table)

    def closed(members: set[str]) -> bool:
        return all(neighbours[t] <= members for t in members)

    def joined(members: set[str]) -> bool:
        return any(neighbours[t] & members for t in members)

    for name in rest:
        # A database's tables join each other. Tables that share a prefix and join nothing
        # under it are a naming convention (`stg_*`, `order_history` beside `order_archive`),
        # not a database: grouping them would leave out the table the question is about.
        passing = [
            p
            for p in _prefixes(name.lower())
            if len(under[p]) >= 2 and closed(under[p]) and joined(under[p])
        ]
        if not passing:
            of[name], prefix[name] = "", ""
            continue
        chosen = passing[-1]
        of[name], prefix[name] = name[: len(chosen)].rstrip("_"), name[: len(chosen)]
    return Groups(of, prefix)
