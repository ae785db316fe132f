"""Scripted models for tests, demos and benchmarks with no network.

- `ScriptedChatModel`: an in-process langchain chat model that answers from a script and records
  every prompt it was sent.
- `ScriptedOpenAIServer`: a small OpenAI-compatible HTTP server on 127.0.0.1
  (`/v1/chat/completions`, streaming and not), so the real `langchain-openai` client path
  runs end to end.

Both take a *responder*: a list of replies used in order, or a function from the prompt text to
a reply. A reply that is an `int` (for the server) is sent as that HTTP error status. The server
also injects faults, to test that a call is bounded whatever the server does: a `Trickle` reply
sends its answer one byte at a time, slowly; a `Silent` reply accepts the request and never
answers.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr


@dataclass(frozen=True)
class Trickle:
    """A fault for the server: a 200 answer whose body comes one byte every `interval` s."""

    interval: float = 2.0
    text: str = "```sql\nSELECT 1\n```"


@dataclass(frozen=True)
class Silent:
    """A fault for the server: the request is accepted and no byte comes back for `seconds`."""

    seconds: float = 3600.0


Reply = str | int | BaseException | Trickle | Silent
Responder = Callable[[str], Reply]


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
    """A thread-safe source of replies: a sequence consumed in order, or a function."""

    def __init__(self, responder: Responder | Sequence[Reply]) -> None:
        self._fn = responder if callable(responder) else None
        self._queue = list(responder) if not callable(responder) else []
        self._lock = threading.Lock()
        self.prompts: list[str] = []

    def next(self, prompt: str) -> Reply:
        with self._lock:
            self.prompts.append(prompt)
            if self._fn is not None:
                return self._fn(prompt)
            if not self._queue:
                raise RuntimeError(f"scripted model has no reply left for call {len(self.prompts)}")
            return self._queue.pop(0)


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
    def _llm_type(self) -> str:
        return "macsql-scripted"

    def _reply(self, messages: list[BaseMessage]) -> tuple[str, UsageMetadata]:
        text = prompt_text(messages)
        reply = self._script.next(text)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, int):
            raise RuntimeError(f"scripted HTTP error {reply}")
        if not isinstance(reply, str):
            raise TypeError(f"{type(reply).__name__} is a fault for ScriptedOpenAIServer only")
        prompt_tokens, reply_tokens = _estimate_tokens(text), _estimate_tokens(reply)
        usage = UsageMetadata(
            input_tokens=prompt_tokens,
            output_tokens=reply_tokens,
            total_tokens=prompt_tokens + reply_tokens,
        )
        return reply, usage

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply, usage = self._reply(messages)
        message = AIMessage(content=reply, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply, usage = self._reply(messages)
        pieces = [reply[i : i + 16] for i in range(0, len(reply), 16)] or [""]
        for i, piece in enumerate(pieces):
            chunk = AIMessageChunk(
                content=piece, usage_metadata=usage if i == len(pieces) - 1 else None
            )
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=ChatGenerationChunk(message=chunk))
            yield ChatGenerationChunk(message=chunk)


class ScriptedOpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

    Use as a context manager; `base_url` is what a client needs. `delay` seconds pass before
    each answer. `requests` counts the chat-completion requests served; `peak_in_flight` is
    the most that were being served at once.
    """

    def __init__(
        self, responder: Responder | Sequence[Reply], *, delay: float = 0.0, port: int = 0
    ) -> None:
        self._script = _Script(responder)
        self.delay = delay
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
                # In flight until the answer is ready, before it is written: a client frees its
                # request slot only after reading the answer, so the peak cannot overcount.
                with server._count_lock:
                    server.requests += 1
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                    server.bodies.append(body)
                try:
                    reply = server._script.next(prompt)
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
                    self._send_json(
                        reply,
                        {"error": {"message": f"scripted error {reply}", "type": "server_error"}},
                    )
                    return
                if isinstance(reply, BaseException):
                    self._send_json(500, {"error": {"message": str(reply), "type": "server_error"}})
                    return
                usage = {
                    "prompt_tokens": _estimate_tokens(prompt),
                    "completion_tokens": _estimate_tokens(reply),
                }
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                model = body.get("model", "scripted")
                if body.get("stream"):
                    self._stream(model, reply, usage)
                else:
                    self._send_json(
                        200,
                        {
                            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": model,
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": reply},
                                }
                            ],
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

            def _stream(self, model: str, reply: str, usage: dict[str, int]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
                pieces = [reply[i : i + 16] for i in range(0, len(reply), 16)] or [""]
                chunks: list[dict[str, Any]] = [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}}
                ]
                chunks += [{"index": 0, "delta": {"content": p}} for p in pieces]
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
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
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

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def prompts(self) -> list[str]:
        return self._script.prompts

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
