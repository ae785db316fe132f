from macsql.replies.reader import extract_json_object, extract_sql


def test_last_sql_block_wins() -> None:
    reply = (
        "Sub question 1: ...\nSQL\n```sql\nSELECT 1\n```\n"
        "Sub question 2: ...\nSQL\n```sql\nSELECT name FROM singer;\n```\nQuestion Solved."
    )
    assert extract_sql(reply) == "SELECT name FROM singer"


def test_unlabelled_fence_is_used_only_when_it_looks_like_sql() -> None:
    assert extract_sql("```\nWITH a AS (SELECT 1) SELECT * FROM a\n```") == (
        "WITH a AS (SELECT 1) SELECT * FROM a"
    )
    assert extract_sql("```\nThe answer is the singer table.\n```") is None


def test_prose_without_sql_is_none() -> None:
    assert extract_sql("I think you should look at the singer table.") is None
    assert extract_sql("```sql\n;\n```") is None


def test_json_object_from_fence_or_braces() -> None:
    assert extract_json_object('```json\n{"a": "keep_all"}\n```') == {"a": "keep_all"}
    assert extract_json_object('Here: {"a": ["x", "y"]} done') == {"a": ["x", "y"]}
    assert extract_json_object("```json\n{broken: \n```") is None
    assert extract_json_object('["not", "an", "object"]') is None
