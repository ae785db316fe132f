"""Evals: one writer per run directory, workers that die with their parent, and an item timeout
that cancels the item's model requests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import langchain_openai  # noqa: F401  (a one-off local import, outside any measured time)
import pytest
from conftest import SPIDER, spider_eval_args
from timing import generous

from macsql.cli.main import main
from macsql.evals.lifetimes import lock_run_directory
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval_sync
from macsql.testing.scripted import ScriptedOpenAIServer, Silent


@pytest.mark.needs_data("spider")
def test_a_second_eval_on_the_same_out_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from macsql.evals.lifetimes import lock_run_directory; "
            "lock = lock_run_directory(Path(sys.argv[1])); print('locked', flush=True); "
            "time.sleep(60)",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        code = main(spider_eval_args(out, "--gold", "--limit", "3"))
        err = capsys.readouterr().err
        assert code == 2
        assert f"another macsql eval (pid {holder.pid}) is writing to {out}" in err
        assert not (out / "results.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    # once the first writer is gone, the directory is free again
    assert main(spider_eval_args(out, "--gold", "--limit", "3")) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 3


@pytest.mark.needs_data("spider")
def test_the_lock_is_released_when_the_run_ends(tmp_path: Path) -> None:
    options = EvalOptions(
        dataset="spider",
        data_dir=str(SPIDER),
        gold=True,
        limit=2,
        out=str(tmp_path),
        progress=False,
    )
    run_eval_sync(options)
    lock_run_directory(tmp_path).close()  # would raise if the run still held it


_KILLED_PARENT_RUN = """
import asyncio, os, sys
from pathlib import Path
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval

LOG = Path(sys.argv[1]) / "calls.log"

class LoggingGraph:  # each item "calls the model": one line per call, with the caller's pid
    async def ainvoke(self, payload, context=None):
        with LOG.open("a") as log:
            log.write(f"{os.getpid()}\\n")
        await asyncio.sleep(0.2)
        return {"sql": "SELECT 1", "status": "ok", "attempts": 1}

options = EvalOptions(dataset="spider", data_dir=sys.argv[2], limit=400, concurrency=2,
                      processes=2, out=sys.argv[1] + "/run", progress=False)
asyncio.run(run_eval(options, graph=LoggingGraph()))
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status  # a zombie has ended; only reaping is left


@pytest.mark.needs_data("spider")
def test_a_worker_dies_with_its_killed_parent(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _KILLED_PARENT_RUN, str(tmp_path), str(SPIDER)],
        stderr=subprocess.DEVNULL,
    )
    log = tmp_path / "calls.log"
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while time.monotonic() < deadline and not workers:
        if log.exists():
            workers = {int(p) for p in log.read_text().split()} - {parent.pid}
        time.sleep(0.1)
    assert workers, "no worker process started"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    time.sleep(1.5)
    assert not any(_alive(pid) for pid in workers), "a worker outlived its parent"
    calls = len(log.read_text().split())
    time.sleep(1.0)
    assert len(log.read_text().split()) == calls  # and nobody sends anything any more


@pytest.mark.needs_data("spider")
def test_an_item_timeout_cancels_the_items_model_requests(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(lambda _prompt: Silent()) as server:
        options = EvalOptions(
            dataset="spider",
            data_dir=str(SPIDER),
            limit=2,
            concurrency=1,
            out=str(tmp_path),
            progress=False,
            item_timeout=1.0,
            model="openai:scripted",
            base_url=server.base_url,
            api_key="k",
            context_overrides={"model_timeout": 60.0, "model_max_retries": 5},
        )
        started = time.monotonic()
        result = run_eval_sync(options)
        elapsed = time.monotonic() - started
        requests = server.requests
        time.sleep(1.0)
        assert server.requests == requests  # nothing more was sent after the run
    errors = [r["error"] for r in result.records.values()]
    assert errors == ["item timed out after 1s"] * 2
    # at most one request per item (an item may time out waiting for the request slot)
    assert 1 <= requests <= 2
    assert elapsed < generous(2 * (1.0 + 0.5))  # the two items, plus the run's start and end
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["index"] for line in lines) == [0, 1]
