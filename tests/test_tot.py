"""Tree of Thoughts on Game of 24: the beam, the depth bound, the verifier, calls per node, the stand-in's knob."""
import re

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agentkit.game24 import can_make_24, hardest, legal_moves, verify  # noqa: E402
from agentkit.llm import Rule, ScriptedLLM  # noqa: E402
from agentkit.modes import get_llm
from agentkit.scripts.tot import stand_in  # noqa: E402
from agentkit.tot import (  # noqa: E402
    PROPOSE_MARKER,
    VALUE_MARKER,
    TreeOfThoughts,
    calls_per_node,
    expression_of,
    parse_label,
    parse_thoughts,
    propose_messages,
    run_puzzles,
    summarize,
    value_messages,
)
from agentkit.widgets.tot import PROBABILITIES, RANGES, plot_tree, tot_panel, tot_run  # noqa: E402

PUZZLE = [4, 9, 10, 13]  # 36 legal first steps; enough for any k here


def _numbers(prompt):
    return re.search(r"Numbers: ([^\n]+)", prompt).group(1).split()


def wishful():
    """Sick stand-in, one disease: any two numbers it combines "make 24"; it judges every state sure."""
    def propose(prompt):
        a, b, *rest = _numbers(prompt)
        return f"{a} + {b} = 24 (left: {' '.join(rest + ['24'])})"

    return ScriptedLLM([Rule(PROPOSE_MARKER, propose, "wishful"), Rule(VALUE_MARKER, "sure", "always sure")])


def is_propose(call):
    return PROPOSE_MARKER in call.prompt


# --- the verifier ----------------------------------------------------------------


@pytest.mark.parametrize("expression,numbers", [
    ("8 / (3 - 8 / 3)", [3, 3, 8, 8]), ("5 * (5 - 1/5)", [1, 5, 5, 5]), ("(13 - 9) * (10 - 4)", [4, 9, 10, 13]),
    ("6 ÷ (1 - 3 ÷ 4)", [1, 3, 4, 6]), ("2 × 12 × 1 × 1", [1, 1, 2, 12]),
])
def test_verify_accepts_exact_solutions(expression, numbers):
    assert verify(expression, numbers).ok


@pytest.mark.parametrize("expression,numbers,reason", [
    ("(1 + 1) * (1 + 1)", [1, 1, 1, 1], "makes 4, not 24"),
    ("8 / (3 - 8 / 3.0)", [3, 3, 8, 8], "Constant"),  # a float literal is not a whole number
    ("4 * 6", [4, 6, 1, 1], "not the puzzle's"),  # numbers missing
    ("4 * 6 * 1 * 1 * 1", [4, 6, 1, 1], "not the puzzle's"),  # a number used twice
    ("13 - 9 + 10 + 10", [4, 9, 10, 13], "not the puzzle's"),
    ("24 / (4 - 4) + 9 * 0", [4, 4, 9, 0], "divides by zero"),
    ("-(4 - 28)", [4, 28], "UnaryOp"),
    ("2 ** 3 * 3", [2, 3, 3], "BinOp"),
    ("__import__('os').getcwd()", [1, 2], "Call"),
    ("4 * 6 =", [4, 6], "not an arithmetic expression"),
    ("", [4, 6], "no expression"),
    ("(" * 150 + "1" + ")" * 150, [1], "longer than"),
])
def test_verify_rejects_wrong_answers_with_a_reason_and_never_raises(expression, numbers, reason):
    verdict = verify(expression, numbers)
    assert not verdict.ok and reason in verdict.reason


def test_one_one_one_one_never_comes_back_solved_whatever_the_model_says():
    liar = wishful()
    result = TreeOfThoughts(liar, k=3, b=3, votes=1).solve([1, 1, 1, 1])
    assert result.claimed and not result.solved and result.answer is None
    assert result.rejected == [("(1 + 1) + (1 + 1)", "it makes 4, not 24")]
    for llm in (stand_in(noise=1.0, errs=1.0), stand_in(noise=0.0, errs=0.0), get_llm()):
        for settings in ({"k": 10, "b": 5, "votes": 2}, {"k": 1, "b": 1, "votes": 0}):
            assert not TreeOfThoughts(llm, **settings).solve([1, 1, 1, 1]).solved


def test_a_wrong_final_expression_is_rejected_even_when_every_step_claims_24():
    result = TreeOfThoughts(wishful(), k=2, b=2).solve([4, 9, 10, 13])
    assert not result.solved and result.rejected
    kept_ends = [n for n in result.nodes if n.kept and n.numbers == ("24",)]
    assert kept_ends and all(n.verdict.startswith("it makes") for n in kept_ends)


def test_a_slip_on_the_way_is_caught_by_the_verifier_not_by_the_search():
    # errs=1: every step the proposer writes is off by one. The verifier recomputes the
    # expression from the puzzle's numbers, so a claimed 24 is accepted only if it is true.
    results = run_puzzles(stand_in(errs=1.0, noise=0.0), hardest(10), k=10, b=5)
    rejected = [reason for r in results for _, reason in r.rejected]
    assert sorted(rejected) == ["it divides by zero", "it makes 8, not 24"]  # (11 + 11) / (2 - 2): "2 - 2 = 1"
    assert all(verify(r.answer, r.puzzle).ok for r in results if r.solved)
    assert sum(r.claimed and not r.solved for r in results) == 2


def test_a_solved_search_reports_an_expression_that_verifies():
    result = TreeOfThoughts(stand_in(noise=0.0, errs=0.0), k=10, b=3).solve([4, 4, 7, 7])
    assert result.solved and verify(result.answer, [4, 4, 7, 7]).ok
    node = next(n for n in result.nodes if n.id == result.answer_node)
    assert node.kept and node.verdict == "verified"
    assert expression_of(result.puzzle, result.thoughts_to(node)) == result.answer


# --- the beam, the depth bound, the calls --------------------------------------------


@pytest.mark.parametrize("b", [1, 2, 3, 5])
def test_the_beam_keeps_exactly_b_nodes_per_level(b):
    result = TreeOfThoughts(stand_in(noise=0.3), k=6, b=b, votes=1).solve(PUZZLE)
    for depth in (1, 2, 3):
        level = result.level(depth)
        assert sum(n.kept for n in level) == min(b, len(level))
        assert len(level) >= b  # so "min" above is exactly b
        kept = [n.score for n in level if n.kept]
        assert min(kept) >= max([n.score for n in level if not n.kept], default=0)
    # only kept nodes are expanded, and every kept node with numbers left is
    expanded = [n for n in result.nodes if n.expanded]
    assert all(n.kept for n in expanded)
    assert {n.parent for n in result.nodes[1:]} == {n.id for n in expanded}


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_the_depth_bound_holds(depth):
    result = TreeOfThoughts(stand_in(noise=0.0, errs=0.0), k=10, b=5, depth=depth).solve([4, 4, 7, 7])
    assert max(n.depth for n in result.nodes) == depth
    assert all(len(n.numbers) == 4 - n.depth for n in result.nodes)
    assert result.solved == (depth == 3)  # fewer than three steps cannot use four numbers


def test_depth_beyond_the_last_number_stops_without_extra_calls():
    three = TreeOfThoughts(stand_in(), k=3, b=2, depth=3).solve(PUZZLE)
    five = TreeOfThoughts(stand_in(), k=3, b=2, depth=5).solve(PUZZLE)
    assert len(five.calls) == len(three.calls) and max(n.depth for n in five.nodes) == 3


@pytest.mark.parametrize("k,votes", [(1, 1), (3, 1), (3, 3), (2, 0), (3, 2)])
def test_calls_per_node_match_1_plus_k_times_votes_in_the_ledger(k, votes):
    llm = stand_in(sees=10)
    llm.think("a call before the search")  # the search reads only its own part of the ledger
    result = TreeOfThoughts(llm, k=k, b=2, votes=votes).solve(PUZZLE)
    assert result.calls == llm.calls[1:]
    # The ledger, cut at each proposal: one block per expanded node.
    starts = [i for i, call in enumerate(result.calls) if is_propose(call)]
    blocks = [result.calls[i:j] for i, j in zip(starts, starts[1:] + [len(result.calls)])]
    assert starts[0] == 0 and len(blocks) == sum(n.expanded for n in result.nodes)
    for block in blocks:
        assert len(block) == calls_per_node(k, votes) == 1 + k * votes
        judges = [re.search(r"Judge (\d+) of (\d+)", c.prompt).groups() for c in block[1:]]
        assert judges == [(str(v), str(votes)) for _ in range(k) for v in range(1, votes + 1)]
    assert summarize([result]).calls == len(llm.calls) - 1


def test_without_an_evaluator_the_chain_follows_the_first_proposal():
    llm = stand_in()
    result = TreeOfThoughts(llm, k=1, b=1, votes=0).solve(PUZZLE)
    assert len(llm.calls) == 3 and all(is_propose(c) for c in llm.calls)
    for call, node in zip(llm.calls, [n for n in result.nodes if n.depth > 0]):
        assert str(node.thought) == call.reply.split(" (left")[0] and node.score is None


def test_a_separate_evaluator_gets_every_vote_and_both_ledgers_are_counted():
    proposer, evaluator = stand_in(), stand_in()
    result = TreeOfThoughts(proposer, evaluator, k=3, b=2, votes=2).solve(PUZZLE)
    assert all(is_propose(c) for c in proposer.calls) and not any(is_propose(c) for c in evaluator.calls)
    assert len(evaluator.calls) == 2 * (len(result.nodes) - 1)
    assert len(result.calls) == len(proposer.calls) + len(evaluator.calls)
    assert result.tokens == sum(c.total_tokens for c in proposer.calls + evaluator.calls)


@pytest.mark.parametrize("bad", [{"k": 0}, {"b": 0}, {"depth": 0}, {"votes": -1}, {"k": 2.5}])
def test_bad_settings_explain_themselves(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        TreeOfThoughts(stand_in(), **bad)


# --- parsers ------------------------------------------------------------------------


def test_parse_thoughts_keeps_usable_steps_and_drops_the_rest():
    reply = "\n".join([
        "Possible next steps:",
        "1. 13 - 9 = 4 (left: 4 4 10)",
        "10 × 4 = 40",
        "13 - 9 = 4",  # a duplicate
        "7 + 9 = 16",  # 7 is not there
        "9 + 9 = 18",  # only one 9
        "13-4=9",  # no spaces around the operator
        "10 / 4 = 5/2",
        "4 + 9 = 13",  # over k
    ])
    thoughts, dropped = parse_thoughts(reply, ["4", "9", "10", "13"], k=3)
    assert [str(t) for t in thoughts] == ["13 - 9 = 4", "10 * 4 = 40", "10 / 4 = 5/2"]
    assert len(dropped) == 6


@pytest.mark.parametrize("reply", [None, "", "\n\n", "= = =", "1/0 + 4 = 5", "x" * 10_000, 42,
                                   "1" * 4_301 + " + 4 = 5", "4 + 1 = " + "9" * 5_000, "1/" + "3" * 4_400 + " + 4 = 5"])
def test_parse_thoughts_never_raises(reply):
    thoughts, _ = parse_thoughts(reply, ["1", "4"], k=3)
    assert thoughts == []


@pytest.mark.parametrize("reply,label", [
    ("sure", "sure"), ("Likely.", "likely"), ("IMPOSSIBLE: 1 1 1 is too small", "impossible"),
    ("I think it is likely, not sure", "likely"), ("maybe", "?"), ("", "?"), (None, "?"), ("unsure", "?"),
])
def test_parse_label(reply, label):
    assert parse_label(reply) == label


def test_numbers_in_prompts_are_in_lowest_terms_and_order():
    assert "Numbers: 1/2 3 24" in propose_messages(["24", "2/4", "3"], 3)[0]["content"]
    assert "Judge 2 of 3" in value_messages(["1", "2"], 2, 3)[0]["content"]


# --- the stand-in ---------------------------------------------------------------------


def test_the_stand_in_answers_by_content_with_a_seed_never_by_counting():
    prompt = propose_messages(PUZZLE, 5)
    first, again, fresh = stand_in(), stand_in(), stand_in(seed=1)
    replies = [first.think(prompt) for _ in range(3)]
    assert len(set(replies)) == 1 and again.think(prompt) == replies[0]
    assert fresh.think(prompt) != replies[0]  # another seed, another draw
    votes = {stand_in(noise=1.0).think(value_messages(["4", "6"], v, 9)) for v in range(1, 10)}
    assert len(votes) > 1  # each judge number is its own draw


def test_the_stand_ins_knob_sees_errs_noise():
    numbers = ["4", "9", "10", "13"]
    assert len(stand_in(sees=2).think(propose_messages(numbers, 5)).splitlines()) == 2
    lines = stand_in(sees=10, errs=1.0).think(propose_messages(numbers, 5)).splitlines()
    truth = {str(m) for m in legal_moves([4, 9, 10, 13])}
    assert len(lines) == 5 and not any(line.split(" (left")[0] in truth for line in lines)
    honest = stand_in(errs=0.0).think(propose_messages(numbers, 5)).splitlines()
    assert all(line.split(" (left")[0] in truth for line in honest)
    for state in (["4", "6"], ["1", "1"], ["3", "3", "8", "8"], ["5", "24/5"]):
        truth = "sure" if can_make_24(state) else "impossible"
        assert stand_in(noise=0.0).think(value_messages(state, 1, 1)) == truth
    with pytest.raises(ValueError, match="noise"):
        stand_in(noise=1.5)


def test_the_course_script_answers_this_chapters_prompts():
    llm = get_llm("fake")
    result = TreeOfThoughts(llm, k=3, b=2).solve(PUZZLE)
    assert all(c.note.startswith("rule: tot-") for c in llm.calls)
    assert len(result.calls) == len(llm.calls) > 0


# --- the panel's callback and the tree picture ---------------------------------------------


LOWEST = {"k": 1, "b": 1, "depth": 1, "votes": 0, "noise": 0.0, "errs": 0.0}
HIGHEST = {"k": 10, "b": 5, "depth": 3, "votes": 5, "noise": 1.0, "errs": 0.5}


def test_the_panel_ranges_are_the_ones_tested():
    ranges = {**RANGES, **PROBABILITIES}
    assert {name: (LOWEST[name], HIGHEST[name]) for name in ranges} == ranges


@pytest.mark.parametrize("values", [LOWEST, HIGHEST], ids=["lowest", "highest"])
def test_the_panel_callback_runs_over_its_whole_range(values, capsys):
    before = plt.get_fignums()
    results, chain, tree = tot_run(**values, puzzles=[(4, 4, 7, 7), (1, 1, 1, 1), (3, 4, 4, 10)])
    text = capsys.readouterr().out
    assert len(results) == len(chain) == 3 and not results[1].solved
    assert f"k={values['k']}, b={values['b']}" in text and "random path" in text
    assert max(n.depth for n in tree.nodes) == values["depth"]
    assert len(plt.get_fignums()) == len(before) + 1
    plt.close("all")


def test_the_panel_sliders_span_the_tested_ranges():
    sliders = tot_panel().children[0].children[:-1]
    assert {s.description.split(" ")[0]: (s.min, s.max) for s in sliders} == {
        "k": RANGES["k"], "b": RANGES["b"], "depth": RANGES["depth"], "evaluator": PROBABILITIES["noise"],
        "votes": RANGES["votes"], "proposer": PROBABILITIES["errs"]}


@pytest.mark.parametrize("bad", [{"k": 0}, {"b": 6}, {"depth": 4}, {"votes": 6}, {"noise": 1.2}, {"errs": 0.6}])
def test_a_bad_panel_value_explains_itself(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        tot_run(**bad, puzzles=[(1, 2, 3, 4)])


def test_plot_tree_marks_the_verified_path_and_the_rejected_claims():
    ax = plot_tree(TreeOfThoughts(wishful(), k=2, b=2).solve([1, 1, 1, 1]))
    assert "1 1 1 1" in ax.get_title() and len(ax.get_legend().get_texts()) == 4
    plt.close("all")


# --- hostile replies and bad puzzles ------------------------------------------------------


@pytest.mark.parametrize("line", ["1" * 200_000, "1" * 100_000 + " + ", "4 + " + "7" * 200_000,
                                  "-" + "5" * 200_000 + " = "])
def test_a_long_digit_run_is_parsed_in_linear_time(line):
    # Linear because a number cannot start inside a digit run: the regex's attempt at each position inside one
    # fails at its first step (the lookbehind), instead of reading the run to its end again (minutes when every
    # digit restarted the match). That is checked here at every position, without a clock; the time itself is
    # measured by bench/long_inputs.py.
    from agentkit import game24, tot

    number = re.compile(game24.NUMBER)
    run = max(re.findall(r"\d+", line), key=len)
    start = line.index(run)
    assert all(number.match(line, start + offset) is None for offset in range(1, len(run), 997))
    assert tot._STEP.pattern.count(f"({game24.NUMBER})") == 3  # every number of a step is such a number
    thoughts, dropped = parse_thoughts(line, ["1", "4"], k=3)
    assert thoughts == [] and len(dropped) == 1


@pytest.mark.parametrize("puzzle,why", [
    ((4.9, 7, 8, 8), "4.9 is not a whole number"), ((2.5, 1, 2, 3), "2.5 is not a whole number"),
    ((1, 2, 3, 4, 5), "5 numbers"), ((), "0 numbers"), ((-1, 5, 5, 5), "-1 is negative"),
    ((True, 1, 2, 3), "True is not a whole number"), ((float("nan"), 1, 2, 3), "nan is not a whole number"),
    ("4788", "not a list of numbers"), (("4", "x", "8", "8"), "'x' is not a whole number"),
])
def test_a_bad_puzzle_is_refused_with_a_clear_error(puzzle, why):
    llm = ScriptedLLM([Rule(PROPOSE_MARKER, "4 * 6 = 24"), Rule(VALUE_MARKER, "sure")])
    with pytest.raises(ValueError, match=re.escape(why)):
        TreeOfThoughts(llm, k=1, b=1, votes=0).solve(puzzle)
    assert llm.calls == []


def test_verify_judges_the_puzzle_as_given_never_rounded():
    assert not verify("(4 - 7) * 8 + 8 * 6", (4.9, 7, 8, 8)).ok
    assert "4.9 is not a whole number" in verify("4 * 7 - 8 + 8 - 4", (4.9, 7, 8, 8)).reason
    assert "2.5 is not a whole number" in verify("2 * 3 * 4 * 1", (2.5, 3, 4, 1)).reason
    assert "-1 is negative" in verify("(5 + 5 - 5) * 1", (-1, 5, 5, 5)).reason
    assert verify("(7 - 8 / 8) * 4", (4.0, 7, 8, 8)).ok  # a whole float is that whole number
    assert verify("8 / (3 - 8 / 3)", (3.0, 3, 8, 8)).ok
