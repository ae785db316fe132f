"""`macsql eval --processes N`: several processes share the items; each appears exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SPIDER
from test_pipelines_eval import SpiderResponder

from macsql.cli.main import main
from macsql.llm.scripted import ScriptedOpenAIServer


@pytest.mark.parametrize("processes", [2, 3])
def test_items_are_shared_between_processes_exactly_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], processes: int
) -> None:
    responder = SpiderResponder()
    with ScriptedOpenAIServer(responder) as server:
        code = main(
            [
                "eval",
                "--dataset",
                "spider",
                "--data-dir",
                str(SPIDER),
                "--limit",
                "20",
                "--processes",
                str(processes),
                "--concurrency",
                "6",
                "--model",
                "openai:scripted",
                "--base-url",
                server.base_url,
                "--api-key",
                "k",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        requests = server.requests
    assert code == 0, capsys.readouterr()
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["index"] for r in results) == list(range(20))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["ex"] == 100.0
    # Usage from every process is counted: one Decomposer call per item on these small schemas.
    assert summary["tokens_per_agent"]["decomposer"]["calls"] == 20 == requests
    predictions = (tmp_path / "pred.sql").read_text().splitlines()
    assert len(predictions) == 20 and "error" not in " ".join(predictions)
