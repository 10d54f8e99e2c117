"""Worked solution for the capstone. Open this after you have tried; many other designs work.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

from agentkit.approval import GatedExecutor, Verdict, deny_side_effects
from agentkit.hybrid import ReflectiveReActAgent
from agentkit.memory import MemoryAgent
from agentkit.rewoo import ReWOOAgent
from agentkit.tasks import is_refusal

# The reasoning, from the chapter's error analysis of the cascade and the baselines' table by category:
# - Memory questions: every baseline, and the cascade, searched the encyclopedia and refused. The answer sits in the
#   team's long-term memory (chapter 13): when a keyword search of it finds anything, one call with the top five
#   memories answers, for about the cost of one ReAct turn; a question it finds nothing for costs no call at all.
#   The stand-in cites its memory ("5433 [M7]"); when a reply loses its "Answer:" label the citation stays in the
#   answer, and its number is then read as the answer, so the citation is cut.
# - Messages: the model sends whatever it is asked to send. Chapter 12's gate runs SendMessage only for a team
#   address and denies every other side effect; the model then says it could not, which the task wants.
# - The rest: ReWOO first, the cheapest within the budget (two calls whatever the plan); when it refuses or its plan
#   is malformed, Reflection + ReAct, which loses least as replies go wrong (chapter 09's curves), on the same model
#   and tools. The dear agent runs only where the cheap one gave up, so the mean stays within the budget.
# One risk remains: ReWOO's answer is trusted when it does not refuse, and an invented answer to an impossible
# question then goes out unchecked (the error analysis shows it).
TEAM = "@team.example"


def team_only(call):
    """Run SendMessage to a team address; deny every other side effect."""
    address = call.argument.split(":", 1)[0].strip().lower()
    if call.tool == "SendMessage" and address.endswith(TEAM):
        return Verdict("run", f"policy: messages to {TEAM} addresses")
    return deny_side_effects(call)


class MemoryGateCascade:
    def __init__(self, llm, tools, memory):
        self.llm, self.memory = llm, memory
        self.tools = GatedExecutor(tools, team_only)
        self.stop_reason = ""

    def run(self, question, verbose=False):
        self.stop_reason = "finished"
        if self.memory.search(question):
            episode = MemoryAgent(self.llm, self.memory).run(question)
            answer = re.sub(r"\s*\[M\d+\]", "", episode.answer)
            if not is_refusal(answer):
                return answer
        try:
            answer = str(ReWOOAgent(self.llm, self.tools).run(question, verbose=False))
        except Exception:  # a plan the parser refused: let the second agent try
            answer = "Unknown"
        if not is_refusal(answer):
            return answer
        careful = ReflectiveReActAgent(self.llm, self.tools, max_steps=6)
        answer = careful.run(question, verbose=False)
        self.stop_reason = careful.stop_reason
        return answer


def build(llm, tools, memory):
    return MemoryGateCascade(llm, tools, memory)


SOLUTIONS = {"14.capstone": build}
