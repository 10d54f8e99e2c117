"""Reflection: rounds, the narrow pass verdict, the review carried forward, the hard exit."""
import pytest

from agentkit.llm import Rule, ScriptedLLM, ledger_totals
from agentkit.modes import get_llm
from agentkit.reflection import (
    REVIEWER_ROLE,
    WRITER_ROLE,
    Memory,
    ReflectionAgent,
    cost_per_round,
    extract_code,
    parse_verdict,
)
from agentkit.scripts.reflection import SIEVE, TRIAL_DIVISION
from agentkit.widgets.reflection import MAX_ITERATIONS_RANGE, STRICTNESS, reviewer_run, show_reviewer

PRIME_TASK = "Write a Python function find_primes(n) that returns the list of all primes up to and including n."


def writer_and_reviewer(review: str) -> ScriptedLLM:
    """A writer that numbers its drafts by the reviews it has seen, and a fixed reviewer."""
    return ScriptedLLM([
        Rule(REVIEWER_ROLE, review, name="review"),
        Rule(lambda p: WRITER_ROLE in p and "previous draft" in p,
             lambda p: "```python\nx = %d\n```" % (int(p.split("x = ")[1].split()[0]) + 1), name="revise"),
        Rule(WRITER_ROLE, "```python\nx = 1\n```", name="draft"),
    ])


def test_prime_task_passes_in_two_rounds_with_the_sieve():
    agent = ReflectionAgent(max_iterations=3, llm=get_llm(mode="fake"))
    code = agent.run(PRIME_TASK, verbose=False)
    assert agent.passed is True
    assert agent.memory.rounds() == 2
    assert agent.memory.drafts() == [TRIAL_DIVISION, SIEVE]
    assert code == SIEVE
    assert [r.verdict for r in agent.memory.reviews()] == ["revise", "pass"]
    assert len(agent.llm.calls) == 4  # draft, review, revision, review


def test_the_review_reaches_the_next_drafts_prompt_and_only_that_one():
    agent = ReflectionAgent(max_iterations=3, llm=get_llm(mode="fake"))
    agent.run(PRIME_TASK, verbose=False)
    first_draft_prompt, review_prompt, revision_prompt, _ = [c.prompt for c in agent.llm.calls]
    review = agent.memory.reviews()[0].text
    assert "Sieve of Eratosthenes" in review and "n < 2" in review
    assert review in revision_prompt
    assert TRIAL_DIVISION in revision_prompt  # the draft being revised travels too
    assert "Sieve of Eratosthenes" not in first_draft_prompt
    assert TRIAL_DIVISION in review_prompt and review not in review_prompt


def test_only_the_latest_review_is_carried():
    llm = writer_and_reviewer("Issue: make it better\nVERDICT: REVISE")
    agent = ReflectionAgent(max_iterations=3, llm=llm)
    agent.run("task", verbose=False)
    revision_prompts = [c.prompt for c in llm.calls if c.note == "rule: revise"]
    assert len(revision_prompts) == 2
    assert all(p.count("Issue: make it better") == 1 for p in revision_prompts)
    assert "x = 2" in revision_prompts[1] and "x = 1" not in revision_prompts[1]


@pytest.mark.parametrize("max_iterations", [1, 2, 3, 5])
def test_never_happy_reviewer_hits_the_limit_and_returns_the_last_draft(max_iterations):
    llm = writer_and_reviewer("Still not good enough.\nVERDICT: REVISE")
    agent = ReflectionAgent(max_iterations=max_iterations, llm=llm)
    result = agent.run("task", verbose=False)
    assert agent.passed is False
    assert result is not None and result == f"x = {max_iterations}"
    assert result == agent.memory.last_draft()
    assert agent.memory.rounds() == max_iterations
    assert len(llm.calls) == 2 * max_iterations  # each draft is reviewed, no revision after the last


NOT_PASSES = [
    "This code cannot pass.",
    "PASS? no.",
    "Nothing passes here.",
    "I would not pass this.\nVERDICT: REVISE",
    "VERDICT: PASS? no.",
    "VERDICT: PASS\nOn second thought, no.",
    "VERDICT: PASS if you fix the loop",
    "The verdict: pass is premature",
    "PASS",
    "",
    "VERDICT: PASSABLE",
]


@pytest.mark.parametrize("review", NOT_PASSES)
def test_negative_or_vague_verdicts_are_not_passes(review):
    assert parse_verdict(review) != "pass"
    agent = ReflectionAgent(max_iterations=2, llm=writer_and_reviewer(review))
    agent.run("task", verbose=False)
    assert agent.passed is False and agent.memory.rounds() == 2


@pytest.mark.parametrize("review", ["VERDICT: PASS", "Looks fine.\nverdict: pass\n\n", "**VERDICT: PASS**"])
def test_a_verdict_on_the_last_line_passes(review):
    assert parse_verdict(review) == "pass"
    agent = ReflectionAgent(max_iterations=3, llm=writer_and_reviewer(review))
    assert agent.run("task", verbose=False) == "x = 1"
    assert agent.passed is True and len(agent.llm.calls) == 2


def test_verdict_parser_classifies_and_never_raises():
    assert parse_verdict("notes\nVERDICT: REVISE") == "revise"
    assert parse_verdict("no verdict at all") == "missing"
    assert parse_verdict(None) == "missing"


def test_extract_code_takes_the_fenced_block_else_the_reply():
    assert extract_code("Here:\n```python\nx = 1\n```\nbye") == "x = 1"
    assert extract_code("  x = 2  ") == "x = 2"


def test_bad_max_iterations_is_a_clear_error():
    for bad in (0, -1, 2.5, "3"):
        with pytest.raises(ValueError, match="max_iterations"):
            ReflectionAgent(max_iterations=bad, llm=ScriptedLLM([]))


def test_memory_counts_drafts_as_rounds():
    memory = Memory()
    assert memory.rounds() == 0 and memory.last_draft() is None
    memory.add_draft("a")
    memory.add_review("r", "revise")
    memory.add_draft("b")
    assert memory.rounds() == 2 and memory.last_draft() == "b" and memory.last_review() == "r"


def test_cost_per_round_adds_up_to_the_ledger():
    agent = ReflectionAgent(max_iterations=4, llm=writer_and_reviewer("VERDICT: REVISE"))
    agent.run("task", verbose=False)
    rows = cost_per_round(agent.llm.calls)
    assert [r["calls"] for r in rows] == [2, 2, 2, 2]
    totals = ledger_totals(agent.llm.calls)
    assert sum(r["total_tokens"] for r in rows) == totals["total_tokens"]
    assert sum(r["prompt_tokens"] for r in rows) == totals["prompt_tokens"]


def expected_rounds(fixes, max_iterations):
    return max_iterations if fixes is None else min(fixes + 1, max_iterations)


@pytest.mark.parametrize("strictness", list(STRICTNESS))
def test_panel_callback_over_its_whole_range(strictness):
    fixes = STRICTNESS[strictness]
    for max_iterations in range(MAX_ITERATIONS_RANGE[0], MAX_ITERATIONS_RANGE[1] + 1):
        report = reviewer_run(strictness, max_iterations, llm=get_llm(mode="fake"))
        rounds = expected_rounds(fixes, max_iterations)
        assert report["rounds"] == rounds
        assert report["passed"] is (fixes is not None and fixes + 1 <= max_iterations)
        assert report["totals"]["calls"] == 2 * rounds
        assert [r["calls"] for r in report["per_round"]] == [2] * rounds
        assert report["last_draft"].count("# fixed:") == rounds - 1


def test_never_satisfied_rounds_cost_more_tokens_each_time():
    report = reviewer_run("never satisfied", MAX_ITERATIONS_RANGE[1], llm=get_llm(mode="fake"))
    tokens = [r["total_tokens"] for r in report["per_round"]]
    assert all(later > earlier for earlier, later in zip(tokens, tokens[1:]))


def test_a_shared_client_reports_only_its_own_run():
    llm = get_llm(mode="fake")
    first = reviewer_run("never satisfied", 3, llm=llm)
    second = reviewer_run("never satisfied", 3, llm=llm)
    assert first["totals"] == second["totals"] and len(llm.calls) == 12


def test_panel_display_and_bad_strictness(capsys, monkeypatch):
    import matplotlib

    monkeypatch.setenv("AP_MODE", "fake")
    matplotlib.use("Agg")
    report = show_reviewer("never satisfied", 2)
    assert "passed=False" in capsys.readouterr().out and report["rounds"] == 2
    with pytest.raises(ValueError, match="strictness"):
        reviewer_run("very", 2)
