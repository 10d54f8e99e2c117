"""Worked solutions for chapter 04 (Plan-and-Solve, then Plan-and-Execute). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import json
import re

# 04.predict — count per step try, not per step. On this task every try of a step is a small
# ReAct of two calls (an action, then a finish; a failed try finishes with "I cannot") and one
# tool call; the plan and each replan are one call each.
# - step 2 fails once, max_attempts=1: one try in total, so the failure goes straight to the
#   planner. Plan 1, step 1 2, step 2 2 (fails), replan 1, new step 2 2, step 3 2: 10 calls,
#   4 tool calls. (With the default max_attempts=2 the retry would have absorbed it: 9 calls.)
# - step 2 always fails, max_attempts=3: three failed tries (6 calls, 3 tool calls), then one
#   replan whose new step searches "Turing" and gets through: 1 + 2 + 6 + 1 + 2 + 2 = 14, 6 tools.
# - step 3 always fails, max_replans=0: two failed tries of step 3, and no budget to replan, so
#   no planner call follows: 1 + 2 + 2 + 4 = 9 calls, 4 tool calls, and no answer.
prediction = {"step 2 fails once, max_attempts=1": (10, 4),
              "step 2 always fails, max_attempts=3": (14, 6),
              "step 3 always fails, max_replans=0": (9, 4)}


# 04.validate — find the list the way a person would read the reply: inside a fence first, then
# from each "[" in turn (a bracket in the prose is not the list), with the JSON decoder deciding.
# Then validate, and quote the reply in every error: the message is for whoever debugs the
# planner, and "idx cannot be negative" tells them nothing.
def my_parse_plan(raw, max_steps=10):
    decoder = json.JSONDecoder()
    chunks = re.findall(r"```(?:json)?\s*(.*?)```", raw, re.DOTALL) + [raw]
    items = None
    for chunk in chunks:
        for bracket in re.finditer(r"\[", chunk):
            try:
                value, _ = decoder.raw_decode(chunk, bracket.start())
            except ValueError:
                continue
            if isinstance(value, list):
                items = value
                break
        if items is not None:
            break
    if items is None:
        raise ValueError(f"The planner's reply holds no JSON list of steps: {raw[:200]!r}")
    if not 1 <= len(items) <= max_steps:
        raise ValueError(f"The plan has {len(items)} steps; a plan needs 1 to {max_steps}: {raw[:200]!r}")
    steps = []
    for item in items:
        text = item.get("task") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"Plan step {item!r} is not a task: {raw[:200]!r}")
        steps.append(text.strip())
    return steps


# 04.replan — count tries per plan. Step 2 sends Search[Alan Turing]; with max_attempts=2 two
# failures use up its tries and the planner replans. The new step searches "Turing" alone, so the
# text "Turing" catches it too: two more failures and the second replan. The third plan searches
# "Turing" again: with 4 failures in all it gets through (5 would too: one failed try, one good).
# failures=None would outlast the budget (max_replans=2): the run stops with no answer.
injection = {"tool": "Search", "text": "Turing", "failures": 4}


SOLUTIONS = {"04.predict": prediction, "04.validate": my_parse_plan, "04.replan": injection,
             "04.q1": "b", "04.q2": "d"}
