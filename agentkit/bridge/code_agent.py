"""smolagents' `CodeAgent`, its code run in the course's WebAssembly engine (`agentkit.wasm_sandbox`).

A CodeAgent's model writes Python, not a tool call: one snippet may call several tools, with logic between
them. smolagents runs it with an executor (`PythonExecutor`: `send_tools`, `send_variables`, and
`__call__(code) -> CodeOutput`), its own in-process interpreter unless you pass one. `WasmExecutor` is one:

* every snippet runs in CPython compiled to WebAssembly, in a worker process, with the sandbox's limits
  (memory, disk, output; TIMEOUT_S a run; no network, no files of ours). Model-written code never runs here;
* a tool is a function inside the sandbox, but the tool itself runs here, through the course's executor
  (its log is the ledger): the sandbox has no way to call out (WASI preview 1 gives it no sockets), so a
  call the snippet makes for the first time stops the run and asks for it; the tool runs here; the snippet
  runs again from the top with that result recorded, and each call it makes is answered from the record,
  until it finishes. A snippet with k tool calls runs k + 1 times. That is correct only for code whose tool
  calls depend on nothing but earlier results (no clock, no randomness): a snippet that asks for other
  calls on a later run gets an error saying so. At most MAX_TOOL_CALLS calls per snippet. What the sandbox
  reports back is read as untrusted data: a report the snippet tampered with, or one asking for a tool the
  agent does not have, is an error, never a call;
* `final_answer(x)` ends the run with x (smolagents' own final-answer tool is not called in the sandbox);
* between steps, the snippet's variables that JSON can carry (numbers, text, lists, dicts) are kept and
  defined again in the next step; anything else (a module, a function) is not, and must be made again.
Tools take one string input, as every course tool does.

`CourseCodeModel(llm)` gives smolagents a course LLM as a `Model`: the messages pass through as text, with
smolagents' roles as chat roles, and a reply is cut at the first stop sequence, as a server would.
`code_agent(llm, tools, max_steps)` builds the CodeAgent. Import only where the bridge is installed.
"""
from __future__ import annotations

import json

from smolagents import CodeAgent
from smolagents.local_python_executor import CodeOutput, PythonExecutor
from smolagents.models import ChatMessage, MessageRole, Model
from smolagents.monitoring import LogLevel, TokenUsage

from ..protocol import ledger
from ..wasm_sandbox import run_code
from .with_smolagents import CourseTool, _role, _text

MAX_TOOL_CALLS = 8
# Each run's limit. The interpreter's own start inside the sandbox counts against it, and on a busy machine that
# alone took over 2 s (the sandbox's default), so a snippet that was right ran out of time: generous, for code that
# loops, not for code that works.
TIMEOUT_S = 10.0
ROLES = {"tool-call": "assistant", "tool-response": "user"}  # smolagents' own roles, as chat roles

# Runs before the snippet, inside the sandbox. %(...)s are JSON texts, so nothing of ours is code but this.
_PRELUDE = '''import json as _aj
_AK_RESULTS = _aj.loads(%(results)s)
globals().update(_aj.loads(%(variables)s))
_AK_CALLS, _AK_FINAL = [], []
class _AKStop(BaseException):
    pass
def _ak_tool(name):
    def call(*args, **kwargs):
        text = str(args[0]) if args else str(next(iter(kwargs.values()), ""))
        _AK_CALLS.append([name, text])
        if len(_AK_CALLS) <= len(_AK_RESULTS):
            if _AK_RESULTS[len(_AK_CALLS) - 1][:2] != [name, text]:
                raise RuntimeError("this snippet asked for other tool calls than on its earlier run: its calls may "
                                   "depend only on earlier results (no clock, no randomness)")
            return _AK_RESULTS[len(_AK_CALLS) - 1][2]
        raise _AKStop()
    return call
def final_answer(answer):
    _AK_FINAL.append(answer)
    raise _AKStop()
%(tools)s
try:
    exec(compile(%(code)s, "<snippet>", "exec"), globals())
except _AKStop:
    pass
def _ak_json(value):
    try:
        _aj.dumps(value)
        return True
    except (TypeError, ValueError):
        return False
_AK_REPORT = {"calls": _AK_CALLS, "final": [a if _ak_json(a) else repr(a) for a in _AK_FINAL],
              "variables": {k: v for k, v in list(globals().items()) if not k.startswith("_") and k != "final_answer"
                            and k not in %(names)s and not callable(v) and _ak_json(v)}}
'''


class WasmExecutor(PythonExecutor):
    """smolagents' executor interface over the WebAssembly sandbox; tools run here, through their executor."""

    def __init__(self, timeout_s: float = TIMEOUT_S, max_tool_calls: int = MAX_TOOL_CALLS) -> None:
        self.timeout_s, self.max_tool_calls = timeout_s, max_tool_calls
        self.tools: dict = {}
        self.variables: dict = {}
        self.runs: list = []  # (snippet's number, run's number, what that run did, in words), in order

    def send_tools(self, tools: dict) -> None:
        self.tools = {name: tool for name, tool in tools.items() if name != "final_answer"}

    def send_variables(self, variables: dict) -> None:
        self.variables = {k: v for k, v in variables.items() if _jsonable(v)}

    def _program(self, code: str, results: list) -> str:
        names = [n for n in self.tools if n.isidentifier()]
        return _PRELUDE % {"results": repr(json.dumps(results)), "variables": repr(json.dumps(self.variables)),
                           "tools": "\n".join(f"{n} = _ak_tool({n!r})" for n in names), "code": repr(code),
                           "names": repr(names)}

    def __call__(self, code_action: str) -> CodeOutput:
        snippet = len({number for number, _, _ in self.runs}) + 1
        results: list = []
        while True:
            result = run_code(self._program(code_action, results), "_AK_REPORT", timeout_s=self.timeout_s)
            answered = f"{len(results)} call(s) answered from the record; " if results else ""
            if not result.ok:  # smolagents feeds the error back to the model
                self.runs.append((snippet, len(results) + 1, f"{answered}error: {str(result.error)[:80]}"))
                raise RuntimeError(f"{result.error}\n{result.output}".strip())
            report = _checked(result.value, self.tools)
            calls = report["calls"]
            if len(calls) > len(results) and not report["final"]:  # a call not answered yet: run it here
                name, text = calls[len(results)]
                self.runs.append((snippet, len(results) + 1, f"{answered}stopped at {name}({text[:40]!r})"))
                if len(results) >= self.max_tool_calls:
                    raise RuntimeError(f"more than {self.max_tool_calls} tool calls in one snippet")
                results.append([name, text, str(self.tools[name](text))])
                continue
            ended = f"final_answer({str(report['final'][0])[:40]!r})" if report["final"] else "the snippet's end"
            self.runs.append((snippet, len(results) + 1, f"{answered}ran to {ended}"))
            self.variables.update(report["variables"])
            if report["final"]:
                return CodeOutput(output=report["final"][0], logs=result.output, is_final_answer=True)
            return CodeOutput(output=None, logs=result.output, is_final_answer=False)


def _checked(report, tools: dict) -> dict:
    """The sandbox's report, if it has the prelude's shape and asks only for tools we hold (the snippet runs in the
    same interpreter as the prelude, so it can write over the prelude's lists: its report is untrusted data)."""
    calls = report.get("calls") if isinstance(report, dict) else None
    if not (isinstance(calls, list) and all(isinstance(c, list) and len(c) == 2 and c[0] in tools
                                           and isinstance(c[1], str) for c in calls)
            and isinstance(report.get("final"), list) and isinstance(report.get("variables"), dict)):
        raise RuntimeError("the snippet's report is not what the sandbox's prelude writes: the snippet changed it, "
                           "or asked for a tool this agent does not have")
    return report


def _jsonable(value) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


class CourseCodeModel(Model):
    """A smolagents Model over a course LLM: messages as text with chat roles, the reply cut at a stop sequence."""

    def __init__(self, llm) -> None:
        super().__init__(model_id=getattr(llm, "model", "") or type(llm).__name__)
        self.llm = llm

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        sent = [{"role": ROLES.get(_role(m), _role(m)), "content": _text(m)} for m in messages]
        before = len(ledger(self.llm))
        reply = self.llm.think(sent)
        reply = reply if isinstance(reply, str) else ""
        for stop in stop_sequences or ():
            reply = reply.split(stop, 1)[0]
        calls = ledger(self.llm)[before:]
        usage = TokenUsage(sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls))
        return ChatMessage(MessageRole.ASSISTANT, reply, token_usage=usage)


def code_agent(llm, tools, max_steps: int = 3, executor=None) -> CodeAgent:
    """A CodeAgent with the executor's tools, its code run by `executor` (a new WasmExecutor by default)."""
    return CodeAgent(tools=[CourseTool(tools, t.name, t.description) for t in tools.tools.values()],
                     model=CourseCodeModel(llm), executor=executor or WasmExecutor(), max_steps=max_steps,
                     verbosity_level=LogLevel.OFF, name="CodeAgent")
