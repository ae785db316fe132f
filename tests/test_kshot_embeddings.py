"""R^3's k-shot by embeddings: langchain's semantic selector, without the question or repeats."""

from __future__ import annotations

from langchain_core.embeddings import DeterministicFakeEmbedding

from macsql.memory.examples import FewShotExample, FewShotSelector


def test_embedding_selection_skips_the_question_itself_and_repeats() -> None:
    # The fake embedding hashes the whole text: only an identical text scores 1.0.
    pool = [
        FewShotExample("How many singers are there?", "SELECT count(*) FROM singer"),
        FewShotExample("List the stadium names.", "SELECT name FROM stadium"),
        FewShotExample("list the  STADIUM names.", "SELECT name FROM stadium -- again"),
        FewShotExample("What is the average age?", "SELECT avg(age) FROM singer"),
    ]
    selector = FewShotSelector(pool, DeterministicFakeEmbedding(size=64))
    everything = selector.select("Anything at all", 10)
    assert sorted(e.sql for e in everything) == sorted(
        ["SELECT count(*) FROM singer", "SELECT name FROM stadium", "SELECT avg(age) FROM singer"]
    )  # the repeated question once, with its first example's SQL
    chosen = selector.select("How many singers are there?", 3)
    assert "SELECT count(*) FROM singer" not in [e.sql for e in chosen] and len(chosen) == 2
