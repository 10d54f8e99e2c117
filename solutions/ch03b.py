"""Worked solutions for chapter 03b (Agents meet a real model). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

# 03b.count — read the raw replies of section 2 and section 3, not the answers.
# Chat: no reply has an Action line of its own, so parse_reply reads none. The third reply copies
# the loop's format reminder back, "Observation: ..." and "Action: ToolName[input]" included:
# naive_parse takes everything after "Action:" and calls a tool named ToolName; parse_reply meets
# the invented Observation first and keeps nothing. Few-shot: Search, Calculate and Finish, all
# three readable by both parsers (they disagree about the Finish answer's text, not about it
# being an action).
prediction = {"chat + role prompt": (0, 1), "few-shot completion": (3, 3)}


# 03b.flag — an Observation the model wrote is a LINE that starts with the label: the loop adds
# the real ones after the reply. The word inside a thought or a tool input is not one, so anchor
# at the start of each line (re.MULTILINE); allow spaces, any case, and Markdown ** or backticks.
OBSERVATION_LINE = re.compile(r"^[ \t>*`_]*observation", re.IGNORECASE | re.MULTILINE)


def invents_observation(reply):
    return bool(OBSERVATION_LINE.search(str(reply)))


# 03b.break — start from the recorded few-shot reply of step 2 and continue it the way SmolLM2
# continued its Finish reply in step 3 ("\n\nNow the real question."). naive_parse takes everything
# after "Action:" to the end of the reply, so the calculator gets the bracket and the chatter
# and fails; parse_reply keeps the Action line's brackets only and the calculator answers 133225.
reply = ("Thought: He was born in 1955. Years times 365 gives the days.\n"
         "Action: Calculate[365 * 365]\n\nNow the real question.\n")


# 03b.q1 — c: the fuse compares actions; a model that never writes one only meets max_steps.
# 03b.q2 — d: CompletionLLM sends stop sequences; generation ends where an Observation would start.
SOLUTIONS = {"03b.count": prediction, "03b.flag": invents_observation, "03b.break": reply,
             "03b.q1": "c", "03b.q2": "d"}
