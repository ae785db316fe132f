"""Scripted models for tests, demos and benchmarks with no network.

- `ScriptedChatModel`: an in-process langchain chat model that answers from a script and records
  every prompt it was sent.
- `ScriptedOpenAIServer`: a small OpenAI-compatible HTTP server on 127.0.0.1
  (`/v1/chat/completions`, streaming and not), so the real `langchain-openai` client path
  runs end to end.

Both take a *responder*: a list of replies used in order, or a function from the prompt text to
a reply. A reply is the answer's text; a `dict` (an answer in a schema's fields, sent as tool-call
arguments or `response_format` content to a structured request, and as JSON text otherwise); a
`ScriptedReply` (text with a reasoning model's `reasoning_content`, a `finish_reason` such as
`"length"`, or tool calls made whatever the request offered); an `int` (for the server), sent
as that HTTP error status; or an exception.

The server speaks the parts of the API that real models' replies exercise: tool calls and
`response_format` (or, with `reject_structured=True`, the HTTP 400 of servers that support
neither), `reasoning_content` beside the answer, and `finish_reason`, streaming and not.

A responder may also be a mapping from an agent's name (`Agent` values: "decomposer",
"refiner", ...) to one of those or to a fixed reply. A mapping answers each call by the agent
that made it, which `call_model` names in the run's metadata (in-process) and in the
`X-Macsql-Agent` header (over HTTP), so a test's script does not depend on the wording of any
prompt.

The server also injects faults, to test that a call is bounded whatever the server does: a
`Trickle` reply sends its answer one byte at a time, slowly; a `Silent` reply accepts the request
and never answers.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from macsql.llm.calls import AGENT_HEADER, AGENT_METADATA_KEY


@dataclass(frozen=True)
class Trickle:
    """A fault for the server: a 200 answer whose body comes one byte every `interval` s."""

    interval: float = 2.0
    text: str = "```sql\nSELECT 1\n```"


@dataclass(frozen=True)
class Silent:
    """A fault for the server: the request is accepted and no byte comes back for `seconds`."""

    seconds: float = 3600.0


@dataclass(frozen=True)
class ScriptedReply:
    """A reply with more than text: a reasoning model's thinking, or how the reply ended."""

    content: str | dict[str, Any] = ""
    reasoning: str | None = None
    """Sent as `reasoning_content` beside the answer (vLLM's reasoning parsers, DeepSeek)."""
    finish_reason: str = "stop"
    """'length' plays a reply cut off at the token limit."""
    tool_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    """(name, arguments) of tool calls the model makes whatever the request offered (a model
    that answers by calling a tool nobody offered it)."""


Reply = str | int | BaseException | dict[str, Any] | ScriptedReply | Trickle | Silent
Responder = Callable[[str], Reply]
Script = Responder | Sequence[Reply]
AgentScripts = Mapping[str, Script | Reply]
"""Per agent: a function, replies in order, or one reply for every call."""


def _parts(reply: str | dict[str, Any] | ScriptedReply) -> ScriptedReply:
    return reply if isinstance(reply, ScriptedReply) else ScriptedReply(reply)


def _as_text(content: str | dict[str, Any]) -> str:
    return content if isinstance(content, str) else json.dumps(content)


def prompt_text(messages: Sequence[BaseMessage] | Sequence[dict[str, Any]]) -> str:
    """All message contents joined, the way responders see a prompt."""
    parts = []
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else m.content
        if isinstance(content, list):
            content = "".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content)
        parts.append(str(content or ""))
    return "\n\n".join(parts)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _Script:
    """A thread-safe source of replies: a sequence consumed in order, a function, or one of
    those per agent."""

    def __init__(self, responder: Script | AgentScripts) -> None:
        self._by_agent: dict[str, _Script] | None = None
        self._fn: Responder | None = None
        self._queue: list[Reply] = []
        if isinstance(responder, Mapping):
            self._by_agent = {str(agent): _Script(_as_script(r)) for agent, r in responder.items()}
        elif callable(responder):
            self._fn = responder
        else:
            self._queue = list(responder)
        self._lock = threading.Lock()
        self.prompts: list[str] = []
        self.agents: list[str | None] = []

    def next(self, prompt: str, agent: str | None = None) -> Reply:
        with self._lock:
            self.prompts.append(prompt)
            self.agents.append(agent)
            if self._by_agent is not None:
                script = self._by_agent.get(agent or "")
                if script is None:
                    raise LookupError(
                        f"scripted model has no script for agent {agent!r} "
                        f"(it has {sorted(self._by_agent)})"
                    )
                return script.next(prompt, agent)
            if self._fn is not None:
                return self._fn(prompt)
            if not self._queue:
                raise RuntimeError(f"scripted model has no reply left for call {len(self.prompts)}")
            return self._queue.pop(0)


def _as_script(responder: Script | Reply) -> Script:
    """A fixed reply (text, HTTP status or exception) answers every call; scripts stay."""
    if isinstance(responder, str | int | BaseException | dict | ScriptedReply | Trickle | Silent):
        fixed = responder
        return lambda _prompt: fixed
    return responder


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from a script and records the prompts it received."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    responder: Any
    _script: _Script = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._script = _Script(self.responder)

    @property
    def prompts(self) -> list[str]:
        return self._script.prompts

    @property
    def agents(self) -> list[str | None]:
        """The agent of each call in `prompts` (None for a call made outside `call_model`)."""
        return self._script.agents

    @property
    def _llm_type(self) -> str:
        return "macsql-scripted"

    def _reply(
        self, messages: list[BaseMessage], run_manager: CallbackManagerForLLMRun | None
    ) -> tuple[str, UsageMetadata, ScriptedReply]:
        text = prompt_text(messages)
        metadata = run_manager.metadata if run_manager else {}
        reply = self._script.next(text, metadata.get(AGENT_METADATA_KEY))
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, int):
            raise RuntimeError(f"scripted HTTP error {reply}")
        if isinstance(reply, Trickle | Silent):
            raise TypeError(f"{type(reply).__name__} is a fault for ScriptedOpenAIServer only")
        parts = _parts(reply)
        answer = _as_text(parts.content)
        prompt_tokens, reply_tokens = _estimate_tokens(text), _estimate_tokens(answer)
        usage = UsageMetadata(
            input_tokens=prompt_tokens,
            output_tokens=reply_tokens,
            total_tokens=prompt_tokens + reply_tokens,
        )
        return answer, usage, parts

    @staticmethod
    def _extras(parts: ScriptedReply) -> dict[str, Any]:
        reasoning = {"reasoning_content": parts.reasoning} if parts.reasoning else {}
        calls = [
            {"name": name, "args": arguments, "id": f"call_{i}", "type": "tool_call"}
            for i, (name, arguments) in enumerate(parts.tool_calls)
        ]
        return {
            "additional_kwargs": reasoning,
            "response_metadata": {"finish_reason": parts.finish_reason},
            **({"tool_calls": calls} if calls else {}),
        }

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply, usage, parts = self._reply(messages, run_manager)
        message = AIMessage(content=reply, usage_metadata=usage, **self._extras(parts))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply, usage, parts = self._reply(messages, run_manager)
        pieces = [reply[i : i + 16] for i in range(0, len(reply), 16)] or [""]
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            extras = self._extras(parts) if last else {}
            calls = extras.pop("tool_calls", [])
            chunk = AIMessageChunk(
                content=piece,
                usage_metadata=usage if last else None,
                tool_call_chunks=[
                    {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": n}
                    for n, c in enumerate(calls)
                ],
                **extras,
            )
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)


class _QuietHTTPServer(ThreadingHTTPServer):
    """Drops a client that hung up (a test of client timeouts does that on purpose): otherwise the
    late reply's BrokenPipeError traceback lands on whichever test owns stderr by then."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _structured_request(body: dict[str, Any]) -> str:
    """'tool calling' or 'response_format' when the request asks for structured output."""
    if body.get("tools"):
        return "tool calling"
    if (body.get("response_format") or {}).get("type") in ("json_schema", "json_object"):
        return "response_format"
    return ""


def _message(parts: ScriptedReply, body: dict[str, Any], structured: str) -> dict[str, Any]:
    """The assistant message for a reply: a dict answers a tool call as its arguments."""
    message: dict[str, Any] = {"role": "assistant", "content": _as_text(parts.content)}
    if structured == "tool calling" and isinstance(parts.content, dict):
        tool = body["tools"][0]["function"]["name"]
        message["content"] = None
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(parts.content)},
            }
        ]
    if parts.tool_calls:
        message["content"] = message["content"] or None
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for name, arguments in parts.tool_calls
        ]
    if parts.reasoning:
        message["reasoning_content"] = parts.reasoning
    return message


class ScriptedOpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

    Use as a context manager; `base_url` is what a client needs. `delay` seconds pass before
    each answer. `reject_structured` plays a server without tool calling or JSON schema.
    `requests` counts the chat-completion requests served; `peak_in_flight` is
    the most that were being served at once.
    """

    def __init__(
        self,
        responder: Script | AgentScripts,
        *,
        delay: float = 0.0,
        port: int = 0,
        reject_structured: bool = False,
    ) -> None:
        self._script = _Script(responder)
        self.delay = delay
        self.reject_structured = reject_structured
        """Answer requests with `tools` or a JSON `response_format` with HTTP 400, unread."""
        self.requests = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.bodies: list[dict[str, Any]] = []
        self._count_lock = threading.Lock()
        self._stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; with Nagle's algorithm on, the
            # client's delayed ACK would add ~40 ms to every reply.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send_json(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": "scripted", "object": "model", "owned_by": "macsql"}],
                        },
                    )
                else:
                    self._send_json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send_json(404, {"error": {"message": "not found"}})
                    return
                prompt = prompt_text(body.get("messages", []))
                structured = _structured_request(body)
                # In flight until the answer is ready, before it is written: a client frees its
                # request slot only after reading the answer, so the peak cannot overcount.
                with server._count_lock:
                    server.requests += 1
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                    server.bodies.append(body)
                reply: Reply
                if structured and server.reject_structured:
                    reply = 400
                else:
                    try:
                        reply = server._script.next(prompt, self.headers.get(AGENT_HEADER))
                    except Exception as exc:
                        reply = exc
                if server.delay:
                    time.sleep(server.delay)
                with server._count_lock:
                    server.in_flight -= 1
                if isinstance(reply, Silent):
                    server._stopping.wait(reply.seconds)
                    self.close_connection = True
                    return
                if isinstance(reply, Trickle):
                    self._trickle(body.get("model", "scripted"), reply)
                    return
                if isinstance(reply, int):
                    why = (
                        f"this server does not support {structured}"
                        if structured and server.reject_structured
                        else f"scripted error {reply}"
                    )
                    kind = "invalid_request_error" if reply == 400 else "server_error"
                    self._send_json(reply, {"error": {"message": why, "type": kind}})
                    return
                if isinstance(reply, BaseException):
                    self._send_json(500, {"error": {"message": str(reply), "type": "server_error"}})
                    return
                parts = _parts(reply)
                message = _message(parts, body, structured)
                calls = message.get("tool_calls")
                answer = str(message.get("content") or "") + (json.dumps(calls) if calls else "")
                reasoning_tokens = _estimate_tokens(parts.reasoning) if parts.reasoning else 0
                usage: dict[str, Any] = {
                    "prompt_tokens": _estimate_tokens(prompt),
                    "completion_tokens": _estimate_tokens(answer) + reasoning_tokens,
                }
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                if reasoning_tokens:
                    usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
                finish = "tool_calls" if message.get("tool_calls") else parts.finish_reason
                model = body.get("model", "scripted")
                if body.get("stream"):
                    self._stream(model, message, finish, usage)
                else:
                    self._send_json(
                        200,
                        {
                            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": model,
                            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                            "usage": usage,
                        },
                    )

            def _trickle(self, model: str, fault: Trickle) -> None:
                data = json.dumps(
                    {
                        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": fault.text},
                            }
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.flush()
                self.close_connection = True
                try:
                    for i in range(len(data)):
                        if server._stopping.wait(fault.interval):
                            return
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                except OSError:  # the client gave up: what a trickle is for
                    return

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(
                self, model: str, message: dict[str, Any], finish: str, usage: dict[str, Any]
            ) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
                chunks: list[dict[str, Any]] = [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}}
                ]
                for name in ("reasoning_content", "content"):
                    text = message.get(name) or ""
                    chunks += [
                        {"index": 0, "delta": {name: text[i : i + 16]}}
                        for i in range(0, len(text), 16)
                    ]
                for i, call in enumerate(message.get("tool_calls") or []):
                    chunks.append({"index": 0, "delta": {"tool_calls": [{"index": i, **call}]}})
                chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
                for choice in chunks:
                    self._event(
                        {
                            "id": cid,
                            "object": "chat.completion.chunk",
                            "created": int(time.time()),
                            "model": model,
                            "choices": [choice],
                        }
                    )
                self._event(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                )
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _event(self, payload: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

        self._httpd = _QuietHTTPServer(("127.0.0.1", port), Handler)
        self._thread: threading.Thread | None = None

    @property
    def prompts(self) -> list[str]:
        return self._script.prompts

    @property
    def agents(self) -> list[str | None]:
        """The agent named by each request's `X-Macsql-Agent` header, in `prompts` order."""
        return self._script.agents

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        host_text = host.decode() if isinstance(host, bytes) else host
        return f"http://{host_text}:{port}/v1"

    def start(self) -> ScriptedOpenAIServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends silent and trickling answers still in progress
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
