"""`export-sft` on a traced SParC-style run (issue 28): the correct turns' calls, the rewriter's
included, become samples, split by database; an evaluation split is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db
from test_sparc_eval import Recorder, write_layout

from macsql.evals.datasets import Interaction, load_dataset
from macsql.evals.eval_sets import EvaluationDataError
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval_sync
from macsql.evals.sft_export import ExportOptions, export_sft
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted_conversations import GoldConversationModel

MODEL = "scripted-sparc-sft"
TRAIN = [
    (
        "shop",
        [
            ("List the names of all items.", "SELECT name FROM items"),
            ("Only those costing more than 5.", "SELECT name FROM items WHERE price > 5"),
        ],
    ),
    (
        "concert",
        [
            ("How many singers are there?", "SELECT count(*) FROM singer"),
            (
                "And how many of them are from France?",
                "SELECT count(*) FROM singer WHERE Country = 'France'",
            ),
        ],
    ),
    (
        "shop",
        [
            ("Which categories are there?", "SELECT DISTINCT cat FROM items"),
            ("How many items in each?", "SELECT cat, count(*) FROM items GROUP BY cat"),
        ],
    ),
    (
        "concert",
        [
            ("Show the names of all singers.", "SELECT Name FROM singer"),
            ("Sorted by age.", "SELECT Name FROM singer ORDER BY Age"),
        ],
    ),
]
WRONG = "SELECT cat FROM items"
"""What the model writes for the last turn of the third interaction (not its gold)."""


class Teacher(Recorder):
    def answer_of(self, interaction: Interaction, turn: int) -> str:
        if interaction.index == 2 and turn == 1:
            return WRONG
        return super().answer_of(interaction, turn)


def _tokens(text: str) -> int:
    return len(text.split())


@pytest.fixture
def sparc(tmp_path: Path) -> Path:
    root = write_layout(tmp_path / "sparc", TRAIN, name="train.json")
    (root / "database" / "concert").mkdir(parents=True)
    shutil.copy(concert_db(), root / "database" / "concert" / "concert.sqlite")
    # SParC's dev databases are not its train databases: the dev run asks a copy of the shop.
    (root / "database" / "store").mkdir(parents=True)
    shutil.copy(
        root / "database" / "shop" / "shop.sqlite", root / "database" / "store" / "store.sqlite"
    )
    dev = [
        {
            "database_id": "store",
            "interaction": [
                {"utterance": "What is the priciest item?", "query": "SELECT max(price) FROM items"}
            ],
        }
    ]
    (root / "dev.json").write_text(json.dumps(dev))
    return root


def _run(sparc: Path, out: Path, split: str) -> Any:
    teacher = Teacher(load_dataset("sparc", sparc, split))
    options = EvalOptions(
        dataset="sparc",
        data_dir=str(sparc),
        split=split,
        model=MODEL,
        out=str(out),
        progress=False,
        traces=True,
    )
    with registered_chat_model(MODEL, GoldConversationModel(responder=teacher)):
        return run_eval_sync(options)


def test_correct_turns_become_samples_split_by_database(sparc: Path, tmp_path: Path) -> None:
    result = _run(sparc, tmp_path / "teacher", "train")
    assert [result.records[i]["correct"] for i in range(8)] == [True] * 5 + [False] + [True] * 2
    exported = export_sft(
        ExportOptions(
            run_dir=str(tmp_path / "teacher"), out=str(tmp_path / "sft.jsonl"), split_by_db=0.4
        ),
        count_tokens=_tokens,
    )
    samples = exported.train + exported.validation
    # Every correct turn gave its writer's call; every correct follow-up its rewriter's too.
    assert sorted(s.index for s in samples if s.agent == "decomposer") == [0, 1, 2, 3, 4, 6, 7]
    assert sorted(s.index for s in samples if s.agent == "contextualizer") == [1, 3, 7]
    assert not [s for s in samples if s.index == 5]  # the wrong turn teaches nothing
    assert all(WRONG not in s.reply for s in samples)
    # Whole databases go to validation.
    train_dbs = {s.db_id for s in exported.train}
    validation_dbs = {s.db_id for s in exported.validation}
    assert train_dbs and validation_dbs and not train_dbs & validation_dbs
    lines = [json.loads(x) for x in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert len(lines) == len(exported.train)
    # A rewrite sample is the rewriter's prompt (the earlier turns, with their SQL) and reply.
    rewrite = next(s for s in samples if s.agent == "contextualizer" and s.index == 1)
    assert "SELECT name FROM items" in rewrite.prompt[-1]["content"]
    assert rewrite.reply.startswith("Question: Only those costing more than 5.")


def test_a_run_over_the_evaluation_split_is_refused(sparc: Path, tmp_path: Path) -> None:
    _run(sparc, tmp_path / "dev-run", "dev")
    with pytest.raises(EvaluationDataError, match="evaluation set"):
        export_sft(
            ExportOptions(run_dir=str(tmp_path / "dev-run"), out=str(tmp_path / "x.jsonl")),
            count_tokens=_tokens,
        )
