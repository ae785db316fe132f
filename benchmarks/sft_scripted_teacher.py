"""The fine-tuning loop's first two steps with the tests' scripted teacher, for its figures.

A traced `macsql eval` over the first 60 Spider train items (the teacher of
tests/test_sft_export.py, served over local HTTP: some items need the Refiner, some the Selector,
some end wrong), then `macsql export-sft` with a validation split by database. Prints both
commands' own output. No model, no network.

    python benchmarks/sft_scripted_teacher.py [--format chat] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--format",
        default="chat",
        choices=["chat", "sharegpt", "alpaca", "prompt-completion", "openai", "all"],
    )
    parser.add_argument("--keep", default=None, help="write the run and the samples here")
    args = parser.parse_args()

    sys.path.insert(0, str(TESTS))
    from test_sft_export import N, Teacher  # the scripted teacher the tests check

    from macsql.cli.main import main as macsql
    from macsql.testing.scripted import ScriptedOpenAIServer

    root = Path(args.keep or tempfile.mkdtemp(prefix="macsql-sft-"))
    run, out = root / "teacher", root / "sft.jsonl"
    from conftest import SPIDER as spider

    teacher = Teacher()
    with ScriptedOpenAIServer(teacher) as server:
        code = macsql(
            ["eval", "--dataset", "spider", "--data-dir", str(spider), "--split", "train",
             "--limit", str(N), "--traces", "--out", str(run), "--overwrite", "--no-progress",
             "--model", "openai:scripted", "--base-url", server.base_url, "--api-key", "k"]
        )  # fmt: skip
    if code:
        return code
    print()
    return macsql(
        ["export-sft", str(run), "--out", str(out), "--format", args.format, "--split-by-db", "0.1"]
    )


if __name__ == "__main__":
    raise SystemExit(main())
