"""The graphs served by LangGraph's own dev server, driven with LangGraph's own client.

This starts `langgraph dev` (langgraph-cli[inmem]) on 127.0.0.1 exactly as the README tells a
user to, and talks to it with `langgraph_sdk`, the client Studio is built on. The model is a
scripted OpenAI-compatible HTTP server in this process, so the real langchain-openai client path
runs, and nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import concert_db

from macsql.core.context import Agent
from macsql.testing.scripted import ScriptedOpenAIServer

# A real `langgraph dev` server in a subprocess: seconds to start, so the whole module is slow.
pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
CONCERT_DB = concert_db()
LANGGRAPH = Path(sys.executable).parent / "langgraph"
STARTUP_SECONDS = 60

langgraph_sdk = pytest.importorskip("langgraph_sdk")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_until_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    import httpx

    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{_log_tail(log)}")
        try:
            if httpx.get(f"{url}/ok", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    pytest.fail(f"langgraph dev was not ready after {STARTUP_SECONDS}s:\n{_log_tail(log)}")


@pytest.fixture(scope="module")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("langgraph_dev") / "server.log"


@pytest.fixture(scope="module")
def langgraph_server(server_log: Path) -> Iterator[str]:
    """`langgraph dev --no-browser` on a free loopback port; always stopped afterwards."""
    if not LANGGRAPH.exists():
        pytest.skip("langgraph-cli is not installed (pip install -e '.[dev]')")
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LANGSMITH_API_KEY")
    }
    env.update(
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_DISABLE_FILE_PERSISTENCE="true",
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        MACSQL_CACHE_DIR=str(server_log.parent / "macsql-cache"),
    )
    command = [
        str(LANGGRAPH),
        "dev",
        "--config",
        str(ROOT / "langgraph.json"),
        "--no-browser",
        "--no-reload",  # other edits to the tree must not restart it mid-test
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with server_log.open("wb") as log:
        proc = subprocess.Popen(
            command,
            # Graph paths in langgraph.json are relative to the working directory. The in-memory
            # runtime may leave ./.langgraph_api/ there on shutdown (it is in .gitignore).
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so its workers stop with it
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_ready(url, proc, server_log)
        yield url
    finally:
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server and anything it started (its process group), politely then firmly."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def client(langgraph_server: str) -> Any:
    return langgraph_sdk.get_sync_client(url=langgraph_server)


def _context(server: ScriptedOpenAIServer, **extra: Any) -> dict[str, Any]:
    """What a Studio user types into the context form, as JSON."""
    return {
        "model": "openai:scripted",
        "base_url": server.base_url,
        "api_key": "test-key",
        "dataset_style": "spider",
        "model_max_retries": 0,
        **extra,
    }


WRONG_SQL = "SELECT count(*) FROM singer WHERE singer_nme IS NOT NULL"
FIXED_SQL = "SELECT count(*) FROM singer"


_REPLIES = {  # Decomposer: a query with a wrong column; Refiner: the fix
    Agent.DECOMPOSER: f"SQL\n```sql\n{WRONG_SQL}\n```\nQuestion Solved.",
    Agent.REFINER: f"The column is misspelled.\n```sql\n{FIXED_SQL}\n```",
}


def test_every_configured_graph_is_served_with_a_description(client: Any) -> None:
    configured = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assistants = client.assistants.search(limit=100)
    served = {a["graph_id"]: a for a in assistants}
    assert set(configured) <= set(served), f"not served: {set(configured) - set(served)}"
    assert "macsql" in served
    for graph_id in configured:
        assert (served[graph_id].get("description") or "").strip(), graph_id
        # The server can draw each graph, as Studio does.
        drawing = client.assistants.get_graph(served[graph_id]["assistant_id"])
        node_ids = {node["id"] for node in drawing["nodes"]}
        assert "__start__" in node_ids and "__end__" in node_ids
    macsql_nodes = {
        n["id"] for n in client.assistants.get_graph(served["macsql"]["assistant_id"])["nodes"]
    }
    assert {"load_schema", "selector", "decomposer", "executor", "refiner"} <= macsql_nodes


def test_schemas_show_input_output_and_documented_context(client: Any) -> None:
    (assistant,) = client.assistants.search(graph_id="macsql", limit=1)
    schemas = client.assistants.get_schemas(assistant["assistant_id"])

    context = schemas["context_schema"]
    assert context is not None, "Studio would show no context form"
    props = context["properties"]
    assert props["max_try_times"]["default"] == 3
    assert "maxTryTimes" in props["max_try_times"]["description"]
    assert set(props["dataset_style"]["enum"]) == {"bird", "spider"}
    assert props["dataset_style"]["default"] == "bird"
    assert props["approve_sql"]["default"] is False
    for name in ("model", "decomposer_model", "refiner_model", "model_timeout", "query_timeout"):
        assert props[name].get("description"), f"{name} has no description in Studio"

    # The narrow input and output a host and Studio see (not the internal state).
    input_schema = schemas["input_schema"]
    output_schema = schemas["output_schema"]
    assert input_schema is not None, "the server could not build the input schema"
    assert output_schema is not None, "the server could not build the output schema"
    assert {"question", "db"} <= set(input_schema["required"])
    assert set(input_schema["properties"]) == {
        "question",
        "db",
        "evidence",
        "messages",
        "turns",
        "standalone_question",
        "previous_sql",
    }
    assert set(input_schema["required"]) == {"question", "db"}
    assert {"sql", "status", "rows", "usage", "attempts"} <= set(output_schema["properties"])
    assert "schema_text" not in output_schema["properties"]
    assert "candidate_sql" not in output_schema["properties"]


def test_every_graph_has_studio_schemas(client: Any) -> None:
    """Studio's input form, output view and context form exist for every served pipeline."""
    configured = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    missing = []
    for graph_id in configured:
        (assistant,) = client.assistants.search(graph_id=graph_id, limit=1)
        schemas = client.assistants.get_schemas(assistant["assistant_id"])
        missing += [
            f"{graph_id}: {kind}"
            for kind in ("input_schema", "output_schema", "context_schema")
            if not schemas.get(kind)
        ]
        context = schemas.get("context_schema") or {"properties": {}}
        undocumented = [
            name for name, prop in context["properties"].items() if not prop.get("description")
        ]
        missing += [f"{graph_id}: context field {name} has no description" for name in undocumented]
    assert not missing, "\n".join(missing)


def test_run_streams_updates_and_events_from_inside_the_refine_loop(
    client: Any, server_log: Path
) -> None:
    with ScriptedOpenAIServer(_REPLIES) as model_server:
        parts = list(
            client.runs.stream(
                None,
                "macsql",
                input={"question": "How many singers do we have?", "db": str(CONCERT_DB)},
                context=_context(model_server),
                stream_mode=["updates", "custom"],
            )
        )
        assert model_server.requests == 2  # the Decomposer, then one Refiner call

    errors = [p.data for p in parts if p.event == "error"]
    assert not errors, f"{errors}\n{_log_tail(server_log)}"
    updates = [p.data for p in parts if p.event == "updates"]
    events = [p.data for p in parts if p.event == "custom"]
    nodes = [next(iter(u)) for u in updates]
    assert nodes == [
        "contextualize",
        "load_schema",
        "link_schema",
        "decomposer",
        "executor",
        "refiner",
        "executor",
        "finish",
        "close_turn",  # a server run has a thread, even a stateless one: the turn is recorded
    ]

    executor_done = [e for e in events if e["agent"] == "executor" and e["phase"] == "done"]
    assert [(e["attempt"], e["outcome"]) for e in executor_done] == [
        (1, "unknown_table_or_column"),
        (2, "ok"),
    ]
    assert "singer_nme" in executor_done[0]["error"]
    tried = [e["sql"] for e in events if e["agent"] == "executor" and e["phase"] == "start"]
    assert tried == [WRONG_SQL, FIXED_SQL]

    # The server streams each node's update of the output keys: the Refiner's is its usage,
    # and its repaired SQL comes in its custom event.
    refiner_update = updates[nodes.index("refiner")]["refiner"]
    assert refiner_update["usage"]["refiner"]["calls"] == 1
    assert refiner_update["usage"]["refiner"]["output_tokens"] > 0
    (refined,) = [e for e in events if e["agent"] == "refiner" and e["phase"] == "done"]
    assert refined["sql"] == FIXED_SQL
    assert refined["attempt"] == 1

    final = updates[-3]["executor"]
    assert final["status"] == "ok"
    assert final["sql"] == FIXED_SQL
    assert final["rows"] == [[6]]
    assert final["attempts"] == 2

    # The server's blocking-call detection found nothing to complain about in our sync nodes.
    log = server_log.read_text(errors="replace")
    assert "BlockingError" not in log
    assert "Blocking call" not in log


def test_thread_run_output_and_human_review_through_the_server(client: Any) -> None:
    """A Studio user: a thread, `approve_sql` on, edit the SQL at the interrupt, then resume."""
    with ScriptedOpenAIServer(_REPLIES) as model_server:
        thread = client.threads.create()
        context = _context(model_server, approve_sql=True)
        run_input = {"question": "How many singers do we have?", "db": str(CONCERT_DB)}
        client.runs.wait(thread["thread_id"], "macsql", input=run_input, context=context)

        state = client.threads.get_state(thread["thread_id"])
        assert state["next"] == ["approve"]
        (pending,) = [i for task in state["tasks"] for i in task["interrupts"]]
        assert pending["value"]["action"] == "approve_sql"
        assert pending["value"]["sql"] == WRONG_SQL

        result = client.runs.wait(
            thread["thread_id"],
            "macsql",
            command={"resume": FIXED_SQL},
            context=context,
        )
        assert model_server.requests == 1  # the edited SQL ran; no Refiner was needed

    assert result["status"] == "ok"
    assert result["sql"] == FIXED_SQL
    assert result["rows"] == [[6]]
    # The run's output is the narrow output schema: no internal keys.
    assert "schema_text" not in result
    assert "candidate_sql" not in result
    final_state = client.threads.get_state(thread["thread_id"])
    assert final_state["next"] == []


def test_agent_chat_ui_input_and_an_agent_inbox_answer(client: Any) -> None:
    """Agent Chat UI sends the question as content blocks in `messages`; Agent Inbox answers a
    pause with a list holding one response: its `accept` runs the SQL."""
    with ScriptedOpenAIServer(
        {Agent.DECOMPOSER.value: f"```sql\n{FIXED_SQL}\n```"}
    ) as model_server:
        thread = client.threads.create()
        context = _context(model_server, approve_sql=True)
        content = [{"type": "text", "text": "How many"}, {"type": "text", "text": "singers?"}]
        run_input = {"messages": [{"type": "human", "content": content}], "db": str(CONCERT_DB)}
        paused = client.runs.wait(thread["thread_id"], "macsql", input=run_input, context=context)
        assert paused["status"] == "paused"
        assert paused["standalone_question"] == "How many singers?"
        accept = [{"type": "accept", "args": None}]
        result = client.runs.wait(
            thread["thread_id"], "macsql", command={"resume": accept}, context=context
        )
    assert result["status"] == "ok" and result["rows"] == [[6]]


def test_a_remote_graph_as_a_node_takes_its_settings_from_configurable(
    client: Any, langgraph_server: str
) -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.pregel.remote import RemoteGraph

    from macsql.core.state import MacSqlInput, MacSqlOutput

    class Parent(MacSqlInput, MacSqlOutput):
        pass

    builder: Any = StateGraph(Parent)
    builder.add_node("macsql", RemoteGraph("macsql", url=langgraph_server))
    builder.add_edge(START, "macsql")
    builder.add_edge("macsql", END)
    with ScriptedOpenAIServer(
        {Agent.DECOMPOSER.value: f"```sql\n{FIXED_SQL}\n```"}
    ) as model_server:
        out = builder.compile().invoke(
            {"question": "How many singers?", "db": str(CONCERT_DB)},
            {"configurable": _context(model_server)},
        )
    assert out["status"] == "ok" and out["rows"] == [[6]]


# --------------------------------------------------------------------------- import side effects
# The server (and any host) imports the graph files; that must touch no network and no database.
# A fresh interpreter installs an audit hook (PEP 578) before importing anything of ours, imports
# every module of every macsql package, builds and draws every registered graph and the example
# host graphs, and reports any socket connection, DNS lookup or database connection.

PROBE = textwrap.dedent(
    r"""
    import json, sys, traceback

    events = []
    WATCHED = {"psycopg.connect", "socket.connect", "socket.getaddrinfo", "socket.gethostbyname",
               "sqlite3.connect", "http.client.connect", "urllib.Request"}

    def hook(event, args):
        if event in WATCHED:
            events.append([event, repr(args)[:200], "".join(traceback.format_stack(limit=8))])

    sys.addaudithook(hook)

    try:  # PostgreSQL connects in C (libpq), which no audit event sees: watch the entry point.
        import psycopg

        def _no_connect(*args, **kwargs):
            hook("psycopg.connect", args)
            raise RuntimeError("psycopg.connect called during import")

        psycopg.Connection.connect = classmethod(lambda cls, *a, **k: _no_connect(*a, **k))
        psycopg.connect = _no_connect
    except ImportError:
        pass

    import importlib, importlib.util, pkgutil, tomllib
    from pathlib import Path

    root = Path(sys.argv[1])
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    packages = pyproject["tool"]["setuptools"]["packages"]
    imported = []
    for name in packages:
        package = importlib.import_module(name)
        imported.append(name)
        for info in pkgutil.walk_packages(package.__path__, name + "."):
            importlib.import_module(info.name)
            imported.append(info.name)

    from macsql.graph.registry import get_builder, get_pipeline, pipeline_names

    built = []
    for name in pipeline_names():
        graph = get_pipeline(name)
        graph.get_graph().draw_mermaid()
        get_builder(name).compile().get_graph()
        built.append(name)

    spec = importlib.util.spec_from_file_location(
        "example_assistant_subgraph", root / "examples" / "assistant_subgraph.py"
    )
    example = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.direct_assistant.get_graph(xray=True)
    example.wrapper_assistant.get_graph()

    print(json.dumps({"events": events, "imported": imported, "built": built}))
    """
)


def test_importing_and_building_every_graph_touches_no_network_or_database(
    tmp_path: Path,
) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "MACSQL_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["events"] == [], "\n\n".join(f"{e}: {a}\n{s}" for e, a, s in report["events"])
    # The probe really covered the code: every package, the nodes, the CLI, every pipeline.
    imported = set(report["imported"])
    for module in (
        "macsql.graph.macsql_graph",
        "macsql.core.context",
        "macsql.nodes.common.executor",
        "macsql.nodes.macsql.selector",
        "macsql.llm.models",
        "macsql.testing.scripted",
        "macsql.cli.main",
        "macsql.database.connection",
    ):
        assert module in imported
    from macsql.graph.registry import pipeline_names

    assert report["built"] == pipeline_names()
    assert "macsql" in report["built"]


def test_the_probe_does_see_a_connection() -> None:
    """The audit hook is not blind: a real sqlite3.connect and socket.connect are reported."""
    probe = textwrap.dedent(
        """
        import json, socket, sqlite3, sys
        events = []
        sys.addaudithook(lambda e, a: events.append(e) if e in
                         ("sqlite3.connect", "socket.connect") else None)
        sqlite3.connect(":memory:").close()
        server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
        client = socket.create_connection(server.getsockname()); client.close(); server.close()
        print(json.dumps(sorted(set(events))))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(proc.stdout) == ["socket.connect", "sqlite3.connect"]
