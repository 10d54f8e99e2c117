"""Chapter 05's exercises: a prediction read from the ledgers, a verdict parser to build, a sandbox wall to hit,
two questions."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from ..i18n import tr, tr_later
from ..llm import Rule, ScriptedLLM
from ..modes import get_llm
from ..reflection import draft_messages, extract_code, review_messages, revise_messages
from ..wasm_sandbox import run_code
from .. import sandbox
from ..widgets.reflection import reviewer_run
from . import Fail, call, cases, exercise, question, reference, shown
from .predictions import Prediction, prediction

# --- 05.predict: rounds and LLM calls of a capped reflection run, from the ledgers ---------------

PREDICT_RUNS = {"picky (wants 1 fix), max_iterations=4": ("picky (wants 1 fix)", 4),
                "fussy (wants 3 fixes), max_iterations=3": ("fussy (wants 3 fixes)", 3),
                "never satisfied, max_iterations=5": ("never satisfied", 5)}


def reflection_costs() -> dict:
    """(rounds, LLM calls) of the panel's stand-in reviewer for each run, counted from the ledgers."""
    costs = {}
    for name, (strictness, max_iterations) in PREDICT_RUNS.items():
        report = reviewer_run(strictness, max_iterations, llm=get_llm("fake"))
        costs[name] = (report["rounds"], report["totals"]["calls"])
    return costs


WHY = {
    "picky (wants 1 fix), max_iterations=4": "the first draft gets one fix asked, the second passes: 2 rounds of "
    "a draft and its review, 4 calls; max_iterations is a cap, not a target",
    "fussy (wants 3 fixes), max_iterations=3": "the fussy reviewer would pass the 4th draft, but max_iterations=3 "
    "caps the drafts: 3 rounds, 2 calls each, and the last draft comes back not passed",
    "never satisfied, max_iterations=5": "every round is one writer call and one review; after the 5th review the "
    "loop returns the last draft without asking for another revision: 5 rounds, 10 calls",
}


prediction("05.predict", "Rounds and calls of a capped loop",
           "Set `prediction` to {run: (rounds, LLM calls)} for the three runs, before running anything.",
           Prediction(truth=reflection_costs, labels=("rounds", "LLM calls"), why=WHY,
                      pointer="a round is one draft and its review; the loop ends at the first review that passes, "
                              "or at max_iterations, without asking for one more revision (sections 2 and 3)."))


# --- 05.verdict: a verdict parser that never raises -------------------------------------------

VERDICT_CASES = [  # (review, what the case is): verdict_truth decides, after your answer
    ("Notes: fine.\nVERDICT: PASS", tr_later("a review that ends with the pass line")),
    ("Notes: the loop is slow.\nVERDICT: REVISE", tr_later("a review that ends with the revise line")),
    ("This code cannot pass: it is only a stub.", tr_later("a review with 'pass' in its prose, no verdict line")),
    ("VERDICT: PASS\nActually, one more thing: n < 2 fails.", tr_later("a verdict that is not the last line")),
    ("VERDICT: PASS? no.", tr_later("a last line that is more than a verdict")),
    ("Notes: fine.\n  verdict:  pass  \n\n", tr_later("the verdict line in lower case, with spaces and blank lines "
                                                      "after")),
    ("Notes: fine.\n**VERDICT: PASS**", tr_later("the verdict line in Markdown bold")),
    ("", tr_later("an empty review")),
    ("  \n\n  ", tr_later("a review of blank lines only")),
]
_VERDICT_LINE = re.compile(r"\**\s*verdict\s*:\s*(pass|revise)\s*\**", re.IGNORECASE)


@reference
def verdict_truth(review: str) -> str:
    """'pass' or 'revise' when the last non-empty line is the verdict line, else 'missing'."""
    lines = [line.strip() for line in str(review).splitlines() if line.strip()]
    found = _VERDICT_LINE.fullmatch(lines[-1]) if lines else None
    return found.group(1).lower() if found else "missing"
VERDICT_HINTS = {
    2: tr_later("look only at the last non-empty line, never for the word anywhere (section 1's sloppy check)."),
    3: tr_later("the verdict counts only on the LAST non-empty line: anything after it may take it back."),
    4: tr_later("the whole last line must be the verdict: match it with ^ and $ (a full match), not a search."),
    5: tr_later("skip blank lines (line.strip()), and ignore case and the spaces around the words."),
    6: tr_later("a model often wraps the line in Markdown: allow ** around it, as parse_verdict does."),
    7: tr_later("a review with no lines has no verdict: return 'missing', never index an empty list."),
    8: tr_later("blank lines are no lines: a review of spaces has no verdict, and must not raise."),
}
H_UNSEEN = (tr_later("a review drawn for this check: only its last non-empty line counts, and all of it must be the "
                     "verdict line (any case, spaces around the words, ** around the line); anything else is 'missing'."))
PROSE = ("Notes: the loop is fine.", "This cannot pass as it is.", "The code passes n = 10.", "Revise the name.",
         "VERDICT: PASS is what I would like to say, but no.", "One more thing: n < 2 fails.")


def unseen_review(kind: str) -> str:
    """A review drawn for this check that holds the verdict `kind` ("pass", "revise" or "missing")."""
    rng = cases()
    lines = [rng.choice(PROSE) for _ in range(rng.randint(0, 3))]
    word = {"pass": "PASS", "revise": "REVISE"}.get(kind, rng.choice(["PASS", "REVISE"]))
    line = f"VERDICT{rng.choice([':', ' :', ': '])}{rng.choice(['', ' '])}{rng.choice([word, word.lower(), word.title()])}"
    if kind != "missing":
        bold = rng.random() < 0.3
        lines.append(("**" if bold else rng.choice(["", "  "])) + line + ("**" if bold else rng.choice(["", " "])))
        lines += rng.choice([[], [""], ["", "   "]])
    elif rng.random() < 0.5:
        lines += [line, rng.choice(PROSE)]  # a verdict taken back by a line after it
    else:
        lines.append(line + rng.choice(["? no.", " (maybe)", ", mostly"]))
    return "\n".join(lines)


def unseen_reviews() -> list:
    """(review, what) drawn for this check: two of each verdict and four without one, in an order drawn too."""
    kinds = ["pass", "revise", "missing", "missing"] * 2
    cases().shuffle(kinds)
    return [(unseen_review(kind), tr_later("a review drawn for this check")) for kind in kinds]


CANNOT_PASS = "This code cannot pass: it is only a stub, it returns nothing."
PRIME_TASK = "Write a Python function find_primes(n) that returns the list of all primes up to and including n."


def run_with_verdict(llm, verdict, max_iterations: int = 3) -> tuple:
    """Section 2's ReflectionAgent loop, asking `verdict(review)` instead of parse_verdict; (passed, rounds)."""
    draft = extract_code(llm.think(draft_messages(PRIME_TASK)))
    for round_number in range(1, max_iterations + 1):
        review = llm.think(review_messages(PRIME_TASK, draft))
        said = call(verdict, review, case=tr("the live run, round {round}: {review}", round=round_number,
                                             review=repr(review[-60:])),
                    hint=VERDICT_HINTS[2])
        if said == "pass":
            return True, round_number
        if round_number < max_iterations:
            draft = extract_code(llm.think(revise_messages(PRIME_TASK, draft, review)))
    return False, max_iterations


@exercise("05.verdict", "build", "A verdict parser that never raises",
          "Write `my_verdict(review)`: 'pass' or 'revise' from the review's last non-empty line, else 'missing'; "
          "agentkit's parse_verdict is refused.", forbid=("agentkit.reflection:parse_verdict",), objects=False)
def _verdict(verdict):
    if not callable(verdict):
        raise Fail(tr("your answer"), tr("a function my_verdict(review) -> str"), repr(verdict),
                   tr("define it with def."))
    drawn = unseen_reviews()
    for number, (review, what) in enumerate(VERDICT_CASES + drawn):
        hint = VERDICT_HINTS.get(number, H_UNSEEN if number >= len(VERDICT_CASES) else
                                 tr("return exactly 'pass', 'revise' or 'missing', in lower case."))
        case = tr("{what}: {review}", what=tr(what), review=repr(review))
        said = call(verdict, review, case=case, hint=hint)
        expected = verdict_truth(review)
        if said != expected:
            raise Fail(case, repr(expected), shown(said), hint)
    sloppy = ScriptedLLM([Rule("Code to review", CANNOT_PASS), Rule("Task:", "```python\ndef find_primes(n): ...\n```")])
    sloppy_passed, sloppy_rounds = run_with_verdict(sloppy, verdict)
    healthy = get_llm("fake")
    passed, rounds = run_with_verdict(healthy, verdict)
    if sloppy_passed or not passed:
        raise Fail(tr("the live runs"), tr("the unhappy reviewer never passes; the prime stand-in passes"),
                   tr("unhappy reviewer passed: {sloppy}; prime stand-in passed: {passed}", sloppy=sloppy_passed,
                      passed=passed), VERDICT_HINTS[2])
    return tr("The unhappy reviewer ('{review}...') ran to max_iterations, {rounds} rounds and {calls} calls, never "
              "passed; the prime stand-in passed in round {round} ({healthy} calls, its ledger). A narrow signal costs "
              "rounds when the reviewer forgets the line, and never passes a draft by accident.",
              review=CANNOT_PASS[:22], rounds=sloppy_rounds, calls=len(sloppy.calls), round=rounds,
              healthy=len(healthy.calls))


# --- 05.break: a write the WebAssembly engine refuses --------------------------------------------


def _write_at(code: str, target: str, expression: str | None = None):
    return run_code(f"TARGET = {target!r}\n{code}", expression, timeout_s=5)


def _past_the_guard(code: str):
    """(planted?, what the process sandbox said) for `code` aimed at a fresh folder of this machine, guard rail on;
    None where the process sandbox cannot run (it needs POSIX)."""
    if os.name != "posix":
        return None
    with tempfile.TemporaryDirectory(prefix="not-your-home-") as folder:
        Path(folder).chmod(0o777)  # writable by anyone, as your own files are to code that runs as you (section 4)
        target = str(Path(folder) / "planted.txt")
        said = sandbox.run_code(f"TARGET = {target!r}\n{code}", timeout_s=10)
        return Path(target).exists(), said.summary().replace(folder, "<a folder outside>")[:140], said.ok


@exercise("05.break", "break", "Hit the engine's wall",
          "Set `escape` to code that writes a file at the path TARGET (the check sets it) past the process "
          "sandbox's guard rail, as section 4's chdir-then-write does; the engine must refuse it.", objects=False,
          fork=False)  # the answer is text that runs only inside the two sandboxes, never in the kernel: a forked
# child would protect nothing, and would start the engine's worker process again on every check
def _break(escape):
    if not isinstance(escape, str):
        raise Fail(tr("your answer"), tr("a str: the code to run"), type(escape).__name__,
                   tr("write the code as a string."))
    inside = _write_at(escape, "planted.txt", "open(TARGET).read()")
    if not inside.ok or not inside.value:
        raise Fail(tr("TARGET = 'planted.txt', a name inside the engine's own folder"),
                   tr("your code writes some text there (the check reads it back)"), inside.summary()[:160],
                   tr("write something into the file named by TARGET: the wall must stop a real write, not code that "
                      "fails on its own."))
    guard = _past_the_guard(escape)
    if guard is not None and not guard[0]:
        raise Fail(tr("TARGET in a folder outside, the process sandbox with its guard rail on (section 4)"),
                   tr("your write gets past the guard rail (the file appears)"),
                   tr("ran, and wrote no file at TARGET: {said}", said=guard[1]) if guard[2] else
                   tr("refused: {said}", said=guard[1]),
                   tr("write to TARGET itself: the check sets it to a path in a folder outside.") if guard[2] else
                   tr("the guard rail refuses a write it sees going outside the run's folder: that is the easy case, "
                      "and no wall is needed for it. The engine's wall matters for what the guard misses: section 4 "
                      "changes the working directory first, then writes by a relative name."))
    with tempfile.TemporaryDirectory(prefix="not-the-sandbox-") as outside:
        target = str(Path(outside) / "planted.txt")
        refused = _write_at(escape, target)
        planted = Path(target).exists()
        answered = refused.summary().replace(outside, "<a folder outside>")[:140]
    if planted:
        raise Fail(tr("TARGET outside the folder"), tr("the engine refuses the write"), tr("the file was written"),
                   tr("report this: the engine should map only its own folder."))
    if refused.ok:
        raise Fail(tr("TARGET outside the folder"), tr("an error from the engine"), refused.summary()[:160],
                   tr("write to TARGET itself: a write inside the engine's folder is allowed."))
    where = (tr("The process sandbox, guard rail on, let it plant the file in a folder of this machine; ")
             if guard else tr("(The process sandbox needs POSIX, so the check could not try its guard rail here.) "))
    return tr("Inside its own folder your code wrote {wrote}. {where}aimed at such a folder, the engine answered "
              "{answered}, and nothing was planted there. A guard rail asks whether an operation is allowed; in the "
              "engine that folder does not exist (section 4).", wrote=repr(str(inside.value)[:40]), where=where,
              answered=repr(answered))


# --- concept questions ------------------------------------------------------------------------

question("05.q1", "What does the writer's prompt carry when it writes draft 4 of a run that has not passed yet?", {
    "a": ("The task, every earlier draft and every earlier review.", False,
          "that is how ReAct re-sends its history; section 3's table shows drafts [3] and reviews [3] carried."),
    "b": ("The task, draft 3 and the review of draft 3.", True,
          "revise_messages re-sends the latest draft and the latest review only; that text is the loop's whole state."),
    "c": ("Only the review of draft 3: the model remembers its own drafts.", False,
          "the model is stateless: a draft it is not sent again does not exist for it."),
    "d": ("The task and draft 3: the review stays with the reviewer.", False,
          "section 2 checks the ledger: the review's text is in the revision prompt."),
}, hint="section 2 reads the revision prompt from the ledger; section 3 tabulates what each revision carried.")

question("05.q2", "Why did the WebAssembly engine refuse the chdir-then-write that the process sandbox let through?", {
    "a": ("The write came too late: the engine's time limit stopped it.", False,
          "the refusal came at once, as an error (No such file or directory), not a timeout."),
    "b": ("Its audit hook sees the chdir before the write and refuses any change to a folder outside the one it was "
          "given.", False,
          "that is the process sandbox's guard rail, and chdir is exactly what it let through."),
    "c": ("To the code, only its own folder exists: there is no other path to change into or to write.", True,
          "the engine maps one folder and nothing else; a path outside it does not exist inside the engine."),
    "d": ("The engine runs as another user without write permission.", False,
          "no user switch is involved: the folder on this machine is simply not in the engine's world."),
}, hint="section 4 compares the two sandboxes on the same attempts.")
