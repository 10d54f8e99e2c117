"""Worked solution for the capstone. Open this after you have tried; many other designs work.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
from agentkit.hybrid import ReflectiveReActAgent
from agentkit.rewoo import ReWOOAgent
from agentkit.tasks import is_refusal
from agentkit.tools import default_executor


# The reasoning, from the baselines' table and chapter 09's curves:
# - ReWOO is the cheapest within the budget (two calls per task, whatever the plan) and, with the fewest
#   calls, meets the fewest errors at a per-reply error rate. It fails where it must plan blind (a bridge
#   question, a result feeding the next search) and then says it cannot answer.
# - Reflection + ReAct loses least among the loops as errors rise (its reviewer sends wrong runs round again),
#   but it costs about 900 tokens per task, at the budget.
# So: a cascade. ReWOO first; only when ReWOO refuses (or its plan is malformed), Reflection + ReAct on the same
# client and tools, so both runs land in the ledgers the harness reads. The mean cost stays under the budget
# because the dear paradigm runs only on the tasks the cheap one cannot do. One risk remains: an *impossible*
# task that ReWOO correctly refuses is sent on to the second agent, which may then answer it wrongly.
class Cascade:
    def __init__(self, llm):
        self.llm, self.tools, self.stop_reason = llm, default_executor(), ""

    def run(self, question, verbose=False):
        cheap = ReWOOAgent(self.llm, self.tools)
        try:
            answer = str(cheap.run(question, verbose=False))
        except Exception:  # a plan the parser refused: let the second agent try
            answer = "Unknown"
        self.stop_reason = "finished"
        if not is_refusal(answer):
            return answer
        careful = ReflectiveReActAgent(self.llm, self.tools, max_steps=6)
        answer = careful.run(question, verbose=False)
        self.stop_reason = careful.stop_reason
        return answer


def build(llm):
    return Cascade(llm)


SOLUTIONS = {"14.capstone": build}
