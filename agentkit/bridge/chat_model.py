"""LangChain's `create_agent` on a real chat model class: langchain-openai's `ChatOpenAI`, over HTTP.

The course's adapter (`with_langgraph.CourseChatModel`) writes LangChain's messages back into the text
protocol, and its `bind_tools` sends no schema: the model reads the tools from the role prompt. A real chat
model class does what a learner's own project does: `bind_tools` turns each tool into a JSON schema sent
with every request, the reply's `tool_calls` come back in the API's own fields, and each result goes back
as a `tool` message answering its call id.

* `endpoint(llm)`: an OpenAI-compatible server on 127.0.0.1 (`agentkit.loopback`) that answers with any
  course LLM that has `act`: the stand-in, a cassette's replay, SmolLM2's client on llama.cpp (it then
  passes each request's messages, tools, tool_choice and temperature on; other fields stay here).
  `server.requests` keeps every request body ChatOpenAI sent, as the server received it.
* `chat_model(server)`: ChatOpenAI pointed there, at temperature 0, with no retries (a failure shows at once).
* `live_model()`: the model a live run sends the requests on to: under AP_MODE=local SmolLM2 on llama.cpp with
  a chat template that knows tools (`agentkit.native.local_tool_server`; SmolLM2's own drops them), else the
  AP_MODE's own (`get_llm()`).
* `native_agent(chat, tools, ...)`: `create_agent` with the executor's tools (one string argument, `input`,
  each call run through the executor, so the tool log is the course's) and CHAT_PROMPT.
* `request_summary(body)`: what one request carried (messages by role, tool names, schema characters, the
  other fields), for chapter 16's table.
Import this module only where the bridge is installed (`agentkit.bridge.missing()`).
"""
from __future__ import annotations

import json

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain_openai import ChatOpenAI

from ..loopback import serve, stand_in_replier
from . import CHAT_MARKER
from .with_langgraph import langchain_tools

CHAT_PROMPT = f"""{CHAT_MARKER}: call them to find what you need, one call per turn unless several calls
do not depend on each other. Before calling, say in one short sentence what you know and what you do next.
When you know the answer, reply with the answer alone and call no tool."""


def endpoint(llm, **options):
    """A loopback server answering with `llm` (its `act` for requests with tools); use it in a `with` block."""
    return serve(stand_in_replier(llm), **options)


def live_model():
    """SmolLM2 with a tool-calling template under AP_MODE=local, else get_llm()."""
    from ..modes import get_llm
    from ..settings import setting

    if (setting("AP_MODE") or "fake").strip().lower() == "local":
        from ..native import local_tool_server

        return local_tool_server().client()
    return get_llm()


def chat_model(server, model: str = "", **options) -> ChatOpenAI:
    """langchain-openai's ChatOpenAI against `server`: temperature 0, no retries, a 60 s timeout."""
    settings = {"model": model or server.model, "base_url": server.base_url, "api_key": "loopback",
                "temperature": 0, "max_retries": 0, "timeout": 60, **options}
    return ChatOpenAI(**settings)


def native_agent(chat, tools, max_steps: int = 5, middleware=(), checkpointer=None, prompt: str = CHAT_PROMPT):
    """create_agent on a real chat model: the executor's tools as schemas, max_steps model calls at most."""
    return create_agent(chat, langchain_tools(tools), system_prompt=prompt,
                        middleware=[ModelCallLimitMiddleware(run_limit=max_steps, exit_behavior="end"), *middleware],
                        checkpointer=checkpointer, name="ReAct")


def request_summary(body: dict) -> dict:
    """One chat request: its messages' roles (a call-carrying assistant as "assistant+calls"), the tools'
    names, the characters of their schemas and of the whole body, and every other field."""
    roles = [m.get("role", "?") + ("+calls" if m.get("tool_calls") else "") for m in body.get("messages", [])]
    tools = body.get("tools") or []
    return {"roles": roles, "tools": [t.get("function", {}).get("name", "?") for t in tools],
            "schema_chars": len(json.dumps(tools)) if tools else 0, "body_chars": len(json.dumps(body)),
            "other": {k: v for k, v in body.items() if k not in ("messages", "tools")}}
