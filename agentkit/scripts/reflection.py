"""Stand-in rules for the reflection chapter.

Two scripted tasks, keyed on the chapter's role prompts (agentkit.reflection) and the task:
- find_primes(n): a trial-division draft, a review naming the sieve and the n < 2
  boundary, the sieve revision, then a PASS.
- mean(values) with a strictness instruction: a reviewer that raises one nitpick per
  review and passes only after `k` fixes (or never). It counts `# fixed:` lines in the
  code it is shown, never its own calls.
"""
from __future__ import annotations

import re

from ..llm import Rule
from ..reflection import REVIEWER_ROLE, WRITER_ROLE

TRIAL_DIVISION = '''def find_primes(n):
    """Return the primes up to and including n."""
    primes = []
    for candidate in range(2, n + 1):
        if all(candidate % divisor for divisor in range(2, candidate)):
            primes.append(candidate)
    return primes'''

SIEVE = '''def find_primes(n):
    """Return the primes up to and including n (sieve of Eratosthenes)."""
    if n < 2:
        return []
    is_prime = [True] * (n + 1)
    is_prime[0] = is_prime[1] = False
    for p in range(2, int(n ** 0.5) + 1):
        if is_prime[p]:
            is_prime[p * p :: p] = [False] * len(range(p * p, n + 1, p))
    return [number for number, prime in enumerate(is_prime) if prime]'''

PRIME_REVIEW = """1. Correctness: the results are right, and for n < 2 the loop never runs, so [] comes back.
2. Efficiency: all() stops at a candidate's first divisor, but a prime has none, so every prime p is divided by each number from 2 to p - 1: about n^2 / (2 ln n) divisions in all, some 21 million at n = 20,000. Use the Sieve of Eratosthenes instead: one boolean table, cross out the multiples of each prime p starting at p*p, stop at the square root of n. That is O(n log log n).
3. Boundary: keep n < 2 returning []. A sieve's table [True] * (n + 1) is empty or too short there, so guard that case explicitly before building it.
VERDICT: REVISE"""

PRIME_PASS = """The sieve is correct: it returns [] for n < 2, crosses out from p*p and stops at the square root of n. Nothing left to change.
VERDICT: PASS"""

MEAN_DRAFT = '''def mean(values):
    return sum(values) / len(values)'''

NITPICKS = [
    "add a docstring",
    "raise a clear ValueError for an empty list",
    "add type hints",
    "use math.fsum, which loses less precision",
    "add a doctest example",
    "rename the function to arithmetic_mean",
]

NEVER_SATISFIED = "You are never satisfied: always find one more issue and never pass."
STRICTNESS = re.compile(r"Pass the code only once it carries at least (\d+) fixes")


def strictness_instructions(fixes: int | None) -> str:
    """The reviewer's extra instruction: pass after `fixes` fixes, or never (None)."""
    if fixes is None:
        return NEVER_SATISFIED
    return (f"Pass the code only once it carries at least {fixes} fixes marked `# fixed:`. "
            "Until then raise exactly one new issue per review, as a line `Issue: ...`.")


def _code_under_review(prompt: str) -> str:
    match = re.search(r"Code to review:\n```python\n(.*?)```", prompt, re.DOTALL)
    return match.group(1) if match else ""


def _nitpick_review(prompt: str) -> str:
    fixed = _code_under_review(prompt).count("# fixed:")
    wanted = STRICTNESS.search(prompt)
    if wanted and fixed >= int(wanted.group(1)):
        return f"All {fixed} issues are fixed.\nVERDICT: PASS"
    issue = NITPICKS[fixed] if fixed < len(NITPICKS) else f"polish the wording of comment {fixed + 1}"
    return f"Almost there.\nIssue: {issue}\nVERDICT: REVISE"


def _nitpick_revision(prompt: str) -> str:
    previous = re.search(r"Your previous draft:\n```python\n(.*?)```", prompt, re.DOTALL)
    issue = re.search(r"^Issue: (.*)$", prompt, re.MULTILINE)
    code = previous.group(1).rstrip() if previous else MEAN_DRAFT
    return f"```python\n{code}\n# fixed: {issue.group(1) if issue else 'the review'}\n```"


def _writer(task_word: str):
    return lambda p: WRITER_ROLE in p and task_word in p


def _reviewer(task_word: str):
    return lambda p: REVIEWER_ROLE in p and task_word in p


RULES = [
    # find_primes: most advanced state first.
    Rule(lambda p: _reviewer("find_primes")(p) and "sieve" in _code_under_review(p).lower(),
         PRIME_PASS, name="reflection-review-sieve-pass"),
    Rule(_reviewer("find_primes"), PRIME_REVIEW, name="reflection-review-trial-division"),
    Rule(lambda p: _writer("find_primes")(p) and "Sieve of Eratosthenes" in p,
         f"```python\n{SIEVE}\n```", name="reflection-draft-sieve"),
    Rule(_writer("find_primes"), f"```python\n{TRIAL_DIVISION}\n```", name="reflection-draft-trial-division"),
    # mean(values): the nitpicking reviewer of the panel.
    Rule(_reviewer("mean(values)"), _nitpick_review, name="reflection-nitpick-review"),
    Rule(lambda p: _writer("mean(values)")(p) and "Your previous draft:" in p,
         _nitpick_revision, name="reflection-nitpick-revision"),
    Rule(_writer("mean(values)"), f"```python\n{MEAN_DRAFT}\n```", name="reflection-nitpick-draft"),
]
