"""What an eval does around its items (issue 31): nothing heavy on the items' path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import spider_sample

# Runs in a fresh interpreter: this test process may have imported matplotlib already.
_RUN = """
import asyncio, json, sys
from macsql.evals.options import EvalOptions
from macsql.evals.runner import run_eval

seen = []
options = EvalOptions(dataset="spider", data_dir=sys.argv[1], out=sys.argv[2], gold=True,
                      progress=False)
asyncio.run(run_eval(options, on_record=lambda r: seen.append("matplotlib" in sys.modules)))
print(json.dumps({"records": len(seen), "loaded_during_items": any(seen),
                  "loaded_after": "matplotlib" in sys.modules}))
"""


def test_chart_library_loads_after_the_last_item_and_the_chart_is_drawn(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(spider_sample()), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["records"] > 1
    assert not seen["loaded_during_items"], "matplotlib was imported while items ran"
    assert seen["loaded_after"]
    assert (out / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
