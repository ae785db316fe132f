"""Benchmark: runs through `macsql serve` (Aegra on PostgreSQL) with 1, 2 and 4 worker processes,
against the same graph in-process.

Run: MACSQL_PG_URL=postgresql://... python benchmarks/bench_server.py [--workers 1 2 4]
     [--delay 0.2] [--runs 240] [--per-worker 4] [--sequential 40]

A scripted OpenAI-compatible model in its own process answers every call after `--delay`
seconds (200 ms) with one SQL query. The MAC-SQL pipeline answers one question on the demo
database (one model call per run, no Selector).

- Throughput: for each worker count N, a fresh `macsql serve --workers N` on a fresh database;
  a warm-up, then `--runs` runs through `macsql.serving.client.ServerRuns` (what
  `eval --server` uses: a background run, then a join), `--per-worker` x N of them in flight,
  like a server's jobs per worker. Prints runs/s and p50/p99 latency (create to output), and
  for one worker also with the most workers' runs in flight, which tells what more workers give
  beyond more runs in flight.
- Overhead: `--sequential` runs one at a time through the server (1 worker) and the same
  compiled graph in this process with the same model: the difference of the p50s is what the
  server adds to a run.

- Engine floor (`--floor`): the same one-at-a-time measurement for a graph of one node that
  answers at once (`floor_graph.py`'s `noop_graph`, served beside macsql's graphs by
  `floor_serve.py`): what the engine adds to a run of any graph, whatever the graph does.

The server, its PostgreSQL, the model and this client share the machine's cores: the load
average before and after each measurement is printed, since other work on the machine moves
the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from macsql.testing.servers import ServerProcess, ServerStartError, server_database

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "How many books are there?"
SQL = "SELECT count(*) FROM book"


# --- the model server (child process) --------------------------------------------------------


def serve_model(delay: float) -> None:
    from macsql.testing.scripted import ScriptedOpenAIServer

    reply = f"SQL\n```sql\n{SQL}\n```\nQuestion Solved."
    with ScriptedOpenAIServer({"decomposer": reply}, delay=delay) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


@contextmanager
def model_server(delay: float) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-model", "--delay", str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc.stdout.readline().strip()  # type: ignore[union-attr]
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=30)


# --- the macsql server -----------------------------------------------------------------------


def group_cpu_seconds(group: int) -> float:
    """CPU seconds (user + system) of the live processes in process group `group` (Linux)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # pgrp, the 5th field of stat
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


FLOOR_LAUNCHER = (sys.executable, str(Path(__file__).resolve().with_name("floor_serve.py")))


@contextmanager
def macsql_server(
    database_url: str, workers: int, log: Path, floor: bool = False
) -> Iterator[tuple[str, int]]:
    args = ("--workers", str(workers))
    server = (
        ServerProcess(database_url, log, args=args, launcher=FLOOR_LAUNCHER)
        if floor
        else ServerProcess(database_url, log, args=args)
    )
    try:
        server.start().wait_ready()
    except ServerStartError as exc:
        server.stop()
        raise SystemExit(f"macsql serve did not start; see {log}\n{exc}") from exc
    try:
        assert server.proc is not None
        yield server.url, server.proc.pid
    finally:
        server.stop()


# --- measurements ----------------------------------------------------------------------------


def _context(base_url: str) -> dict[str, Any]:
    return {"model": "openai:scripted", "base_url": base_url, "api_key": "sk-bench"}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def through_server(
    url: str, db: str, base_url: str, runs: int, in_flight: int, graph_id: str = "macsql"
) -> tuple[float, list[float]]:
    """Wall time and per-run latencies of `runs` runs of `graph_id`, `in_flight` at a time."""
    from macsql.serving.client import ServerRuns

    client = ServerRuns([url], concurrency=in_flight, retries=0)
    context = _context(base_url)
    latencies: list[float] = []
    slots = asyncio.Semaphore(in_flight)  # a run's latency counts from when it may start

    async def one() -> None:
        async with slots:
            started = time.perf_counter()
            outcome = await client.run(graph_id, {"question": QUESTION, "db": db}, context)
            latencies.append(time.perf_counter() - started)
        if outcome.output.get("status") != "ok":
            raise SystemExit(f"a run failed: {outcome.output.get('error')}")

    try:
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(runs)))
        return time.perf_counter() - started, latencies
    finally:
        await client.aclose()


async def in_process(db: str, base_url: str, runs: int) -> tuple[list[float], float]:
    """Latencies of `runs` runs one at a time in this process, and CPU seconds per run."""
    from macsql.core.context import build_context
    from macsql.graph.registry import get_pipeline

    graph = get_pipeline("macsql")
    context = build_context(model="openai:scripted", base_url=base_url, api_key="sk-bench")
    await graph.ainvoke({"question": QUESTION, "db": db}, context=context)  # warm
    latencies = []
    cpu_started = time.process_time()
    for _ in range(runs):
        started = time.perf_counter()
        out = await graph.ainvoke({"question": QUESTION, "db": db}, context=context)
        latencies.append(time.perf_counter() - started)
        if out.get("status") != "ok":
            raise SystemExit(f"an in-process run failed: {out.get('error')}")
    return latencies, (time.process_time() - cpu_started) / runs


async def floor_in_process(runs: int) -> list[float]:
    """Latencies of `runs` runs of the no-op graph one at a time in this process."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from floor_graph import noop_graph

    latencies = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        await noop_graph.ainvoke({"question": QUESTION})
        latencies.append(time.perf_counter() - started)
    return latencies[1:]  # the first one warms


def one_at_a_time(
    url: str,
    group: int,
    database_url: str,
    db: str,
    base_url: str,
    runs: int,
    graph_id: str = "macsql",
) -> tuple[list[float], float, list[float]]:
    """`runs` runs one at a time through the server: their latencies, the server's CPU seconds
    per run, and its database's transactions and inserted rows per run."""
    cpu_before = group_cpu_seconds(group)
    work_before = database_work(database_url)
    _, served = asyncio.run(through_server(url, db, base_url, runs, 1, graph_id=graph_id))
    server_cpu = (group_cpu_seconds(group) - cpu_before) / runs
    after = database_work(database_url)
    return served, server_cpu, [(a - b) / runs for a, b in zip(after, work_before, strict=True)]


def engine_floor(database_url: str, db: str, base_url: str, runs: int, log: Path) -> None:
    """What the engine adds to a run of a graph that does nothing: one worker, one at a time."""
    with (
        server_database(database_url) as fresh_url,
        macsql_server(fresh_url, 1, log, floor=True) as (url, group),
    ):
        asyncio.run(through_server(url, db, base_url, 20, 1, graph_id="floor"))  # warm
        before = _load()
        served, server_cpu, work = one_at_a_time(url, group, fresh_url, db, base_url, runs, "floor")
    local = asyncio.run(floor_in_process(runs))
    p50_served, p50_local = statistics.median(served) * 1000, statistics.median(local) * 1000
    print(
        f"engine floor, one no-op node, one at a time, {runs} runs: through the server p50 "
        f"{p50_served:.1f} ms p99 {_percentile(served, 0.99) * 1000:.1f} ms, in-process p50 "
        f"{p50_local:.2f} ms: the engine adds {p50_served - p50_local:.1f} ms per run "
        f"({before} -> {_load()})"
    )
    print(
        f"engine floor CPU per run: the server process {server_cpu * 1000:.1f} ms; its database "
        f"per run: {work[0]:.1f} transactions, {work[1]:.1f} rows inserted"
    )


def database_work(database_url: str) -> tuple[int, int]:
    """Transactions committed and rows inserted so far in the server's database."""
    import psycopg

    time.sleep(1.0)  # backends report their counts to the statistics within a second
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT xact_commit, tup_inserted FROM pg_stat_database "
            "WHERE datname = current_database()"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=240)
    parser.add_argument("--per-worker", type=int, default=4)
    parser.add_argument("--sequential", type=int, default=40)
    parser.add_argument("--database-url", default=os.environ.get("MACSQL_PG_URL"))
    parser.add_argument(
        "--floor", action="store_true", help="also measure the engine's floor (a no-op graph)"
    )
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        serve_model(args.delay)
        return
    if not args.database_url:
        raise SystemExit("needs PostgreSQL: --database-url or MACSQL_PG_URL")
    os.environ.setdefault("MACSQL_CACHE_DIR", tempfile.mkdtemp(prefix="macsql-bench-cache-"))
    from macsql.database.demo import ensure_demo_database

    db = str(ensure_demo_database())
    logs = Path(tempfile.mkdtemp(prefix="macsql-bench-server-"))
    print(
        f"model delay {args.delay * 1000:.0f} ms, {args.runs} runs per worker count, "
        f"{args.per_worker} in flight per worker; cores {os.cpu_count()}; logs in {logs}"
    )
    rates: dict[int, float] = {}
    with model_server(args.delay) as base_url:
        for workers in args.workers:
            in_flight = args.per_worker * workers
            with (
                server_database(args.database_url) as database_url,
                macsql_server(database_url, workers, logs / f"w{workers}.log") as (url, group),
            ):
                # Warm every worker: its first runs build the schema cache and model client.
                asyncio.run(through_server(url, db, base_url, 8 * in_flight, in_flight))
                before = _load()
                wall, latencies = asyncio.run(
                    through_server(url, db, base_url, args.runs, in_flight)
                )
                rates[workers] = args.runs / wall
                print(
                    f"workers {workers}: {args.runs} runs in {wall:.2f} s = "
                    f"{rates[workers]:.1f} runs/s, latency p50 "
                    f"{_percentile(latencies, 0.5) * 1000:.0f} ms p99 "
                    f"{_percentile(latencies, 0.99) * 1000:.0f} ms, {in_flight} in flight "
                    f"({before} -> {_load()})"
                )
                if workers == 1 and max(args.workers) > 1:
                    # The same worker with as many runs in flight as the most workers get:
                    # whether more workers or only more runs in flight raise the throughput.
                    most = args.per_worker * max(args.workers)
                    wall, latencies = asyncio.run(
                        through_server(url, db, base_url, args.runs, most)
                    )
                    print(
                        f"workers 1 with {most} in flight: {args.runs / wall:.1f} runs/s, "
                        f"latency p50 {_percentile(latencies, 0.5) * 1000:.0f} ms p99 "
                        f"{_percentile(latencies, 0.99) * 1000:.0f} ms ({_load()})"
                    )
                if workers == 1 and args.sequential:
                    before = _load()
                    served, server_cpu, work = one_at_a_time(
                        url, group, database_url, db, base_url, args.sequential
                    )
                    local, local_cpu = asyncio.run(in_process(db, base_url, args.sequential))
                    p50_served = statistics.median(served) * 1000
                    p50_local = statistics.median(local) * 1000
                    print(
                        f"one at a time, {args.sequential} runs: through the server p50 "
                        f"{p50_served:.1f} ms, in-process p50 {p50_local:.1f} ms: the server "
                        f"adds {p50_served - p50_local:.1f} ms per run ({before} -> {_load()})"
                    )
                    print(
                        f"CPU per run: the server process {server_cpu * 1000:.1f} ms, the same "
                        f"graph in-process {local_cpu * 1000:.1f} ms (with its model client); "
                        f"the server's database per run: {work[0]:.1f} transactions (the "
                        f"statistics' own reads among them), {work[1]:.1f} rows inserted"
                    )
        if args.floor:
            engine_floor(args.database_url, db, base_url, args.sequential or 40, logs / "floor.log")
    if 1 in rates:
        for workers, rate in rates.items():
            if workers != 1:
                print(f"throughput {workers} workers / 1 worker: {rate / rates[1]:.2f}x")


if __name__ == "__main__":
    main()
