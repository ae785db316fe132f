"""A server that answers, but not with a chat completion, or hangs up mid-reply: the failed
call says what happened and what to check, in one line, instead of a bare Python error."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from macsql.llm.calls import call_model, fix_for
from macsql.llm.settings import ModelSettings

COMPLETION = {
    "id": "x",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hi"}}
    ],
}


@pytest.fixture(scope="module")
def faulty_url() -> Iterator[str]:
    """The first path segment picks the fault: `.../<fault>/v1/chat/completions`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            fault = self.path.strip("/").split("/")[0]
            full = json.dumps(COMPLETION).encode()
            body = {
                "not-json": b'{"id": "x", "choices": [{"message": {"content": "SEL',
                "no-message": json.dumps({**COMPLETION, "choices": [{"index": 0}]}).encode(),
                "no-choices": json.dumps({**COMPLETION, "choices": []}).encode(),
                "cut-off": full,
            }[fault]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if fault == "cut-off":  # half the promised body, then the connection closes
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _settings(base_url: str) -> ModelSettings:
    return ModelSettings(model="openai:m", base_url=base_url, api_key="k", timeout=5, max_retries=0)


@pytest.mark.parametrize("fault", ["not-json", "no-message"])
def test_an_answer_that_is_not_a_chat_completion_is_named(faulty_url: str, fault: str) -> None:
    # The bare errors were "JSONDecodeError: Unterminated string starting at: line 1 column
    # 49" and "AttributeError: 'NoneType' object has no attribute 'get'".
    url = f"{faulty_url}/{fault}/v1"
    reply = call_model(_settings(url), "decomposer", "hello")
    assert reply.error and len(reply.error.splitlines()) == 1
    assert f"{url} answered with something that is not an OpenAI chat completion" in reply.error


def test_a_reply_cut_off_mid_body_says_the_server_hung_up(faulty_url: str) -> None:
    # It used to say "Connection error" and to set base_url, as for a server never reached.
    url = f"{faulty_url}/cut-off/v1"
    reply = call_model(_settings(url), "decomposer", "hello")
    assert reply.error and len(reply.error.splitlines()) == 1
    assert "peer closed connection without sending complete message body" in reply.error
    assert f"{url} closed the connection before its reply was complete" in reply.error
    assert "set base_url" not in reply.error


def test_a_model_reply_with_no_choices_is_named(faulty_url: str) -> None:
    url = f"{faulty_url}/no-choices/v1"
    reply = call_model(_settings(url), "decomposer", "hello")
    assert reply.error and len(reply.error.splitlines()) == 1
    assert "answered without any choice" in reply.error and url in reply.error


def test_a_refused_connection_still_points_at_base_url() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    reply = call_model(_settings(url), "decomposer", "hello")
    assert reply.error and "Connection refused" in reply.error
    assert f"tried {url}: set base_url" in reply.error


class _Answer(BaseModel):
    sql: str


def test_the_hint_is_only_for_errors_out_of_a_request() -> None:
    settings = _settings("http://127.0.0.1:1/v1")
    assert fix_for(ValueError("bad"), settings) is not None
    assert fix_for(TypeError("unexpected keyword"), settings, requested=False) is None
    with pytest.raises(ValidationError) as invalid:  # a reply that does not fit the schema
        _Answer.model_validate({})
    assert fix_for(invalid.value, settings) is None
    assert fix_for(ValueError("bad"), ModelSettings(model="anthropic:claude")) is None
