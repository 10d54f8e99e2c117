"""Act-only: the ReAct loop without Thought lines.

The same loop, parser and fuses as `agentkit.react.ReActAgent`; only the contract changes.
The role prompt asks for one Action line per turn and no reasoning, and any Thought text a
model writes anyway is dropped before the step enters the history, so the history the
model sees is Actions and Observations only. `dropped_thoughts` counts the replies that
carried one. Fewer tokens per step; nowhere for the model to write down what it learned.
"""
from __future__ import annotations

from .parsing import Parsed
from .react import ReActAgent

ACT_MARKER = "You are an Act-only agent"

ACT_ROLE_PROMPT = ACT_MARKER + """: you answer a question by taking actions, without writing any reasoning.
Each turn, write exactly one line and then stop:
Action: ToolName[input]
The system runs it and writes the Observation for you; never write an Observation yourself.
When you know the answer, write: Action: Finish[your answer]

Tools:
{tools}"""


class ActOnlyAgent(ReActAgent):
    """ReActAgent with an actions-only contract: no Thought is asked for, kept, or re-sent."""

    dropped_thoughts = 0

    def messages(self, question: str, hints: str = "", steps_left=None) -> list[dict]:
        messages = super().messages(question, hints, steps_left)
        messages[0] = {"role": "system", "content": ACT_ROLE_PROMPT.format(tools=self.tools.describe())}
        return messages

    def run(self, question: str, verbose: bool = True, hints: str = "") -> str:
        self.dropped_thoughts = 0
        return super().run(question, verbose, hints)

    def _decide(self, messages: list[dict]) -> tuple[Parsed, str]:
        parsed, reply = super()._decide(messages)
        if parsed.thought:
            self.dropped_thoughts += 1
            parsed.thought = ""
        return parsed, reply
