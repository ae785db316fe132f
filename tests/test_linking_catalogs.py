"""Linking on catalogs: one character budget that counts everything the prompt holds, no column
cap by default, groups of tables ranked first, the join-path rule, ties by relevance,
abbreviations, table-aware values, per-column value indexing and joins inferred from values.
Schemas are small and generated (seeded), so every rule is tested on a class of inputs."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from macsql.core.context import Context
from macsql.database.connection import resolve_database
from macsql.database.schema import ColumnInfo, ForeignKey, SchemaInfo, TableInfo, load_schema
from macsql.database.value_index import ValueMatch, open_value_index
from macsql.linking.groups import table_groups
from macsql.linking.ranking import (
    LinkBudget,
    link_schema,
    pick_values,
    question_phrases,
    render_value_matches,
)
from macsql.prompts.schema_text import render_foreign_keys, render_schema

WORDS = [
    *("alpha", "beta", "gamma", "delta", "sigma", "omega", "river", "castle", "meadow"),
    *("harbor", "lantern", "orchard", "granite", "willow", "falcon", "copper", "summit"),
    *("velvet", "thunder", "marble"),
]


def _table(name: str, columns: list[str], pk: str = "id") -> TableInfo:
    return TableInfo(
        name,
        [ColumnInfo(c, "INTEGER" if c == pk else "TEXT", primary_key=c == pk) for c in columns],
    )


def _kept(schema: SchemaInfo) -> dict[str, set[str]]:
    return {t.name: {c.name for c in t.columns} for t in schema.tables}


def _prompt(result_schema: SchemaInfo, values: list[ValueMatch]) -> int:
    parts = [render_schema(result_schema), render_foreign_keys(result_schema)]
    parts.append(render_value_matches(values, result_schema.dialect))
    return len("\n".join(p for p in parts if p))


def _random_schema(rng: random.Random) -> SchemaInfo:
    """A chain of tables joined by declared keys, with descriptive columns."""
    tables, fks = [], []
    for t in range(rng.randint(3, 9)):
        name = f"{rng.choice(WORDS)}_{t}"
        columns = ["id", *(f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{i}" for i in range(12))]
        if tables:
            parent = rng.choice(tables).name
            columns.append(f"{parent}_ref")
            fks.append(ForeignKey(name, f"{parent}_ref", parent, "id"))
        tables.append(_table(name, columns))
    return SchemaInfo("gen", "sqlite", tables, fks)


# --------------------------------------------------------------------------- the budget


@pytest.mark.parametrize("seed", range(12))
def test_the_prompt_never_exceeds_the_character_budget(seed: int) -> None:
    """Schema blocks, key lines and value lines together stay within the budget."""
    rng = random.Random(seed)
    schema = _random_schema(rng)
    table = rng.choice(schema.tables)
    values = [
        ValueMatch(
            table.name, table.columns[1 + i % 5].name, f"{rng.choice(WORDS)} {i}" * 3, 1.0, "x"
        )
        for i in range(10)
    ]
    words = [c.name.split("_")[0] for t in schema.tables for c in t.columns[1:3]]
    question = "Which " + " and ".join(rng.sample(words, 3)) + "?"
    full = _prompt(schema, [])
    budget = rng.randint(full // 5, full - 1)
    result = link_schema(schema, question, "", LinkBudget(max_chars=budget), values)
    assert result.route == "linked"
    assert _prompt(result.schema, result.values) <= budget
    if len(result.schema.tables) > 1:  # a chain: the kept tables show how they join
        assert result.schema.foreign_keys


def test_no_column_cap_by_default() -> None:
    """A schema of 120 narrow columns fits a 24,000-character budget: nothing is dropped."""
    tables = [_table(f"t{i}", ["id", *(f"c{i}_{j}" for j in range(11))]) for i in range(10)]
    schema = SchemaInfo("s", "sqlite", tables, [])
    context = Context()
    assert context.link_max_columns == 0
    budget = LinkBudget(max_chars=context.link_max_schema_chars, max_columns=0)
    assert link_schema(schema, "How many?", "", budget).route == "full"
    capped = link_schema(schema, "How many?", "", LinkBudget(max_chars=24000, max_columns=40))
    assert capped.route == "linked" and capped.schema.total_columns <= 40


# --------------------------------------------------------------------------- groups


def _database(prefix: str, sep: str, entity: str, rng: random.Random) -> list[TableInfo]:
    """One application's tables: `entity`, its `orders` and `notes`, joined by keys."""
    extra = [f"{rng.choice(WORDS)}_{i}" for i in range(6)]
    return [
        _table(f"{prefix}{sep}{entity}", ["id", "name", "city", *extra]),
        _table(f"{prefix}{sep}orders", ["id", f"{entity}_id", "amount", "placed_on"]),
        _table(f"{prefix}{sep}notes", ["id", "orders_id", "body"]),
    ]


def _catalog(sep: str, seed: int) -> SchemaInfo:
    rng = random.Random(seed)
    tables, fks = [], []
    domains = [("shop", "customer"), ("clinic", "patient"), ("school", "pupil"), ("farm", "crop")]
    for prefix, entity in domains:
        own = _database(prefix, sep, entity, rng)
        tables += own
        fks += [
            ForeignKey(own[1].name, f"{entity}_id", own[0].name, "id"),
            ForeignKey(own[2].name, "orders_id", own[1].name, "id"),
        ]
    return SchemaInfo("catalog", "sqlite", tables, fks)


@pytest.mark.parametrize("sep", [".", "__", "_"])
@pytest.mark.parametrize("seed", range(3))
def test_tables_group_by_their_database_whatever_the_separator(sep: str, seed: int) -> None:
    schema = _catalog(sep, seed)
    groups = table_groups(schema, schema.foreign_keys)
    assert set(groups.of.values()) == {"shop", "clinic", "school", "farm"}
    assert groups.local_name(f"clinic{sep}orders") == "orders"


def test_a_single_database_is_one_group() -> None:
    schema = SchemaInfo(
        "s",
        "sqlite",
        [_table("Player", ["id"]), _table("Player_Attributes", ["id"]), _table("Team", ["id"])],
        [],
    )
    assert set(table_groups(schema).of.values()) == {""}


@pytest.mark.parametrize("sep", [".", "__", "_"])
def test_the_right_database_wins_over_same_named_tables(sep: str) -> None:
    """Every database has `orders`: the question's other words pick the clinic's, and the
    kept tables stay in one database."""
    schema = _catalog(sep, 0)
    result = link_schema(
        schema,
        "What is the total amount of the orders of patients in each city?",
        "",
        LinkBudget(max_chars=450),
    )
    kept = _kept(result.schema)
    assert f"clinic{sep}orders" in kept and "amount" in kept[f"clinic{sep}orders"]
    assert f"clinic{sep}patient" in kept
    assert {t.split(sep)[0] for t in kept} == {"clinic"}


def test_a_table_that_cannot_be_joined_is_left_out_unless_named() -> None:
    orders = _table("orders", ["id", "customer_id", "amount", *(f"o{i}" for i in range(8))])
    customer = _table("customer", ["id", "name", "city"])
    weather = _table("weather", ["id", "amount_of_rain", "city"])
    schema = SchemaInfo(
        "s",
        "sqlite",
        [orders, customer, weather],
        [ForeignKey("orders", "customer_id", "customer", "id")],
    )
    budget = LinkBudget(max_chars=330)
    result = link_schema(schema, "What amount did customers in each city order?", "", budget)
    assert "weather" not in _kept(result.schema)
    assert any("weather cannot be joined" in n for n in result.notes)
    named = link_schema(schema, "What was the weather in each city?", "", budget)
    assert "weather" in _kept(named.schema)


@pytest.mark.parametrize(
    ("column", "question"),
    [
        ("qty", "What quantity was shipped?"),
        ("dept_name", "List every department"),
        ("hr", "Who hit the most home runs?"),
        ("pcf_violation", "Which primary collision factor violation is commonest?"),
    ],
)
def test_short_names_match_the_words_they_abbreviate(column: str, question: str) -> None:
    wide = _table("stats", ["id", column, *(f"metric_{i}" for i in range(30))])
    schema = SchemaInfo("s", "sqlite", [wide], [])
    result = link_schema(schema, question, "", LinkBudget(max_chars=120))
    assert column in _kept(result.schema)["stats"]


# --------------------------------------------------------------------------- values


def test_value_matches_count_with_their_tables_relevance() -> None:
    """'Paris' is stored in both tables; the question is about hotels."""
    matches = [
        ValueMatch("airport", "city", "Paris", 1.0, "Paris"),
        ValueMatch("hotel", "city", "Paris", 1.0, "Paris"),
    ]
    picked = pick_values(matches, 1, relevance={"hotel": 1.0, "airport": 0.1})
    assert picked[0].table == "hotel"
    # Without relevance, the order no longer comes from the alphabet either: the same input
    # in the other order gives the same first pick only by its own merits.
    many = [ValueMatch("hotel", f"c{i}", f"Paris {i}", 1.0, "Paris") for i in range(8)]
    picked = pick_values(many, 10, relevance={"hotel": 1.0})
    assert len({m.column for m in picked}) == 3  # values of at most 3 columns per table


def test_a_lone_common_word_matches_only_where_the_question_points() -> None:
    matches = [
        ValueMatch("pets", "kind", "student", 1.0, "student"),
        ValueMatch("students", "name", "student", 1.0, "student"),
    ]
    picked = pick_values(matches, 10, relevance={"students": 1.0}, weak={"student"})
    assert [m.table for m in picked] == ["students"]


def test_hyphenated_words_are_also_looked_up_alone() -> None:
    phrases = question_phrases("How many Mercedes-Benz cars are there?")
    assert "Mercedes-Benz" in phrases and "Mercedes" in phrases and "Benz" in phrases


def _skewed_db(path: Path) -> Path:
    """One column of 1,000 distinct names, 49 columns of five values each."""
    conn = sqlite3.connect(path)
    flags = ", ".join(f"f{i} TEXT" for i in range(49))
    conn.execute(f"CREATE TABLE people (id INTEGER PRIMARY KEY, full_name TEXT, {flags})")
    rows = [(i, f"Person {i:04d}", *(f"v{(i + j) % 5}" for j in range(49))) for i in range(1000)]
    conn.executemany(f"INSERT INTO people VALUES ({', '.join('?' * 51)})", rows)
    conn.commit()
    conn.close()
    return path


def test_each_column_keeps_its_distinct_values_up_to_its_own_limit(tmp_path: Path) -> None:
    """A global cap shared out over 50 columns left 40 of the 1,000 names: every name is in."""
    db = resolve_database(str(_skewed_db(tmp_path / "skewed.sqlite")))
    index = open_value_index(db, load_schema(db), max_values=2000, values_per_column=2000)
    assert index.stats.values == 1000 + 49 * 5
    found = index.lookup(["Person 0777"])
    assert any(m.value == "Person 0777" for m in found)


def _keyless_db(path: Path) -> Path:
    """No declared keys at all: a role-named player column and a composite key."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE Player (player_api_id INTEGER, player_name TEXT);
        CREATE TABLE Match (match_id INTEGER, home_player_1 INTEGER, away_player_1 INTEGER,
                            goals INTEGER);
        CREATE TABLE season (league TEXT, year INTEGER, champion TEXT,
                             PRIMARY KEY (league, year));
        CREATE TABLE award (league TEXT, year INTEGER, prize TEXT);
        """
    )
    conn.executemany(
        "INSERT INTO Player VALUES (?, ?)", [(1000 + i, f"Player {i}") for i in range(20)]
    )
    conn.executemany(
        "INSERT INTO Match VALUES (?, ?, ?, ?)",
        [(i, 1000 + i % 20, 1000 + (i + 3) % 20, i % 4) for i in range(30)],
    )
    conn.executemany(
        "INSERT INTO season VALUES (?, ?, ?)",
        [(lg, y, f"Club {y}") for lg in ("north", "south") for y in range(2000, 2010)],
    )
    conn.executemany(
        "INSERT INTO award VALUES (?, ?, ?)",
        [(lg, y, "cup") for lg in ("north", "south") for y in range(2002, 2008)],
    )
    conn.commit()
    conn.close()
    return path


def test_joins_are_inferred_from_values_and_cached_with_the_index(tmp_path: Path) -> None:
    db = resolve_database(str(_keyless_db(tmp_path / "keyless.sqlite")))
    schema = load_schema(db)
    assert not schema.foreign_keys
    joins = {
        (j.table, j.column, j.ref_table, j.ref_column) for j in open_value_index(db, schema).joins()
    }
    assert ("Match", "home_player_1", "Player", "player_api_id") in joins
    assert ("Match", "away_player_1", "Player", "player_api_id") in joins
    assert {("award", "league", "season", "league"), ("award", "year", "season", "year")} <= joins
    assert not any(j[1] == "goals" for j in joins)  # 0-3 are no player ids


def test_an_inferred_join_brings_its_table_along(tmp_path: Path) -> None:
    from macsql.linking.stage import run_linking

    path = _keyless_db(tmp_path / "keyless.sqlite")
    db = resolve_database(str(path))
    schema = load_schema(db)
    context = Context(link_max_schema_chars=600)
    result = run_linking(
        schema, str(path), "How many goals did the home player 1 Player 3 score?", "", context
    )
    kept = _kept(result.schema)
    assert {"Match", "Player"} <= set(kept)
    assert (
        ForeignKey("Match", "home_player_1", "Player", "player_api_id")
        in result.schema.foreign_keys
    )
