"""SParC / CoSQL evals (issue 28) on a hand-made layout: the loader, interaction scoring against
hand-made gold, the predictions file both ways, and runs through the MAC-SQL graph on threads
with the scripted conversation model: turn order, both modes of the earlier turns' SQL, a failed
turn, resume."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chart_support import ex_labels, read_chart
from test_eval_scoring import make_shop_db

from macsql.cli.evals import main as evals_main
from macsql.evals.datasets import DatasetError, Interaction, load_dataset
from macsql.evals.interaction_scoring import TURN_BUCKETS, score_sessions, turn_bucket
from macsql.evals.options import EvalOptions
from macsql.evals.predictions import (
    NO_PREDICTION,
    read_interaction_predictions,
    write_interaction_predictions,
)
from macsql.evals.runner import run_eval_sync
from macsql.llm.deadlines import cancelled
from macsql.llm.models import registered_chat_model
from macsql.testing.scripted_conversations import GoldConversationModel, GoldConversations

NAMES_OVER_5 = "SELECT name FROM items WHERE price > 5"
CONVERSATIONS = [
    (
        "shop",
        [
            ("List the names of all items.", "SELECT name FROM items"),
            ("Only those costing more than 5.", NAMES_OVER_5),
            ("How many are they?", "SELECT count(*) FROM items WHERE price > 5"),
        ],
    ),
    (
        "shop",
        [
            ("Which categories are there?", "SELECT DISTINCT cat FROM items"),
            ("Sort them by name.", "SELECT DISTINCT cat FROM items ORDER BY cat"),
        ],
    ),
    ("ghost", [("A question on a missing database", "SELECT 1")]),
    (
        "shop",
        [
            ("Show the items.", "SELECT * FROM items"),
            ("Just their prices.", "SELECT price FROM items"),
            ("The highest one?", "SELECT max(price) FROM items"),
            ("And the lowest?", "SELECT min(price) FROM items"),
            ("The average, then.", "SELECT avg(price) FROM items"),
        ],
    ),
]
FLAT = [sql for _, turns in CONVERSATIONS for _, sql in turns]
MODEL = "scripted-sparc-test"


def write_layout(
    root: Path, conversations: list[Any] = CONVERSATIONS, name: str = "dev.json"
) -> Path:
    make_shop_db(root / "database" / "shop" / "shop.sqlite")
    records = [
        {
            "database_id": db,
            "interaction": [{"utterance": q, "query": sql} for q, sql in turns],
            "final": {"utterance": turns[-1][0], "query": turns[-1][1]},
        }
        for db, turns in conversations
    ]
    (root / name).write_text(json.dumps(records))
    return root


@pytest.fixture
def sparc(tmp_path: Path) -> Path:
    return write_layout(tmp_path / "sparc")


def test_the_loader_keeps_interactions_and_their_turns_in_order(sparc: Path) -> None:
    ds = load_dataset("sparc", sparc)
    assert [len(i.turns) for i in ds.interactions] == [3, 2, 1, 5]
    assert [item.gold_sql for item in ds.items] == FLAT
    assert [item.index for item in ds.items] == list(range(11))
    for interaction in ds.interactions:
        assert [t.turn for t in interaction.turns] == list(range(len(interaction.turns)))
        assert {t.interaction for t in interaction.turns} == {interaction.index}
    assert ds.interactions[2].skip_reason == "database missing: ghost"
    assert ds.levels == ("easy", "medium", "hard", "extra")
    # CoSQL's file has its own name, the same layout.
    shutil.copy(sparc / "dev.json", sparc / "cosql_dev.json")
    assert [i.question for i in load_dataset("cosql", sparc).items] == [
        i.question for i in ds.items
    ]


def test_a_file_that_is_not_sparc_is_named(sparc: Path) -> None:
    (sparc / "dev.json").write_text(json.dumps([{"db_id": "shop", "question": "q", "query": "x"}]))
    with pytest.raises(DatasetError, match="not a sparc file"):
        load_dataset("sparc", sparc)
    lonely = sparc.parent / "lonely"  # no database/, and no Spider folder beside it
    lonely.mkdir()
    (lonely / "dev.json").write_text("[]")
    with pytest.raises(DatasetError, match="no database/ folder"):
        load_dataset("sparc", lonely)


def _sessions(overrides: dict[int, str]) -> list[list[str]]:
    """The gold of every turn but the ones overridden (by item index)."""
    out, index = [], 0
    for _, turns in CONVERSATIONS:
        session = []
        for _q, sql in turns:
            session.append(overrides.get(index, sql))
            index += 1
        out.append(session)
    return out


def test_interaction_scoring_against_hand_made_gold(sparc: Path, tmp_path: Path) -> None:
    ds = load_dataset("sparc", sparc)
    # Wrong: turn 2 of the first interaction (another result); turn 5 of the last (an error).
    # Right although written otherwise: columns in another order is not the case here, but
    # turn 1 of the second interaction without DISTINCT is (DISTINCT is removed by default),
    # and the ordered turn with the same rows in the gold's order.
    wrong = {1: "SELECT name FROM items WHERE price > 7", 10: "SELECT avg(nope) FROM items"}
    right = {3: "SELECT cat FROM items", 4: "SELECT DISTINCT cat FROM items ORDER BY cat ASC"}
    path = write_interaction_predictions(tmp_path / "pred.txt", _sessions({**wrong, **right}))
    report = score_sessions(ds, read_interaction_predictions(path))
    verdicts = {i: r["correct"] for i, r in report.records.items()}
    assert verdicts == {i: (None if i == 5 else i not in wrong) for i in range(11)}
    conv = report.summary["conversations"]
    # 10 turns scored, 8 right; interactions 0 and 3 have a wrong turn, 1 is right, 2 skipped.
    assert report.summary["n_scored"] == 10 and report.summary["ex"] == 80.0
    assert conv["question_ex"] == 80.0
    assert (conv["n_interactions_scored"], conv["n_interaction_ex"]) == (3, 1)
    assert conv["interaction_ex"] == round(100 / 3, 2)
    by_turn = conv["by_turn"]
    assert [by_turn[b]["count"] for b in ("1", "2", "3", "4+")] == [3, 3, 2, 2]
    assert [by_turn[b]["ex"] for b in ("1", "2", "3", "4+")] == [
        100.0,
        round(200 / 3, 2),
        100.0,
        50.0,
    ]
    # Exact match: DISTINCT and ASC change nothing; the changed value neither (values are not
    # compared); the unknown column makes the prediction unreadable: wrong.
    exact = {i: r["exact"] for i, r in report.records.items()}
    assert exact == {i: (None if i == 5 else i != 10) for i in range(11)}
    assert conv["interaction_exact"] == round(200 / 3, 2)


def test_turn_buckets_are_one_two_three_and_four_plus() -> None:
    assert [turn_bucket(t) for t in range(7)] == ["1", "2", "3", "4+", "4+", "4+", "4+"]


def test_the_predictions_file_is_the_official_layout(tmp_path: Path) -> None:
    path = write_interaction_predictions(tmp_path / "p.txt", [["SELECT 1", ""], ["SELECT\n2"]])
    assert path.read_text() == f"SELECT 1\n{NO_PREDICTION}\n\nSELECT 2\n\n"
    assert read_interaction_predictions(path) == [["SELECT 1", NO_PREDICTION], ["SELECT 2"]]
    # The official gold layout reads the same way (the SQL before the tab; no final blank).
    (tmp_path / "g.txt").write_text("SELECT a\tdb\n\nSELECT b\tdb\nSELECT c\tdb")
    assert read_interaction_predictions(tmp_path / "g.txt") == [
        ["SELECT a"],
        ["SELECT b", "SELECT c"],
    ]


def test_score_refuses_a_file_that_does_not_line_up(
    sparc: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    glued = tmp_path / "glued.txt"
    glued.write_text("\n".join(FLAT) + "\n")  # no empty lines: one 11-turn "interaction"
    args = ["score", "--dataset", "sparc", "--data-dir", str(sparc), "--predictions", str(glued)]
    assert evals_main(args) == 2
    assert "empty line missing" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Runs through the MAC-SQL graph, one thread per interaction


class Recorder(GoldConversations):
    """The gold conversation model, recording when each turn's SQL is written, and on which
    thread; `wrong_first` makes it write a wrong SQL for the first turn of interaction 0."""

    def __init__(self, dataset: Any, *, wrong_first: bool = False, slow: float = 0.0) -> None:
        super().__init__(dataset)
        self.wrong_first = wrong_first
        self.slow = slow
        self.calls: list[tuple[float, float, str]] = []
        self.rewrites: list[str] = []
        self.lock = threading.Lock()

    def answer_of(self, interaction: Interaction, turn: int) -> str:
        if self.wrong_first and interaction.index == 0 and turn == 0:
            return "SELECT name FROM items WHERE id = 1"
        return super().answer_of(interaction, turn)

    def __call__(self, prompt: str) -> str:
        start = time.perf_counter()
        if self.slow:
            time.sleep(self.slow)
        reply = super().__call__(prompt)
        with self.lock:
            if prompt.startswith("You help"):
                self.rewrites.append(prompt)
            if "```sql" in reply:
                self.calls.append((start, time.perf_counter(), reply))
        return reply


@pytest.fixture
def recorder(sparc: Path) -> Iterator[Recorder]:
    model = Recorder(load_dataset("sparc", sparc), slow=0.02)
    with registered_chat_model(MODEL, GoldConversationModel(responder=model)):
        yield model


def _options(sparc: Path, out: Path, **changes: Any) -> EvalOptions:
    return EvalOptions(
        dataset="sparc",
        data_dir=str(sparc),
        model=MODEL,
        out=str(out),
        progress=False,
        concurrency=4,
        **changes,
    )


def test_a_run_follows_each_interaction_in_order_and_scores_100(
    sparc: Path, tmp_path: Path, recorder: Recorder
) -> None:
    result = run_eval_sync(_options(sparc, tmp_path / "run"))
    conv = result.summary["conversations"]
    assert (result.summary["ex"], conv["question_ex"], conv["interaction_ex"]) == (100, 100, 100)
    assert conv["question_exact"] == 100.0 and recorder.lost == 0
    assert result.summary["previous_sql"].startswith("own")
    # Turns of one interaction were written one after the other, in order; interactions ran
    # side by side.
    by_sql = {sql: i for i, sql in enumerate(FLAT)}
    ds = load_dataset("sparc", sparc)
    spans: dict[int, list[tuple[float, float, int]]] = {}
    for start, end, reply in recorder.calls:
        index = by_sql[reply.split("```sql\n", 1)[1].split("\n```", 1)[0]]
        item = ds.items[index]
        spans.setdefault(item.interaction or 0, []).append((start, end, item.turn or 0))
    for interaction, calls in spans.items():
        assert [t for _, _, t in calls] == list(range(len(calls))), interaction
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(calls))
    # The model answers one call at a time, so interactions side by side show as interleaved
    # calls: a second interaction started before the first one ended.
    first_end = max(end for _, end, _ in spans[0])
    assert any(calls[0][0] < first_end for i, calls in spans.items() if i != 0)
    # The official predictions file, and `score` reads it back to the same figures.
    pred = tmp_path / "run" / "pred.txt"
    expected = [[sql for _, sql in t] for _, t in CONVERSATIONS]
    expected[2] = [NO_PREDICTION]  # its database is missing: skipped, a line that scores 0
    assert read_interaction_predictions(pred) == expected
    report = score_sessions(ds, read_interaction_predictions(pred))
    assert report.summary["conversations"] == conv
    by_turn, _ = read_chart(tmp_path / "run" / "summary.svg")
    ex = [conv["by_turn"][b]["ex"] for b in TURN_BUCKETS] + [conv["interaction_ex"]]
    em = [conv["by_turn"][b]["exact"] for b in TURN_BUCKETS] + [conv["interaction_exact"]]
    assert by_turn.value_labels == [f"{v:.1f}" for v in ex + em]
    assert "interaction EX 100.00" in (tmp_path / "run" / "summary.md").read_text()


@pytest.mark.parametrize("previous_sql", ["own", "gold"])
def test_follow_ups_see_the_models_own_sql_or_the_gold(
    sparc: Path, tmp_path: Path, previous_sql: str
) -> None:
    model = Recorder(load_dataset("sparc", sparc), wrong_first=True)
    with registered_chat_model(MODEL, GoldConversationModel(responder=model)):
        result = run_eval_sync(
            _options(sparc, tmp_path / previous_sql, previous_sql=previous_sql, limit=1)
        )
    first_rewrite = next(p for p in model.rewrites if "List the names" in p)
    wrong, gold = "SELECT name FROM items WHERE id = 1", "SELECT name FROM items"
    shown = first_rewrite.split("SQL: ", 1)[1].splitlines()[0]
    assert shown == (wrong if previous_sql == "own" else gold)
    assert result.summary["previous_sql"].startswith(previous_sql)
    records = result.records
    assert [records[i]["correct"] for i in range(3)] == [False, True, True]
    assert result.summary["conversations"]["interaction_ex"] == 0.0
    assert json.loads((tmp_path / previous_sql / "run.json").read_text())["previous_sql"] == (
        previous_sql
    )


def test_a_turn_that_times_out_stays_failed_in_its_thread(sparc: Path, tmp_path: Path) -> None:
    class SlowSecondTurn(Recorder):
        def write(self, prompt: str) -> str:
            if "[conversation 0, turn 2]" in prompt:
                # Outlasts the item's time whatever the machine's load (a fixed sleep raced
                # the other turns, which a loaded machine can slow past a short timeout): the
                # reply comes once the item's calls are cancelled, at most a minute later.
                given_up = time.monotonic() + 60
                while not cancelled() and time.monotonic() < given_up:
                    time.sleep(0.01)
            return super().write(prompt)

    model = SlowSecondTurn(load_dataset("sparc", sparc))
    with registered_chat_model(MODEL, GoldConversationModel(responder=model)):
        result = run_eval_sync(_options(sparc, tmp_path / "slow", limit=1, item_timeout=4))
    records = result.records
    assert records[1]["status"] == "failed" and "timed out" in records[1]["error"]
    third = next(p for p in model.rewrites if "How many are they?" in p)
    assert "Outcome: failed: item timed out" in third
    assert records[2]["prediction"] != FLAT[2]  # the rewriter lost the thread: it was told so


def test_resume_reruns_only_interactions_not_wholly_recorded(
    sparc: Path, tmp_path: Path, recorder: Recorder
) -> None:
    out = tmp_path / "resume"
    run_eval_sync(_options(sparc, out, limit=2))
    results = out / "results.jsonl"
    lines = results.read_text().splitlines()
    # Keep interaction 0 whole and the first turn of interaction 1, as a killed run would.
    kept = [ln for ln in lines if json.loads(ln)["index"] in (0, 1, 2, 3)]
    results.write_text("\n".join(kept) + "\n")
    before = len(recorder.calls)
    result = run_eval_sync(_options(sparc, out, limit=4, resume=True))
    written = [reply for _, _, reply in recorder.calls[before:]]
    # Interaction 1 again from its first turn, 2 is skipped (no database), 3 in full.
    assert len(written) == 2 + 5
    assert result.summary["conversations"]["n_interactions_scored"] == 3
    assert result.summary["conversations"]["interaction_ex"] == 100.0
    assert len(read_interaction_predictions(out / "pred.txt")) == 4


def test_the_command_line_runs_and_scores_sparc(
    sparc: Path, tmp_path: Path, recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    from macsql.cli.main import main

    out = tmp_path / "cli"
    args = ["eval", "--dataset", "sparc", "--data-dir", str(sparc), "--model", MODEL]
    assert main([*args, "--out", str(out), "--no-progress", "--limit", "2"]) == 0
    printed = capsys.readouterr().out
    assert "interaction" in printed and "previous turns' SQL: own" in printed
    score = ["score", "--dataset", "sparc", "--data-dir", str(sparc), "--json"]
    assert main([*score, "--predictions", str(out / "pred.txt")]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["summary"]["conversations"]["n_interactions_scored"] == 2
    assert payload["summary"]["conversations"]["interaction_ex"] == 100.0


def test_gold_mode_needs_no_model(sparc: Path, tmp_path: Path) -> None:
    result = asyncio.run(_gold_run(sparc, tmp_path))
    assert result.summary["conversations"]["interaction_ex"] == 100.0
    assert result.summary["previous_sql"] == "gold (no model)"


async def _gold_run(sparc: Path, tmp_path: Path) -> Any:
    from macsql.evals.runner import run_eval

    return await run_eval(_options(sparc, tmp_path / "gold", gold=True))


# Runs in a fresh interpreter: this test process may have imported matplotlib already.
_CHART_AFTER_ITEMS = """
import asyncio, json, sys
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval

options = EvalOptions(dataset="sparc", data_dir=sys.argv[1], out=sys.argv[2], gold=True,
                      progress=False)
result = asyncio.run(run_eval(options))
print(json.dumps({"records": len(result.records), "matplotlib": "matplotlib" in sys.modules}))
"""


def test_a_conversation_eval_never_loads_a_plotting_library_and_charts_its_figures(
    sparc: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", _CHART_AFTER_ITEMS, str(sparc), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"records": seen["records"], "matplotlib": False} and seen["records"] > 1
    summary = json.loads((out / "summary.json").read_text())
    by_turn, by_level = read_chart(out / "summary.svg")
    conv = summary["conversations"]
    assert by_turn.categories == [f"turn {b}" for b in TURN_BUCKETS] + ["interaction"]
    assert by_turn.value_labels[-1] == f"{conv['interaction_exact']:.1f}"
    levels = [n for n in summary["by_difficulty"] if n != "all"]
    assert by_level.value_labels == ex_labels(summary, levels)
    assert "](summary.svg)" in (out / "summary.md").read_text()
