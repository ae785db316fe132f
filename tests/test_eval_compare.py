"""The comparison rules of the official scorers, on hand-made result sets."""

from __future__ import annotations

import time

import pytest
from timing import generous

from macsql.evals.compare import (
    bird_equal,
    join_spaced_comparisons,
    normalize_spider_sql,
    order_matters,
    remove_distinct,
    replace_current_year,
    spider_equal,
)

# --- order -----------------------------------------------------------------------------------


def test_spider_unordered_ignores_row_order() -> None:
    gold = [(1, "a"), (2, "b"), (3, "c")]
    assert spider_equal(gold, [(3, "c"), (1, "a"), (2, "b")], ordered=False)


def test_spider_ordered_requires_the_gold_row_order() -> None:
    gold = [(1, "a"), (2, "b"), (3, "c")]
    assert spider_equal(gold, list(gold), ordered=True)
    assert not spider_equal(gold, [(3, "c"), (1, "a"), (2, "b")], ordered=True)


def test_order_matters_only_when_gold_has_order_by() -> None:
    assert order_matters("SELECT a FROM t ORDER BY a")
    assert order_matters("select a from t order by a desc limit 3")
    assert not order_matters("SELECT a FROM t")
    # The official test is a text search on the gold SQL: a subquery's ORDER BY counts too.
    assert order_matters("SELECT a FROM t WHERE b IN (SELECT b FROM u ORDER BY c LIMIT 1)")


def test_bird_ignores_order_and_duplicates_but_not_column_order() -> None:
    gold = [(1, "a"), (2, "b")]
    assert bird_equal([(2, "b"), (1, "a"), (1, "a")], gold)
    assert not bird_equal([("a", 1), ("b", 2)], gold)
    assert not bird_equal([(1, "a")], gold)


# --- duplicates ------------------------------------------------------------------------------


def test_spider_compares_bags_so_duplicate_counts_matter() -> None:
    gold = [(1,), (1,), (2,)]
    assert spider_equal(gold, [(2,), (1,), (1,)], ordered=False)
    assert not spider_equal(gold, [(1,), (2,), (2,)], ordered=False)
    assert not spider_equal(gold, [(1,), (2,)], ordered=False)


def test_spider_duplicates_with_same_values_in_other_counts() -> None:
    # Same set of rows, same length, different multiplicities: not equal.
    gold = [(1, "x"), (1, "x"), (2, "y")]
    pred = [(1, "x"), (2, "y"), (2, "y")]
    assert not spider_equal(gold, pred, ordered=False)
    assert bird_equal(pred, gold)  # BIRD's set rule accepts it


# --- column permutation ----------------------------------------------------------------------


def test_spider_allows_any_column_permutation() -> None:
    gold = [(1, "a", 3.5), (2, "b", 4.5)]
    pred = [(3.5, 1, "a"), (4.5, 2, "b")]
    assert spider_equal(gold, pred, ordered=False)
    assert spider_equal(gold, pred, ordered=True)
    assert not spider_equal(gold, list(reversed(pred)), ordered=True)


def test_spider_permutation_must_be_one_mapping_for_all_rows() -> None:
    # Each row alone is a permutation of the gold row, but no single column mapping fits both.
    gold = [(1, 2), (3, 4)]
    pred = [(1, 2), (4, 3)]
    assert not spider_equal(gold, pred, ordered=False)


def test_spider_columns_with_equal_values_are_interchangeable() -> None:
    gold = [(1, 1, 2), (1, 1, 3)]
    pred = [(2, 1, 1), (3, 1, 1)]
    assert spider_equal(gold, pred, ordered=True)


def test_spider_column_count_must_match() -> None:
    assert not spider_equal([(1, 2)], [(1, 2, 3)], ordered=False)
    assert not spider_equal([(1, 2)], [(1,)], ordered=False)


def test_spider_permutation_search_is_fast_on_wide_repetitive_results() -> None:
    width = 10
    gold = [tuple(range(width)) for _ in range(200)] + [tuple([7] * width)]
    pred = [tuple(reversed(range(width))) for _ in range(200)] + [tuple([7] * width)]
    started = time.perf_counter()
    assert spider_equal(gold, pred, ordered=True)
    same = [tuple([5] * width) for _ in range(300)]
    assert spider_equal(same, list(same), ordered=False)
    assert not spider_equal(same, [tuple([5] * (width - 1) + [6])] * 300, ordered=False)
    assert time.perf_counter() - started < generous(1.0)  # a blow-up takes minutes


# --- NULLs -----------------------------------------------------------------------------------


def test_nulls_are_values_that_must_match() -> None:
    assert spider_equal([(None, 1)], [(1, None)], ordered=False)
    assert not spider_equal([(None,)], [(0,)], ordered=False)
    assert not spider_equal([(None,)], [("",)], ordered=False)
    assert bird_equal([(None,)], [(None,)])
    assert not bird_equal([(None,)], [(0,)])


# --- floats ----------------------------------------------------------------------------------


def test_floats_compare_exactly_and_ints_equal_floats() -> None:
    assert spider_equal([(1,)], [(1.0,)], ordered=False)
    assert bird_equal([(1,)], [(1.0,)])
    assert not spider_equal([(0.3,)], [(0.1 + 0.2,)], ordered=False)
    assert not bird_equal([(0.3,)], [(0.1 + 0.2,)])
    assert not spider_equal([(2.5,)], [(2.4999999,)], ordered=False)


def test_official_quick_rejection_of_int_float_rows_is_kept() -> None:
    # The official scorer sorts each row's values by their text before comparing: 1 and 10
    # sort one way as ints and the other way as "1.0" and 10, so it rejects this pair.
    assert not spider_equal([(1, 10)], [(1.0, 10)], ordered=False)
    assert spider_equal([(1, 2)], [(1.0, 2)], ordered=False)


# --- empty results ---------------------------------------------------------------------------


def test_two_empty_results_are_equal_whatever_their_columns() -> None:
    assert spider_equal([], [], ordered=False)
    assert spider_equal([], [], ordered=True)
    assert bird_equal([], [])


def test_empty_and_non_empty_differ() -> None:
    assert not spider_equal([], [(1,)], ordered=False)
    assert not spider_equal([(1,)], [], ordered=False)
    assert not bird_equal([], [(None,)])


# --- DISTINCT and query normalisation --------------------------------------------------------


def test_distinct_is_removed_everywhere_like_the_official_scorer() -> None:
    assert remove_distinct("SELECT DISTINCT a FROM t") == "SELECT  a FROM t"
    # Also inside aggregates, which the official scorer does too.
    assert remove_distinct("SELECT count(DISTINCT a) FROM t") == "SELECT count( a) FROM t"
    assert remove_distinct("select distinct(a) from t") == "select (a) from t"


def test_distinct_in_literals_identifiers_and_comments_is_kept() -> None:
    sql = "SELECT \"distinct\", 'distinct' FROM t -- distinct"
    assert remove_distinct(sql) == sql
    assert remove_distinct("SELECT a FROM t WHERE b = 'it''s distinct'") == (
        "SELECT a FROM t WHERE b = 'it''s distinct'"
    )


def test_distinct_removal_survives_unparseable_text() -> None:
    assert (
        remove_distinct("SELECT DISTINCT a FROM t WHERE b = 'x") == "SELECT  a FROM t WHERE b = 'x"
    )


def test_normalisation_keeps_distinct_on_request() -> None:
    assert "DISTINCT" in normalize_spider_sql("SELECT DISTINCT a FROM t", keep_distinct=True)
    assert "DISTINCT" not in normalize_spider_sql("SELECT DISTINCT a FROM t")


def test_spaced_comparisons_and_current_year() -> None:
    assert (
        join_spaced_comparisons("a > = 1 AND b < = 2 AND c ! = 3") == "a >= 1 AND b <= 2 AND c != 3"
    )
    assert replace_current_year("SELECT YEAR(CURDATE()) - age FROM t") == "SELECT 2020- age FROM t"


@pytest.mark.parametrize(
    ("gold", "pred", "ordered", "expected"),
    [
        ([(1,), (2,)], [(2,), (1,)], False, True),
        ([(1,), (2,)], [(2,), (1,)], True, False),
        ([("a", None)], [(None, "a")], True, True),
        ([(1, 2)], [(2, 1)], True, True),
    ],
)
def test_rule_table(gold: list, pred: list, ordered: bool, expected: bool) -> None:
    assert spider_equal(gold, pred, ordered=ordered) is expected


def test_a_query_with_no_semicolon_or_distinct_is_not_tokenized(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scoring runs both on every prediction: text that cannot hold the token skips the
    tokenizer (a SEMICOLON token needs a ';', a DISTINCT one the word)."""
    from macsql.evals import compare

    def no_tokenizer() -> None:
        raise AssertionError("tokenized")

    monkeypatch.setattr(compare, "_SQLITE_TOKENIZER", no_tokenizer)
    sql = "SELECT count(*) FROM singer WHERE name = 'x'"
    assert compare.first_statement(sql) == sql
    assert remove_distinct(sql) == sql
    with pytest.raises(AssertionError, match="tokenized"):
        compare.first_statement("SELECT 1; SELECT 2")
    with pytest.raises(AssertionError, match="tokenized"):
        remove_distinct("SELECT Distinct a FROM t")
