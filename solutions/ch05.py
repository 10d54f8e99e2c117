"""Worked solutions for chapter 05 (Reflection you verify, in a sandbox). Open this after you have tried.

Run every solution against its check: `python -m agentkit.exercises solutions`.
"""
import re

# 05.predict — a round is one draft and its review: 2 LLM calls (the first draft, or a revision,
# then the review). The loop ends at the first review that passes, or after max_iterations
# reviews, WITHOUT asking for one more revision. Picky wants one fix: draft 2 passes, (2, 4);
# the cap of 4 is never reached. Fussy wants three fixes, so it would pass draft 4, but the cap
# of 3 stops it first: (3, 6), not passed. Never satisfied runs to the cap: (5, 10).
prediction = {"picky (wants 1 fix), max_iterations=4": (2, 4),
              "fussy (wants 3 fixes), max_iterations=3": (3, 6),
              "never satisfied, max_iterations=5": (5, 10)}


# 05.verdict — the contract is one place: the last non-empty line, and all of it. A search for
# "PASS" anywhere passes "cannot pass"; a verdict followed by more text may have been taken back.
# fullmatch (not search) refuses "VERDICT: PASS? no."; ** around the line is Markdown, allowed.
# An empty review has no last line: check before indexing, so the parser never raises.
VERDICT = re.compile(r"\**\s*VERDICT\s*:\s*(PASS|REVISE)\s*\**", re.IGNORECASE)


def my_verdict(review):
    lines = [line.strip() for line in str(review).splitlines() if line.strip()]
    match = VERDICT.fullmatch(lines[-1]) if lines else None
    return match.group(1).lower() if match else "missing"


# 05.break — section 3's chdir-then-write, aimed at TARGET: change into TARGET's folder, then write
# by a relative name. The process sandbox's guard rail resolves the name against the run's own
# folder, sees nothing wrong, and the file appears outside. Inside the engine's folder it works too
# (TARGET has no folder there: chdir('.') stays put); aimed at a folder of this machine the engine
# answers with an error at the chdir, because that folder does not exist for the code. A plain
# open(TARGET, 'w') would not do: the guard rail refuses that one itself, no wall needed.
escape = ("import os\n"
          "os.chdir(os.path.dirname(TARGET) or '.')\n"
          "with open(os.path.basename(TARGET), 'w') as f:\n"
          "    f.write('from inside the sandbox')")


# 05.q1 — b: revise_messages carries the task, the latest draft and the latest review, nothing older.
# 05.q2 — c: the engine maps one folder; any other path does not exist for the code.
SOLUTIONS = {"05.predict": prediction, "05.verdict": my_verdict, "05.break": escape, "05.q1": "b", "05.q2": "c"}
