"""Native tool calling: the same ReAct loop, with the action format moved into the API.

The text protocol asks the model to write `Action: Tool[input]` and a parser reads it. Here each
request carries the tools as JSON schemas (`tools=`), and the reply carries `tool_calls`: a tool
name and the arguments as a JSON text. The loop, the fuses and the ledger are `ReActAgent`'s own;
only the one seam, `_decide`, and the shape of the history change.

Schemas (`tool_schemas`): one function per tool in the executor's registry, with the tool's
description and one required string parameter, `input` (our tools take one string), plus `Finish`
with one required string parameter, `answer`. No other property is allowed.

What `read_turn` makes of a reply (it never raises):
* Only the first tool call is used. Later calls in the same reply are not run; each is answered
  "not run" in the history, so every call id the model sent gets its tool message.
* `Finish` with a valid answer ends the run. A registered tool with valid arguments runs (the
  repeat fuse and max_steps apply as in ReAct). Tool names match up to case, as in the text protocol.
* Everything else is a format failure, fed back in place of an observation, like the text
  protocol's format reminder: no tool call at all (the text becomes the thought), an unknown tool,
  arguments that are not JSON or not a JSON object, a missing field, a field that is not a string,
  a field the schema does not have.

History (`NativeReActAgent.messages`): the system prompt, the question, then per step the assistant
message exactly as the model sent it and one `tool` message per call (the result, or the problem, with
a runtime guard's intervention after it); a reply with no call is followed by a user message carrying
the problem. `runtime=` works as in ReAct; `context=` (a text history) is refused.

`format_failures(calls, channel)` reads format failures per call from a ledger, for either channel
(`agentkit.channels` compares the two on the same questions).
`TOOL_CHAT_TEMPLATE` is a ChatML template with tool support for llama.cpp (see
`local_tool_server()`): SmolLM2's own template has none, and llama.cpp then drops `tools` silently.
"""
from __future__ import annotations

import json
import threading
from typing import Optional

from .llm import AssistantTurn, FunctionCall
from .parsing import FINISH, Parsed, parse_reply
from .react import ReActAgent, Step

# Phrases of the prompts below that identify them (a stand-in model keys on them).
NATIVE_MARKER = "You are a tool-calling agent"
NATIVE_FALLBACK_MARKER = "Only the Finish tool is left"

NATIVE_ROLE_PROMPT = f"""{NATIVE_MARKER}: you answer a question by calling the tools you are given, one call per turn.
Before each call, say in one short sentence what you know and what you do next.
Each tool's result comes back to you. When you know the answer, call Finish with it."""

NATIVE_FALLBACK_PROMPT = f"""{NATIVE_MARKER} whose run was stopped early. {NATIVE_FALLBACK_MARKER}.
Using only the question and the results gathered below, call Finish with your best answer.
If they do not settle it, say in the answer what is still unknown."""

NO_CALL = (
    "Your reply called no tool. Call one of the tools ({names}); when you know the answer, "
    "call Finish with it."
)
NOT_RUN = "not run: this loop runs one tool call per step. Ask for it again if you still need it."


def _parameters(field: str, description: str) -> dict:
    return {
        "type": "object",
        "properties": {field: {"type": "string", "description": description}},
        "required": [field],
        "additionalProperties": False,
    }


def tool_schemas(tools) -> list[dict]:
    """The chat-completions `tools` list for a ToolExecutor: every registered tool, then Finish."""
    schemas = [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                          "parameters": _parameters("input", "the tool's input, as text")}}
        for t in tools.tools.values()
    ]
    schemas.append({"type": "function", "function": {
        "name": FINISH, "description": "give the final answer and end the run",
        "parameters": _parameters("answer", "the final answer")}})
    return schemas


def schema_problem(arguments: object, parameters: dict) -> str:
    """What is wrong with decoded arguments against one of our schemas, or "" (the subset we generate)."""
    if not isinstance(arguments, dict):
        return f"the arguments must be a JSON object, got {type(arguments).__name__}"
    properties = parameters.get("properties", {})
    for name in parameters.get("required", []):
        if name not in arguments:
            return f"the required field {name!r} is missing"
    for name, value in arguments.items():
        if name not in properties:
            return f"the field {name!r} is not in the schema (allowed: {', '.join(properties)})"
        if properties[name].get("type") == "string" and not isinstance(value, str):
            return f"the field {name!r} must be a string, got {type(value).__name__} {json.dumps(value)}"
    return ""


def call_problem(call: FunctionCall, schemas: list[dict]) -> tuple[str, str, str]:
    """Check one tool call against the schemas: (canonical name, input or answer, problem or "")."""
    by_name = {s["function"]["name"].lower(): s["function"] for s in schemas}
    function = by_name.get(str(call.name).strip().lower())
    if function is None:
        known = ", ".join(s["function"]["name"] for s in schemas)
        return "", "", f"unknown tool {call.name!r}. Known tools: {known}."
    try:
        arguments = json.loads(call.arguments) if call.arguments else None
    except (TypeError, ValueError) as e:
        return function["name"], "", f"the arguments of {function['name']} are not JSON ({e}): {str(call.arguments)[:120]!r}"
    problem = schema_problem(arguments, function["parameters"])
    if problem:
        return function["name"], "", f"{function['name']}: {problem}."
    field = function["parameters"]["required"][0]
    return function["name"], arguments[field], ""


def read_turn(turn: AssistantTurn, schemas: list[dict]) -> Parsed:
    """What one reply asks for, as the loop's Parsed; a bad or missing call becomes `problem`."""
    thought = " ".join(str(turn.content or "").split())
    if not turn.tool_calls:
        names = ", ".join(s["function"]["name"] for s in schemas)
        return Parsed(thought, "", "", problem=NO_CALL.format(names=names))
    name, value, problem = call_problem(turn.tool_calls[0], schemas)
    if problem:
        return Parsed(thought, "", "", problem=f"error: {problem} Call a tool again with valid arguments.")
    return Parsed(thought, name, value)


CHANNELS = ("text", "native")


def format_failures(calls: list, channel: str, tools=None) -> list[bool]:
    """Per ledger entry: was the reply a format failure (no known tool or Finish, with valid input)?

    `channel` says how the replies were asked for: "text" (read by the defended parser) or
    "native" (tool calls checked against the schemas of `tools`, default Search and Calculate).
    """
    if channel not in CHANNELS:
        raise ValueError(f"channel must be one of {CHANNELS}, got {channel!r}")
    from .tools import default_executor

    schemas = tool_schemas(tools if tools is not None else default_executor())
    known = {s["function"]["name"].lower() for s in schemas}
    if channel == "native":
        return [bool(read_turn(AssistantTurn(c.reply, c.tool_calls), schemas).problem) for c in calls]
    return [parse_reply(c.reply).action.lower() not in known for c in calls]


class NativeReActAgent(ReActAgent):
    """ReActAgent whose actions travel as native tool calls (`llm.act`), not as text.

    `tool_choice` is sent as is ("required": the reply must call a tool; "auto": it may answer in text).
    """

    def __init__(self, llm=None, tools=None, max_steps: int = 5, *, tool_choice: Optional[str] = "required",
                 **options) -> None:
        super().__init__(llm, tools, max_steps, **options)
        if self.context is not None:
            raise ValueError("context= shapes a text history; the native channel re-sends API messages, "
                             "so it takes no context (use ReActAgent for it)")
        if not callable(getattr(self.llm, "act", None)):
            raise TypeError(
                f"{type(self.llm).__name__} has no act(messages, tools): native tool calling needs a client "
                "that sends tools= (OpenAIChatLLM, ScriptedLLM, a Recorder or Replay of one)."
            )
        self.tool_choice = tool_choice
        self.schemas = tool_schemas(self.tools)

    def messages(self, question: str, hints: str = "", steps_left: Optional[int] = None) -> list[dict]:
        """System prompt, the question, then each step as the API wants it: the assistant turn, then the results."""
        opening = [f"Hints from earlier work:\n{hints.strip()}"] if hints.strip() else []
        messages = [{"role": "system", "content": NATIVE_ROLE_PROMPT},
                    {"role": "user", "content": "\n\n".join([*opening, f"Question: {question}"])}]
        for step in self.trace:
            messages.extend(_history(step))
        if steps_left is not None:
            last = " This is your last step: call Finish now with your best answer." if steps_left == 1 else ""
            messages.append({"role": "user", "content": f"Steps left (including this one): {steps_left}.{last}"})
        return messages

    def _decide(self, messages: list[dict]) -> tuple[Parsed, str]:
        turn = self.llm.act(messages, self.schemas, tool_choice=self.tool_choice)
        # The raw reply is the assistant message itself: the history re-sends it as the model wrote it.
        return read_turn(turn, self.schemas), json.dumps(turn.as_message())

    def _fallback(self, question: str, hints: str) -> str:
        """Tools off except Finish: one last call for the best answer from what was gathered, unverified."""
        messages = self.messages(question, hints)
        messages[0] = {"role": "system", "content": NATIVE_FALLBACK_PROMPT}
        finish = [s for s in self.schemas if s["function"]["name"] == FINISH]
        turn = self.llm.act(messages, finish, tool_choice=self.tool_choice)
        parsed = read_turn(turn, finish)
        return parsed.argument if parsed.action == FINISH else " ".join(turn.content.split())


def _history(step: Step) -> list[dict]:
    """The messages one step adds to the history: the model's turn as sent, then what came back."""
    try:
        message = json.loads(step.reply)
    except (TypeError, ValueError):
        message = None
    if not isinstance(message, dict):  # not written by _decide: re-send it as plain text
        message = {"role": "assistant", "content": str(step.reply)}
    calls = message.get("tool_calls") or []
    seen = f"{step.observation}\n{step.intervention}" if getattr(step, "intervention", "") else step.observation
    if not calls:
        return [message, {"role": "user", "content": seen}]
    results = [seen] + [NOT_RUN] * (len(calls) - 1)
    return [message] + [{"role": "tool", "tool_call_id": c["id"], "content": r} for c, r in zip(calls, results)]


# --- AP_MODE=local: llama.cpp needs a chat template that knows tools ---------------------------

# ChatML as SmolLM2 writes it, plus tools: the schemas go into the system turn, a call is written
# as <tool_call>{"name": ..., "arguments": {...}}</tool_call>, a result comes back in a user turn.
# llama.cpp reads the call markers off this template, parses them into tool_calls, and constrains
# a call's JSON to the schemas once the model opens one. Without tools it renders as SmolLM2's own.
TOOL_CHAT_TEMPLATE = r"""
{%- set default_system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' -%}
{%- macro turn(role, text) -%}<|im_start|>{{ role }}
{{ text }}<|im_end|>
{% endmacro -%}
{%- set ns = namespace(system='') -%}
{%- if tools -%}
{%- set ns.system = messages[0].content if messages and messages[0].role == 'system' else default_system -%}
{%- set ns.system = ns.system + '\n\nYou can call these tools (JSON schemas):\n<tools>' -%}
{%- for tool in tools -%}{%- set ns.system = ns.system + '\n' + (tool | tojson) -%}{%- endfor -%}
{%- set ns.system = ns.system + '\n</tools>\nTo call a tool, write one JSON object with its name and arguments between tags:\n<tool_call>\n{"name": "ToolName", "arguments": {"input": "..."}}\n</tool_call>' -%}
{{ turn('system', ns.system) }}
{%- elif not messages or messages[0].role != 'system' -%}
{{ turn('system', default_system) }}
{%- endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' and loop.first and tools -%}
{%- elif message.role == 'assistant' and message.tool_calls -%}
{%- set ns.text = message.content or '' -%}
{%- for call in message.tool_calls -%}
{%- set arguments = call.function.arguments if call.function.arguments is string else (call.function.arguments | tojson) -%}
{%- set ns.text = ns.text + '\n<tool_call>\n{"name": "' + call.function.name + '", "arguments": ' + arguments + '}\n</tool_call>' -%}
{%- endfor -%}
{{ turn('assistant', ns.text | trim) }}
{%- elif message.role == 'tool' -%}
{{ turn('user', '<tool_response>\n' + message.content + '\n</tool_response>') }}
{%- else -%}
{{ turn(message.role, message.content) }}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}
""".strip()

_tool_servers: dict = {}  # max_tokens -> its server
_lock = threading.Lock()


def local_tool_server(max_tokens: int = 64):
    """A local llama.cpp server (SmolLM2) started with TOOL_CHAT_TEMPLATE, replies capped at `max_tokens`; one per
    cap and process, stopped at exit."""
    import atexit

    from .local import LocalServer

    with _lock:
        server = _tool_servers.get(max_tokens)
        if server is None or not server.running:
            server = _tool_servers[max_tokens] = LocalServer(chat_template=TOOL_CHAT_TEMPLATE,
                                                             max_tokens=max_tokens).start()
            atexit.register(server.stop)
    return server
