"""A loopback OpenAI-compatible server on 127.0.0.1: a real HTTP endpoint for tests and notebooks.

    from agentkit.loopback import serve
    with serve(replier, latency_s=0.2) as server:
        llm = server.client()          # OpenAIChatLLM pointed at server.base_url
        llm.think("hello")
        server.requests                # every request it saw, in arrival order

or, from a shell (another process sets AP_MODE=real and LLM_BASE_URL to the printed URL):

    python -m agentkit.loopback --latency 0.2 --replier mypackage.module:function

What it serves (POST; the real openai SDK talks to it like to any hosted API):
* `/v1/chat/completions`: a `chat.completion` whose message is what the replier returned.
* `/v1/completions`: a `text_completion` whose text is what the replier returned.
* any other path: 404 with an OpenAI-style error body.
* a chat history a hosted API would refuse (`history_problem`: a tool call left without its `tool`
  message, or a `tool` message answering no call): 400, before the replier is asked.
* a `grammar` (llama.cpp's GBNF field) together with `tools`: 400, as llama.cpp answers it.

The replier is a function of the request's JSON body (a dict: model, messages or prompt,
tools, temperature, ...). It returns one of:
* a `str`: the assistant's text (for /v1/completions, the completion text);
* a `dict`: the assistant message itself, e.g. `{"content": None, "tool_calls": [tool_call("Search",
  {"input": "x"})]}`; tool calls without an id get one derived from the request (deterministic);
* a `Canned(status, body=..., data=..., headers=...)`: sent exactly as given (errors, malformed bodies).
A replier that raises gets HTTP 500 with the exception's text, which the SDK retries like any 500.
The default replier is the course's stand-in (`stand_in_replier()`), so a client pointed here sees the
stand-in's deterministic answers through real HTTP.

Options:
* `latency_s`: wait this long before every answer. Each request runs on its own thread, so
  concurrent clients overlap, as they do against a hosted API.
* `throttle=n`: the first n attempts of every distinct request body are answered
  `429 Too Many Requests` with `Retry-After: retry_after_s` (seconds). Keyed on the body,
  not on arrival order, so the number of 429s is the same whatever the concurrency.
* usage: unless the replier sends its own, `prompt_tokens` are counted with o200k_base over the
  messages (or prompt) and `completion_tokens` over the reply text and tool-call arguments.

Hostile or careless clients get an answer, never a stuck thread: a `Content-Length` that is not a
number, or a body that is not JSON or nests deeper than Python's parser goes, is answered 400; a
body over MAX_BODY_BYTES is answered 413 without being read; a connection that sends nothing for
`idle_timeout_s` (IDLE_TIMEOUT_S) is closed. The listen backlog is LISTEN_BACKLOG connections, so
a burst of clients waits for a thread instead of being refused.

It listens on 127.0.0.1 only, on a free port the OS picks. `server.requests` keeps path, headers
(lower-cased names, so the Authorization header is in memory; nothing is written to disk), body,
the status answered and the arrival time.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Union

from . import tokens

MAX_BODY_BYTES = 8 * 1024 * 1024  # a long agent history is a few hundred KB; more is refused (413), never read
IDLE_TIMEOUT_S = 30.0  # a connection silent this long is closed, so idle clients cannot hold threads forever
LISTEN_BACKLOG = 128  # connections the OS queues before the server accepts them (socketserver's default is 5)


@dataclass
class Canned:
    """An HTTP response sent as given: a JSON `body`, or raw bytes `data` (wins if both)."""

    status: int = 200
    body: Any = None
    data: Optional[bytes] = None
    headers: dict = field(default_factory=dict)

    def payload(self) -> bytes:
        return self.data if self.data is not None else json.dumps(self.body if self.body is not None else {}).encode()


Replier = Callable[[dict], Union[str, dict, Canned]]


@dataclass
class Request:
    """One request the server saw, and the status it answered."""

    path: str
    headers: dict
    body: Any
    status: int = 0
    at: float = 0.0  # time.monotonic() on arrival


def tool_call(name: str, arguments: Union[dict, str], call_id: str = "") -> dict:
    """A tool call as the chat API writes it; `arguments` is a dict (sent as JSON) or a raw string."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def error_body(message: str, kind: str) -> dict:
    return {"error": {"message": message, "type": kind, "code": None}}


def history_problem(messages: Any) -> str:
    """What a hosted API would refuse in a chat history's tool calls, or "".

    Every tool call an assistant message makes must be answered by a `tool` message with its id
    before the next other message, and a `tool` message must answer a call that was made.
    """
    if not isinstance(messages, list):
        return "messages must be a list"
    waiting: list[str] = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return f"a tool message answers {message.get('tool_call_id')!r}, which no earlier tool call has open"
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            return f"the tool calls {', '.join(waiting)} have no tool message answering them before the next message"
        if role == "assistant":
            waiting = [c.get("id") for c in message.get("tool_calls") or []]
    return f"the tool calls {', '.join(waiting)} have no tool message answering them" if waiting else ""


def _key(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _usage(body: dict, text: str) -> dict:
    if "messages" in body:
        prompt = tokens.count_messages([m for m in body["messages"] if isinstance(m, dict)])
    else:
        prompt = tokens.count_tokens(str(body.get("prompt", "")))
    completion = tokens.count_tokens(text)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0}}


def chat_completion(body: dict, message: Union[str, dict], model: str = "loopback") -> dict:
    """The JSON of a chat.completion carrying `message` (a text or an assistant message dict)."""
    message = {"content": message} if isinstance(message, str) else dict(message)
    message.setdefault("content", None)
    message["role"] = "assistant"
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        call = {**call, "function": dict(call["function"])}
        call["id"] = call.get("id") or f"call_{_key(body)[:12]}_{index}"
        call.setdefault("type", "function")
        calls.append(call)
    if calls:
        message["tool_calls"] = calls
    else:
        message.pop("tool_calls", None)
    usage = message.pop("usage", None)
    text = (message["content"] or "") + "".join(c["function"]["arguments"] for c in calls)
    return {
        "id": f"chatcmpl-{_key(body)[:12]}", "object": "chat.completion", "created": 0,
        "model": body.get("model") or model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": usage or _usage(body, text),
    }


def text_completion(body: dict, text: str, model: str = "loopback") -> dict:
    """The JSON of a text_completion carrying `text`."""
    return {
        "id": f"cmpl-{_key(body)[:12]}", "object": "text_completion", "created": 0,
        "model": body.get("model") or model,
        "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
        "usage": _usage(body, text),
    }


def stand_in_replier(llm=None) -> Replier:
    """A replier that answers with an agentkit LLM (default: the course's stand-in).

    Requests with `tools` go to `llm.act` (native tool calls), chat requests to `llm.think` (with the
    request's `grammar`, if any), completion requests to `llm.think` on the prompt text.
    """
    if llm is None:
        from .modes import get_llm

        llm = get_llm("fake")

    def reply(body: dict) -> Union[str, dict]:
        temperature = body.get("temperature") or 0
        if "prompt" in body:
            return llm.think(str(body["prompt"]), temperature)
        if body.get("tools"):
            turn = llm.act(body["messages"], body["tools"], temperature, tool_choice=body.get("tool_choice"))
            return turn.as_message()
        if body.get("grammar"):
            return llm.think(body["messages"], temperature, grammar=str(body["grammar"]))
        return llm.think(body["messages"], temperature)

    return reply


class LoopbackServer(ThreadingHTTPServer):
    """The server; build it with `serve(...)`, which also starts it."""

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, replier: Optional[Replier] = None, *, latency_s: float = 0.0, throttle: int = 0,
                 retry_after_s: float = 1.0, model: str = "loopback", idle_timeout_s: float = IDLE_TIMEOUT_S) -> None:
        if latency_s < 0 or throttle < 0:
            raise ValueError(f"latency_s and throttle must be >= 0, got {latency_s} and {throttle}")
        if not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be > 0, got {idle_timeout_s}")
        self.idle_timeout_s = idle_timeout_s
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replier = replier or stand_in_replier()
        self.latency_s, self.throttle, self.retry_after_s = latency_s, throttle, retry_after_s
        self.model = model
        self.requests: list[Request] = []
        self._attempts: Counter = Counter()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def client(self, **kwargs):
        """agentkit's real chat client (the openai SDK), pointed at this server."""
        from .llm import OpenAIChatLLM

        settings = {"api_key": "loopback", "base_url": self.base_url, "model": self.model, **kwargs}
        return OpenAIChatLLM(**settings)

    def start(self) -> "LoopbackServer":
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port; safe to call twice."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self.shutdown()
            thread.join(timeout=5)
        self.server_close()

    def __enter__(self) -> "LoopbackServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def answer(self, path: str, body: Any) -> Canned:
        """What the server sends for one request (the handler only moves bytes)."""
        if path not in ("/v1/chat/completions", "/v1/completions"):
            return Canned(404, error_body(f"no route {path}: this server serves /v1/chat/completions "
                                          "and /v1/completions", "not_found"))
        if not isinstance(body, dict):
            return Canned(400, error_body("the request body is not a JSON object", "invalid_request_error"))
        if body.get("grammar") and body.get("tools"):  # llama.cpp's own answer to both at once
            return Canned(400, error_body("Cannot use custom grammar constraints with tools.", "invalid_request_error"))
        problem = history_problem(body.get("messages", []))
        if problem:  # as a hosted API does: answered 400, never retried
            return Canned(400, error_body(f"invalid messages: {problem}", "invalid_request_error"))
        if self.throttle:
            with self._lock:
                self._attempts[_key(body)] += 1
                refused = self._attempts[_key(body)] <= self.throttle
            if refused:
                return Canned(429, error_body("rate limited by the loopback server", "rate_limit_exceeded"),
                              headers={"Retry-After": f"{self.retry_after_s:g}"})
        time.sleep(self.latency_s)
        try:
            reply = self.replier(body)
        except Exception as e:  # noqa: BLE001 - a replier bug is a server error, as with a real API
            return Canned(500, error_body(f"the replier failed: {type(e).__name__}: {e}", "server_error"))
        if isinstance(reply, Canned):
            return reply
        if path == "/v1/completions":
            return Canned(200, text_completion(body, str(reply), self.model))
        return Canned(200, chat_completion(body, reply, self.model))


_TOO_DEEP = "the request body nests deeper than this server parses"


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout_s  # StreamRequestHandler applies it to the socket
        super().setup()

    def do_POST(self) -> None:
        request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, None, at=time.monotonic())
        with self.server._lock:
            self.server.requests.append(request)
        canned = self._read_body(request) or self._answer(request)
        request.status = canned.status
        self._send(canned)

    def _read_body(self, request: Request) -> Optional[Canned]:
        """Read the body into `request.body`; or the 400/413 to send instead (the connection then closes)."""
        length = self.headers.get("Content-Length", "0").strip()
        if not length.isdigit():
            self.close_connection = True  # the body's end is unknown: the stream cannot be read on
            return Canned(400, error_body(f"Content-Length {length!r} is not a number of bytes", "invalid_request_error"))
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True  # the body is left unread
            return Canned(413, error_body(f"the request body is {int(length):,} bytes; this server takes at most "
                                          f"{MAX_BODY_BYTES:,}", "invalid_request_error"))
        raw = self.rfile.read(int(length))
        try:
            request.body = json.loads(raw)
        except ValueError:
            request.body = raw.decode(errors="replace")
        except RecursionError:
            request.body = raw[:200].decode(errors="replace")
            return Canned(400, error_body(_TOO_DEEP, "invalid_request_error"))
        return None

    def _answer(self, request: Request) -> Canned:
        try:
            return self.server.answer(self.path, request.body)
        except RecursionError:  # parsed, but too deep to hash or walk
            return Canned(400, error_body(_TOO_DEEP, "invalid_request_error"))

    def _send(self, canned: Canned) -> None:
        data = canned.payload()
        try:
            self.send_response(canned.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in canned.headers.items():
                self.send_header(name, str(value))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client stopped waiting (a timeout): nothing left to tell it
            pass

    def log_message(self, *args) -> None:  # a notebook or test output stays clean
        pass


def serve(replier: Optional[Replier] = None, **options) -> LoopbackServer:
    """Start a loopback server (in a daemon thread) and return it; use it in a `with` block."""
    return LoopbackServer(replier, **options).start()


def _load(spec: str) -> Replier:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name or "reply")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentkit.loopback", description=__doc__.split("\n")[0])
    parser.add_argument("--replier", help="module:function answering each request body (default: the stand-in)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every answer")
    parser.add_argument("--throttle", type=int, default=0, help="429s for the first N attempts of each request")
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds sent with each 429")
    args = parser.parse_args(argv)
    replier = _load(args.replier) if args.replier else None
    with serve(replier, latency_s=args.latency, throttle=args.throttle, retry_after_s=args.retry_after) as server:
        print(f"LLM_BASE_URL={server.base_url}", flush=True)
        print("Serving until Ctrl-C or SIGTERM.", file=sys.stderr, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
