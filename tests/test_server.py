"""The pipelines on `macsql serve` (Aegra on PostgreSQL), driven through the LangGraph SDK and
through `macsql eval --server`, with two server processes on one database.

The servers are real subprocesses on loopback, on a database of their own in the test
PostgreSQL (`server_support`). The model is a scripted OpenAI-compatible server in this process;
the servers' graphs reach it through the `base_url` each run's context carries. In order:

1. every pipeline answers through the SDK, and a run that asks for approval pauses, is approved
   (with an edit) and resumes;
2. 200 conversations of 3 turns at once, spread over both servers, one with two worker
   processes (a thread's turns may land on any of the three): every turn answered once, by its
   own thread's history only;
3. one server SIGKILLed in the middle of `eval --server`: every item ends up in results.jsonl
   once, the runs lost with the server were run again on the other, and `--resume` runs only
   what is left;
4. both servers stopped and one started again: every conversation is there, turn by turn;
5. `--auth token`: no request but the health probes passes without the token.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from conftest import SAMPLE_QUESTIONS, spider_eval_args, spider_sample
from server_support import require_engine
from test_pipelines_eval import SpiderResponder

from macsql.cli.main import main
from macsql.core.context import Agent
from macsql.evals.options import EvalOptions
from macsql.evals.results import read_results
from macsql.evals.runner import run_eval
from macsql.graph.registry import pipeline_names
from macsql.serving.client import ServerRuns
from macsql.testing.scripted import ScriptedOpenAIServer
from macsql.testing.servers import ServerProcess, server_database

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(400)]

SAMPLE = spider_sample()
DB = str(SAMPLE / "database" / "concert_singer" / "concert_singer.sqlite")
CONVERSATIONS = 200
TURNS = 3
IN_FLIGHT = 64
"""Runs in flight over both servers in the conversation test (each server keeps a database
connection per run it is joined on: 32 each stays inside the test PostgreSQL's 200)."""
KILL_ITEMS = 14
"""Items of the eval that one server is killed in the middle of; `--resume` then runs the
rest of the 20."""


@dataclass
class Cluster:
    database_url: str
    a: ServerProcess
    b: ServerProcess
    logs: Path
    conversations: list[tuple[str, list[str]]] = field(default_factory=list)
    """(thread, questions) of the conversation test, for the restart test."""
    guarded: ServerProcess | None = None
    """A server with `--auth token`, started beside the restart (startups overlap)."""
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def start_guarded(self) -> ServerProcess:
        if self.guarded is None:
            env = {"MACSQL_SERVER_TOKEN": self.token, "MACSQL_CACHE_DIR": str(self.logs / "cache")}
            self.guarded = ServerProcess(
                self.database_url, self.logs / "guarded.log", args=("--auth", "token"), env=env
            ).start()
        return self.guarded

    @property
    def urls(self) -> list[str]:
        return [self.a.url, self.b.url]


@pytest.fixture(scope="module")
def cluster(pg_admin_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two `macsql serve` commands on one database that does not exist yet, started at the
    same moment (one creates it, and their one-time setup must not race); the second runs two
    worker processes on its port."""
    require_engine()
    logs = tmp_path_factory.mktemp("servers")
    env = {"MACSQL_CACHE_DIR": str(logs / "cache")}
    cluster: Cluster | None = None
    with server_database(pg_admin_url, create=False) as database_url:
        servers = [  # b has two worker processes behind its port
            ServerProcess(database_url, logs / f"{name}.log", args=args, env=env)
            for name, args in (("a", ()), ("b", ("--workers", "2")))
        ]
        try:
            for server in servers:
                server.start()
            for server in servers:
                server.wait_ready()
            cluster = Cluster(database_url, servers[0], servers[1], logs)
            yield cluster
        finally:
            for server in servers:
                server.stop()
            if cluster is not None and cluster.guarded is not None:
                cluster.guarded.stop()


def _client(url: str) -> Any:
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=url, api_key=None)


def _context(model: ScriptedOpenAIServer, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai:scripted",
        "base_url": model.base_url,
        "api_key": "test-key",
        "dataset_style": "spider",
        "model_max_retries": 0,
        **extra,
    }


def _rows(sql: str) -> list[list[Any]]:
    with sqlite3.connect(DB) as conn:
        return [list(row) for row in conn.execute(sql)]


# ----------------------------------------------------------------------------- 1. the SDK


def test_every_pipeline_answers_through_the_sdk(cluster: Cluster) -> None:
    clients = [_client(url) for url in cluster.urls]
    for client in clients:
        served = {a["graph_id"] for a in client.assistants.search(limit=100)}
        assert served == set(pipeline_names())
    question, gold = SAMPLE_QUESTIONS[0]  # flagged by SQLFixAgent's reviewer: its repair runs
    for number, pipeline in enumerate(pipeline_names()):
        client = clients[number % 2]
        responder = SpiderResponder(pipeline)
        with ScriptedOpenAIServer(responder.by_agent()) as model:
            thread = client.threads.create()["thread_id"]
            run = client.runs.create(
                thread, pipeline, input={"question": question, "db": DB}, context=_context(model)
            )
            output = client.runs.join(thread, run["run_id"])
            assert model.requests >= 1
        assert responder.unknown == []
        assert client.runs.get(thread, run["run_id"])["status"] == "success", pipeline
        assert output["status"] == "ok", (pipeline, output.get("error"))
        assert output["rows"] == _rows(gold), pipeline
        assert "schema_text" not in output  # the narrow output schema, not the state


WRONG_SQL = "SELECT count(*) FROM singer WHERE singer_nme IS NOT NULL"
FIXED_SQL = "SELECT count(*) FROM singer"


def test_an_approval_run_pauses_and_resumes_through_the_sdk(cluster: Cluster) -> None:
    client = _client(cluster.b.url)
    replies = {Agent.DECOMPOSER: f"SQL\n```sql\n{WRONG_SQL}\n```\nQuestion Solved."}
    with ScriptedOpenAIServer(replies) as model:
        context = _context(model, approve_sql=True)
        thread = client.threads.create()["thread_id"]
        run = client.runs.create(
            thread, "macsql", input={"question": "How many singers?", "db": DB}, context=context
        )
        paused = client.runs.join(thread, run["run_id"])
        assert "__interrupt__" in paused  # the run ended paused, waiting for the approval
        assert client.threads.get(thread)["status"] == "interrupted"
        state = client.threads.get_state(thread)
        assert state["next"]  # paused before a node
        (pending,) = [i for task in state["tasks"] for i in task["interrupts"]]
        assert pending["value"]["action"] == "approve_sql"
        assert pending["value"]["sql"] == WRONG_SQL

        resumed = client.runs.create(
            thread, "macsql", command={"resume": FIXED_SQL}, context=context
        )
        result = client.runs.join(thread, resumed["run_id"])
        assert model.requests == 1  # the approved (edited) SQL ran: no Refiner was needed
    assert result["status"] == "ok"
    assert result["sql"] == FIXED_SQL
    assert result["rows"] == [[len(_rows("SELECT * FROM singer"))]]
    assert client.threads.get_state(thread)["next"] == []


def test_a_run_that_errors_names_its_error_to_wait_and_join(cluster: Cluster) -> None:
    """A run that ends in error (a context value out of range) answers `runs.wait` and
    `runs.join` with its error, as LangGraph's own server does, never an empty output."""
    client = _client(cluster.a.url)
    payload = {"question": "How many singers?", "db": DB}
    context = {"model": "openai:scripted", "max_rows": 0}
    expected = "max_rows must be at least 1, not 0"
    with pytest.raises(Exception, match=f"^error: {expected}$"):
        client.runs.wait(
            client.threads.create()["thread_id"], "macsql", input=payload, context=context
        )
    thread = client.threads.create()["thread_id"]
    run = client.runs.create(thread, "macsql", input=payload, context=context)
    joined = client.runs.join(thread, run["run_id"])
    assert joined == {"__error__": {"error": "error", "message": expected}}

    from macsql.serving.errors import ServerRunError

    async def through_the_client() -> None:
        runs = ServerRuns(cluster.urls, retries=0)
        try:
            await runs.run("macsql", payload, context)
        finally:
            await runs.aclose()

    with pytest.raises(ServerRunError, match=expected):
        asyncio.run(through_the_client())


def _typed_lines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What `input()` answers, line by line from the list returned (EOF when it is empty)."""
    lines: list[str] = []

    def typed(_prompt: str = "") -> str:
        if not lines:
            raise EOFError
        return lines.pop(0)

    monkeypatch.setattr("builtins.input", typed)
    return lines


def test_chat_keeps_its_thread_on_the_server(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `macsql chat --server` sessions, the second resuming the first's thread: its
    follow-up is rewritten with the first session's turn, which only the server kept."""
    script = Conversations()
    lines = _typed_lines(monkeypatch)
    with ScriptedOpenAIServer(script.by_agent()) as model:
        common = ["--db", DB, "--no-answer", "--model", "openai:scripted"]
        common += ["--base-url", model.base_url, "--api-key", "test-key"]
        lines[:] = [Conversations.question(900, 1), "/sql"]
        assert main(["chat", "--server", cluster.a.url, *common]) == 0
        first = capsys.readouterr().out
        thread = re.search(r"thread (\S+) \(resume", first).group(1)  # type: ignore[union-attr]
        assert "SELECT 'c900-1' AS tag" in first
        lines[:] = [Conversations.question(900, 2)]
        assert main(["chat", "--server", cluster.b.url, "--thread", thread, *common]) == 0
        second = capsys.readouterr().out
        assert model.agents.count(Agent.CONTEXTUALIZER) == 1  # turn 2 saw turn 1
    assert script.problems == []
    assert "c900-2" in second
    assert _client(cluster.a.url).threads.get_state(thread)["values"]["turns"][0]["question"] == (
        Conversations.question(900, 1)
    )


def test_chat_on_the_server_asks_about_each_sql_and_resumes_a_waiting_one(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With `approve_sql`, `chat --server` shows the waiting SQL and takes the next line as the
    decision, as a local chat does; a session left at the prompt leaves the SQL waiting, and
    `--thread` asks about it first."""
    lines = _typed_lines(monkeypatch)
    replies = {Agent.DECOMPOSER: f"SQL\n```sql\n{FIXED_SQL}\n```\nQuestion Solved."}
    edited = "SELECT count(*) FROM concert"
    with ScriptedOpenAIServer(replies) as model:
        common = ["--db", DB, "--no-answer", "--model", "openai:scripted", "--server"]
        common += [cluster.a.url, "--base-url", model.base_url, "--api-key", "test-key"]
        common += ["--set", "approve_sql=true"]
        lines[:] = ["How many singers?", "e", edited]
        assert main(["chat", *common]) == 0
        first = capsys.readouterr().out
        assert f"SQL waiting for approval (attempt 1):\n{FIXED_SQL}" in first
        assert f"SQL: {edited}" in first
        lines[:] = ["How many singers?"]  # then the end of input, at the prompt
        assert main(["chat", *common]) == 0
        left = capsys.readouterr().out
        thread = re.search(r"thread (\S+) \(resume", left).group(1)  # type: ignore[union-attr]
        assert "the SQL still waits" in left
        lines[:] = ["a"]
        assert main(["chat", "--thread", thread, *common]) == 0
        resumed = capsys.readouterr().out
    assert f"SQL waiting for approval (attempt 1):\n{FIXED_SQL}" in resumed
    assert f"SQL: {FIXED_SQL}" in resumed


def test_processes_starting_together_create_the_database_once(pg_admin_url: str) -> None:
    """Three at a time, five times: PostgreSQL refuses all but one CREATE DATABASE (a unique
    violation, not always a 'duplicate database'), and the others must find it made."""
    require_engine()
    from concurrent.futures import ThreadPoolExecutor

    from macsql.serving.engine import ensure_database

    for _ in range(5):
        with server_database(pg_admin_url, create=False) as url:
            with ThreadPoolExecutor(3) as pool:
                list(pool.map(lambda _: ensure_database(url), range(3)))  # raises on a refusal
            with psycopg.connect(url) as conn:
                assert conn.execute("SELECT current_database()").fetchone()


# ----------------------------------------------------------------------------- 2. two servers


TAGGED = re.compile(r"conversation (c\d+), turn (\d+)")


class Conversations:
    """The model for the conversation test. The rewriter checks that it is shown its own
    thread's turns and no other's; the Decomposer answers with a query that names its thread
    and turn, so every answer shows which turn it belongs to."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self._lock = threading.Lock()

    @staticmethod
    def question(conversation: int, turn: int) -> str:
        return f"In conversation c{conversation:03d}, turn {turn}: how many singers are there?"

    @staticmethod
    def tag(conversation: int, turn: int) -> str:
        return f"c{conversation:03d}-{turn}"

    def by_agent(self) -> dict[str, Any]:
        return {Agent.CONTEXTUALIZER: self._rewrite, Agent.DECOMPOSER: self._decompose}

    def _problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)

    def _rewrite(self, prompt: str) -> str:
        newest = prompt.split("Newest message:", 1)[1].splitlines()[0].strip()
        conversation, turn = TAGGED.search(newest).groups()  # type: ignore[union-attr]
        history = prompt.split("Newest message:", 1)[0]
        seen = {c for c, _ in TAGGED.findall(history)}
        turns_shown = sorted(int(t) for _, t in TAGGED.findall(history))
        if seen != {conversation} or turns_shown != list(range(1, int(turn))):
            self._problem(f"{conversation} turn {turn} was shown {sorted(seen)} {turns_shown}")
        return f"Question: {newest}\nBuilds on the previous SQL: no"

    def _decompose(self, prompt: str) -> str:
        asked = prompt.rsplit("[Question]", 1)[1].splitlines()[0]
        conversation, turn = TAGGED.search(asked).groups()  # type: ignore[union-attr]
        sql = f"SELECT '{conversation}-{turn}' AS tag, count(*) FROM singer"
        return f"SQL\n```sql\n{sql}\n```\nQuestion Solved."


async def _converse(urls: list[str], model: ScriptedOpenAIServer) -> list[tuple[str, list[Any]]]:
    runs = ServerRuns(urls, concurrency=IN_FLIGHT, retries=0)
    context = _context(model)

    async def conversation(number: int) -> tuple[str, list[Any]]:
        thread = str(uuid.uuid4())
        outcomes = []
        for turn in range(1, TURNS + 1):
            question = Conversations.question(number, turn)
            outcomes.append(
                await runs.run(
                    "macsql", {"question": question, "db": DB}, context, thread_id=thread
                )
            )
        return thread, outcomes

    try:
        return await asyncio.gather(*(conversation(n) for n in range(CONVERSATIONS)))
    finally:
        await runs.aclose()


def test_two_servers_share_200_conversations_of_3_turns(cluster: Cluster) -> None:
    script = Conversations()
    with ScriptedOpenAIServer(script.by_agent()) as model:
        results = asyncio.run(_converse(cluster.urls, model))
        agents = list(model.agents)
    assert script.problems == []
    # Every turn answered once: one Decomposer call per turn, one rewrite per follow-up.
    assert agents.count(Agent.DECOMPOSER) == CONVERSATIONS * TURNS
    assert agents.count(Agent.CONTEXTUALIZER) == CONVERSATIONS * (TURNS - 1)
    served = {url: 0 for url in cluster.urls}
    for number, (thread, outcomes) in enumerate(results):
        for turn, outcome in enumerate(outcomes, 1):
            assert outcome.thread_id == thread
            assert outcome.output["status"] == "ok", outcome.output.get("error")
            assert outcome.output["rows"] == [[Conversations.tag(number, turn), 6]]
            served[outcome.server] += 1
        questions = [Conversations.question(number, t) for t in range(1, TURNS + 1)]
        cluster.conversations.append((thread, questions))
    total = CONVERSATIONS * TURNS
    assert all(count >= total // 4 for count in served.values()), served
    # What the servers recorded: three runs per thread, each a success, none twice.
    client = _client(cluster.b.url)
    for thread, _ in cluster.conversations[::10]:
        statuses = [run["status"] for run in client.runs.list(thread, limit=10)]
        assert statuses == ["success"] * TURNS, (thread, statuses)


# ----------------------------------------------------------------------------- 3. SIGKILL


def test_sigkill_of_one_server_mid_eval_loses_and_repeats_nothing(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    responder = SpiderResponder("macsql")
    out = tmp_path / "eval"
    killed_after: list[int] = []
    # The model answers the first 3 calls; the others wait for the kill, so that the runs in
    # flight then are mid-call on both servers (the client balances them), not done with their
    # output unread: a run that finished before the kill is found finished, not run again.
    killed = threading.Event()
    calls = iter(range(10**6))
    calls_lock = threading.Lock()

    def held(reply: Any) -> Any:
        def answer(prompt: str) -> str:
            with calls_lock:
                call = next(calls)
            if call >= 3:
                killed.wait(timeout=60)
            return str(reply(prompt))

        return answer

    replies = {agent: held(reply) for agent, reply in responder.by_agent().items()}
    with ScriptedOpenAIServer(replies, delay=0.3) as model:
        options = EvalOptions(
            dataset="spider",
            data_dir=str(SAMPLE),
            limit=KILL_ITEMS,
            out=str(out),
            progress=False,
            model="openai:scripted",
            base_url=model.base_url,
            api_key="test-key",
            ves_iterations=0,
            concurrency=8,
            servers=tuple(cluster.urls),
        )
        finished: list[int] = []

        def on_record(record: dict[str, Any]) -> None:
            finished.append(record["index"])
            if len(finished) == 3 and not killed_after:  # the others are in flight on both
                cluster.a.kill(signal.SIGKILL)
                killed_after.append(len(finished))
                killed.set()

        result = asyncio.run(run_eval(options, on_record=on_record))
        assert killed_after == [3]
        records = _results_lines(out)
        assert sorted(r["index"] for r in records) == list(range(KILL_ITEMS))  # each once
        failed = [(r["index"], r["status"], r["error"]) for r in records if not r["correct"]]
        assert failed == [], f"{failed}\n{cluster.b.log_tail()}"
        lost = [r for r in records if r["server_runs"] > 1]
        assert lost, f"the kill hit no run in flight: {[r['server_runs'] for r in records]}"
        assert result.summary["problem"] is None, result.summary["problem"]

        # `--resume` through the surviving server runs only the items not in results.jsonl.
        before = model.requests
        code = main(
            spider_eval_args(
                out,
                "--resume",
                "--server",
                cluster.b.url,
                "--model",
                "openai:scripted",
                "--base-url",
                model.base_url,
                "--api-key",
                "test-key",
                "--ves-iterations",
                "0",
                data_dir=SAMPLE,
            )
        )
        assert code == 0, capsys.readouterr()
        resumed_requests = model.requests - before
    records = _results_lines(out)
    assert sorted(r["index"] for r in records) == list(range(len(SAMPLE_QUESTIONS)))
    resumed = [r for r in records if r["index"] >= KILL_ITEMS]
    assert [r["server_runs"] for r in resumed] == [1] * len(resumed), resumed
    assert resumed_requests == len(resumed)  # one Decomposer call each, nothing run again
    assert responder.unknown == []


def _results_lines(out: Path) -> list[dict[str, Any]]:
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(read_results(out / "results.jsonl", repair=False)) == len(lines)
    return [json.loads(line) for line in lines]


# ----------------------------------------------------------------------------- 4. restart


def test_a_restarted_server_finds_every_conversation(cluster: Cluster) -> None:
    assert cluster.conversations, "needs the conversation test to have run first"
    cluster.a.stop()
    cluster.b.stop()
    cluster.a.start()
    cluster.start_guarded()  # for the auth test: the two start at once
    cluster.a.wait_ready()
    client = _client(cluster.a.url)
    for thread, questions in cluster.conversations:
        values = client.threads.get_state(thread)["values"]
        # Each finished turn is in the thread (close_turn), the last one too.
        assert [turn["question"] for turn in values["turns"]] == questions, thread
        assert values["asked"] == questions[-1]
        tags = [TAGGED.search(q).groups() for q in questions]  # type: ignore[union-attr]
        assert [turn["sql"] for turn in values["turns"]] == [
            f"SELECT '{c}-{t}' AS tag, count(*) FROM singer" for c, t in tags
        ]


# ----------------------------------------------------------------------------- 5. auth


def test_token_auth_lets_no_request_through_without_the_token(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = cluster.token
    server = cluster.start_guarded()
    try:
        server.wait_ready()  # the probes stay open
        search = f"{server.url}/assistants/search"
        assert httpx.post(search, json={}).status_code == 401
        wrong = {"Authorization": f"Bearer {token[:-1]}x"}
        assert httpx.post(search, json={}, headers=wrong).status_code == 401
        right = {"Authorization": f"Bearer {token}"}
        response = httpx.post(search, json={"limit": 10}, headers=right)
        assert response.status_code == 200, response.text
        assert {a["graph_id"] for a in response.json()} == set(pipeline_names())
        # A client without the token stops before any run, and says what is missing.
        args = spider_eval_args(tmp_path / "eval", "--server", server.url, data_dir=SAMPLE)
        assert main(args) == 2
        assert "answered 401" in capsys.readouterr().err
    finally:
        server.stop()
