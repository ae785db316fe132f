"""A scripted teacher over 60 Spider train items, traced, then exported as fine-tuning data.

The first 60 items of ``train_spider.json`` cover three databases: ``department_management``
(16 items) and ``farm`` (40) are small, so the Selector does not run; ``student_assessment``
(items 56-59) is large (38 columns), so it does. The teacher plays MAC-SQL's agents through the
real langchain-openai client against the local scripted server:

- items 1, 6, 11, 16, 21, 26: the Decomposer's SQL fails, the Refiner's repair is the gold SQL;
- item 8: the Decomposer's SQL fails and the Refiner repeats it twice (item failed);
- items 3, 10, 17: the Decomposer's SQL runs but answers wrongly (item incorrect);
- items 56 and 58: the Selector keeps every gold table; items 57 and 59 drop one;
- every other Decomposer call answers the gold SQL.

So the run makes 72 calls (60 Decomposer, 8 Refiner, 4 Selector), and the export's rules keep
50 Decomposer, 6 Refiner and 2 Selector samples.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from conftest import SPIDER, spider_eval_args
from test_pipelines_eval import SpiderResponder

from macsql.cli.main import main
from macsql.evals.eval_sets import (
    EvaluationSets,
    evaluation_files_in,
    find_evaluation_files,
    normalise_question,
)
from macsql.evals.sft_export import ExportOptions, export_sft
from macsql.evals.sft_formats import alpaca, chat, openai, prompt_completion, sharegpt
from macsql.testing.scripted import ScriptedOpenAIServer

N = 60
SECRET = "sk-teacher-secret-0123456789"
BROKEN = "SELECT nope_xyz"
WRONG = "SELECT 'not the answer'"
REPAIRED = {1, 6, 11, 16, 21, 26}
UNFIXED = {8}
WRONG_ITEMS = {3, 10, 17}
SELECTOR_GOOD = {56, 58}
SELECTOR_MISSES = {57: "Courses", 59: "Student_Course_Registrations"}
STUDENT_TABLES = [
    "Addresses",
    "Candidate_Assessments",
    "Candidates",
    "Courses",
    "People",
    "People_Addresses",
    "Student_Course_Attendance",
    "Student_Course_Registrations",
    "Students",
]

pytestmark = pytest.mark.skipif(
    not (SPIDER / "train_spider.json").exists(), reason="the Spider data is not in shared/data"
)


def _train() -> list[dict[str, Any]]:
    return json.loads((SPIDER / "train_spider.json").read_text())[:N]


class Teacher:
    """The scripted teacher: replies by the position of the question in the 60 items."""

    def __init__(self) -> None:
        self.position = {item["question"]: i for i, item in enumerate(_train())}
        self.gold = [item["query"] for item in _train()]
        self.unknown: list[str] = []

    def _position(self, prompt: str) -> int:
        line = prompt.rsplit("[Question] ", 1)[-1].splitlines()[0]
        if line not in self.position:
            self.unknown.append(line)
            raise LookupError(line)
        return self.position[line]

    def __call__(self, prompt: str) -> str:
        i = self._position(prompt)
        if prompt.startswith("You are the Decomposer"):
            sql = BROKEN if i in REPAIRED | UNFIXED else WRONG if i in WRONG_ITEMS else self.gold[i]
            return f"Sub question 1: the answer\nSQL\n```sql\n{sql}\n```\nQuestion Solved."
        if prompt.startswith("You are the Refiner"):
            sql = BROKEN if i in UNFIXED else self.gold[i]
            return f"The column does not exist; the fix:\n```sql\n{sql}\n```"
        if prompt.startswith("You are the Selector"):
            keep = (
                {"Courses", "Student_Course_Registrations", "Students"}
                if i in SELECTOR_GOOD
                else set(STUDENT_TABLES[:3]) | {"Students"}
            )
            if i in SELECTOR_MISSES:
                keep = {"Courses", "Student_Course_Registrations", "Students"} - {
                    SELECTOR_MISSES[i]
                }
            choice = {t: "keep_all" if t in keep else "drop_all" for t in STUDENT_TABLES}
            return f"```json\n{json.dumps(choice)}\n```"
        self.unknown.append(prompt[:80])
        raise LookupError(prompt[:80])


def _eval_args(out: Path, server: ScriptedOpenAIServer, *extra: str, limit: int = N) -> list[str]:
    return spider_eval_args(
        out,
        "--split",
        "train",
        "--limit",
        str(limit),
        "--traces",
        "--model",
        "openai:scripted",
        "--base-url",
        server.base_url,
        "--api-key",
        SECRET,
        *extra,
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def teacher_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One traced teacher run over the 60 items, shared by the export tests."""
    out = tmp_path_factory.mktemp("teacher") / "run"
    teacher = Teacher()
    with ScriptedOpenAIServer(teacher) as server:
        # Two processes: the children's traces reach the writer with their results.
        code = main(_eval_args(out, server, "--concurrency", "4", "--processes", "2"))
        bodies = list(server.bodies)
    assert code == 0 and teacher.unknown == []
    return {"out": out, "bodies": bodies}


def _export(run: Path, out: Path, *options: str) -> tuple[int, dict[str, Any] | None]:
    try:
        code = main(["export-sft", str(run), "--out", str(out), *options])
    except SystemExit as exc:  # an option out of range stops at parse time
        code = int(exc.code or 0)
    stats_path = out.with_suffix("").with_name(out.stem + ".stats.json")
    stats = json.loads(stats_path.read_text()) if code == 0 else None
    return code, stats


# --- traces -------------------------------------------------------------------------------------


def test_traces_hold_every_call_as_sent_in_order(teacher_run: dict[str, Any]) -> None:
    out, bodies = teacher_run["out"], teacher_run["bodies"]
    results = {r["index"]: r for r in _lines(out / "results.jsonl")}
    traces = _lines(out / "traces.jsonl")
    assert sorted(t["index"] for t in traces) == list(range(N))
    # Exactly the requests the server received, message for message (roles and text).
    traced = [json.dumps(c["messages"]) for t in traces for c in t["calls"]]
    received = [
        json.dumps([{"role": m["role"], "content": m["content"]} for m in b["messages"]])
        for b in bodies
    ]
    assert sorted(traced) == sorted(received) and len(traced) == 72
    by_index = {t["index"]: t for t in traces}
    for i, trace in by_index.items():
        agents = [c["agent"] for c in trace["calls"]]
        expected = ["selector"] if i >= 56 else []
        expected += ["decomposer"] + ["refiner"] * (
            1 if i in REPAIRED else 2 if i in UNFIXED else 0
        )
        assert agents == expected, i
        assert trace["question"] == results[i]["question"] and trace["db_id"] == results[i]["db_id"]
        for call in trace["calls"]:
            assert call["usage"]["calls"] == 1 and call["reply"] and call["error"] is None
        # What followed: the SQL each writer wrote, executed; the Selector's kept tables.
        writers = [c for c in trace["calls"] if c["agent"] != "selector"]
        assert [c["execution"]["outcome"] for c in writers][-1] == results[i]["outcome"]
        assert writers[-1]["execution"]["sql"] == results[i]["prediction"]
    assert by_index[1]["calls"][0]["execution"]["sql"] == BROKEN
    assert by_index[1]["calls"][0]["execution"]["outcome"] == "unknown_table_or_column"
    assert set(by_index[57]["calls"][0]["kept_tables"]) == {
        "Student_Course_Registrations",
        "Students",
    }
    assert SECRET not in (out / "traces.jsonl").read_text()


def test_resume_after_a_kill_keeps_each_trace_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    teacher = Teacher()
    with ScriptedOpenAIServer(teacher, delay=0.1) as server:
        args = _eval_args(out, server, "--concurrency", "2")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "macsql.cli.evals", *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        results = out / "results.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if results.is_file() and len(results.read_text().splitlines()) >= 10:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        done_before = len(results.read_text().splitlines())
        assert 10 <= done_before < N
        # A kill between an item's trace and its result leaves a trace with no result.
        orphan = {"index": N - 1, "db_id": "x", "question": "x", "calls": [{"agent": "decomposer"}]}
        with (out / "traces.jsonl").open("a") as f:
            f.write(json.dumps(orphan) + "\n")
        assert main([*args, "--resume"]) == 0
    result_counts = Counter(r["index"] for r in _lines(results))
    trace_counts = Counter(t["index"] for t in _lines(out / "traces.jsonl"))
    assert set(result_counts.values()) == {1} and sorted(result_counts) == list(range(N))
    assert trace_counts == result_counts
    last = next(t for t in _lines(out / "traces.jsonl") if t["index"] == N - 1)
    assert [c["agent"] for c in last["calls"]] == ["selector", "decomposer"]
    # The resumed run exports what an uninterrupted one does.
    assert export_sft(ExportOptions(str(out), str(tmp_path / "sft.jsonl"))).stats["samples"] == 58


# --- export -------------------------------------------------------------------------------------


def test_export_keeps_and_drops_what_the_rules_say(
    teacher_run: dict[str, Any], tmp_path: Path
) -> None:
    code, stats = _export(teacher_run["out"], tmp_path / "sft.jsonl")
    assert code == 0 and stats is not None
    assert stats["calls"] == 72 and stats["items_traced"] == N
    assert stats["items_correct"] == N - len(WRONG_ITEMS) - len(UNFIXED)
    per_agent = {a: (e["calls"], e["samples"]) for a, e in stats["per_agent"].items()}
    assert per_agent == {"decomposer": (60, 50), "refiner": (8, 6), "selector": (4, 2)}
    assert {k: v["count"] for k, v in stats["dropped"].items()} == {
        "item_not_correct": 6,  # 3 wrong + 1 failed Decomposer, the failed item's 2 Refiner calls
        "sql_not_final": 6,  # the drafts the Refiner repaired
        "selector_missed_gold_table": 2,
    }
    assert stats["dropped"]["sql_not_final"]["share"] == round(6 / 72, 4)
    # Every sample was checked against Spider dev's databases and questions.
    dev = json.loads((SPIDER / "dev.json").read_text())
    assert stats["eval_sets_checked"] == [str((SPIDER / "dev.json").resolve())]
    assert stats["eval_databases"] == sorted({r["db_id"] for r in dev})
    assert stats["eval_questions_checked"] == len({normalise_question(r["question"]) for r in dev})
    samples = _lines(tmp_path / "sft.jsonl")
    assert len(samples) == 58
    replies = [s["messages"][-1]["content"] for s in samples]
    assert not any(BROKEN in r or WRONG in r for r in replies)  # no wrong SQL is taught
    # The kept Refiner samples are exactly the repairs that led to the correct result.
    refiner = [s for s in samples if s["messages"][0]["content"].startswith("You are the Refiner")]
    assert len(refiner) == len(REPAIRED)
    assert all(BROKEN in s["messages"][0]["content"] for s in refiner)
    selector = [
        s for s in samples if s["messages"][0]["content"].startswith("You are the Selector")
    ]
    assert len(selector) == 2
    assert {
        json.loads(s["messages"][-1]["content"].strip("`json\n"))["Courses"] for s in selector
    } == {"keep_all"}
    assert "estimated as ceil(UTF-8 bytes / 3)" in (tmp_path / "sft.stats.md").read_text()
    assert SECRET not in (tmp_path / "sft.jsonl").read_text()


def test_without_only_correct_and_dedup(teacher_run: dict[str, Any], tmp_path: Path) -> None:
    # The failed item's two Refiner calls got the same prompt and gave the same reply.
    _, everything = _export(
        teacher_run["out"], tmp_path / "all.jsonl", "--no-only-correct", "--no-dedup"
    )
    _, deduplicated = _export(teacher_run["out"], tmp_path / "dedup.jsonl", "--no-only-correct")
    assert everything is not None and deduplicated is not None
    assert everything["samples"] == 72 and everything["dropped"] == {}
    assert deduplicated["samples"] == 71
    assert deduplicated["dropped"] == {"duplicate": {"count": 1, "share": round(1 / 72, 4)}}
    lines = (tmp_path / "dedup.jsonl").read_text().splitlines()
    assert len(lines) == len(set(lines)) == 71


def test_agents_filter(teacher_run: dict[str, Any], tmp_path: Path) -> None:
    _, stats = _export(teacher_run["out"], tmp_path / "r.jsonl", "--agents", "refiner")
    assert stats is not None and stats["samples"] == 6
    assert stats["dropped"]["agent_not_selected"]["count"] == 64


@pytest.mark.parametrize("fmt", ["chat", "sharegpt", "alpaca", "prompt-completion", "openai"])
def test_each_format_parses_with_roles_in_order(
    teacher_run: dict[str, Any], tmp_path: Path, fmt: str
) -> None:
    out = tmp_path / f"{fmt}.jsonl"
    code, _ = _export(teacher_run["out"], out, "--format", fmt)
    assert code == 0
    samples = _lines(out)
    assert len(samples) == 58
    traces = {t["index"]: t for t in _lines(teacher_run["out"] / "traces.jsonl")}
    results = {r["index"]: r for r in _lines(teacher_run["out"] / "results.jsonl")}
    traced = {c["reply"] for t in traces.values() for c in t["calls"]}
    metadata = (
        _lines(tmp_path / "openai.metadata.jsonl")
        if fmt == "openai"
        else [s.pop("metadata") for s in samples]
    )
    assert len(metadata) == len(samples)
    for sample, meta in zip(samples, metadata, strict=True):
        if fmt in ("chat", "openai"):
            assert list(sample) == ["messages"]
            assert [m["role"] for m in sample["messages"]] == ["user", "assistant"]
            reply, prompt = sample["messages"][-1]["content"], sample["messages"][0]["content"]
        elif fmt == "sharegpt":
            assert list(sample) == ["conversations"]
            assert [m["from"] for m in sample["conversations"]] == ["human", "gpt"]
            reply, prompt = (
                sample["conversations"][-1]["value"],
                sample["conversations"][0]["value"],
            )
        elif fmt == "alpaca":
            assert set(sample) == {"instruction", "input", "output"} and sample["input"] == ""
            reply, prompt = sample["output"], sample["instruction"]
        else:
            assert list(sample) == ["prompt", "completion"]
            assert [m["role"] for m in sample["prompt"]] == ["user"]
            assert [m["role"] for m in sample["completion"]] == ["assistant"]
            reply, prompt = sample["completion"][0]["content"], sample["prompt"][0]["content"]
        assert reply in traced and prompt.startswith("You are the ")
        # The metadata names the call the sample came from.
        item = results[meta["item"]]
        assert meta["db_id"] == item["db_id"] and meta["dataset"] == "spider"
        assert meta["difficulty"] == item["level"] and meta["split"] == "train"
        call = next(c for c in traces[meta["item"]]["calls"] if c["reply"] == reply)
        assert call["agent"] == meta["agent"] and meta["relabelled"] is False


def test_validation_split_shares_no_database(teacher_run: dict[str, Any], tmp_path: Path) -> None:
    result = export_sft(
        ExportOptions(str(teacher_run["out"]), str(tmp_path / "sft.jsonl"), split_by_db=0.1),
        count_tokens=lambda text: len(text.split()),
    )
    train_dbs = {s.db_id for s in result.train}
    validation_dbs = {s.db_id for s in result.validation}
    assert train_dbs and validation_dbs and not train_dbs & validation_dbs
    assert len(result.validation) >= 0.1 * 58 and len(result.train) + len(result.validation) == 58
    assert len(_lines(tmp_path / "sft.val.jsonl")) == len(result.validation)
    assert len(_lines(tmp_path / "sft.jsonl")) == len(result.train)
    # Tokens from the tokenizer given, per agent, for prompts and replies.
    decomposer = result.stats["per_agent"]["decomposer"]
    assert decomposer["prompt_tokens"]["mean"] > decomposer["reply_tokens"]["mean"] > 0
    assert result.stats["validation_databases"] == len(validation_dbs)


# --- refusals -----------------------------------------------------------------------------------


def test_a_run_over_an_evaluation_set_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dev-run"
    dev = json.loads((SPIDER / "dev.json").read_text())[:3]
    responder = SpiderResponder("macsql", dev)
    with ScriptedOpenAIServer(responder.by_agent()) as server:
        args = spider_eval_args(
            out, "--limit", "3", "--traces", "--model", "openai:scripted",
            "--base-url", server.base_url, "--api-key", "k",
        )  # fmt: skip
        assert main(args) == 0
    capsys.readouterr()
    code, _ = _export(out, tmp_path / "sft.jsonl")
    assert code == 2
    assert "an evaluation set" in capsys.readouterr().err
    assert not (tmp_path / "sft.jsonl").exists()


def test_samples_quoting_or_about_evaluation_data_are_dropped_not_refused(
    teacher_run: dict[str, Any], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text((teacher_run["out"] / "run.json").read_text())
    dev = json.loads((SPIDER / "dev.json").read_text())
    traces = _lines(teacher_run["out"] / "traces.jsonl")
    results = _lines(teacher_run["out"] / "results.jsonl")
    by_index = {t["index"]: t for t in traces}
    # Item 0's Decomposer prompt gets a demonstration taken from Spider dev, as the official
    # Decomposer prompt had; item 2 is moved onto a dev database (a train run over dev
    # databases); item 4's question is a dev question (a dev item pasted into a train file).
    by_index[0]["calls"][0]["messages"][0]["content"] += (
        f"\nExample.\n[Question] {dev[0]['question'].upper()}\n"
    )
    for record in results:
        if record["index"] == 2:
            record["db_id"] = by_index[2]["db_id"] = dev[0]["db_id"]
        if record["index"] == 4:
            record["question"] = by_index[4]["question"] = f"  {dev[5]['question'].lower()} "
    (run / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    code, stats = _export(run, tmp_path / "sft.jsonl", "--format", "prompt-completion")
    assert code == 0 and stats is not None
    dropped = {k: v["count"] for k, v in stats["dropped"].items()}
    assert dropped["eval_question_quoted"] == 1
    assert dropped["eval_database"] == 1 and dropped["eval_question"] == 1
    assert stats["samples"] == 58 - 3
    kept = _lines(tmp_path / "sft.jsonl")
    assert {line["metadata"]["item"] for line in kept}.isdisjoint({0, 2, 4})
    dev_dbs = {r["db_id"] for r in dev}
    assert not any(line["metadata"]["db_id"] in dev_dbs for line in kept)


def test_bad_options_are_clear_errors(
    teacher_run: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _export(teacher_run["out"], tmp_path / "a.jsonl", "--split-by-db", "1.5")[0] == 2
    err = capsys.readouterr().err
    assert "argument --split-by-db: must be at least 0 and less than 1, not 1.5" in err
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert _export(teacher_run["out"], blocked / "sft.jsonl")[0] == 2  # a file, not a folder
    err = capsys.readouterr().err
    assert err.startswith("macsql: error:") and "Traceback" not in err


def test_a_run_without_traces_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _export(tmp_path, tmp_path / "sft.jsonl")
    assert code == 2 and "holds no eval run" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("pipeline", "agents", "dropped"),
    [
        # The reviewer flags 5 gold SQL queries that then stay the answer: false alarms.
        (
            "sqlfix",
            {"decomposer", "reviewer", "query_crafter", "sql_refiner"},
            {"review_contradicted": 5},
        ),
        ("r3", {"writer", "persona", "reviewer"}, {}),
    ],
)
def test_sqlfix_and_r3_runs_export_their_agents(
    tmp_path: Path, pipeline: str, agents: set[str], dropped: dict[str, int]
) -> None:
    responder = SpiderResponder(pipeline)  # plays every agent, answering with the gold SQL
    items = _train()[:10]
    responder.gold = {item["question"]: item["query"] for item in items}
    responder.flagged = {item["question"] for item in items[::2]}  # SQLFixAgent repairs these
    out = tmp_path / pipeline
    with ScriptedOpenAIServer(responder.by_agent()) as server:
        assert main(_eval_args(out, server, "--pipeline", pipeline, limit=10)) == 0
    assert responder.unknown == []
    traced = [c for t in _lines(out / "traces.jsonl") for c in t["calls"] if c.get("agent")]
    assert {c["agent"] for c in traced} == agents
    _, stats = _export(out, tmp_path / "sft.jsonl", "--format", "sharegpt")
    assert stats is not None and stats["pipeline"] == pipeline and stats["items_correct"] == 10
    assert set(stats["per_agent"]) == agents
    assert all(e["samples"] > 0 for e in stats["per_agent"].values())
    assert stats["calls"] == len(traced)
    assert {k: v["count"] for k, v in stats["dropped"].items()} == dropped
    samples = _lines(tmp_path / "sft.jsonl")
    assert len(samples) == stats["samples"]
    replies = {c["reply"] for c in traced}
    assert all(s["conversations"][-1]["from"] == "gpt" for s in samples)
    assert all(s["conversations"][-1]["value"] in replies for s in samples)


def test_leak_guard_matches_whole_questions_never_substrings() -> None:
    """One rule over generated inputs: a prompt line that is an evaluation question, whatever
    its case, punctuation, spacing or label, is a quote; a question that only contains one (a
    longer train question) is not, and neither is a question missing a word."""
    dev = [r["question"] for r in json.loads((SPIDER / "dev.json").read_text())]
    sets = EvaluationSets.load([SPIDER / "dev.json"])
    rng = random.Random(29)
    labels = ["[Question] ", "Question: ", "Q1: ", "- ", "", "    "]
    for question in rng.sample(dev, 200):
        if len(question.split()) < 3:
            continue
        noisy = "".join(c.upper() if rng.random() < 0.3 else c for c in question)
        noisy = noisy.rstrip("?.") + rng.choice(["?", " ?", "", "."])
        line = rng.choice(labels) + noisy
        assert sets.quoted_question([f"schema...\n{line}\nSQL"]) == line.strip(), line
        assert sets.has_question(noisy)
        longer = question.rstrip("?.") + " in total?"
        if normalise_question(longer) not in sets.questions:
            assert sets.quoted_question([f"[Question] {longer}"]) is None, longer
            assert not sets.has_question(longer)
        words = question.split()
        shorter = " ".join(words[:-1])
        if normalise_question(shorter) not in sets.questions:
            assert sets.quoted_question([f"[Question] {shorter}"]) is None
    # The case from the issue: a train question that contains a dev question.
    assert sets.has_question("How many courses are there?")
    assert not sets.has_question("How many courses are there in total?")


def test_formats_of_a_conversation_with_a_system_prompt() -> None:
    """R^3's writer converses and its reviewers have a system prompt: every layout keeps it,
    and the earlier assistant turn is never a training target."""
    messages = [
        {"role": "system", "content": "You review SQL."},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "draft"},
        {"role": "user", "content": "error: no such column"},
        {"role": "assistant", "content": "fixed"},
    ]
    weighted = [*messages[:2], {**messages[2], "weight": 0}, *messages[3:]]
    assert chat(messages) == {"messages": weighted}
    assert openai(messages, {"agent": "writer"}) == {"messages": weighted}
    assert chat(messages, {"agent": "writer"})["metadata"] == {"agent": "writer"}
    assert [t["from"] for t in sharegpt(messages)["conversations"]] == [
        "system", "human", "gpt", "human", "gpt",
    ]  # fmt: skip
    assert alpaca(messages) == {
        "instruction": "error: no such column",
        "input": "",
        "output": "fixed",
        "system": "You review SQL.",
        "history": [["task", "draft"]],
    }
    assert prompt_completion(messages) == {"prompt": messages[:-1], "completion": messages[-1:]}


# --- the recipe: provenance, card, layouts, mixing, repairs -------------------------------------


def test_run_records_what_produced_its_prompts(teacher_run: dict[str, Any]) -> None:
    run = json.loads((teacher_run["out"] / "run.json").read_text())
    [record] = run["provenance"]
    assert record["macsql_version"] == metadata.version("macsql")
    assert record["git_commit"] is None or len(record["git_commit"]) == 40
    assert record["teacher_model"] == "openai:scripted"
    assert record["agent_models"]["decomposer"] == "openai:scripted"
    settings = record["prompt_settings"]
    assert settings["dataset_style"] == "spider" and settings["schema_linking"] is True
    assert "num_value_examples" in settings and "max_try_times" in settings
    assert not {"api_key", "base_url", "model", "model_timeout"} & set(settings)
    assert len(record["prompt_templates_sha256"]) == 64
    assert SECRET not in json.dumps(record)


def test_every_layout_loads_with_its_card_and_dataset_info(
    teacher_run: dict[str, Any], tmp_path: Path
) -> None:
    # The train extra's `datasets`: required under CI, else the test skips.
    if os.environ.get("CI") == "true":
        import datasets
    else:
        datasets = pytest.importorskip("datasets")
    out = tmp_path / "data" / "sft.jsonl"
    code, stats = _export(teacher_run["out"], out, "--format", "all", "--split-by-db", "0.1")
    assert code == 0 and stats is not None
    folder = out.parent
    files = sorted(folder.glob("*.jsonl"))
    assert len(files) == 5 * 2 + 2  # train and validation per layout, openai's metadata files
    for path in files:
        loaded = datasets.load_dataset(
            "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
        )
        split = "validation" if ".val." in path.name else "train"
        assert len(loaded) == stats[split], path.name
    # The card's configs load each layout's two splits by name.
    for fmt in ("chat", "prompt-completion", "openai", "alpaca", "sharegpt"):
        both = datasets.load_dataset(str(folder), fmt, cache_dir=str(tmp_path / "cache"))
        assert {k: len(v) for k, v in both.items()} == {
            "train": stats["train"],
            "validation": stats["validation"],
        }
    card = (folder / "README.md").read_text()
    run = json.loads((teacher_run["out"] / "run.json").read_text())
    commit = run["provenance"][0]["git_commit"] or "unknown"
    assert card.startswith("---\nlicense: cc-by-sa-4.0\n")
    assert f"commit `{commit}`" in card and "`openai:scripted`" in card
    assert '"dataset_style": "spider"' in card and "CC BY-SA 4.0" in card
    assert f"| decomposer | {stats['per_agent']['decomposer']['samples']} |" in card
    assert "| train |" in card and "p95" in card
    info = json.loads((folder / "dataset_info.json").read_text())
    assert set(info) == {
        f"macsql_sft_{f}{v}" for f in ("chat", "openai", "sharegpt", "alpaca") for v in ("", "_val")
    }
    for entry in info.values():
        assert (folder / entry["file_name"]).is_file()
    assert info["macsql_sft_chat"]["tags"]["role_tag"] == "role"
    assert info["macsql_sft_alpaca"]["columns"]["response"] == "output"


def test_one_split_by_database_whatever_the_filters(
    teacher_run: dict[str, Any], tmp_path: Path
) -> None:
    variants = [
        ("decomposer", ["--agents", "decomposer"]),
        ("refiner", ["--agents", "refiner"]),
        ("ratio", ["--agent-ratio", "decomposer=0.5"]),
        ("short", ["--max-tokens", "1500"]),
    ]
    sides: dict[str, tuple[set[str], set[str]]] = {}
    for name, extra in variants:
        out = tmp_path / f"{name}.jsonl"
        code, stats = _export(teacher_run["out"], out, "--split-by-db", "0.3", *extra)
        assert code == 0 and stats is not None
        train = {line["metadata"]["db_id"] for line in _lines(out)}
        validation = {line["metadata"]["db_id"] for line in _lines(tmp_path / f"{name}.val.jsonl")}
        sides[name] = (train, validation)
    all_train = set().union(*(t for t, _ in sides.values()))
    all_validation = set().union(*(v for _, v in sides.values()))
    assert all_validation and not all_train & all_validation  # merged files stay apart


def test_agent_ratio_is_seeded_and_the_same_in_every_export(
    teacher_run: dict[str, Any], tmp_path: Path
) -> None:
    def kept(name: str, *extra: str) -> set[tuple[int, str]]:
        out = tmp_path / f"{name}.jsonl"
        code, stats = _export(teacher_run["out"], out, "--agent-ratio", "decomposer=0.5", *extra)
        assert code == 0 and stats is not None
        lines = [line["metadata"] for line in _lines(out)]
        assert stats["dropped"]["downsampled"]["count"] == 50 - sum(
            m["agent"] == "decomposer" for m in lines
        )
        return {(m["item"], m["agent"]) for m in lines if m["agent"] == "decomposer"}

    first = kept("a")
    assert 15 <= len(first) <= 35  # about half of the 50 Decomposer samples
    assert kept("b", "--agents", "decomposer", "refiner") == first
    assert kept("c", "--seed", "1") != first


def test_max_tokens_drops_and_counts(teacher_run: dict[str, Any], tmp_path: Path) -> None:
    def words(text: str) -> int:
        return len(text.split())

    full = export_sft(
        ExportOptions(str(teacher_run["out"]), str(tmp_path / "all.jsonl")), count_tokens=words
    )
    lengths = sorted(s.tokens for s in full.train)
    limit = lengths[len(lengths) // 2]
    short = export_sft(
        ExportOptions(str(teacher_run["out"]), str(tmp_path / "short.jsonl"), max_tokens=limit),
        count_tokens=words,
    )
    longer = sum(1 for n in lengths if n > limit)
    assert longer > 0 and short.stats["dropped"]["too_long"]["count"] == longer
    assert len(short.train) == len(full.train) - longer
    assert all(s.tokens <= limit for s in short.train)
    # Every message's content counts, the prompt and the reply.
    sample = short.train[0]
    assert sample.tokens == sum(words(m["content"]) for m in sample.messages)


def test_repairs_as_data(teacher_run: dict[str, Any], tmp_path: Path) -> None:
    code, stats = _export(teacher_run["out"], tmp_path / "r.jsonl", "--repairs-as-data")
    assert code == 0 and stats is not None
    assert stats["relabelled"] == len(REPAIRED) and "sql_not_final" not in stats["dropped"]
    lines = _lines(tmp_path / "r.jsonl")
    gold = [item["query"] for item in _train()]
    relabelled = [line for line in lines if line["metadata"]["relabelled"]]
    assert {line["metadata"]["item"] for line in relabelled} == REPAIRED
    for line in relabelled:
        reply = line["messages"][-1]["content"]
        assert line["metadata"]["agent"] == "decomposer"
        assert gold[line["metadata"]["item"]].rstrip(";") in reply and BROKEN not in reply
        assert reply.startswith("Sub question 1: the answer\nSQL\n```sql\n")
    # Off by default: the drafts are dropped as before.
    _, default = _export(teacher_run["out"], tmp_path / "d.jsonl")
    assert default is not None and default["dropped"]["sql_not_final"]["count"] == len(REPAIRED)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--agent-ratio", "selector=2"], "a share in (0, 1]"),
        (["--agent-ratio", "nobody=0.5"], "AGENT=SHARE pairs"),
        (["--max-tokens", "0"], "argument --max-tokens: must be at least 1, not 0"),
        (["--tokenizer", "tiktoken:nonesuch"], "cannot load tokenizer"),
        (["--eval-set", "/nonexistent/dev.json"], "no such evaluation set"),
    ],
)
def test_bad_mix_options_are_clear_errors(
    teacher_run: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    code, _ = _export(teacher_run["out"], tmp_path / "sft.jsonl", *options)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "sft.jsonl").exists()


def test_bird_evaluation_folders_are_found_beside_the_training_folder(tmp_path: Path) -> None:
    """BIRD's release puts train and dev in sibling folders; dev's databases and questions
    are found from the train folder, and a dev folder can be named with --eval-set."""
    root = tmp_path / "bird"
    train, dev, other = root / "train", root / "dev_20240627", root / "notes"
    for folder in (train / "train_databases" / "books", dev / "dev_databases" / "card_games"):
        folder.mkdir(parents=True)
    other.mkdir()
    (other / "dev.json").write_text("[]")  # not BIRD's layout: no tables, no databases
    (train / "train.json").write_text(json.dumps([{"db_id": "books", "question": "a b c"}]))
    question = {"db_id": "formula_1", "question": "Which driver won the most races?"}
    (dev / "dev.json").write_text(json.dumps([question]))
    (dev / "dev_tables.json").write_text(json.dumps([{"db_id": "superhero"}]))
    found = find_evaluation_files("bird", train)
    assert found == [dev / "dev.json", dev / "dev_tables.json", dev / "dev_databases"]
    sets = EvaluationSets.load(found)
    assert sets.databases == {"formula_1", "superhero", "card_games"}
    assert sets.has_question("which driver WON the most races")
    assert EvaluationSets.load(evaluation_files_in(dev)).databases == sets.databases
    assert find_evaluation_files("spider", train) == []  # Spider keeps dev beside train
    # Spider's test release lists every database, train ones too, in test_tables.json and
    # test_database/: only its questions are evaluation data.
    spider = tmp_path / "spider"
    (spider / "test_database" / "farm").mkdir(parents=True)
    (spider / "test_tables.json").write_text(json.dumps([{"db_id": "farm"}]))
    (spider / "test.json").write_text(json.dumps([{"db_id": "wta_2", "question": "x y z"}]))
    assert EvaluationSets.load(find_evaluation_files("spider", spider)).databases == {"wta_2"}
