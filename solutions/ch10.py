"""Worked solutions for chapter 10 (Evaluation). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import math

# 10.predict — change one thing (two more steps) and reason task by task. A run that finished
# within five steps takes the same actions with seven: nothing breaks. The multi-hop failures of
# version 1 are the three tasks whose key path holds five tool calls (section 6's review names
# them): max_steps=5 ended them before the Finish; with seven they finish, right: 3 fixed.
# Their runs now take 6 steps. 15 values, position 0.95 * 14 = 13.3 of the sorted steps: the
# 14th and 15th values are both 6, so the P95 is 6.
prediction = {"broken": 0, "fixed": 3, "P95 steps, version 3": 6.0}


# 10.p95 — numpy's default ("linear"): sort, take position p = 0.95 * (n - 1) counted from 0,
# and go the fractional part of the way from the value below to the value above. Nearest-rank
# (pick one value) differs as soon as the two neighbours differ.
def p95(values):
    ordered = sorted(values)
    position = 0.95 * (len(ordered) - 1)
    below, above = math.floor(position), math.ceil(position)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


# 10.compare — pair each task with itself, by task_id: zip pairs run i with run i, which is
# noise as soon as one report lists its tasks in another order. Broken: right before, wrong
# after; fixed: the other way round.
def compare_runs(before, after):
    after_by_task = {run.task_id: run for run in after}
    pairs = [(old, after_by_task[old.task_id]) for old in before if old.task_id in after_by_task]
    broken = [old.task_id for old, new in pairs if old.correct and not new.correct]
    fixed = [old.task_id for old, new in pairs if new.correct and not old.correct]
    return broken, fixed


# 10.break — the numeric checker reads the LAST number of the answer, and nothing else (a
# refusal aside). So an answer that claims 1905 and then mentions the gold to dismiss it is
# counted right, though a person reads "1905" as the answer.
answer = "She was born in 1905 (some sources wrongly say 1906)"


SOLUTIONS = {"10.predict": prediction, "10.p95": p95, "10.compare": compare_runs, "10.break": answer,
             "10.q1": "d", "10.q2": "b"}
