"""Profile: where a whole `macsql eval` spends its CPU, by stage and by library.

Run: python benchmarks/profile_eval.py [--limit 100] [--concurrency 1] [--repeat 3] [--top 30]
     [--pstats FILE]
     python benchmarks/profile_eval.py --from-pstats FILE ROOT UNPROFILED_MS QUESTIONS

`macsql eval` runs in this process, after a warm-up (imports, schemas, value indexes, one small
eval: what a long-lived process has paid already, as `bench_overhead.py` measures it), against
the scripted server of `bench_overhead.py` (it answers at once; the Decomposer's SQL fails for
every other question, so the Refiner runs). One process (`--processes 1`), so that every thread
is seen.

The profiler is yappi (`pip install yappi`), on CPU time, in every thread (the event loop, the
executor's node threads, the model-call and SQL worker threads): a sampling profiler (py-spy)
could not tell here which thread held the GIL, and cProfile sees one thread. A deterministic
profiler slows Python calls more than C work, so its total exceeds the unprofiled CPU: the
tables give shares of the profiled CPU, and milliseconds per question as that share of the
CPU an unprofiled eval took right before (an estimate; `bench_overhead.py` gives the measured
totals).

- stages: the inclusive CPU of the functions that make up one question (a graph node, the
  model call's worker, a SQL statement's worker, scoring, results and reports, ...); they can
  nest (a node's time includes its own SQL work when run in its thread);
- components: the CPU spent in each library's or module's own code (C calls included with
  their Python caller); the standard library's modules are grouped apart.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval_concurrency import start_server, stop_server

ROOT = Path(__file__).resolve().parents[1]

LIBRARIES = {
    "langchain_openai": "langchain-openai",
    "openai": "openai",
    "httpx": "httpx (with httpcore, h11)",
    "httpcore": "httpx (with httpcore, h11)",
    "h11": "httpx (with httpcore, h11)",
    "httpx2": "httpx2 (the OpenAI client's URLs, headers)",
    "httpcore2": "httpx2 (the OpenAI client's URLs, headers)",
    "langchain_core": "langchain-core",
    "langsmith": "langsmith",
    "langgraph": "langgraph",
    "pydantic": "pydantic",
    "pydantic_core": "pydantic",
    "sqlglot": "sqlglot",
    "sqlalchemy": "sqlalchemy",
    "numpy": "numpy",
}
STDLIB_GROUPS = {
    "asyncio": "stdlib: asyncio event loop",
    "selectors": "stdlib: asyncio event loop",
    "threading": "stdlib: threads, queues, locks",
    "queue": "stdlib: threads, queues, locks",
    "concurrent": "stdlib: threads, queues, locks",
    "contextvars": "stdlib: threads, queues, locks",
    "socket": "stdlib: sockets, ssl",
    "ssl": "stdlib: sockets, ssl",
    "json": "stdlib: json",
    "sqlite3": "stdlib: sqlite3",
    "copy": "stdlib: copy, dataclasses, typing",
    "dataclasses": "stdlib: copy, dataclasses, typing",
    "typing": "stdlib: copy, dataclasses, typing",
    "uuid": "stdlib: uuid",
}

# (stage, file below the project root or a library's top folder, function name as yappi names
# it: a closure by its own name, a method by its class, which for LangGraph's is the subclass)
STAGES: list[tuple[str, str, str]] = [
    ("node load_schema", "nodes/common/load_schema.py", "load_schema_node"),
    ("node link_schema", "nodes/common/link_schema.py", "link_schema_node"),
    ("node selector", "nodes/macsql/selector.py", "selector_node"),
    ("node decomposer", "nodes/macsql/decomposer.py", "decomposer_node"),
    ("node executor", "nodes/common/executor.py", "executor_node"),
    ("node refiner", "nodes/macsql/refiner.py", "refiner_node"),
    ("  of which: call_model in the node's thread", "llm/calls.py", "call_model"),
    ("  of which: reading the reply (replies.py)", "replies/reader.py", "read_sql"),
    ("  of which: the guard's verdict", "database/relation_inventory.py", "guard_verdict"),
    ("  of which: the guard's parse (sqlglot, any caller)", "database/guard.py", "_statement"),
    ("  of which: value-index lookups", "database/value_index.py", "ValueIndex.lookup"),
    (
        "model call, worker thread (langchain-openai)",
        "llm/calls.py",
        "run",
    ),
    ("SQL statement, worker thread", "database/execution.py", "run"),
    ("routers (graph/)", "graph/routing.py", "route"),
    (
        "graph.invoke (one of the event loop's threads)",
        "langgraph/pregel/main.py",
        "CompiledStateGraph.invoke",
    ),
    (
        "graph.ainvoke (the event loop's thread)",
        "langgraph/pregel/main.py",
        "CompiledStateGraph.ainvoke",
    ),
    (
        "  of which: routers (LangGraph's fresh read and ours)",
        "langgraph/graph/_branch.py",
        "BranchSpec._route",
    ),
    ("scoring", "evals/scoring.py", "Scorer.score"),
    ("results.jsonl writes", "evals/results.py", "ResultsWriter.write"),
    ("progress", "evals/progress.py", "Progress.advance"),
    ("loading the dataset", "evals/datasets.py", "load_dataset"),
    ("resolving the pipeline", "graph/registry.py", "resolve_pipeline"),
    ("summary", "evals/report.py", "build_summary"),
    ("predictions file", "evals/results.py", "write_predictions"),
    ("reports (summary.md, chart)", "evals/report.py", "write_reports"),
    ("  of which: the chart", "evals/report.py", "render_chart"),
    ("the command line (parser, context fields)", "cli/common.py", "parse_context_fields"),
]


def _where(path: str) -> tuple[str, str]:
    """(top-level package or stdlib module, path below it) of a function's file."""
    parts = Path(path).parts
    if "site-packages" in parts:
        rest = parts[parts.index("site-packages") + 1 :]
        return rest[0].removesuffix(".py"), "/".join(rest[1:])
    if path.startswith(str(ROOT)):
        # The layer folders are reached through the links in macsql/: name them by the folder.
        return "macsql", "/".join(Path(os.path.realpath(path)).relative_to(ROOT).parts)
    for i, part in enumerate(parts):
        if re.fullmatch(r"python3\.\d+", part) and i + 1 < len(parts):
            rest = parts[i + 1 :]
            return "stdlib:" + rest[0].removesuffix(".py"), "/".join(rest[1:])
    return "", path


def component(path: str) -> str:
    top, rest = _where(path)
    if top == "macsql":
        return "macsql " + rest.removesuffix(".py")
    if top in LIBRARIES:
        return LIBRARIES[top]
    if top.startswith("stdlib:"):
        return STDLIB_GROUPS.get(top[7:], "stdlib: other")
    return top or "other"


def _file_key(path: str) -> str:
    top, rest = _where(path)
    return rest if top == "macsql" else f"{top}/{rest}"


def breakdown(stats: Any) -> tuple[float, dict[str, float], collections.Counter[str], int]:
    """(total CPU s, CPU s per stage, CPU s per component, Python calls) from yappi stats."""
    total, calls = 0.0, 0
    by_component: collections.Counter[str] = collections.Counter()
    by_stage: dict[str, float] = {name: 0.0 for name, _, _ in STAGES}
    wanted = {(file, func): name for name, file, func in STAGES}
    for stat in stats:
        total += stat.tsub
        calls += stat.ncall
        by_component[component(stat.module)] += stat.tsub
        name = wanted.get((_file_key(stat.module), stat.name))
        if name is not None:
            by_stage[name] += stat.ttot
    return total, by_stage, by_component, calls


@dataclass
class _SavedStat:
    """A function's figures as read back from a saved profile (pstats layout)."""

    module: str
    name: str
    ncall: int
    tsub: float
    ttot: float


def saved_stats(path: str, root: str) -> list[_SavedStat]:
    """The stats of a profile saved with `--pstats`, with the project's files under `root`
    (the tree it was taken in) mapped to this one, so that another version's profile reads
    the same way."""
    import pstats

    here = str(ROOT)
    return [
        _SavedStat(file.replace(root.rstrip("/"), here, 1), name, calls, tsub, ttot)
        for (file, _line, name), (_cc, calls, tsub, ttot, _callers) in pstats.Stats(
            path
        ).stats.items()  # type: ignore[attr-defined]
    ]


def report(stats: Any, unprofiled_ms: float, questions_run: int, top: int) -> None:
    total, by_stage, by_component, calls = breakdown(stats)
    scale = unprofiled_ms / (1000 * total / questions_run)
    print(
        f"unprofiled eval: {unprofiled_ms:.2f} ms of CPU per question; profiled: "
        f"{1000 * total / questions_run:.2f} ms (x{1 / scale:.2f}); "
        f"{calls / questions_run:,.0f} Python calls per question"
    )

    def row(name: str, seconds: float) -> str:
        share = seconds / total
        return f"{name:<52}{100 * share:>7.1f}%{share * unprofiled_ms:>9.2f}"

    print(f"\n{'stage (inclusive, may nest)':<52}{'share':>8}{'ms/q':>9}")
    for name, _, _ in STAGES:
        print(row(name, by_stage[name]))
    print(f"\n{'component (own code)':<52}{'share':>8}{'ms/q':>9}")
    for name, seconds in by_component.most_common(top):
        print(row(name, seconds))
    rest = sum(s for _, s in by_component.most_common()[top:])
    if rest:
        print(row("(the rest)", rest))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="profiled evals, added up")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--pstats", default=None, help="also save the profile (pstats format)")
    parser.add_argument(
        "--from-pstats",
        nargs=4,
        metavar=("FILE", "ROOT", "UNPROFILED_MS", "QUESTIONS"),
        help="print the tables of a saved profile instead: taken in the tree ROOT, with the "
        "unprofiled CPU per question and the questions it covered that its run printed",
    )
    args = parser.parse_args()
    if args.from_pstats:
        file, root, unprofiled_ms, questions_run = args.from_pstats
        report(saved_stats(file, root), float(unprofiled_ms), int(questions_run), args.top)
        return
    os.environ.setdefault("MACSQL_CACHE_DIR", tempfile.mkdtemp(prefix="macsql-profile-cache-"))
    import yappi
    from bench_overhead import eval_figures, questions, warm_up

    server, base_url = start_server(0.0, wrong_half=True)
    try:
        with tempfile.TemporaryDirectory(prefix="macsql-profile-") as tmp:
            work = Path(tmp)
            warm_up(questions(args.limit), [], base_url, work)
            plain = eval_figures(args.limit, args.concurrency, base_url, work, processes=1)
            yappi.set_clock_type("cpu")
            for _ in range(args.repeat):
                yappi.start(builtins=False, profile_threads=True)
                eval_figures(args.limit, args.concurrency, base_url, work, processes=1)
                yappi.stop()
    finally:
        stop_server(server)
    stats = yappi.get_func_stats()
    if args.pstats:
        stats.save(args.pstats, type="pstat")
    questions_run = int(plain["questions"]) * args.repeat
    print(
        f"{int(plain['questions'])} questions x {args.repeat} evals in one warm process, "
        f"concurrency {args.concurrency}, --processes 1; load average {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} cores; {questions_run} questions profiled"
    )
    report(stats, plain["cpu_ms"], questions_run, args.top)


if __name__ == "__main__":
    main()
