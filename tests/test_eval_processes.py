"""`macsql eval --processes N`: several processes share the items; each appears exactly once."""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import spider_eval_args, spider_sample
from test_pipelines_eval import SpiderResponder

from macsql.cli.main import main
from macsql.database.execution import Outcome, execute_sql
from macsql.evals.datasets import EvalItem
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval
from macsql.evals.scheduler import request_shares, shared_source, start_method
from macsql.testing.scripted import ScriptedOpenAIServer

SAMPLE = spider_sample()  # 20 generated questions in Spider's layout


@pytest.mark.slow
@pytest.mark.parametrize("processes", [2, 3])
def test_items_are_shared_between_processes_exactly_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], processes: int
) -> None:
    dev = json.loads((SAMPLE / "dev.json").read_text())
    responder = SpiderResponder("macsql", dev)
    with ScriptedOpenAIServer(responder.by_agent(), delay=0.05) as server:
        code = main(
            spider_eval_args(
                tmp_path,
                "--limit",
                "20",
                "--processes",
                str(processes),
                "--concurrency",
                "5",
                "--model",
                "openai:scripted",
                "--base-url",
                server.base_url,
                "--api-key",
                "k",
                data_dir=SAMPLE,
            )
        )
        requests, peak = server.requests, server.peak_in_flight
    assert code == 0, capsys.readouterr()
    # The processes split the 5 request slots (3+2, 2+2+1), each working on more items than that.
    assert peak <= 5
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["index"] for r in results) == list(range(20))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["ex"] == 100.0
    # Usage from every process is counted: one Decomposer call per item on these small schemas.
    assert summary["tokens_per_agent"]["decomposer"]["calls"] == 20 == requests
    predictions = (tmp_path / "pred.sql").read_text().splitlines()
    assert len(predictions) == 20 and "error" not in " ".join(predictions)


# --- how the worker processes start and share -------------------------------------------------

_FORKED_RUN = """
import asyncio, json, os, sys
from macsql.database.connection import get_engine, resolve_database
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval

class PidGraph:  # defined in __main__: no fresh process could import it by name
    async def ainvoke(self, payload, context=None):
        await asyncio.sleep(0.05)
        return {"sql": f"SELECT {os.getpid()}", "status": "ok", "attempts": 1}

# A pooled connection opened before the fork, which the children must not reuse.
db = resolve_database(sys.argv[2] + "/database/concert_singer/concert_singer.sqlite")
with get_engine(db).connect() as conn:
    conn.exec_driver_sql("SELECT 1")
options = EvalOptions(dataset="spider", data_dir=sys.argv[2], limit=16, concurrency=4,
                      processes=2, out=sys.argv[1], progress=False)
result = asyncio.run(run_eval(options, graph=PidGraph()))
print(json.dumps({"parent": os.getpid(), "n": len(result.records)}))
"""


def _run_script(script: str, out: Path) -> dict[str, Any]:
    """Run an eval script in a fresh interpreter (args: out dir, a Spider layout); its last line."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(out), str(SAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_forked_children_run_a_graph_object_and_share_the_items(tmp_path: Path) -> None:
    """With no other thread running, children are forked: they start at once and use the very
    graph object the caller passed, which a spawned process could not import by name."""
    out = tmp_path / "run"
    parent = _run_script(_FORKED_RUN, out)["parent"]
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    live = [r for r in results if r["status"] != "skipped"]
    assert sorted(r["index"] for r in results) == list(range(16))
    pids = {int(r["prediction"].split()[1]) for r in live}
    assert parent in pids and len(pids) == 2, pids


_PARENT_LAST_RUN = """
import asyncio, json, os, sys, time
from macsql.evals import runner, scheduler
from macsql.evals.options import EvalOptions

scheduler.RESULTS_POLL_S = 60.0  # a collector left waiting on its poll would hang for a minute
PARENT = os.getpid()

class ParentSlowGraph:
    async def ainvoke(self, payload, context=None):
        await asyncio.sleep(3.0 if os.getpid() == PARENT else 0.1)
        return {"sql": f"SELECT {os.getpid()}", "status": "ok", "attempts": 1}

options = EvalOptions(dataset="spider", data_dir=sys.argv[2], limit=8, concurrency=2,
                      processes=2, out=sys.argv[1], progress=False)
started = time.perf_counter()
result = asyncio.run(runner.run_eval(options, graph=ParentSlowGraph()))
print(json.dumps({"parent": PARENT, "n": len(result.records),
                  "seconds": time.perf_counter() - started}))
"""


@pytest.mark.slow
def test_run_ends_when_the_parents_own_item_is_the_last(tmp_path: Path) -> None:
    """The parent finishes the run's last item while its collector waits on the children's
    queue: the run must end then, not when that wait times out."""
    out = tmp_path / "run"
    report = _run_script(_PARENT_LAST_RUN, out)
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert report["n"] == 8 and sorted(r["index"] for r in results) == list(range(8))
    pids = {int(r["prediction"].split()[1]) for r in results if r["status"] != "skipped"}
    assert report["parent"] in pids  # the slow item was the parent's, so it ended last
    assert report["seconds"] < 30, report


def test_spawn_when_another_thread_runs() -> None:
    """A thread could hold a lock at the fork; the forked case is the subprocess test above."""
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert start_method() == "spawn"
    finally:
        release.set()
        worker.join()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Python 3.12+: fork with threads
def test_a_forked_child_opens_its_own_connections_and_clients(
    scripted: Any,
) -> None:
    """Pooled SQLite connections and HTTP clients are the parent's; a fork must not share them."""
    from macsql.database import connection
    from macsql.llm import models

    ref = connection.resolve_database(str(SAMPLE / "database/concert_singer/concert_singer.sqlite"))
    with connection.get_engine(ref).connect() as conn:
        conn.exec_driver_sql("SELECT 1")
    models._clients[("test",)] = object()  # type: ignore[assignment]
    try:
        pid = os.fork()
        if pid == 0:  # the child: report through the exit code, never return into pytest
            ok = not connection._engines and not models._clients
            result = execute_sql(ref, "SELECT count(*) FROM singer")
            os._exit(0 if ok and result.outcome == Outcome.OK and result.rows else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert connection._engines and ("test",) in models._clients  # the parent keeps its own
        assert execute_sql(ref, "SELECT count(*) FROM singer").rows
    finally:
        models._clients.pop(("test",), None)  # type: ignore[arg-type]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Python 3.12+: fork with threads
def test_a_forked_child_does_not_reuse_the_parents_http_connections() -> None:
    """After the parent has called the model, its HTTP pool holds a live keep-alive connection;
    a forked child must build its own client, or both would talk over one socket."""
    from macsql.llm.calls import call_model
    from macsql.llm.models import get_chat_model
    from macsql.llm.settings import ModelSettings

    def transport_of(model: Any) -> int:  # the OpenAI SDK's httpx client (a private attribute)
        return id(model.root_client._client)

    with ScriptedOpenAIServer(lambda prompt: "SELECT 1") as server:
        settings = ModelSettings("openai:fork-check", base_url=server.base_url, api_key="k")
        assert call_model(settings, "decomposer", "hello").error is None
        parent_transport = transport_of(get_chat_model(settings))
        pid = os.fork()
        if pid == 0:  # the child: report through the exit code, never return into pytest
            try:
                own = transport_of(get_chat_model(settings)) != parent_transport
                works = call_model(settings, "decomposer", "hello").text == "SELECT 1"
                os._exit(0 if own and works else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        # The parent's client is untouched and still works.
        assert transport_of(get_chat_model(settings)) == parent_transport
        assert call_model(settings, "decomposer", "hello").error is None


@pytest.mark.parametrize(
    ("concurrency", "processes", "shares"),
    [(32, 2, [16, 16]), (5, 2, [3, 2]), (5, 3, [2, 2, 1]), (2, 2, [1, 1]), (7, 1, [7])],
)
def test_processes_split_the_request_slots_without_losing_any(
    concurrency: int, processes: int, shares: list[int]
) -> None:
    assert request_shares(concurrency, processes) == shares


def test_processes_take_items_from_one_counter_exactly_once() -> None:
    ctx = multiprocessing.get_context("spawn")
    position = ctx.Value("q", 0)
    items = [EvalItem(index=i, db_id="d", question=f"q{i}", gold_sql="SELECT 1") for i in range(7)]
    first, second = shared_source(items, position), shared_source(items, position)

    async def drain() -> list[int]:
        taken: list[int] = []
        for source in [first, second] * 6:
            item = await source()
            if item is not None:
                taken.append(item.index)
        return taken

    assert asyncio.run(drain()) == list(range(7))
    assert asyncio.run(first()) is None and asyncio.run(second()) is None


def test_the_collector_is_frozen_during_a_run_and_restored_after(tmp_path: Path) -> None:
    seen: list[int] = []

    class CountingGraph:
        async def ainvoke(self, payload: dict[str, Any], context: Any = None) -> dict[str, Any]:
            seen.append(gc.get_freeze_count())
            return {"sql": "SELECT 1", "status": "ok", "attempts": 1}

    before = gc.get_freeze_count()
    options = EvalOptions(
        dataset="spider", data_dir=str(SAMPLE), limit=3, out=str(tmp_path), progress=False
    )
    asyncio.run(run_eval(options, graph=CountingGraph()))
    assert seen and min(seen) > before
    assert gc.get_freeze_count() == before
