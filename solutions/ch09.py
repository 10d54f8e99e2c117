"""Worked solutions for chapter 09 (Hybrids and cost). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

# 09.predict — 'pioneers-mean' needs four look-ups and one Calculate: five tool calls.
# ReAct: one LLM call per step, and max_steps=5 ends the run after the fifth tool call, before
# the turn that would Finish: (5, 5), a stop by max_steps.
# ReWOO: a planner call and a solver call, whatever the plan: (2, 5).
# Plan-and-Execute: a planner call, then each of the 5 steps is a small ReAct of two calls (the
# action, then Finish): 1 + 10 = 11 LLM calls, 5 tool calls.
# Hybrid: a planner call; sub-goal 1 holds the four look-ups, a ReAct of 5 calls (four actions,
# then Finish), and the runtime of chapter 08 makes its drift checkpoint after the third tool
# step (one more call); sub-goal 2 is Calculate then Finish, 2 calls: 1 + 5 + 1 + 2 = 9.
prediction = {"ReAct": (5, 5), "ReWOO": (2, 5), "Plan-and-Execute": (11, 5), "Hybrid": (9, 5)}


# 09.plan — walk the plan line by line, as parse_rewoo_plan does. Only evidence lines count
# (a Plan: line's words are notes); each reference in an input must name a variable defined on
# an EARLIER line, which rules out forward references, missing evidence and a line using its own
# result; a variable defined twice is refused; so is a reply with no evidence line. Read whole
# numbers with a regex, so #E10 is never mistaken for #E1.
EVIDENCE = re.compile(r"#E(\d+)\s*=\s*\w+\s*\[(.*)\]")


def check_plan(text):
    defined = []
    for line in text.splitlines():
        match = EVIDENCE.search(line)
        if match is None:
            continue
        variable, tool_input = f"#E{match.group(1)}", match.group(2)
        if variable in defined:
            return f"{variable} is defined twice"
        for number in re.findall(r"#E(\d+)", tool_input):
            if f"#E{number}" not in defined:
                return f"#E{number} is used before it exists (defined so far: {defined or 'none'})"
        defined.append(variable)
    return None if defined else "no evidence line (#E1 = Tool[input]) in the reply"


# 09.break — every reference points to an earlier line, so the validator has nothing to refuse.
# But the planner never sees a result: it can look up what the question needs (both birth years),
# and then only write the results' names where their numbers should go. Sections 2 and 7 print the
# plan that subtracts the two results; this one compares the two ages instead, (2024 - #E1) -
# (2024 - #E2), which hands the same two paragraphs to the calculator inside a longer expression.
# The stand-in's solver then has no number to report, and says so. The step that goes wrong is the
# one that needs a piece (the year) of an earlier result (a paragraph).
plan = ("Plan: find when Wozniak was born.\n#E1 = Search[Steve Wozniak]\n"
        "Plan: find when Torvalds was born.\n#E2 = Search[Linus Torvalds]\n"
        "Plan: how much older the first is: his age now minus the other's.\n#E3 = Calculate[(2024 - #E1) - (2024 - #E2)]")


# 09.noise — the rate is per reply, the same for every role. Plan-and-Execute makes about five
# model calls per task to ReAct's three (section 5's table), so it meets more errors per task,
# and a misread inside one step is carried into the next. At rate 0 it is perfect (100% against
# ReAct's 92%); section 5's curves already cross before the first printed rate, 0.05, so a rate
# below it, such as 0.04, flips the ranking. Far up (0.5 and more) both sit near the floor and
# the gap closes again.
rate = 0.04


SOLUTIONS = {"09.predict": prediction, "09.plan": check_plan, "09.break": plan, "09.noise": rate,
             "09.q1": "b", "09.q2": "c"}
