"""agentkit: the helper package of the agent-paradigms course."""
from .llm import CallRecord, LLMError, MissingSettingError, OpenAIChatLLM, Rule, ScriptedLLM, get_llm
from .tools import ToolExecutor, calculator, default_executor, search

__version__ = "0.1.0"
