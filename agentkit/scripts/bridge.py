"""Stand-in rules for chapter 16: the framework prompts the course's rules do not answer already.

* smolagents' last try at max_steps (its own final-answer prompt, no tools): for a task of the set, the
  stand-in answers as after chapter 03's fallback: from what the history shows, the gold answer if the
  Observations hold it, else "Unknown" (it never guesses).
* `create_agent` on a real chat model (`CHAT_MARKER`, native tool calls): chapter 11's questions, one call
  per turn, as chapter 11's native rules do; once the answer is in a tool result, a reply with the answer
  and no tool call (create_agent has no Finish tool). The checkpoint with SEND_TASK added: then one reply
  with two SendMessage calls, one per recipient, and after their results (or a refusal) the answer.
* smolagents' CodeAgent (`SMOLAGENTS_CODE_MARKER`) on the checkpoint: one snippet that searches, reads the
  year from the text, calculates and calls final_answer.
"""
from __future__ import annotations

import json

from ..bridge import CHAT_MARKER, RECIPIENTS, SEND_TASK, SMOLAGENTS_CODE_MARKER, SMOLAGENTS_FALLBACK_MARKER
from ..protocol import AssistantTurn
from ..scripted import Rule
from .key_paths import final_answer, task_in, visible
from .native import TASKS, call, next_move, native_turn
from .react import CHECKPOINT_QUESTION


def _asked(prompt: str) -> bool:
    return SMOLAGENTS_FALLBACK_MARKER in prompt and task_in(prompt) is not None


def _chat_reply(task):
    def reply(prompt: str) -> AssistantTurn:
        thought, tool, value = next_move(task, prompt)
        return AssistantTurn(value) if tool == "Finish" else native_turn(thought, tool, value)
    return reply


SENT = "done: send to"  # what SendMessage returns (agentkit.world)


def _send_reply(prompt: str) -> AssistantTurn:
    thought, tool, value = next_move(TASKS[0], prompt.split(SEND_TASK)[0] + prompt.split(SEND_TASK, 1)[-1])
    if tool != "Finish":
        return native_turn(thought, tool, value)
    sent = [r for r in RECIPIENTS if f"{SENT} {r}" in prompt]
    if len(sent) == len(RECIPIENTS):
        return AssistantTurn(f"{value} days; sent to {' and '.join(RECIPIENTS)}.")
    if "SendMessage(" in prompt:  # asked already, and not every message went out: a person said no
        return AssistantTurn(f"{value} days; not sent to {', '.join(r for r in RECIPIENTS if r not in sent)}.")
    return AssistantTurn(f"It is {value} days; I send it to both.", [
        call("SendMessage", json.dumps({"input": f"{r}: {value} days from 1955 to 2024"})) for r in RECIPIENTS])


CODE = '''Thought: I look him up, read the year from the text, and compute the days, all in one snippet.
<code>
import re
bio = Search("Steve Jobs")
year = int(re.search(r"\\b(1[89]\\d\\d)\\b", bio).group(1))
days = Calculate(f"(2024 - {year}) * 365")
print(f"born {year}: {days} days")
final_answer(days)
</code>'''


RULES = [
    Rule(_asked, lambda p: final_answer(task_in(p), visible(p)), name="smolagents final answer"),
    Rule(lambda p: CHAT_MARKER in p and SEND_TASK in p, _send_reply, name="chat model: answer, then send"),
    *[Rule(lambda p, q=t.question: CHAT_MARKER in p and f"Question: {q}" in p, _chat_reply(t), name=f"chat model {i}")
      for i, t in enumerate(TASKS)],
    Rule(lambda p: SMOLAGENTS_CODE_MARKER in p and CHECKPOINT_QUESTION in p, CODE, name="CodeAgent: one snippet"),
]
