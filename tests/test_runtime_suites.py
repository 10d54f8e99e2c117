"""The two labelled suites, the chapter's Done-when figures, and the panels' callbacks over their ranges."""
import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from agentkit.context import LayeredContext  # noqa: E402
from agentkit.llm import NO_SCRIPT  # noqa: E402
from agentkit.runtime import DRIFT, REPEAT, USELESS, Runtime  # noqa: E402
from agentkit.runtime_suites import (  # noqa: E402
    SuiteLLM, load_suite, run_suite, run_task, runtime_early_stop_review, totals, web_search,
)
from agentkit.widgets import runtime as panel  # noqa: E402

SICK, LEGIT = load_suite("sick"), load_suite("legit")


@pytest.fixture(scope="module")
def sick_runs():
    return run_suite(SICK), run_suite(SICK, Runtime())


@pytest.fixture(scope="module")
def legit_runs():
    return run_suite(LEGIT), run_suite(LEGIT, Runtime())


def test_the_suites_are_labelled_and_cover_each_instability_alone_and_mixed():
    assert {t.category for t in SICK} == {REPEAT, USELESS, DRIFT, "mixed"}
    assert {t.category for t in LEGIT} == {"year-by-year comparison", "cross-checking two sources", "a search refined twice"}
    assert len({t.question for t in SICK + LEGIT}) == len(SICK + LEGIT)


def test_done_when_runtime_spends_at_most_a_third_of_the_max_steps_baseline_on_the_sick_suite(sick_runs):
    baseline, guarded = sick_runs
    assert all(r.stop_reason == "max_steps" and r.calls == r.task.max_steps and not r.correct for r in baseline)
    assert 3 * totals(guarded)["llm_calls"] <= totals(baseline)["llm_calls"]
    assert all(r.killed or r.stop_reason == "finished" for r in guarded)


def test_done_when_no_false_kills_on_the_legitimate_suite_at_the_defaults(legit_runs):
    baseline, guarded = legit_runs
    assert all(r.correct and r.verified for r in baseline)  # the stand-in solves each one without help
    assert [r.task.id for r in guarded if r.killed] == []
    assert all(r.correct and r.verified for r in guarded)


def test_each_instability_alone_is_reported_as_itself_and_mixed_runs_as_several(sick_runs):
    for run in sick_runs[1]:
        seen = {n.instability for n in run.interventions}
        assert seen == {run.task.category} if run.task.category != "mixed" else len(seen) >= 2, run.task.id


def test_a_model_that_follows_the_redirect_finishes_verified(sick_runs):
    (run,) = [r for r in sick_runs[1] if r.task.spec.get("heeds")]
    assert run.stop_reason == "finished" and run.correct and run.verified
    assert [n.kind for n in run.interventions] == ["hint", "redirect"]


def test_checkpoints_are_ledger_calls_and_counted_in_the_cost(legit_runs):
    baseline, guarded = legit_runs
    for plain, watched in zip(baseline, guarded):
        assert watched.calls == plain.calls + watched.checkpoint_calls
    assert sum(r.checkpoint_calls for r in guarded) > 0


def test_two_more_steps_would_not_have_saved_a_sick_run_but_would_a_false_kill(sick_runs):
    assert [r.solved_with_two_more_steps for r in runtime_early_stop_review(sick_runs[1])] == [False] * 12
    aggressive = run_suite(LEGIT, Runtime(jaccard=0.5))
    review = {r.task.id: (len(r.agent.trace), r.solved_with_two_more_steps) for r in runtime_early_stop_review(aggressive)}
    # Killed at step 4: five searches and a Finish fit in 6 steps; five searches, a sum and a Finish do not.
    assert review == {"wettest-of-five": (4, True), "two-towns": (4, True), "five-year-total": (4, False)}


def test_sweep_trade_off_false_kills_fall_and_sick_calls_rise_with_the_threshold():
    from agentkit.runtime_suites import sweep

    rows = sweep([0.5, 0.7, 0.9], [1, 3])
    by = {(r["window"], r["jaccard"]): r for r in rows}
    assert by[3, 0.5]["false_kills"] > by[1, 0.5]["false_kills"] > by[3, 0.7]["false_kills"] == 0
    assert by[3, 0.9]["sick_calls"] > by[3, 0.7]["sick_calls"]


def test_done_when_layered_context_costs_at_most_a_quarter_of_full_replay_at_30_steps():
    task = load_suite("long")[0]
    full = run_task(task, scraped=True)
    layered = run_task(task, context=LayeredContext(), scraped=True)
    assert len(full.run_calls) == len(layered.run_calls) == 30
    assert task.check(full.answer) and task.check(layered.answer)
    spent = [sum(c.prompt_tokens for c in a.run_calls) for a in (full, layered)]
    assert 4 * spent[1] <= spent[0]
    assert max(c.prompt_tokens for c in layered.run_calls) <= LayeredContext().budget_tokens


def test_same_success_on_the_suites_with_the_layered_context(legit_runs):
    layered = run_suite(LEGIT, context=LayeredContext())
    assert [r.correct for r in layered] == [r.correct for r in legit_runs[0]]


def test_chapter_10s_harness_reads_the_same_rows_as_run_suite(legit_runs):
    """One Task, one checker, one row reader: evaluate() over a suite gives run_suite's rows."""
    from dataclasses import fields

    from agentkit.evaluate import Run, evaluate
    from agentkit.react import ReActAgent
    from agentkit.runtime_suites import MAX_STEPS, web_tools

    report = evaluate(lambda: ReActAgent(SuiteLLM(), web_tools(), MAX_STEPS, repeat_fuse=False), LEGIT,
                      review=False, progress=False)
    assert report.runs == [Run(**{f.name: getattr(o, f.name) for f in fields(Run)}) for o in legit_runs[0]]
    assert report.summary.success_rate == 1 and sum(r.calls for r in report.runs) == totals(legit_runs[0])["llm_calls"]


def test_the_web_search_finds_pages_by_their_key_words():
    assert "In 2019, the Lakeford station recorded 660 mm" in web_search("rainfall at Lakeford in 2019?")
    assert web_search("Lakeford precipitation 2010") == "No results for 'Lakeford precipitation 2010'."
    assert web_search("Lakeford's council page").startswith("<div")
    assert "<nav>" in web_search("Lakeford rainfall 2019", scraped=True)


def test_the_stand_in_answers_by_content_and_every_call_is_in_its_ledger(sick_runs):
    prompt = sick_runs[1][0].agent.llm.calls[1].messages
    first, second = SuiteLLM(), SuiteLLM()
    assert first.think(prompt) == second.think(prompt) == first.think(prompt)
    assert len(first.calls) == 2 and first.calls[0].prompt_tokens == first.calls[1].prompt_tokens > 0
    assert not any(NO_SCRIPT in c.reply for r in sick_runs[1] for c in r.agent.llm.calls)


# --- the panels' callbacks ---------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", list(panel.task_choices().values()))
def test_guard_callback_runs_every_task(task_id):
    report = panel.show_guard(task_id)
    assert report.baseline.calls >= report.guarded.calls - report.guarded.checkpoint_calls - 1
    plt.close("all")


@pytest.mark.parametrize("settings", [
    dict(jaccard=0.1, window=1, checkpoint_every=0, max_steps=3), dict(jaccard=1.0, window=6, checkpoint_every=6, max_steps=30),
    dict(guard=False)])
def test_guard_callback_over_its_ranges(settings, capsys):
    report = panel.show_guard("pager", **settings)
    assert report.guarded.calls <= settings.get("max_steps", 20) + 1
    assert "LLM calls" in capsys.readouterr().out
    plt.close("all")


def test_guard_callback_rejects_an_unknown_task():
    with pytest.raises(ValueError, match="unknown task"):
        panel.show_guard("no such task")


# --- the held-out suite and the second-signal design ------------------------------------------------

HELDOUT = load_suite("heldout")


def test_the_held_out_suite_is_new_legitimate_work_of_kinds_the_tuning_suite_lacks():
    kinds = {task.category for task in HELDOUT}
    assert len(HELDOUT) >= 8
    assert kinds == {"paging through results", "checking a fact twice on purpose", "a slow-converging search"}
    assert not kinds & {task.category for task in LEGIT}
    assert not {task.id for task in HELDOUT} & {task.id for task in LEGIT + SICK}
    plain = run_suite(HELDOUT)
    assert all(run.correct and run.verified for run in plain), [run.task.id for run in plain if not run.correct]


def test_a_repeat_alone_stops_a_slow_converging_search_and_a_second_signal_design_does_not():
    reservoir = next(task for task in HELDOUT if task.id == "reservoir-slow-search")
    alone, = run_suite([reservoir], Runtime())
    agreed, = run_suite([reservoir], Runtime(second_signal=True))
    assert alone.killed and not alone.correct
    assert [n.instability for n in alone.interventions] == ["repeated parameters"] * 3
    assert not agreed.killed and agreed.correct
    assert max(n.level for n in agreed.interventions) == 2  # it was warned, up to the redirect, never stopped


def test_the_second_signal_design_still_stops_a_loop_whose_results_bring_nothing_new():
    paraphrases = next(task for task in SICK if task.id == "paraphrases")
    run, = run_suite([paraphrases], Runtime(second_signal=True))
    assert run.killed
    read_twice = next(task for task in HELDOUT if task.id == "two-years-read-twice")
    assert run_suite([read_twice], Runtime(jaccard=0.3, second_signal=True))[0].killed  # two signals do agree there
