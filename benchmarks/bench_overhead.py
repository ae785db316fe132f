"""Benchmark: what macsql spends around the model call, per question.

Run: python benchmarks/bench_overhead.py [--limit 100] [--rounds 3] [--concurrency 1,32]
     [--no-throughput] [--throughput-only]

For the same questions (the first `--limit` Spider dev questions that have a database), in one
process, it prints CPU and wall per question of:

- `graph, in-process model`: the MAC-SQL graph as the eval runs it (its sync `invoke`, each
  question in one of the event loop's threads), with the model an in-process
  `ScriptedChatModel`; `graph.ainvoke, in-process model`: the same through the async API, as
  an async host calls it; and, at concurrency 1, `graph.invoke, in-process model`: the sync
  `invoke` in this thread, as `macsql ask` and most hosts call it;
- `graph, OpenAI client`: the same through the real langchain-openai client, against a local
  scripted OpenAI-compatible server that answers at once;
- `eval`: the whole `macsql eval` command (dataset, pipeline, scoring, results and reports),
  run in this process against that server, at the default number of processes.

Each at every `--concurrency` (model requests in flight), in `--rounds` alternating rounds;
the figures are the median over rounds (and the range). The scripted model answers like the
throughput benchmark's (`bench_eval_concurrency.py`), except that the Decomposer's SQL fails to
run for every other question, so that the Refiner runs for those: about 1.57 model calls per
question on the first 100 questions. The server runs in its own process, so its CPU is not
counted; the eval's worker processes are (they have ended when their figure is taken).

`eval, fresh process` runs the same command as `python -m macsql.cli.main eval`, imports
included, once per round at the first concurrency. At concurrency 1, `floor, in-process model`
and `floor, OpenAI client` run `floor_graph.py`'s graph (the same steps on LangGraph and
langchain-openai with almost no code of its own) through its sync `invoke` with the same
models: a lower bound of the graph cases for any program on those libraries. `--cases` picks
some of them.

Then the eval throughput check: 972 Spider dev questions against a server that answers every
call after 0.2 s, `--concurrency 32`, default settings; the target is a wall time within 1.1x
the ideal (model calls x 0.2 s / 32). And the same questions through `floor_graph.py`'s graph
with the OpenAI client, 32 at a time in threads of one process: the libraries' floor for it.

The machine's load average is printed before and after: on a shared machine, compare CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval_concurrency import (
    SPIDER,
    _responder,
    start_server,
    stop_server,
)
from bench_eval_concurrency import run as throughput_run

THROUGHPUT_TARGET = 1.1
SCRIPTED_IN_PROCESS = "scripted:overhead"


def questions(limit: int) -> list[dict[str, Any]]:
    """The first `limit` Spider dev questions whose database is here (as the eval's `--limit`
    counts them when no database is missing among them)."""
    dev = json.loads((SPIDER / "dev.json").read_text(encoding="utf-8"))
    runnable = [d for d in dev if Path(_db(d)).is_file()]
    return runnable[:limit]


def _cpu() -> float:
    """CPU seconds of this process and its ended children (eval workers; not the server)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@contextlib.contextmanager
def measured(figures: dict[str, float], n: int) -> Iterator[None]:
    forget_text_caches()
    started, cpu = time.perf_counter(), _cpu()
    yield
    figures["wall_ms"] = 1000 * (time.perf_counter() - started) / n
    figures["cpu_ms"] = 1000 * (_cpu() - cpu) / n


# Caches keyed by a query's text: every round runs the same questions, and a real eval's
# predictions are new to them (the executor and the scorer share an entry, as they should).
TEXT_CACHES = (
    ("macsql.database.guard", "_cached_verdict"),
    ("macsql.evals.compare", "normalize_spider_sql"),
)


def forget_text_caches() -> None:
    """Empty `TEXT_CACHES` (those that exist in this version), so that no round starts with
    verdicts or parses of its queries from the previous one."""
    for module, name in TEXT_CACHES:
        cached = getattr(sys.modules.get(module), name, None)
        if cached is not None:
            cached.cache_clear()


def _db(item: dict[str, Any]) -> str:
    return str(SPIDER / "database" / item["db_id"] / f"{item['db_id']}.sqlite")


def _calls(out: dict[str, Any]) -> int:
    return sum(int(u.get("calls", 0)) for u in (out.get("usage") or {}).values())


async def _graph_run(
    items: list[dict[str, Any]], context: Any, concurrency: int, use_ainvoke: bool = False
) -> list[dict[str, Any]]:
    """Every item through the graph as the eval runs it (`invoke` in one of the loop's
    threads; `ainvoke` with `use_ainvoke`), `concurrency` at a time, in an event loop set up as
    the eval sets up its own (the default executor sized by `node_executor`; `asyncio.run`
    shuts it down, so that no thread is left to stop a later eval from forking)."""
    from macsql.evals.scheduler import node_executor
    from macsql.graph.macsql_graph import graph
    from macsql.llm.request_slots import limit_model_requests

    loop = asyncio.get_running_loop()
    executor = node_executor(concurrency)
    loop.set_default_executor(executor)
    pending = list(reversed(items))
    outs: list[dict[str, Any]] = []

    async def worker() -> None:
        while pending:
            item = pending.pop()
            payload = {"question": item["question"], "evidence": "", "db": _db(item)}
            if use_ainvoke:
                outs.append(await graph.ainvoke(payload, context=context))
            else:
                outs.append(await asyncio.to_thread(graph.invoke, payload, context=context))

    with limit_model_requests(concurrency):
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return outs


def _graph_invoke(items: list[dict[str, Any]], context: Any) -> list[dict[str, Any]]:
    """Every item through the graph's sync `invoke`, one after another (as `macsql ask`)."""
    from macsql.graph.macsql_graph import graph

    return [
        graph.invoke({"question": i["question"], "evidence": "", "db": _db(i)}, context=context)
        for i in items
    ]


def floor_figures(items: list[dict[str, Any]], graph: Any) -> dict[str, float]:
    """The floor graph's sync `invoke` on every item, one after another."""
    figures: dict[str, float] = {}
    with measured(figures, len(items)):
        outs = [graph.invoke({"question": i["question"].strip(), "db": _db(i)}) for i in items]
    gold = {i["question"].strip(): i["query"] for i in items}
    figures["calls_per_q"] = sum(1 + o["tries"] for o in outs) / len(items)
    figures["gold_sql_share"] = sum(o["sql"] == gold[o["question"]] for o in outs) / len(items)
    return figures


def graph_figures(
    items: list[dict[str, Any]],
    context: Any,
    concurrency: int,
    sync: bool = False,
    use_ainvoke: bool = False,
) -> dict[str, float]:
    figures: dict[str, float] = {}
    with measured(figures, len(items)):
        if sync:
            outs = _graph_invoke(items, context)
        else:
            outs = asyncio.run(_graph_run(items, context, concurrency, use_ainvoke))
    gold = {i["question"]: i["query"] for i in items}
    figures["calls_per_q"] = sum(_calls(o) for o in outs) / len(items)
    figures["gold_sql_share"] = sum(o.get("sql") in gold.values() for o in outs) / len(items)
    return figures


def eval_argv(
    limit: int, concurrency: int, base_url: str, out: str, processes: int | None = None
) -> list[str]:
    """`macsql eval`'s arguments for the first `limit` Spider dev questions against the server
    at `base_url`; the default number of processes unless `processes` is given."""
    argv = [
        "eval", "--dataset", "spider", "--data-dir", str(SPIDER), "--limit", str(limit),
        "--out", out, "--no-progress", "--concurrency", str(concurrency),
        "--model", "openai:scripted", "--base-url", base_url, "--api-key", "sk-bench",
    ]  # fmt: skip
    return argv + (["--processes", str(processes)] if processes else [])


def _eval_summary(out: str, figures: dict[str, float], limit: int) -> dict[str, float]:
    """`figures` per question that ran (the first `limit` items may hold skipped ones), with
    the run's model calls per question and EX."""
    summary = json.loads((Path(out) / "summary.json").read_text())
    ran = summary["n_scored"]
    per_ran = {k: v * limit / ran for k, v in figures.items()}
    calls = summary["tokens_total"]["calls"] / ran
    return {**per_ran, "calls_per_q": calls, "ex": summary["ex"], "questions": ran}


def eval_figures(
    limit: int, concurrency: int, base_url: str, work: Path, processes: int | None = None
) -> dict[str, float]:
    """`macsql eval` in this process (its report on stdout is dropped)."""
    from macsql.cli.main import main

    out = tempfile.mkdtemp(prefix="eval-", dir=work)
    if processes != 1:
        _until_forkable()
    figures: dict[str, float] = {}
    with measured(figures, limit), contextlib.redirect_stdout(io.StringIO()):
        code = main(eval_argv(limit, concurrency, base_url, out, processes))
    if code != 0:
        raise SystemExit(f"eval exited {code}")
    return _eval_summary(out, figures, limit)


def _until_forkable(most_s: float = 5.0) -> None:
    """Wait for the threads a previous case left (the query watchdog ends after 1 s idle):
    with another thread alive, the eval spawns its worker processes instead of forking them,
    and each spawned child imports everything again (as in a fresh process)."""
    from macsql.evals.scheduler import start_method

    give_up = time.monotonic() + most_s
    while start_method() != "fork" and time.monotonic() < give_up:
        time.sleep(0.05)
    if start_method() != "fork":
        print("warning: the eval will spawn its worker processes", file=sys.stderr)


def fresh_eval_figures(limit: int, concurrency: int, base_url: str, work: Path) -> dict[str, float]:
    out = tempfile.mkdtemp(prefix="eval-fresh-", dir=work)
    argv = [sys.executable, "-m", "macsql.cli.main", *eval_argv(limit, concurrency, base_url, out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"eval exited {done.returncode}:\n{done.stderr}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return _eval_summary(out, {"wall_ms": 1000 * wall / limit, "cpu_ms": 1000 * cpu / limit}, limit)


def warm_up(items: list[dict[str, Any]], contexts: list[Any], base_url: str, work: Path) -> None:
    """One-time costs a long-lived process pays once: imports, schemas, value indexes, model
    clients, LangGraph's first compile of each step; then one small eval."""
    import langchain_openai  # noqa: F401

    from macsql.database.connection import resolve_database
    from macsql.database.schema import load_schema
    from macsql.database.value_index import open_value_index

    for db in sorted({_db(i) for i in items}):
        ref = resolve_database(db)
        open_value_index(ref, load_schema(ref))
    for context in contexts:
        asyncio.run(_graph_run(items[:4], context, 1))
    eval_figures(min(4, len(items)), 1, base_url, work)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def overhead(args: argparse.Namespace) -> None:
    from floor_graph import build_floor_graph, openai_floor_graph

    from macsql.core.context import build_context
    from macsql.llm.models import register_chat_model
    from macsql.testing.scripted import ScriptedChatModel

    items = questions(args.limit)
    levels = [int(c) for c in args.concurrency.split(",")]
    replies = _responder(SPIDER / "dev.json", wrong_half=True)
    register_chat_model(SCRIPTED_IN_PROCESS, ScriptedChatModel(responder=replies))
    floor_in_process = build_floor_graph(
        ScriptedChatModel(responder=replies["decomposer"]),
        ScriptedChatModel(responder=replies["refiner"]),
    )
    server, base_url = start_server(0.0, wrong_half=True)
    floor_client = openai_floor_graph(base_url)
    in_process = build_context(model=SCRIPTED_IN_PROCESS, dataset_style="spider")
    over_http = build_context(
        model="openai:scripted", base_url=base_url, api_key="sk-bench", dataset_style="spider"
    )
    runs: dict[str, list[dict[str, float]]] = {}
    print(f"before: {_load()}", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="macsql-bench-overhead-") as tmp:
            work = Path(tmp)
            warm_up(items, [in_process, over_http], base_url, work)
            for floor_graph in (floor_in_process, floor_client):
                floor_figures(items[:4], floor_graph)
            for r in range(args.rounds):
                for c in levels:
                    cases: list[tuple[str, str, Callable[[], dict[str, float]]]] = [
                        (
                            "graph",
                            "graph, in-process model",
                            partial(graph_figures, items, in_process, c),
                        ),
                        (
                            "client",
                            "graph, OpenAI client",
                            partial(graph_figures, items, over_http, c),
                        ),
                        ("eval", "eval", partial(eval_figures, len(items), c, base_url, work)),
                    ]
                    async_api = partial(graph_figures, items, in_process, c, use_ainvoke=True)
                    cases.insert(1, ("ainvoke", "graph.ainvoke, in-process model", async_api))
                    if c == 1:
                        sync = partial(graph_figures, items, in_process, 1, sync=True)
                        cases.insert(2, ("sync", "graph.invoke, in-process model", sync))
                        floor = partial(floor_figures, items, floor_in_process)
                        cases.insert(3, ("floor", "floor, in-process model", floor))
                        floor_http = partial(floor_figures, items, floor_client)
                        cases.insert(5, ("floorclient", "floor, OpenAI client", floor_http))
                    if c == levels[0]:
                        fresh = partial(fresh_eval_figures, len(items), c, base_url, work)
                        cases.append(("fresh", "eval, fresh process", fresh))
                    for short, name, case in cases:
                        if short in args.cases.split(","):
                            runs.setdefault(f"{name} | {c}", []).append(case())
                print(f"round {r + 1}/{args.rounds} done; {_load()}", flush=True)
    finally:
        stats = stop_server(server)
    print(f"after: {_load()}")
    print(
        f"\n{len(items)} Spider dev questions, {args.rounds} rounds; medians (min-max) per "
        f"question; scripted server CPU {stats.get('cpu_s', 0):.2f} s for "
        f"{stats.get('requests', 0)} requests"
    )
    header = f"{'case':<32}{'concurrency':>12}{'CPU ms':>22}{'wall ms':>22}{'calls/q':>9}{'EX':>7}"
    print(header)
    for key, figures in runs.items():
        name, c = key.split(" | ")
        cpu = [f["cpu_ms"] for f in figures]
        wall = [f["wall_ms"] for f in figures]
        ex = figures[-1].get("ex")
        print(
            f"{name:<32}{c:>12}{_spread(cpu):>22}{_spread(wall):>22}"
            f"{figures[-1]['calls_per_q']:>9.2f}{'' if ex is None else f'{ex:.1f}':>7}"
        )
    sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def throughput() -> None:
    figures = throughput_run(
        argparse.Namespace(
            delay=0.2,
            cold=False,
            pipeline="macsql",
            limit=None,
            concurrency=32,
            processes=os.cpu_count() or 1,
            set=[],
        )
    )
    ratio = figures["ratio_to_ideal"]
    verdict = "within" if ratio <= THROUGHPUT_TARGET else "over"
    print(
        f"\nthroughput: {figures['items']} questions, {figures['model_calls']} calls, concurrency "
        f"32, 0.2 s per call: wall {figures['wall_s']} s vs ideal {figures['ideal_s']} s: "
        f"{ratio}x ({verdict} the {THROUGHPUT_TARGET}x target); CPU {figures['cpu_ms_per_item']} "
        f"ms per question; EX {figures['ex']}, {figures['failed']} failed; {_load()}"
    )
    floor_throughput(int(figures["items"]))


def floor_throughput(limit: int) -> None:
    """The same check for `floor_graph.py`'s graph with the OpenAI client, 32 questions at a
    time in threads of this process, nothing else (no eval, no scoring): the libraries'
    floor for the throughput target."""
    from concurrent.futures import ThreadPoolExecutor

    from floor_graph import openai_floor_graph

    items = questions(limit)
    server, base_url = start_server(0.2)
    graph = openai_floor_graph(base_url)

    def answer(item: dict[str, Any]) -> dict[str, Any]:
        return graph.invoke({"question": item["question"].strip(), "db": _db(item)})

    try:
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(answer, items[:64]))  # warm: connections, clients
            started, cpu = time.perf_counter(), time.process_time()
            outs = list(pool.map(answer, items))
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        stop_server(server)
    calls = sum(1 + o["tries"] for o in outs)
    ideal = calls * 0.2 / 32
    print(
        f"floor throughput: {len(items)} questions, {calls} calls, 32 at a time, 0.2 s per "
        f"call: wall {wall:.2f} s vs ideal {ideal:.2f} s: {wall / ideal:.3f}x; CPU "
        f"{1000 * cpu / len(items):.1f} ms per question; {_load()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", default="1,32", help="comma-separated levels")
    parser.add_argument(
        "--cases",
        default="graph,ainvoke,sync,floor,client,floorclient,eval,fresh",
        help="which to run: graph (in-process model, as the eval runs it), ainvoke (the same "
        "through the async API), sync (the sync invoke in this thread, at concurrency 1 only), "
        "floor (floor_graph.py's graph, in-process model, concurrency 1 only), client (OpenAI "
        "client), floorclient (the floor graph with the OpenAI client, concurrency 1 only), "
        "eval, fresh (the eval in a fresh process, at the first concurrency only)",
    )
    parser.add_argument("--json", default=None, help="also write every run's figures here")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--throughput-only", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("MACSQL_CACHE_DIR", tempfile.mkdtemp(prefix="macsql-bench-cache-"))
    if not args.throughput_only:
        overhead(args)
    if not args.no_throughput:
        throughput()


if __name__ == "__main__":
    main()
