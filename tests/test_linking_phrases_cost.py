"""The per-question text work of linking is done once per token and once per column name."""

from __future__ import annotations

import pytest

from macsql.linking import ranking
from macsql.linking.ranking import flag_values, question_phrases


class _CountingSet(frozenset[str]):
    checks = 0

    def __contains__(self, item: object) -> bool:
        type(self).checks += 1
        return super().__contains__(item)


def test_stopwords_are_checked_once_per_token(monkeypatch: pytest.MonkeyPatch) -> None:
    question = "Which singers from the Fresno County Office were born in Sao Paulo in 1990"
    expected = question_phrases(question)
    counting = _CountingSet(ranking._STOPWORDS)
    monkeypatch.setattr(ranking, "_STOPWORDS", counting)
    _CountingSet.checks = 0
    assert question_phrases(question) == expected
    assert "Fresno County Office" in expected and "Sao Paulo" in expected
    # no hyphen: one token list, one check per token (every n-gram used to check both ends)
    assert _CountingSet.checks == len(question.split())


def test_a_hyphenated_word_still_gives_its_parts() -> None:
    phrases = question_phrases("Which cars does Mercedes-Benz make?")
    assert {"Mercedes-Benz", "Mercedes", "Benz", "Mercedes Benz"} <= set(phrases)


def test_column_names_are_split_once_across_questions(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = ranking.words

    def counted(text: str) -> list[str]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(ranking, "words", counted)
    ranking._flag_words.cache_clear()
    small = {("t", "IsOfficial"): ["T", "F"], ("t", "is_active"): ["0", "1"]}
    first = flag_values(small, "Which languages are official?")
    second = flag_values(small, "How many active users?")
    assert [m.column for m in first] == ["IsOfficial", "IsOfficial"]
    assert [m.column for m in second] == ["is_active", "is_active"]
    assert calls.count("IsOfficial") == 1 and calls.count("is_active") == 1
