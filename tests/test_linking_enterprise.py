"""Linking on catalogs named the way enterprise databases are: look-alike copies of tables
(staging, history, archives) that join nothing, abbreviated table and column names in every
naming style, vowel-dropped abbreviations, and column comments. Catalogs are generated (seeded),
so each rule is tested on a class of names, not on one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from macsql.database.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo
from macsql.linking.ranking import LinkBudget, link_schema
from macsql.linking.terms import spells_out

# An entity, the entity it references (or None), and its attributes as English words.
ENTITIES: list[tuple[str, str | None, list[list[str]]]] = [
    ("client", None, [["client", "name"], ["credit", "limit"], ["region"], ["signup", "date"]]),
    ("invoice", "client", [["invoice", "total"], ["due", "date"], ["paid", "flag"]]),
    ("payment", "invoice", [["payment", "method"], ["amount", "received"], ["bank", "branch"]]),
    ("courier", None, [["courier", "name"], ["vehicle", "plate"], ["base", "city"]]),
    ("parcel", "courier", [["parcel", "weight"], ["tracking", "label"], ["sent", "date"]]),
]
AUDIT = [["load", "batch"], ["source", "system"], ["row", "hash"], ["changed", "by"]]


def _render(words: list[str], style: str) -> str:
    if style == "snake":
        return "_".join(words)
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    return "_".join(words).upper()


def _copy(table: TableInfo, name: str) -> TableInfo:
    return TableInfo(name, [ColumnInfo(c.name, c.type) for c in table.columns])


def _main_name(entity: str, style: str) -> str:
    """The entity's table, named with a decoration (`tbl_client`, `ClientMst`)."""
    return _render(["tbl", entity] if style == "snake" else [entity, "mst"], style)


def _catalog(rng: random.Random, style: str) -> SchemaInfo:
    """The entities' tables (decorated names), joined by declared keys, each beside copies of
    itself that join nothing: a staging table (`stg_`), a history and an archive of a year."""
    tables: list[TableInfo] = []
    fks: list[ForeignKey] = []
    main: dict[str, TableInfo] = {}
    for entity, parent, attributes in ENTITIES:
        key = _render([entity, "id"], style)
        columns = [ColumnInfo(key, "INTEGER", primary_key=True)]
        if parent is not None:
            ref = main[parent].columns[0].name
            columns.append(ColumnInfo(ref, "INTEGER"))
            fks.append(ForeignKey(_main_name(entity, style), ref, main[parent].name, ref))
        extra = rng.sample(AUDIT, rng.randint(2, len(AUDIT)))
        columns += [ColumnInfo(_render(words, style), "TEXT") for words in attributes + extra]
        main[entity] = TableInfo(_main_name(entity, style), columns)
        tables.append(main[entity])
        year = str(rng.randint(2015, 2022))
        for suffix in (["history"], ["archive", year]):
            tables.append(_copy(main[entity], _render([entity, *suffix], style)))
        tables.append(_copy(main[entity], _render(["stg", entity], style)))
    rng.shuffle(tables)
    return SchemaInfo("erp", "sqlite", tables, fks)


@pytest.mark.parametrize("style", ["snake", "pascal", "caps"])
@pytest.mark.parametrize("seed", range(3))
def test_the_joined_table_is_kept_beside_copies_of_it_that_join_nothing(
    style: str, seed: int
) -> None:
    """`stg_client`, `client_history` and `client_archive_2019` share prefixes and join
    nothing: they are neither a database of their own nor a reason to leave out `tbl_client`,
    which joins the other tables."""
    rng = random.Random(seed)
    schema = _catalog(rng, style)
    for entity, _, attributes in ENTITIES:
        words = rng.choice(attributes)
        question = f"What is the {' '.join(words)} of each {entity}?"
        result = link_schema(schema, question, "", LinkBudget(max_chars=2_000))
        kept = {t.name: {c.name for c in t.columns} for t in result.schema.tables}
        assert _render(words, style) in kept.get(_main_name(entity, style), set()), question


def _abbreviated_catalog(rng: random.Random, many: int) -> tuple[SchemaInfo, str, str]:
    """`many` fact tables whose columns spell out "product" and reference one dimension table
    whose name and columns are abbreviated (`tblPrd`: `PrdNm`, `Wt`)."""
    dim = TableInfo(
        "tblPrd",
        [
            ColumnInfo("PrdID", "INTEGER", primary_key=True),
            ColumnInfo("PrdNm", "TEXT"),
            ColumnInfo("Wt", "REAL"),
            ColumnInfo("ClrCd", "TEXT"),
        ],
    )
    tables, fks = [dim], []
    for i in range(many):
        name = f"{rng.choice(['sales', 'returns', 'stock', 'quotes'])}_{i}"
        columns = [
            ColumnInfo("id", "INTEGER", primary_key=True),
            ColumnInfo("product_id", "INTEGER"),
            ColumnInfo("product_batch", "TEXT"),
            *(ColumnInfo(f"measure_{j}", "REAL") for j in range(rng.randint(3, 8))),
        ]
        tables.append(TableInfo(name, columns))
        fks.append(ForeignKey(name, "product_id", "tblPrd", "PrdID"))
    rng.shuffle(tables)
    return SchemaInfo("dw", "sqlite", tables, fks), "tblPrd", "Wt"


@pytest.mark.parametrize("seed", range(3))
def test_an_abbreviated_table_competes_with_tables_that_spell_the_words_out(seed: int) -> None:
    """Sixty tables say "product" in full; the one the question is about says `Prd` and `Wt`.
    Its abbreviations count as said, so it is among the tables scored."""
    rng = random.Random(seed)
    schema, table, column = _abbreviated_catalog(rng, 60)
    result = link_schema(
        schema, "What is the weight of each product?", "", LinkBudget(max_chars=1_500)
    )
    kept = {t.name: {c.name for c in t.columns} for t in result.schema.tables}
    assert column in kept.get(table, set())


@pytest.mark.parametrize("seed", range(5))
def test_a_name_without_its_vowels_abbreviates_it(seed: int) -> None:
    """`cty` is "city", `nme` "name": a word shortened by dropping vowels (its first letter
    kept), however little shorter it gets; a word with another first letter is not."""
    rng = random.Random(seed)
    consonants, vowels = "bcdfghjklmnpqrstvwxz", "aeiou"
    for _ in range(200):
        letters = [rng.choice(consonants)]
        for _ in range(rng.randint(3, 8)):
            letters.append(rng.choice(vowels if rng.random() < 0.4 else consonants))
        word = "".join(letters)
        short = word[0] + "".join(ch for ch in word[1:] if ch not in vowels)
        if len(short) < 3 or short == word:
            continue
        assert spells_out(short, word), (short, word)
        other = rng.choice([c for c in consonants if c != word[0]]) + word[1:]
        assert not spells_out(short, other), (short, other)


def test_column_comments_are_read_as_descriptions_and_linked(tmp_path: Path) -> None:
    """A catalog that names its columns in codes (`KUNNR`, `NETWR`) and describes them in
    comments: the comment is the column's description, and linking reads it."""
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_engine")
    from macsql.database.connection import resolve_database
    from macsql.database.schema import build_schema

    path = tmp_path / "erp.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE VBAK (VBELN VARCHAR PRIMARY KEY, KUNNR VARCHAR, NETWR DECIMAL)")
    con.execute("COMMENT ON COLUMN VBAK.KUNNR IS 'Sold-to customer number'")
    con.execute("COMMENT ON COLUMN VBAK.NETWR IS 'Net value of the sales order'")
    for i in range(40):
        codes = ", ".join(f"F{i}_{j} VARCHAR" for j in range(12))
        con.execute(f"CREATE TABLE T{i:03d} (ID INTEGER PRIMARY KEY, {codes})")
    con.close()
    schema = build_schema(resolve_database(f"duckdb:///{path}"), num_examples=0)
    vbak = next(t for t in schema.tables if t.name.lower() == "vbak")
    described = {c.name.upper(): c.description for c in vbak.columns}
    assert described["KUNNR"] == "Sold-to customer number"
    assert described["VBELN"] == ""
    result = link_schema(
        schema, "Net value of every sales order by customer number", "", LinkBudget(1_000)
    )
    kept = {t.name.upper(): {c.name.upper() for c in t.columns} for t in result.schema.tables}
    assert {"KUNNR", "NETWR"} <= kept.get("VBAK", set())


@pytest.mark.parametrize("seed", range(3))
def test_copies_that_join_nothing_are_not_a_group(seed: int) -> None:
    """`client_history` and `client_archive_2019` share a prefix, as two applications' tables
    would, but join nothing: no boundary tells a database, so no group."""
    from macsql.linking.groups import table_groups

    schema = _catalog(random.Random(seed), "snake")
    groups = table_groups(schema, schema.foreign_keys)
    copies = [t.name for t in schema.tables if not t.name.startswith("tbl_")]
    assert copies and all(groups.of[name] == "" for name in copies)


@pytest.mark.parametrize("seed", range(5))
def test_table_names_are_read_as_truncations_only(seed: int) -> None:
    """A table name's short word abbreviates a question word it starts, followed by consonants
    of the rest (`dept` "department", `prd` "product"); a vowel after the shared start (`set`
    and "student", `pit` and "position") is another word."""
    from macsql.linking.terms import truncates

    rng = random.Random(seed)
    consonants, vowels = "bcdfghjklmnpqrstvwxz", "aeiou"
    for _ in range(200):
        word = "".join(
            rng.choice(vowels if i % 2 else consonants) for i in range(rng.randint(6, 10))
        )
        start = rng.randint(1, 3)
        later = [ch for ch in word[start + 1 :] if ch in consonants]
        short = word[:start] + rng.choice(later)
        assert truncates(short, word), (short, word)
        vowel = rng.choice(vowels)
        wrong = word[0] + vowel + rng.choice(consonants)
        if not word.startswith(wrong[:2]):
            assert not truncates(wrong, word), (wrong, word)


def test_only_names_abbreviated_as_a_whole_are_read_as_abbreviations() -> None:
    """`tblEmp`, `DEPT` and `wh_mst` are abbreviated names; `pitStops` (a short word beside a
    full one) and `posts` (a plural: abbreviations do not inflect) are words."""
    from macsql.linking.ranking import _model

    names = ["tblEmp", "DEPT", "wh_mst", "pitStops", "posts", "Lots"]
    schema = SchemaInfo(
        "s", "sqlite", [TableInfo(n, [ColumnInfo("id", "INTEGER")]) for n in names], []
    )
    short = _model(schema).terms.table_short
    assert {w: sorted(t) for w, t in short.items()} == {
        "tbl": ["tblEmp"],
        "emp": ["tblEmp"],
        "dept": ["DEPT"],
        "wh": ["wh_mst"],
        "mst": ["wh_mst"],
    }
