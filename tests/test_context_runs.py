"""Chapter 17's measurements: each strategy's answers and calls on the relay, the long-context knob, cached-prefix
pricing, and the shipped sweep, which the code reproduces row for row."""
import math

import pytest

from agentkit import tokens
from agentkit.caching import DEEPSEEK_CHAT, Prices, cached_prefix_tokens, dollars, shared_prefix_tokens
from agentkit.context_runs import (KNOBS, STRATEGIES, frontier, growth, kind_of, make_agent, relay_llm, row, run_relay,
                                   shipped_sweep)
from agentkit.long_context import LongContextLLM, error_rate
from agentkit.protocol import CallRecord
from agentkit.relay import relay_task

TASK = relay_task("relay-20")


@pytest.fixture(scope="module")
def runs():
    return {strategy: run_relay(TASK, strategy) for strategy in STRATEGIES}


def test_every_strategy_but_the_window_answers_right_and_the_window_lost_the_tariff(runs):
    assert {s for s, run in runs.items() if not run.correct} == {"sliding window"}
    window = runs["sliding window"]
    assert window.answer.startswith("unknown") and window.lost_at is not None
    assert [s.action for s in window.agent.trace[-2:]] == ["Dispatch", "Finish"]
    assert runs["full history"].lost_at is None and runs["observation masking"].lost_at is None


def test_each_strategy_adds_the_calls_its_docstring_says(runs):
    assert len(runs["full history"].calls) == TASK.steps
    assert runs["compaction"].added_calls["summary"] == len(runs["compaction"].agent.context.summaries) >= 1
    assert runs["note tool"].added_calls["lead steps over the baseline"] == 2
    assert runs["note tool"].agent.notebook.notes == [f"tariff: {TASK.tariff} credits per km"]
    sub = runs["sub-agent"]
    assert sub.added_calls["sub-agent"] == sum(len(w.trace) for w in sub.agent.walker.runs)
    assert sub.tool_calls == len(sub.agent.run_tool_calls) + sum(len(w.tools.log) for w in sub.agent.walker.runs)
    assert all(kind_of(c) == "lead" for c in runs["full history"].calls)


def test_the_strategies_bend_the_curve_full_history_is_the_most_tokens(runs):
    totals = {s: sum(run.prompt_tokens) for s, run in runs.items()}
    assert max(totals, key=totals.get) == "full history"
    assert runs["full history"].cumulative[-1] == totals["full history"]


def test_unknown_strategy_and_setting_are_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="the strategies are full history"):
        make_agent(TASK, "magic", relay_llm())
    with pytest.raises(ValueError, match="the settings are window"):
        run_relay(TASK, "sliding window", windw=3)


# --- the knob -------------------------------------------------------------------------------------


def test_the_knob_at_zero_is_the_stand_in_and_its_error_rate_rises_with_length():
    assert error_rate(0.05, 0) == 0 and error_rate(0.05, 2000) == pytest.approx(0.1) and error_rate(0.5, 9000) == 1
    plain, zero = run_relay(TASK, "full history"), run_relay(TASK, "full history", llm=LongContextLLM(0.0))
    assert [c.reply for c in plain.calls] == [c.reply for c in zero.calls]
    for bad in (-0.1, 1.5, True, "0.1"):
        with pytest.raises(ValueError, match="per_1k_tokens must be a number from 0 to 1"):
            LongContextLLM(bad)


def test_only_fact_copying_replies_are_misread_and_past_the_rates_length_every_one_is():
    run = run_relay(TASK, "note tool", llm=LongContextLLM(1.0))  # a certain misread from 1,000 prompt tokens on
    misread = [c for c in run.calls if "misread" in c.note]
    copying = [c for c in run.calls if any(f"Action: {a}[" in c.reply for a in ("Calculate", "Finish", "Note"))]
    assert misread and all(c in copying for c in misread)
    assert all(c in misread for c in copying if c.prompt_tokens >= 1000) and not run.correct


def test_the_knobs_draws_are_fixed_by_seed_and_prompt():
    a = [row(run_relay(TASK, "full history", knob=0.05, seed=seed), 0.05, seed)["answer"] for seed in range(6)]
    b = [row(run_relay(TASK, "full history", knob=0.05, seed=seed), 0.05, seed)["answer"] for seed in range(6)]
    assert a == b and len(set(a)) > 1


# --- caching ----------------------------------------------------------------------------------------


def record(system, user, prompt_tokens=None):
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return CallRecord(messages, "ok", prompt_tokens or tokens.count_messages(messages), 1, 0.0, 0.0)


def test_a_cached_prefix_is_the_common_start_with_the_latest_call_of_the_same_conversation():
    system = "You are an agent. " * 20
    calls = [record(system, "Question: q"), record(system, "Question: q\n\nstep one"),
             record(system, "Question: q\n\nstep one\n\nstep two"), record("Another role. " * 20, "Question: q")]
    cached = cached_prefix_tokens(calls)
    assert cached[0] == 0 and cached[3] == 0  # a conversation's first call
    whole = tokens.TOKENS_PER_MESSAGE + tokens.count_tokens(system)
    assert cached[1] == whole + tokens.TOKENS_PER_MESSAGE + tokens.count_tokens("Question: q")
    assert cached[2] == whole + tokens.TOKENS_PER_MESSAGE + tokens.count_tokens("Question: q\n\nstep one")
    stamped = [record("10:01 " + system, "Question: q"), record("10:02 " + system, "Question: q")]
    assert cached_prefix_tokens(stamped) == [0, 0]  # another first message: another conversation
    assert shared_prefix_tokens(stamped[1].messages, stamped[0].messages) == tokens.TOKENS_PER_MESSAGE + \
        tokens.count_tokens("10:0")


def test_dollars_bill_cached_tokens_at_the_hit_price_and_the_rest_at_the_miss_price():
    calls = [record("s", "u", 1000), record("s", "u", 1000)]
    prices = Prices(miss=1.0, hit=0.1, output=2.0)
    assert dollars(calls, prices, cache=False) == pytest.approx((2000 * 1.0 + 2 * 2.0) / 1e6)
    assert dollars(calls, prices, cached=[0, 900]) == pytest.approx((1100 * 1.0 + 900 * 0.1 + 4.0) / 1e6)
    assert DEEPSEEK_CHAT.hit < DEEPSEEK_CHAT.miss < DEEPSEEK_CHAT.output


def test_a_cache_keeps_most_of_full_history_and_little_of_a_window(runs):
    share = {s: sum(run.cached_tokens) / sum(run.prompt_tokens) for s, run in runs.items()}
    assert share["full history"] > 0.85 > 0.5 > share["sliding window"]
    assert runs["full history"].dollars(cache=True) < runs["full history"].dollars(cache=False)


# --- the shipped sweep -----------------------------------------------------------------------------


def test_the_shipped_sweep_is_what_the_code_measures():
    sweep = shipped_sweep()
    assert sweep["knobs"] == list(KNOBS) and set(sweep["curves"]) == set(STRATEGIES)
    assert len(sweep["rows"]) == len(STRATEGIES) * 9 * (1 + len(sweep["seeds"]))
    sample = [r for r in sweep["rows"] if (r["task"], r["seed"]) in (("relay-20", 0), ("relay-25", 3))
              and r["strategy"] in ("compaction", "sub-agent", "note tool")]
    assert len(sample) == 9
    for stored in sample:
        run = run_relay(relay_task(stored["task"]), stored["strategy"], knob=stored["knob"], seed=stored["seed"])
        assert row(run, stored["knob"], stored["seed"]) == stored
    curve = sweep["curves"]["compaction"]["relay-20"]
    assert curve["prompt_tokens"] == run_relay(TASK, "compaction").prompt_tokens and set(curve["kinds"]) == {"l", "s"}


def test_the_sweeps_tables_full_history_is_quadratic_and_the_window_lost_everything():
    sweep = shipped_sweep()
    table = growth(sweep["curves"])
    assert 1.8 < table["full history"]["exponent"] < 2.1
    assert all(0.9 < table[s]["exponent"] < 1.3 for s in ("sliding window", "note tool", "sub-agent", "compaction"))
    edge = frontier(sweep["rows"], 0.0)
    assert edge["sliding window"]["success"] == 0 and all(
        edge[s]["success"] == 1 for s in STRATEGIES if s != "sliding window")
    noisy = frontier(sweep["rows"], KNOBS[1])
    assert noisy["full history"]["success"] < noisy["observation masking"]["success"] < noisy["sub-agent"]["success"]
    assert all(math.isclose(noisy[s]["prompt_tokens"], edge[s]["prompt_tokens"], rel_tol=0.05) for s in STRATEGIES)
