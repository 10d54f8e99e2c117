"""Chapter 07's exercises: a bill to predict from the ledger, a beam step and a verifier to build, a noisy judge
that prunes the solution, two questions. Every search here is one small puzzle: a check takes milliseconds."""
from __future__ import annotations

from ..game24 import load_puzzles, verify
from ..i18n import tr, tr_later
from ..llm import Rule, ScriptedLLM
from ..scripts.tot import stand_in
from ..tot import (TreeOfThoughts, by_value, expression_of, parse_label, parse_thoughts,
                   propose_messages, value_messages)
from . import Fail, NotDone, call, cases, exercise, question, reference
from .predictions import Prediction, prediction

PUZZLE = (4, 4, 7, 7)  # the chapter's showcase: one solution, through a fraction


# --- 07.predict: what a search costs, from the ledger ---------------------------------------------

PREDICT_SETTINGS = {"k=6, b=1, votes=1": dict(k=6, b=1, votes=1), "k=6, b=2, votes=3": dict(k=6, b=2, votes=3),
                    "k=4, b=3, votes=1": dict(k=4, b=3, votes=1)}


def search_costs() -> dict:
    """LLM calls of each setting on 4 4 7 7 (depth 3, the chapter's stand-in), counted from the ledger."""
    return {name: len(TreeOfThoughts(stand_in(), **settings).solve(PUZZLE).calls)
            for name, settings in PREDICT_SETTINGS.items()}


WHY = {
    "k=6, b=1, votes=1": "one node per level: 1 + 6 x 1 = 7 at levels 1 and 2, but the last node has two numbers left "
                         "and only 5 legal steps, so 1 + 5 = 6: 7 + 7 + 6",
    "k=6, b=2, votes=3": "the root costs 1 + 6 x 3 = 19; level 2 expands b=2 nodes (2 x 19); level 3 two nodes with "
                         "two numbers left, 5 steps each: 2 x (1 + 5 x 3) = 2 x 16",
    "k=4, b=3, votes=1": "1 + 4 x 1 = 5 per node, and two numbers still allow 4 steps; the root, then 3 nodes, then "
                         "3 nodes: 7 x 5",
}


prediction("07.predict", "What a search costs",
           "Set `prediction` to {setting: LLM calls} for the three searches of 4 4 7 7, before running anything.",
           Prediction(truth=search_costs, labels=("",), why=WHY, source="the ledger",
                      case=lambda name: tr("{name}, depth 3, puzzle 4 4 7 7", name=name),
                      pointer="an expanded node costs one proposal plus its steps times the votes; count the nodes "
                              "each level expands, and how many legal steps a node with two numbers left has "
                              "(section 4 cuts the ledger at each proposal)."))


# --- 07.beam: keep the b best -----------------------------------------------------------------------

BEAM_CASES = [  # (children as (step, votes), b; what the case is; the hint): beam_truth decides, after your answer
    ([("13 - 9 = 4", ["sure"]), ("13 + 9 = 22", ["impossible"]), ("9 / 3 = 3", ["likely"])], 2,
     tr_later("three children, one vote each"),
     tr_later("keep the BEST b, best first: score sure 1, likely 0.5, impossible 0, and sort from high to low (section "
              "3).")),
    ([("4 + 4 = 8", ["likely"]), ("7 - 4 = 3", ["sure"]), ("7 + 4 = 11", ["likely"]), ("4 * 4 = 16", ["impossible"])],
     2, tr_later("two children tie"), tr_later("ties keep proposal order: sort by the score alone (Python's sort is "
                                               "stable), never by the step's text (section 3's tiny_tot sorts by the "
                                               "score alone).")),
    ([("6 * 4 = 24", ["sure", "impossible", "impossible"]), ("6 - 4 = 2", ["likely", "likely", "likely"])], 1,
     tr_later("three votes each"), tr_later("a node's score is the MEAN of its votes (section 3): one sure among three "
                                            "votes is 1/3, below three times likely.")),
    ([("8 / 2 = 4", ["?", "sure"]), ("8 - 2 = 6", ["sure", "likely"])], 1, tr_later("a vote with no label"),
     tr_later("a vote that holds no label ('?') counts 0 and still counts as a vote: a judge that said nothing useful "
              "(section 3's values).")),
    ([("3 * 3 = 9", ["likely"]), ("3 + 3 = 6", ["sure"])], 5, tr_later("fewer children than b"),
     tr_later("with fewer children than b, keep them all, best first (section 3).")),
    ([], 3, tr_later("no children at all"), tr_later("no children, nothing to keep: return an empty list.")),
]
VALUE = {"sure": 1.0, "likely": 0.5, "impossible": 0.0}
H_UNSEEN = (tr_later("children drawn for this check: score each by the mean of its votes (sure 1, likely 0.5, "
                     "impossible 0, anything else 0), keep the b highest, best first, ties in the order they were "
                     "proposed."))


@reference
def beam_truth(children: list, b: int) -> list:
    """The positions of the b children with the highest mean vote, best first, ties in proposal order."""
    def score(index):
        votes = children[index][1]
        return sum(VALUE.get(v, 0.0) for v in votes) / len(votes) if votes else 0.0
    return sorted(range(len(children)), key=score, reverse=True)[:b]


def unseen_children() -> tuple:
    """(children, b) drawn for this check: ties, unlabelled votes and b past the end included."""
    rng = cases()
    children = []
    for _ in range(rng.randint(1, 7)):
        a, c = rng.randint(1, 13), rng.randint(1, 13)
        op = rng.choice("+-*")
        step = f"{a} {op} {c} = {eval(f'{a} {op} {c}')}"  # noqa: S307 - two small whole numbers, built here
        children.append((step, [rng.choice(["sure", "likely", "impossible", "likely", "?"])
                                for _ in range(rng.choice([1, 1, 2, 3]))]))
    return children, rng.randint(1, len(children) + 1)


def _kept_indices(children: list, kept, case: str, hint: str) -> list:
    """Which children the learner kept, by position; the kept items must be children, unchanged."""
    if not isinstance(kept, (list, tuple)):
        raise Fail(case, tr("a list of children"), f"{kept!r:.100}", tr("return a list of the kept children themselves."))
    free, indices = list(range(len(children))), []
    for item in kept:
        match = next((i for i in free if children[i] == item), None)
        if match is None:
            raise Fail(case, tr("children from the list you were given, unchanged"), f"{item!r:.100}",
                       tr("return the (step, votes) pairs themselves, not their scores or steps."))
        free.remove(match)
        indices.append(match)
    return indices


def beam_search(llm, puzzle, keep, k: int = 6, b: int = 3, depth: int = 3, votes: int = 1) -> tuple:
    """Section 3's loop with the package's parser and verifier, `keep(children, b)` choosing each beam.

    Returns (verified answer or None, the beams' steps per level).
    """
    beam, levels = [(by_value(puzzle), [])], []
    for level in range(1, depth + 1):
        nodes, children = [], []
        for numbers, steps in beam:
            if len(numbers) < 2:
                continue
            thoughts, _ = parse_thoughts(llm.think(propose_messages(numbers, k)), numbers, k)
            for thought in thoughts:
                rest = list(numbers)
                rest.remove(thought.a)
                rest.remove(thought.b)
                left = by_value(rest + [thought.c])
                labels = [parse_label(llm.think(value_messages(left, v, votes))) for v in range(1, votes + 1)]
                nodes.append((left, steps + [thought]))
                children.append((f"{thought} (left: {' '.join(left)})", labels))
        if not children:
            break
        kept = call(keep, [(step, list(labels)) for step, labels in children], b,
                    case=tr("the live search of {puzzle}, level {level}", puzzle=" ".join(map(str, puzzle)),
                            level=level), hint=BEAM_CASES[0][3])
        indices = _kept_indices(children, kept, tr("the live search, level {level}", level=level), BEAM_CASES[0][3])
        beam = [nodes[i] for i in indices]
        levels.append([children[i][0] for i in indices])
    for numbers, steps in beam:
        expression = expression_of(puzzle, steps)
        if len(numbers) == 1 and verify(expression, puzzle).ok:
            return expression, levels
    return None, levels


@exercise("07.beam", "build", "Keep the b best",
          "Write `my_beam(children, b)`: the b children with the highest mean vote, best first, ties in proposal order.", objects=False)
def _beam(keep):
    if not callable(keep):
        raise Fail(tr("your answer"), tr("a function my_beam(children, b) -> list"), repr(keep),
                   tr("define it with def."))
    drawn = [(*unseen_children(), tr_later("children drawn for this check"), H_UNSEEN) for _ in range(6)]
    for children, b, what, hint in BEAM_CASES + drawn:
        case = tr("{what}: b={b}, children {children}", what=tr(what), b=b, children=children)
        kept = call(keep, [(step, list(votes)) for step, votes in children], b, case=case, hint=hint)
        got = _kept_indices(children, kept, case, hint)
        expected = beam_truth(children, b)
        if len(got) > b:
            raise Fail(case, tr("at most b={b} children", b=b), tr("{n} children", n=len(got)),
                       tr("keep at most b: the beam's width is the fuse on what every later level costs (section 3)."))
        if got != expected:
            raise Fail(case, repr([children[i] for i in expected]), repr([children[i] for i in got])[:160], hint)
    llm = stand_in()
    answer, levels = beam_search(llm, PUZZLE, keep)
    package = TreeOfThoughts(stand_in(), k=6, b=3, votes=1).solve(PUZZLE)
    if answer != package.answer or len(llm.calls) != len(package.calls):
        raise Fail(tr("the live search of 4 4 7 7 (k=6, b=3, votes=1)"),
                   tr("{answer} in {calls} calls, as TreeOfThoughts", answer=package.answer,
                      calls=len(package.calls)),
                   tr("{answer} in {calls} calls", answer=answer, calls=len(llm.calls)), BEAM_CASES[0][3])
    return tr("With your beam, the search of 4 4 7 7 kept {kept} at level 1 and found {answer} in {calls} calls "
              "(ledger), exactly what TreeOfThoughts does. The beam is the whole difference between a search and a "
              "walk: everything it drops is never looked at again.", kept=levels[0], answer=answer,
              calls=len(llm.calls))


# --- 07.verify: never accept an unverified answer ----------------------------------------------------

EXACT = tr_later("compute exactly with fractions.Fraction: 8 / (3 - 8/3) misses 24 by a hair in floating point (section "
                 "1).")
VERIFY_CASES = [  # (expression, puzzle; what the case is; the hint): agentkit.game24.verify decides, after yours
    ("8 / (3 - 8 / 3)", [3, 3, 8, 8], tr_later("a solution through a fraction"), EXACT),
    ("(1 + 2 + 3) * 4", [1, 2, 3, 4], tr_later("a plain solution"),
     tr_later("accept an expression of the puzzle's numbers, each once, with + - * / and parentheses, that makes 24.")),
    ("4 * 6", [1, 1, 4, 6], tr_later("24, without all the numbers"),
     tr_later("every number of the puzzle must be used, each exactly once (section 1).")),
    ("3 * 8 * (3 / 3)", [3, 3, 8, 8], tr_later("a 3 used three times and an 8 once"),
     tr_later("compare the numbers as a multiset (sorted lists), not as a set: 3 3 8 8 is not 3 3 3 8 (section 1).")),
    ("abs(-4) * (1 + 2 + 3)", [1, 2, 3, 4], tr_later("a function call and a minus sign"),
     tr_later("never run the text: read its syntax tree (ast.parse) and accept only whole numbers joined by + - * / "
              "(section 1).")),
    ("4 ** 2 + 8 * 1", [1, 2, 4, 8], tr_later("a power"),
     tr_later("only + - * / and parentheses: ** is not a Game of 24 move (section 1).")),
    ("(1 + 2) / (4 - 4)", [1, 2, 4, 4], tr_later("a division by zero"),
     tr_later("a verifier never raises: a division by zero is a wrong answer, not a crash (section 1).")),
    ("6 * 4 +", [1, 1, 4, 6], tr_later("a reply that is not an expression"),
     tr_later("a verifier never raises: text that does not parse is a wrong answer (section 1).")),
    ("(1 + 1) * (1 + 1)", [1, 1, 1, 1], tr_later("the right numbers, the wrong value"),
     tr_later("the value must be exactly 24 (section 1).")),
]


H_VERIFY_UNSEEN = (tr_later("an expression drawn for this check: accept it only if it uses the puzzle's numbers, each "
                            "exactly once, with + - * / and parentheses, and makes exactly 24 (fractions.Fraction)."))


def unseen_expressions(count: int = 6) -> list:
    """(expression, numbers) drawn for this check from the shipped puzzles: half of them solutions, half a
    solution with one slip (a number changed, one used twice, a power, an operator changed)."""
    import re

    rng = cases()
    puzzles = load_puzzles()
    drawn = []
    for number in rng.sample(range(count), count):  # which of them slip: in an order drawn too
        puzzle = rng.choice(puzzles)
        expression, numbers = puzzle["solution"], list(puzzle["numbers"])
        if number % 2:
            slip = rng.choice(["number", "operator", "power"])
            if slip == "number":
                expression = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), expression, count=1)
            elif slip == "operator":
                expression = expression.replace("*", "+", 1) if "*" in expression else expression.replace("+", "*", 1)
            else:
                expression = f"({expression}) ** 1"
        drawn.append((expression, numbers))
    return drawn


def _truth(said, case: str) -> bool:
    """The learner's verdict as True or False (1 and 0 count; an object that is neither is a Fail)."""
    if isinstance(said, bool) or (isinstance(said, int) and said in (0, 1)):
        return bool(said)
    raise Fail(case, tr("True or False"), f"{said!r:.100}",
               tr("return a bool: True to accept the answer, False to refuse it."))


def claimed_answers() -> list:
    """(expression, puzzle) of every kept one-number node of a few searches with a proposer that slips."""
    searches = [(stand_in(errs=0.3, noise=0.0), p) for p in ([1, 1, 9, 13], [1, 2, 5, 5], [12, 12, 13, 13])]
    wishful = ScriptedLLM([Rule("Propose up to", _wishful_step, "wishful proposer"),
                           Rule("sure, likely or impossible", "sure", "always sure")])
    found = []
    for llm, puzzle in searches + [(wishful, [1, 1, 1, 1])]:
        result = TreeOfThoughts(llm, k=6 if llm is not wishful else 2, b=3 if llm is not wishful else 2).solve(puzzle)
        found += [(expression_of(result.puzzle, result.thoughts_to(n)), puzzle, n.numbers == ("24",))
                  for n in result.nodes if n.kept and n.thought is not None and len(n.numbers) == 1]
    return found


def _wishful_step(prompt: str) -> str:  # section 3's wishful proposer: every step "makes 24"
    a, b, *rest = prompt.split("Numbers: ")[1].splitlines()[0].split()
    return f"{a} + {b} = 24 (left: {' '.join(rest + ['24'])})"


@exercise("07.verify", "build", "A verifier that accepts only 24",
          "Write `my_verify(expression, numbers)`: True only for the puzzle's numbers, each once, + - * /, exactly 24; "
          "agentkit.game24.verify is refused.", forbid=("agentkit.game24:verify",), objects=False)
def _verify(accept):
    if not callable(accept):
        raise Fail(tr("your answer"), tr("a function my_verify(expression, numbers) -> bool"), repr(accept),
                   tr("define it with def."))
    for expression, numbers, what, hint in VERIFY_CASES:
        case = tr("{what}: {expression} for {numbers}", what=tr(what), expression=repr(expression), numbers=numbers)
        said = _truth(call(accept, expression, list(numbers), case=case, hint=hint), case)
        ok = verify(expression, numbers).ok
        if said is not ok:
            raise Fail(case, f"{ok} ({verify(expression, numbers).reason})", repr(said), hint)
    for expression, numbers in unseen_expressions():
        case = tr("an expression drawn for this check: {expression} for {numbers}", expression=repr(expression),
                  numbers=numbers)
        said = _truth(call(accept, expression, list(numbers), case=case, hint=H_VERIFY_UNSEEN), case)
        truth = verify(expression, numbers)
        if said is not truth.ok:
            raise Fail(case, f"{truth.ok} ({truth.reason})", repr(said), H_VERIFY_UNSEEN)
    found, accepted = claimed_answers(), 0
    for expression, puzzle, says_24 in found:
        case = (tr("a search's kept answer {expression} for {puzzle} (the model said 24)", expression=repr(expression),
                   puzzle=puzzle) if says_24 else
                tr("a search's kept answer {expression} for {puzzle}", expression=repr(expression), puzzle=puzzle))
        said = _truth(call(accept, expression, list(puzzle), case=case, hint=EXACT), case)
        truth = verify(expression, puzzle)
        if said is not truth.ok:
            raise Fail(case, f"{truth.ok} ({truth.reason})", repr(said),
                       tr("the model's '(left: ...)' is not evidence: recompute from the puzzle's numbers."))
        accepted += said
    lied = sum(says_24 and not verify(e, p).ok for e, p, says_24 in found)
    return tr("On the final answers of four searches (three with a proposer that slips, one that claims 24 at every "
              "step), your verifier agreed with agentkit.game24.verify on all {found}: it accepted {accepted}, and "
              "refused the {lied} that the model said made 24 but do not.", found=len(found), accepted=accepted,
              lied=lied)


# --- 07.prune: a noisy judge prunes the solution --------------------------------------------------------

PRUNE_HINTS = {
    "noise": tr_later("noise is a share of random votes: a number from 0 to 1."),
    "whole": tr_later("b and votes are whole numbers from 1 to 5 here."),
    "exact": tr_later("noise 0 is the exact judge: it ranks the good step first whenever it was proposed (section 5)."),
    "wide": tr_later("a wider beam keeps the good node alive next to the ones the noise preferred: narrow it (section "
                     "5's right-hand chart, b=1 against b=5)."),
    "votes": tr_later("votes average the noise out: a node's score is the mean of its votes (section 3). Use one vote."),
    "more": tr_later("at this noise the judge was lucky on this puzzle: raise the noise."),
}


def _path(result) -> list:
    """The nodes from the root's child to the verified answer."""
    by_id, node, path = {n.id: n for n in result.nodes}, None, []
    node = by_id[result.answer_node]
    while node.thought is not None:
        path.append(node)
        node = by_id[node.parent]
    return path[::-1]


@exercise("07.prune", "break", "A noisy judge prunes the solution",
          "Set `judge` to {\"noise\": ..., \"b\": ..., \"votes\": ...}: 4 4 7 7 solved with noise 0, lost with yours.", objects=False)
def _prune(judge):
    if not isinstance(judge, dict):
        raise Fail(tr("your answer"), tr('a dict {"noise": ..., "b": ..., "votes": ...}'), type(judge).__name__,
                   tr("copy the dict from the exercise cell and fill it in."))
    if any(judge.get(key, ...) is ... for key in ("noise", "b", "votes")):
        raise NotDone()
    noise, b, votes = judge["noise"], judge["b"], judge["votes"]
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0 <= noise <= 1:
        raise Fail("noise", tr("a number from 0 to 1"), repr(noise), PRUNE_HINTS["noise"])
    for name, value in (("b", b), ("votes", votes)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            raise Fail(name, tr("a whole number from 1 to 5"), repr(value), PRUNE_HINTS["whole"])
    exact = TreeOfThoughts(stand_in(noise=0.0), k=6, b=b, votes=votes).solve(PUZZLE)
    noisy = TreeOfThoughts(stand_in(noise=float(noise)), k=6, b=b, votes=votes).solve(PUZZLE)
    setting = f"4 4 7 7, k=6, b={b}, votes={votes}, noise {noise}"
    if noisy.solved:
        hint = ("exact" if noise == 0 else "wide" if b > 1 else "votes" if votes > 1 else "more")
        raise Fail(setting, tr("no verified answer"),
                   tr("solved: {answer} in {calls} calls", answer=noisy.answer, calls=len(noisy.calls)),
                   PRUNE_HINTS[hint])
    if not exact.solved:  # every allowed b and votes solves 4 4 7 7 with the exact judge; kept as a guard
        raise Fail(setting.replace(f"noise {noise}", "noise 0"), tr("solved"), tr("not solved"), PRUNE_HINTS["exact"])
    parent = 0
    for good in _path(exact):
        twin = next((n for n in noisy.nodes if n.parent == parent and n.depth == good.depth
                     and n.thought == good.thought), None)
        if twin is None or not twin.kept:
            break
        parent = twin.id
    rivals = [n for n in noisy.nodes if n.depth == good.depth and n.kept]
    if twin is None:  # cannot happen with one proposer for both runs; said plainly if it ever does
        lost = tr("at level {level} the step {step} was never proposed", level=good.depth, step=repr(str(good.thought)))
    else:
        tie = any(n.score == twin.score for n in rivals)
        kept = ", ".join(f"{str(n.thought)!r} {list(n.labels)}" for n in rivals)
        fields = dict(level=good.depth, step=repr(str(good.thought)), answer=exact.answer, votes=list(twin.labels),
                      kept=kept)
        lost = (tr("at level {level} the step {step}, on the way to {answer}, got the votes {votes} and was pruned, "
                   "while the beam kept {kept} (a tie: the beam keeps the step proposed first)", **fields) if tie else
                tr("at level {level} the step {step}, on the way to {answer}, got the votes {votes} and was pruned, "
                   "while the beam kept {kept}", **fields))
    return tr("With the exact judge the search found {answer}; with yours, {lost}. Nothing after that level looks at "
              "it again: {calls} calls (ledger), no verified answer, and nothing wrong reported.", answer=exact.answer,
              lost=lost, calls=len(noisy.calls))


# --- concept questions --------------------------------------------------------------------------------------

question("07.q1", "With an exact judge (noise 0), why does b=5 solve barely more puzzles than b=1 (section 5)?", {
    "a": ("A wider beam makes each node propose fewer steps.", False,
          "every expanded node proposes up to k steps whatever b is; b only decides how many nodes are expanded."),
    "b": ("b=5 costs the same number of calls as b=1.", False,
          "calls per puzzle rise with b (the middle chart); what stays flat is the success."),
    "c": ("An exact judge ranks the good step first whenever it was proposed; what is never proposed no beam can "
          "keep.", True,
          "with no noise the beam has nothing to buy back: the proposer sets the ceiling."),
    "d": ("The verifier rejects the extra answers a wide beam finds, because a solution reached through a pruned "
          "branch is not rebuilt into an expression it can check.", False,
          "the verifier rejects only answers whose arithmetic is wrong; a wider beam's real solutions count."),
}, hint="section 5, the three charts and the first point under them.")

question("07.q2", "Section 3's tiny search reported a solution for 1 1 1 1. What keeps TreeOfThoughts from doing "
         "that?", {
    "a": ("It asks the judge several times and averages the votes, so a judge that says 'sure' for a wrong step is "
          "outvoted by the other judgements before the answer is reported.", False,
          "a judge that always says sure says sure every time: votes fight noise, not a judge that is wrong."),
    "b": ("It proposes at a lower temperature.", False,
          "the wishful stand-in is wrong at any temperature; so can a real model be."),
    "c": ("It keeps the numbers left exactly as the model writes them in '(left: ...)'.", False,
          "that is what misled the tiny search; the package's parser keeps the model's result too, which is why the "
          "final check must not trust it."),
    "d": ("It rebuilds every kept one-number node into an expression of the puzzle's numbers and checks it exactly; "
          "only a verified expression is an answer.", True,
          "the model's '(left: ...)' and its 'sure' are claims; the verifier recomputes from the puzzle."),
}, hint="section 3, the wishful stand-in, and the three differences listed after it.")
