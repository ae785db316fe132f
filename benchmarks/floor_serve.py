"""`macsql serve` with one more graph, `floor` (`floor_graph.py`'s `noop_graph`: one node that
answers at once), for `bench_server.py --floor`: a run of it through the server costs only what
the engine does per run.

Run: python benchmarks/floor_serve.py serve [macsql serve's options]
"""

from __future__ import annotations

import sys
from pathlib import Path

from macsql.cli.main import main
from macsql.serving import engine

FLOOR_GRAPH = f"{Path(__file__).resolve().with_name('floor_graph.py')}:noop_graph"


def with_floor(paths: dict[str, str]) -> dict[str, str]:
    return {**paths, "floor": FLOOR_GRAPH}


def serve_with_floor(argv: list[str]) -> int:
    # The engine's config is written from `graph_paths()` when `serve` starts, and every
    # worker reads that file: one more entry there serves one more graph.
    served = engine.graph_paths
    engine.graph_paths = lambda: with_floor(served())
    return main(argv)


if __name__ == "__main__":
    sys.exit(serve_with_floor(sys.argv[1:]))
