"""agentkit: the helper package of the agent-paradigms course.

Four layers, each importing only from the ones below it (tests/test_structure.py holds it to this):
the foundations (tokens, parsing, tools, data, batch, game24, lessons, sandbox, world, the MCP server
and client) know no model; the LLM layer (protocol and ledger, the stand-in engine `ScriptedLLM`, the
openai client, the local server, replay, the MiniLM embedder and the shipped vectors) knows no agent; the paradigms (react, plan, reflection,
reflexion, tot, rewoo, act, hybrid, native, runtime, context, tasks, evaluate, approval, pausable, routing, teams)
own their prompts and never import the stand-in's rules; the course on top (`scripts/`, the stand-in's
rules, one module per chapter; `get_llm`, the AP_MODE switch; the sick stand-ins, the loopback server, the
widgets) puts them together for the notebooks. An agent given no LLM asks the LLM layer for a
default, which `get_llm` registers here.
"""
from .llm import CallRecord, LLMError, MissingSettingError, OpenAIChatLLM, Rule, ScriptedLLM, ledger_totals
from .modes import get_llm
from .tools import ToolExecutor, calculator, default_executor, search

__version__ = "0.1.0"
