"""Worked solutions for chapter 15 (Several models and several agents). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

# 15.predict — 'bridge-babbage' asks for the birth year of the designer of the engine Ada Lovelace
# wrote for: Search[Ada Lovelace] names Charles Babbage, then Search[Charles Babbage]. The second
# call needs the first one's result, so nothing can run at the same time.
# Single ReAct: Search, Search, Finish: 3 calls.
# Supervisor: replies "researcher (Ada Lovelace)", "researcher (Charles Babbage)", "FINISH": 3; each
# researcher run is the search, then Finish: 2 + 2. 3 + 4 = 7.
# Agents as tools: the manager's turns Research, Research, Finish: 3, plus two researcher runs of 2: 7.
# Orchestrator-workers: plan 1 (one worker, 2 calls), plan 2 (one worker, 2 calls), plan 3 ([]), then the
# final answer: 4 lead calls + 4 = 8, every one waiting for the one before: 8 in sequence too.
prediction = {"single ReAct": (3, 3), "supervisor": (7, 7), "agents as tools": (7, 7),
              "orchestrator-workers": (8, 8)}


# 15.confidence — trust a run only when it finished and its answer is something its own Observations
# say: the answer's last number among theirs (thousands commas aside), or a text answer written in them.
# A stopped run, a misread or invented number, an invented name and a refusal all score 0 and go up to
# the strong model. (The package's `agentkit.routing.confidence` splits this into four signals.)
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def confidence(agent):
    if agent.stop_reason != "finished":
        return 0.0
    answer = str(agent.answer)
    seen = " ".join(step.observation for step in agent.trace if step.executed)
    numbers = NUMBER.findall(answer.replace(",", ""))
    if numbers:
        return 1.0 if numbers[-1] in NUMBER.findall(seen.replace(",", "")) else 0.0
    return 1.0 if answer.strip().lower() in seen.lower() else 0.0


# 15.break — the check asks whether each number of a report is one of the worker's own Observations.
# Wozniak's entry holds 1976 too (the year he co-founded Apple): write it where the birth year stands.
# Every number of the report was seen, so no alarm; the calculation reads the number after "born August
# 11, " and computes 1969 - 1976. Grounded is not correct.
report = ("Steve Wozniak (born August 11, 1976) is an American engineer who designed the Apple I and Apple II "
          "computers and co-founded Apple with Steve Jobs in 1976.")


# 15.q1 — c: the cascade judges the answer it would pass on; the router judges only the question.
# 15.q2 — a: the frontier measures structures on a stand-in; a prediction about real models stays one.
SOLUTIONS = {"15.predict": prediction, "15.confidence": confidence, "15.break": report,
             "15.q1": "c", "15.q2": "a"}
