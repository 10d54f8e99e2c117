"""A model on BFCL through three channels: the text protocol, native tool calls, and a grammar.

`ask(llm, entry, channel)` sends one BFCL entry to any course LLM and returns `(calls, problem)` in the form
`agentkit.bfcl.match` reads; the reply itself is in the LLM's ledger.
* `text`: our own system prompt (not BFCL's, whose wording differs) lists the functions as JSON and asks for
  the calls as `[f(a=1), g(b='x')]`, or for words when no function fits; `llm.think(...)` answers and
  `bfcl.parse_calls` reads the reply.
* `native`: the functions go as chat-completions tool schemas (`tools=`, BFCL's types turned into JSON
  Schema's: dict→object, float→number, tuple→array, any→string; a dot in a name becomes `_`, as OpenAI's
  names allow none, and is turned back); `llm.act(...)` answers, and each tool call's JSON arguments are
  the call's. No tool call at all is no call (right only for irrelevance).
* `grammar`: the text prompt, with a GBNF grammar in the request body (llama.cpp's `grammar` field), so
  the sampler can only write `[...]` made of the offered functions with their parameters, each value of
  its declared type, or `[]`. Only llama.cpp's server reads that field (`GrammarLLM`).
`bfcl_server()` is SmolLM2 on llama.cpp with a chat template that knows tools (agentkit.native), replies
capped at 128 tokens; one per process.
"""
from __future__ import annotations

import json

from .bfcl import Entry, parse_calls
from .openai_client import OpenAIChatLLM

CHANNELS = ("text", "native", "grammar")
MAX_TOKENS = 128

SYSTEM = """You call functions. You are given a question and a list of functions as JSON.
Reply with only the function calls that answer the question, in this format:
[func_name(param_name=value, other_param=value), other_func(param=value)]
Use the parameter names and types the functions declare. Write nothing else.
If none of the functions fits the question, say so in words, without any call."""
NATIVE_SYSTEM = "You call functions to answer the question. If none of the functions fits it, say so in words."


def text_messages(entry: Entry) -> list[dict]:
    functions = json.dumps(entry.functions, ensure_ascii=False)
    question = "\n".join(m["content"] for m in entry.question if m["role"] == "user")
    return [{"role": "system", "content": f"{SYSTEM}\n\nFunctions:\n{functions}"},
            {"role": "user", "content": question}]


# --- native tool calls ------------------------------------------------------------------------------------

def native_messages(entry: Entry) -> list[dict]:
    return [{"role": "system", "content": NATIVE_SYSTEM}, text_messages(entry)[1]]


JSON_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}


def _schema(node):
    if isinstance(node, dict):
        out = {k: _schema(v) for k, v in node.items()}
        if isinstance(out.get("type"), str):
            out["type"] = JSON_TYPES.get(out["type"], out["type"])
        return out
    if isinstance(node, list):
        return [_schema(v) for v in node]
    return node


def tool_schemas(entry: Entry) -> list[dict]:
    return [{"type": "function", "function": {"name": f["name"].replace(".", "_"), "description": f["description"],
                                              "parameters": _schema(f["parameters"])}} for f in entry.functions]


def calls_from_turn(entry: Entry, turn) -> tuple[list[dict], str]:
    names = {f["name"].replace(".", "_"): f["name"] for f in entry.functions}
    calls = []
    for call in turn.tool_calls:
        try:
            args = json.loads(call.arguments or "{}")
        except (json.JSONDecodeError, RecursionError):
            return [], f"arguments of {call.name} are not JSON"
        if not isinstance(args, dict):
            return [], f"arguments of {call.name} are not a JSON object"
        calls.append({"name": names.get(call.name, call.name), "args": args})
    return calls, ""


# --- the grammar --------------------------------------------------------------------------------------------

VALUE_RULES = r'''
str ::= "'" [^'\\\n]* "'"
int ::= "-"? [0-9]+
num ::= "-"? [0-9]+ ("." [0-9]+)?
bool ::= "True" | "False"
value ::= str | num | bool | list | dict
list ::= "[" (value (", " value)*)? "]"
dict ::= "{" (str ": " value (", " str ": " value)*)? "}"
'''
RULE_FOR = {"string": "str", "any": "str", "integer": "int", "float": "num", "number": "num", "boolean": "bool",
            "dict": "dict", "object": "dict"}


def _gbnf_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value_rule(declared: dict) -> str:
    if declared.get("enum"):
        return "(" + " | ".join(_gbnf_string(repr(v)) for v in declared["enum"]) + ")"
    kind = declared.get("type", "string")
    if kind in ("array", "tuple"):
        item = _value_rule(declared.get("items", {"type": "any"})) if "items" in declared else "value"
        return f'("[" ({item} (", " {item})*)? "]")'
    return RULE_FOR.get(kind, "value")


def grammar(entry: Entry) -> str:
    """GBNF: `[` calls of the offered functions `]` or `[]`; each call's required parameters in declared order,
    then its optional ones, each optional."""
    rules, names = [], []
    for number, f in enumerate(entry.functions):
        properties = f["parameters"].get("properties", {})
        required = [p for p in f["parameters"].get("required", []) if p in properties]
        optional = [p for p in properties if p not in required]
        parts = [f'{_gbnf_string(p + "=")} {_value_rule(properties[p])}' for p in required]
        body = ' ", " '.join(parts)
        if parts:
            body += "".join(f' (", " {_gbnf_string(p + "=")} {_value_rule(properties[p])})?' for p in optional)
        elif optional:
            body = "(" + " | ".join(f'{_gbnf_string(p + "=")} {_value_rule(properties[p])}' for p in optional) + ")?"
        rules.append(f'f{number} ::= {_gbnf_string(f["name"] + "(")} {body or ""} ")"')
        names.append(f"f{number}")
    call = " | ".join(names)
    return "\n".join([f'root ::= "[" (call (", " call)*)? "]"', f"call ::= {call}", *rules]) + VALUE_RULES


class GrammarLLM(OpenAIChatLLM):
    """The course's real client; while `grammar` is set, every request carries it (llama.cpp's `grammar` field)."""

    grammar = ""

    def _request(self, create, **kwargs):
        if self.grammar:
            kwargs["extra_body"] = {"grammar": self.grammar}
        return super()._request(create, **kwargs)


def _innermost(llm):
    """The client under a Recorder (or the LLM itself)."""
    return getattr(llm, "llm", llm)


def ask(llm, entry: Entry, channel: str) -> tuple[list[dict], str]:
    """One BFCL entry through `channel`: (calls, problem). Never raises for a reply it cannot read."""
    if channel not in CHANNELS:
        raise ValueError(f"channel must be one of {', '.join(CHANNELS)}, got {channel!r}")
    if channel == "native":
        return calls_from_turn(entry, llm.act(native_messages(entry), tool_schemas(entry), tool_choice="auto"))
    client = _innermost(llm)
    if channel == "grammar" and isinstance(client, GrammarLLM):
        client.grammar = grammar(entry)
    try:
        return parse_calls(llm.think(text_messages(entry)))
    finally:
        if isinstance(client, GrammarLLM):
            client.grammar = ""


def bfcl_server():
    """SmolLM2 on llama.cpp with a tool-aware chat template, replies capped at MAX_TOKENS; one per process."""
    from .native import local_tool_server

    return local_tool_server(max_tokens=MAX_TOKENS)


def local_client(channel: str) -> OpenAIChatLLM:
    """The live SmolLM2 client for `channel` (AP_MODE=local). A reply of MAX_TOKENS on a busy 2-core machine took
    up to three minutes, and a retry would start it again: a long timeout, no retries."""
    from .local import MODEL_ID

    return GrammarLLM(api_key="local", base_url=bfcl_server().base_url, model=MODEL_ID, timeout=600, max_retries=0)
