"""Runs on one or more macsql servers through the LangGraph SDK: what `macsql eval --server` and
`macsql chat --server` use.

Each run is a background run (`runs.create`), then joined (`runs.join`). At most `concurrency`
runs are in flight; each in-flight slot keeps its own HTTP connection per server, so that a
run's join travels the connection its create did and reaches the worker process that runs it
(Aegra runs a run in the process that accepted it, and only that process can wait on it; a join
that lands on another returns at once, and the client asks again).

A run is lost when the process running it goes away: the connection its join waits on breaks,
or the server cancels it on shutdown. The client then asks any live server (they share one
database) whether the run finished before the loss; if not, it runs it again, on a new thread,
on a live server, up to `retries` times. The run that was lost can no longer finish (its
process is gone), so nothing is counted twice. A server that refuses the connection made no run:
the next one is tried, and that is no retry. When no server answers at all for
`wait_for_server` seconds, the run raises `NoServerAnswers`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from macsql.serving.errors import SERVER_RUNS_KEY, NoServerAnswers, ServerRunError

TOKEN_ENV = "MACSQL_SERVER_TOKEN"
SUCCESS = "success"
FAILED = ("error", "timeout")
INTERRUPT_KEY = "__interrupt__"
LIVE_PATH = "/live"
"""Aegra's liveness probe: no database, no auth."""
JOIN_POLL_MAX_S = 0.5
"""The longest pause between two joins that reached a process other than the run's."""
KEEP_IDLE_S = 5.0
"""How long an idle connection is kept: shorter than `macsql serve` keeps one (65 s), so the
client closes it first and never sends a request on a connection the server is closing."""
DOWN_FOR_S = 1.0
"""After a loss, a server gets no new run until a liveness probe answers, tried this often."""


def context_payload(context: Any) -> dict[str, Any]:
    """A Context as the JSON a server's run takes: the fields that differ from their defaults
    (tuples as lists; the graph's Context turns them back). None gives an empty context."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return dict(context)
    defaults = type(context)()
    payload: dict[str, Any] = {}
    for f in fields(context):
        value = getattr(context, f.name)
        if value != getattr(defaults, f.name):
            payload[f.name] = list(value) if isinstance(value, tuple) else value
    return payload


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _http(url: str, headers: Mapping[str, str], *, connections: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url.rstrip("/"),
        transport=httpx.AsyncHTTPTransport(
            retries=0,
            limits=httpx.Limits(
                max_connections=connections,
                max_keepalive_connections=connections,
                keepalive_expiry=KEEP_IDLE_S,
            ),
        ),
        timeout=httpx.Timeout(connect=5, read=300, write=300, pool=None),
        headers=dict(headers),
    )


def _client(url: str, headers: Mapping[str, str], *, connections: int) -> LangGraphClient:
    # The SDK's own factory would send any LangSmith key found in the environment to our server,
    # and pools connections freely; runs need one connection per slot (see the module's doc).
    return LangGraphClient(_http(url, headers, connections=connections))


@dataclass
class RunOutcome:
    output: dict[str, Any]
    thread_id: str
    run_id: str
    server: str
    attempts: int
    """Runs made for this one: more than 1 when a server was lost under it."""

    @property
    def interrupted(self) -> bool:
        """Paused for a human (approve_sql): resume it on its thread with a `command`."""
        return INTERRUPT_KEY in self.output


class _Lost(Exception):
    """The run's process went away, or the server cancelled the run as it shut down."""


class _Unreachable(Exception):
    """No connection to the server: no run was made there."""


class _Slot:
    """One run in flight at a time, with a connection of its own to each server."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.headers = headers
        self.clients: dict[str, LangGraphClient] = {}

    def client(self, url: str) -> LangGraphClient:
        if url not in self.clients:
            self.clients[url] = _client(url, self.headers, connections=1)
        return self.clients[url]

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()


class ServerRuns:
    """Graph runs on the servers at `urls` (one database behind them all)."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        concurrency: int = 8,
        token: str | None = None,
        retries: int = 3,
        wait_for_server: float = 30.0,
    ) -> None:
        if not urls:
            raise ValueError("no server URL")
        self.urls = [u.rstrip("/") for u in urls]
        self.retries = max(0, retries)
        self.wait_for_server = wait_for_server
        self.headers = auth_headers(token)
        self.in_flight = dict.fromkeys(self.urls, 0)
        self.down_until = dict.fromkeys(self.urls, 0.0)
        self.lost_runs = 0
        self.gave_up: str | None = None
        """Why a run found no server to finish it, once one has (callers then stop)."""
        self._slots: asyncio.Queue[_Slot] = asyncio.Queue()
        self._all_slots = [_Slot(self.headers) for _ in range(max(1, concurrency))]
        for slot in self._all_slots:
            self._slots.put_nowait(slot)
        self._probe_http = {u: _http(u, self.headers, connections=2) for u in self.urls}
        self._probe = {u: LangGraphClient(http) for u, http in self._probe_http.items()}
        self._background: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ servers

    async def _alive(self, url: str) -> bool:
        try:
            response = await self._probe_http[url].get(LIVE_PATH, timeout=2.0)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def _choose(self) -> str:
        """The live server with the fewest runs in flight; waits for one to come back."""
        give_up = time.monotonic() + self.wait_for_server
        while True:
            now = time.monotonic()
            for url in sorted(self.urls, key=lambda u: self.in_flight[u]):
                if self.down_until[url] <= now:
                    return url
            for url in self.urls:
                if await self._alive(url):
                    self.down_until[url] = 0.0
                    return url
            if time.monotonic() >= give_up:
                raise NoServerAnswers(
                    f"no server answered for {self.wait_for_server:g}s: {', '.join(self.urls)}"
                )
            await asyncio.sleep(DOWN_FOR_S)

    def _mark_down(self, url: str) -> None:
        self.down_until[url] = time.monotonic() + DOWN_FOR_S

    async def check(self, graph_id: str) -> None:
        """Some server answers and serves `graph_id`: else a one-line error, before any run."""
        problems = []
        for url in self.urls:
            try:
                assistants = await self._probe[url].assistants.search(graph_id=graph_id, limit=1)
            except httpx.HTTPStatusError as exc:
                status = exc.response.status_code
                hint = (
                    " (a server started with --auth needs --server-token)"
                    if status in (401, 403)
                    else ""
                )
                problems.append(f"{url} answered {status}{hint}")
                continue
            except httpx.HTTPError as exc:
                problems.append(f"{url}: {type(exc).__name__} {exc}".strip())
                continue
            if assistants:
                return
            problems.append(f"{url} does not serve {graph_id!r}")
        raise NoServerAnswers("; ".join(problems))

    # ------------------------------------------------------------------ runs

    async def run(
        self,
        graph_id: str,
        input: Mapping[str, Any] | None = None,
        context: Any = None,
        *,
        thread_id: str | None = None,
        command: Mapping[str, Any] | None = None,
    ) -> RunOutcome:
        """Run `graph_id` and return its output. On a new thread each attempt, unless
        `thread_id` is given (a conversation): a run lost on it is not run again, since its
        thread may hold part of it, and `NoServerAnswers` says so."""
        payload = context_payload(context)
        slot = await self._slots.get()
        try:
            return await self._run(slot, graph_id, input, payload, thread_id, command)
        except NoServerAnswers as exc:
            self.gave_up = self.gave_up or str(exc)
            raise
        finally:
            self._slots.put_nowait(slot)

    async def _run(
        self,
        slot: _Slot,
        graph_id: str,
        input: Mapping[str, Any] | None,
        payload: dict[str, Any],
        thread_id: str | None,
        command: Mapping[str, Any] | None,
    ) -> RunOutcome:
        problems: list[str] = []
        runs = 0
        give_up = time.monotonic() + self.wait_for_server
        while runs <= self.retries:
            url = await self._choose()
            thread = thread_id or str(uuid.uuid4())
            try:
                output, run_id = await self._attempt(
                    slot.client(url), url, graph_id, thread, input, payload, command
                )
            except _Unreachable as unreachable:  # no run was made: another server, same run
                if time.monotonic() > give_up:
                    raise NoServerAnswers(str(unreachable)) from unreachable
                continue
            except _Lost as lost:
                runs += 1
                self.lost_runs += 1
                problems.append(str(lost))
                if thread_id is not None:
                    break
                continue
            return RunOutcome(output, thread, run_id, url, runs + 1)
        raise NoServerAnswers(
            f"the run was lost with its server {len(problems)} time(s): {problems[-1]}"
        )

    async def _attempt(
        self,
        client: LangGraphClient,
        url: str,
        graph_id: str,
        thread: str,
        input: Mapping[str, Any] | None,
        payload: dict[str, Any],
        command: Mapping[str, Any] | None,
    ) -> tuple[dict[str, Any], str]:
        self.in_flight[url] += 1
        run_id: str | None = None
        try:
            request: dict[str, Any] = {"context": payload, "if_not_exists": "create"}
            if command is not None:  # resuming a paused run: a Command, not an input
                request["command"] = dict(command)
            else:
                request["input"] = dict(input or {})
            run = await client.runs.create(thread, graph_id, **request)
            run_id = str(run["run_id"])
            return await self._wait(client, thread, run_id), run_id
        except httpx.TransportError as exc:
            self._mark_down(url)
            if run_id is None and isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                # The create never reached a server: no run was made.
                raise _Unreachable(f"{url}: {type(exc).__name__} {exc}".strip()) from exc
            if run_id is not None:
                finished = await self._finished_elsewhere(url, thread, run_id)
                if finished is not None:
                    return finished, run_id
            raise _Lost(f"{url}: {type(exc).__name__} {exc}".strip()) from exc
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code in (502, 503, 504):  # a proxy whose backend is gone
                self._mark_down(url)
                raise _Lost(f"{url} answered {exc.response.status_code}") from exc
            raise
        except asyncio.CancelledError:
            if run_id is not None:  # the caller gave up (an item's deadline): so does the server
                self._cancel_later(thread, run_id)
            raise
        finally:
            self.in_flight[url] -= 1

    async def _wait(self, client: LangGraphClient, thread: str, run_id: str) -> dict[str, Any]:
        pause = 0.0
        while True:
            output = await client.runs.join(thread, run_id)
            failure = output.get("__error__") if isinstance(output, Mapping) else None
            if isinstance(failure, Mapping):  # a failed run, as the servers answer it
                raise ServerRunError(str(failure.get("message") or failure.get("error")))
            if output:  # only a finished (or paused) run has an output
                return dict(output)
            run = await client.runs.get(thread, run_id)
            status = str(run.get("status"))
            if status == SUCCESS:
                return dict(await client.runs.join(thread, run_id) or {})
            if status in FAILED:
                message = str(run.get("error_message") or run.get("error") or status)
                raise ServerRunError(message)
            if status == "interrupted":  # not by the graph (that has an output): cancelled
                raise _Lost(f"run {run_id} was cancelled by the server")
            # Still pending or running in another process of this server: ask again soon.
            await asyncio.sleep(pause)
            pause = min(JOIN_POLL_MAX_S, max(0.01, pause * 2))

    async def _finished_elsewhere(
        self, lost_url: str, thread: str, run_id: str
    ) -> dict[str, Any] | None:
        """The output of a run whose server went away, if it finished first (any live server
        reads it from the shared database); None when it did not."""
        for url in self.urls:
            if url == lost_url or not await self._alive(url):
                continue
            try:
                run = await self._probe[url].runs.get(thread, run_id)
                if run.get("status") == SUCCESS:
                    return dict(await self._probe[url].runs.join(thread, run_id) or {})
                return None
            except httpx.HTTPError:
                continue
        return None

    async def _thread_state(self, thread_id: str) -> Mapping[str, Any]:
        """The thread's state, read through any live server ({} if none, or no such thread)."""
        for url in self.urls:
            try:
                state = await self._probe[url].threads.get_state(thread_id)
            except httpx.HTTPStatusError as exc:
                if exc.response.status_code == 404:
                    return {}
                continue
            except httpx.HTTPError:
                continue
            return state if isinstance(state, Mapping) else {}
        return {}

    async def thread_interrupts(self, thread_id: str) -> list[Any]:
        """The thread's pending interrupts (a run paused for approval), read through any live
        server ([] if none)."""
        state = await self._thread_state(thread_id)
        found = state.get("interrupts") or [
            i for task in state.get("tasks") or () for i in task.get("interrupts") or ()
        ]
        return list(found)

    async def thread_values(self, thread_id: str) -> dict[str, Any]:
        """The thread's current state values, read through any live server ({} if none)."""
        values = (await self._thread_state(thread_id)).get("values")
        return dict(values) if isinstance(values, Mapping) else {}

    def _cancel_later(self, thread: str, run_id: str) -> None:
        async def cancel() -> None:
            for url in self.urls:
                try:
                    await self._probe[url].runs.cancel(thread, run_id)
                    return
                except httpx.HTTPError:
                    continue

        task = asyncio.get_running_loop().create_task(cancel())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        if self._background:
            await asyncio.wait(self._background, timeout=5)
        for slot in self._all_slots:
            await slot.aclose()
        for client in self._probe.values():
            await client.aclose()


class ServerGraph:
    """A pipeline on servers, with a compiled graph's `ainvoke`: the eval runner sends each item
    through it unchanged (its deadline, its records, its resume)."""

    def __init__(self, runs: ServerRuns, graph_id: str) -> None:
        self.runs = runs
        self.graph_id = graph_id

    async def ainvoke(self, input: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
        outcome = await self.runs.run(self.graph_id, input, context)
        return {**outcome.output, SERVER_RUNS_KEY: outcome.attempts}
