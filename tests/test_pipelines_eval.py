"""Each pipeline end to end through `macsql eval` (and `macsql ask`) on a generated sample in
Spider's layout, with the real langchain-openai client talking to a local scripted
OpenAI-compatible server.

The scripted model plays every agent. Where an agent writes SQL it answers with the gold SQL of
the question it finds in the prompt, so every pipeline must reach 100% EX; where it reviews, it
flags every other question, so SQLFixAgent's repair path runs too. The model-call counts per
agent are checked against the graphs' structure (the README's comparison table).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import spider_eval_args, spider_sample

from macsql.cli.main import main
from macsql.core.context import Agent
from macsql.testing.scripted import ScriptedOpenAIServer

LIMIT = 20

SAMPLE = spider_sample()  # 20 generated questions in Spider's layout: no download needed


def _dev() -> list[dict[str, Any]]:
    return json.loads((SAMPLE / "dev.json").read_text())[:LIMIT]


class SpiderResponder:
    """Plausible replies for every agent of the three pipelines, chosen by the calling agent."""

    def __init__(self, pipeline: str, dev: list[dict[str, Any]] | None = None) -> None:
        dev = _dev() if dev is None else dev
        self.gold = {item["question"]: item["query"] for item in dev}
        # SQLFixAgent's reviewer flags every other question, so the repair path is exercised.
        self.flagged = {item["question"] for item in dev[::2]}
        self.unknown: list[str] = []
        # SQLFixAgent's SQLReviewer and R^3's reviewers share an agent; the pipeline tells which.
        self.sqlfix = "sqlfix" in pipeline

    def question_in(self, prompt: str) -> str:
        """The dev question in the prompt's last [Question] line (a paraphrase contains it)."""
        line = prompt.rsplit("[Question] ", 1)[-1].splitlines()[0]
        matches = [q for q in self.gold if q in line]
        if not matches:
            self.unknown.append(line)
            raise LookupError(f"no dev question in {line!r}")
        return max(matches, key=len)

    def by_agent(self) -> dict[str, Callable[[str], str]]:
        return {
            Agent.DECOMPOSER: self._solved,
            Agent.REFINER: self._solved,
            Agent.WRITER: self._planned,  # write, debug and revise: the gold SQL
            Agent.REVIEWER: self._verdict if self.sqlfix else self._review,
            Agent.QUERY_CRAFTER: self._paraphrases,
            Agent.SQL_REFINER: lambda _p: '{"choice": 1, "explanation": "candidate 1 answers"}',
            Agent.PERSONA: lambda _p: json.dumps(
                {"reviewers": ["SQL engineer", "music analyst", "QA engineer"]}
            ),
            Agent.SELECTOR: lambda _p: "{}",
        }

    def _solved(self, prompt: str) -> str:
        return f"SQL\n```sql\n{self.gold[self.question_in(prompt)]}\n```\nQuestion Solved."

    def _planned(self, prompt: str) -> str:
        return f"Plan: read the schema.\n```sql\n{self.gold[self.question_in(prompt)]}\n```"

    def _verdict(self, prompt: str) -> str:
        verdict = "error" if self.question_in(prompt) in self.flagged else "pass"
        return f'SELECT ... FROM ... explained.\n{{"verdict": "{verdict}", "reason": "checked"}}'

    def _review(self, _prompt: str) -> str:
        return "The query answers the question."

    def _paraphrases(self, prompt: str) -> str:
        q = self.question_in(prompt)
        wordings = [f"Put differently: {q}", f"In other words: {q}", f"Asked again: {q}"]
        return json.dumps({"paraphrases": wordings})


def _eval(
    pipeline: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *options: str,
    delay: float = 0.0,
) -> dict[str, Any]:
    responder = SpiderResponder(pipeline)
    out = tmp_path / pipeline
    with ScriptedOpenAIServer(responder.by_agent(), delay=delay) as server:
        code = main(
            spider_eval_args(
                out,
                "--pipeline",
                pipeline,
                "--limit",
                str(LIMIT),
                "--model",
                "openai:scripted",
                "--base-url",
                server.base_url,
                "--api-key",
                "test-key",
                "--ves-iterations",
                "0",
                *options,
                data_dir=SAMPLE,
            )
        )
        requests, peak = server.requests, server.peak_in_flight
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert responder.unknown == []
    summary = json.loads((out / "summary.json").read_text())
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == LIMIT and summary["n_items"] == LIMIT
    assert summary["ex"] == 100.0, [r for r in results if not r["correct"]]
    assert all(r["status"] == "ok" and r["error"] is None for r in results)
    calls = {agent: int(v["calls"]) for agent, v in summary["tokens_per_agent"].items()}
    assert sum(calls.values()) == requests  # every HTTP request is accounted to an agent
    return {"calls": calls, "results": results, "printed": printed, "peak_in_flight": peak}


@pytest.mark.slow
def test_macsql_eval_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _eval("macsql", tmp_path, capsys)
    assert run["calls"] == {"decomposer": LIMIT}  # gold SQL runs first time: no refine


def test_sqlfix_eval_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _eval("sqlfix", tmp_path, capsys)
    calls, flagged = run["calls"], LIMIT // 2
    assert calls["reviewer"] == LIMIT and calls["query_crafter"] == flagged
    # The SQLTool (the Decomposer) writes each first SQL, then one per paraphrase (3).
    assert calls["decomposer"] == LIMIT + 3 * flagged
    # At least one SQLRefiner attempt per flagged item, at most max_repair_attempts (3).
    assert flagged <= calls["sql_refiner"] <= 3 * flagged


def test_r3_eval_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _eval("r3", tmp_path, capsys)
    # Consensus in round 1 for every item: write + revise, one persona call, 3 reviewers.
    assert run["calls"] == {"writer": 2 * LIMIT, "persona": LIMIT, "reviewer": 3 * LIMIT}
    assert all(r["attempts"] == 1 for r in run["results"])


@pytest.mark.slow
def test_concurrency_caps_the_requests_of_fanned_out_reviewers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each R^3 item asks its 3 reviewers at once, and more than 2 items are in progress; still
    # the endpoint serves --concurrency requests at a time, never more.
    run = _eval("r3", tmp_path, capsys, "--concurrency", "2", delay=0.05)
    assert run["peak_in_flight"] == 2
    assert run["calls"]["reviewer"] == 3 * LIMIT


def test_macsql_then_sqlfix_eval_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _eval("macsql+sqlfix", tmp_path, capsys)
    calls, flagged = run["calls"], LIMIT // 2
    # macsql's Decomposer once per item, then sqlfix reviews its SQL (no second first draft).
    assert calls["decomposer"] == LIMIT + 3 * flagged and calls["reviewer"] == LIMIT


@pytest.mark.parametrize("pipeline", ["sqlfix", "r3", "macsql+sqlfix"])
def test_ask_runs_each_pipeline(
    pipeline: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = SAMPLE / "database" / "concert_singer" / "concert_singer.sqlite"
    with ScriptedOpenAIServer(SpiderResponder(pipeline).by_agent()) as server:
        code = main(
            [
                "ask",
                "How many singers are there?",
                "--db",
                str(db),
                "--pipeline",
                pipeline,
                "--json",
                "--dataset-style",
                "spider",
                "--model",
                "openai:scripted",
                "--base-url",
                server.base_url,
                "--api-key",
                "test-key",
            ]
        )
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0
    assert out["status"] == "ok" and out["sql"] == "SELECT count(*) FROM singer"
    assert out["rows"] == [[6]] and out["usage"]
