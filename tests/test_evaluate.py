"""The harness: metric arithmetic on hand-made runs, rows read from ledgers, parallel = sequential, the review."""
import threading
import time
from types import SimpleNamespace

import pytest

from agentkit.evaluate import Run, compare, evaluate, run_task, steps_of, summarize
from agentkit.llm import Rule, ScriptedLLM
from agentkit.paradigms import make_act_only
from agentkit.react import REACT_MARKER, ReActAgent
from agentkit.rewoo import PLANNER_MARKER, ReWOOAgent
from agentkit.tasks import Task, load_tasks
from agentkit.tools import default_executor

TASKS = load_tasks()


def run(task_id, category, correct, steps, calls, prompt, completion, stop="finished", checker="numeric",
        answer="", solved=None):
    return Run(task_id, category, checker, answer, correct, steps, calls, prompt, completion, 0, stop,
               solved_with_two_more_steps=solved)


HAND_MADE = [
    run("a", "lookup", True, 1, 2, 100, 10),
    run("b", "lookup", False, 2, 3, 200, 20, answer="1900"),
    run("c", "multi-hop", False, 10, 10, 900, 90, stop="max_steps", solved=True),
    run("d", "impossible", False, 3, 4, 300, 30, checker="refuse", answer="1906"),
    run("e", "arithmetic", True, 4, 5, 400, 40),
]


def test_summary_arithmetic_on_hand_made_runs():
    s = summarize(HAND_MADE)
    assert s.tasks == 5 and s.success_rate == pytest.approx(0.4)
    assert s.mean_steps == pytest.approx(4.0)
    # numpy's default (linear) percentile: position 0.95 * 4 = 3.8 between 4 and 10, so 4 + 0.8 * 6;
    # the nearest-rank rule would say 10.
    assert s.p95_steps == pytest.approx(8.8)
    assert s.max_steps_share == pytest.approx(0.2) and s.early_stops == 1 and s.solved_with_two_more_steps == 1
    assert s.mean_calls == pytest.approx(4.8) and s.mean_prompt_tokens == pytest.approx(380)
    assert s.mean_completion_tokens == pytest.approx(38) and s.mean_tokens == pytest.approx(418)
    assert s.failures == {"answered the impossible": 1, "stopped: max_steps": 1, "wrong answer": 1}
    assert s.success_by_category == {"arithmetic": 1.0, "impossible": 0.0, "lookup": 0.5, "multi-hop": 0.0}


def test_p95_of_one_to_twenty_steps():
    runs = [run(str(i), "lookup", True, i, 1, 1, 1) for i in range(1, 21)]
    assert summarize(runs).p95_steps == pytest.approx(19.05)  # (20 - 1) * 0.95 = 18.05: 19 + 0.05 * (20 - 19)


def test_failure_categories_and_refusals():
    assert run("x", "lookup", False, 1, 1, 1, 1, answer="Unknown: not said").failure == "refused an answerable task"
    assert Run("x", "lookup", "exact", "", False, 0, 1, 1, 1, 0, "error", error="boom").failure == "error"
    with pytest.raises(ValueError):
        summarize([])


# --- rows from ledgers --------------------------------------------------------------


def stand_in_react(extra_steps=0, llm=None):
    return ReActAgent(llm or ScriptedLLM([Rule(REACT_MARKER, "Thought: easy\nAction: Finish[7006652]")]),
                      default_executor(), max_steps=5 + extra_steps)


def test_a_row_is_read_from_the_agents_ledgers_and_only_its_own_calls_count():
    shared = ScriptedLLM([Rule(REACT_MARKER, "Action: Finish[7006652]")])
    shared.think("a call before the run")
    row = run_task(lambda: stand_in_react(llm=shared), TASKS[10])
    assert row.task_id == "multiply" and row.correct and row.calls == 1 and row.steps == 1
    assert row.prompt_tokens == shared.calls[1].prompt_tokens and row.completion_tokens == shared.calls[1].completion_tokens


def test_an_agent_that_raises_is_an_error_row_that_keeps_its_cost():
    def make_bad_rewoo():
        return ReWOOAgent(ScriptedLLM([Rule(PLANNER_MARKER, "#E1 = Calculate[#E2]")]), default_executor())

    report = evaluate(make_bad_rewoo, TASKS[:2], progress=False)
    row = report.runs[0]
    assert row.stop_reason == "error" and row.calls == 1 and "PlanError" in row.error and row.failure == "error"
    assert report.summary.failures == {"error": 2}


def test_two_running_tasks_may_not_share_a_client():
    class SlowLLM(ScriptedLLM):
        def think(self, messages, temperature=0):
            time.sleep(0.2)  # the first task is still running when the second one starts
            return super().think(messages, temperature)

    shared, barrier = SlowLLM([Rule(REACT_MARKER, "Action: Finish[1]")]), threading.Barrier(2)

    def make_agent():
        barrier.wait(timeout=5)  # both tasks build their agent at the same moment
        return stand_in_react(llm=shared)

    rows = evaluate(make_agent, TASKS[:2], workers=2, progress=False, review=False).runs
    assert sorted(bool(r.error) for r in rows) == [False, True]
    assert "another running task is using" in next(r.error for r in rows if r.error)


def test_parallel_evaluation_gives_the_same_rows_as_sequential():
    tasks = TASKS[::2]  # every category, a bridge and a long task among them
    sequential = evaluate(make_act_only, tasks, workers=1, progress=False)
    parallel = evaluate(make_act_only, tasks, workers=4, progress=False)
    assert parallel.runs == sequential.runs  # every field but the wall time
    stops = [r for r in sequential.runs if r.early_stop]
    assert stops and {r.solved_with_two_more_steps for r in stops} == {True, False}
    assert 0 < sequential.summary.success_rate < 1


def test_the_review_reruns_early_stops_with_two_more_steps_only_if_the_factory_takes_them():
    def make_stuck(extra_steps=0):
        llm = ScriptedLLM([Rule(REACT_MARKER, lambda p: "Action: Finish[1]" if p.count("Observation:") >= 6
                                else f"Action: Calculate[{p.count('Observation:')} + 1]")])
        return ReActAgent(llm, default_executor(), max_steps=5 + extra_steps)

    one = [Task("one", "arithmetic", "What is one?", 1, "numeric", ("Calculate[1]",))]
    reviewed = evaluate(make_stuck, one, progress=False)
    assert reviewed.reviewed and reviewed.runs[0].stop_reason == "max_steps"
    assert reviewed.runs[0].solved_with_two_more_steps is True and reviewed.runs[0].steps == 5
    assert "solved with two more steps" in reviewed.early_stop_review()
    unreviewed = evaluate(lambda: make_stuck(), one, progress=False)
    assert not unreviewed.reviewed and unreviewed.runs[0].solved_with_two_more_steps is None


def test_compare_lists_what_broke_and_what_was_fixed():
    before = SimpleNamespace(name="v1", runs=HAND_MADE, summary=summarize(HAND_MADE))
    after_runs = [HAND_MADE[0], HAND_MADE[1], run("c", "multi-hop", True, 4, 5, 1, 1), HAND_MADE[3],
                  run("e", "arithmetic", False, 4, 5, 1, 1, answer="7")]
    after = SimpleNamespace(name="v2", runs=after_runs, summary=summarize(after_runs))
    result = compare(before, after)
    assert [b.task_id for b, _ in result.broken] == ["e"] and [b.task_id for b, _ in result.fixed] == ["c"]
    assert "broken (1)" in result.text() and "fixed (1)" in result.text()
    with pytest.raises(ValueError):
        compare(before, SimpleNamespace(name="v3", runs=after_runs[:2], summary=None))


def test_steps_are_read_the_way_each_paradigm_counts_them():
    assert steps_of(SimpleNamespace(steps=4, trace=[1])) == 4
    assert steps_of(SimpleNamespace(trace=[1, 2, 3])) == 3
    assert steps_of(SimpleNamespace(attempts=[SimpleNamespace(llm_calls=2), SimpleNamespace(llm_calls=3)])) == 5
    assert steps_of(SimpleNamespace(results=[1, 2])) == 2 and steps_of(object()) == 0


def test_react_runs_out_of_steps_exactly_where_the_key_path_needs_a_sixth_turn():
    """Five tool calls and a Finish do not fit in max_steps=5; two more steps rescue every such run."""
    from agentkit.paradigms import REACT_STEPS, make_react

    long = [t for t in TASKS if len(t.key_path) >= REACT_STEPS]
    report = evaluate(make_react, long + TASKS[:2], progress=False)
    assert long and [r.stop_reason for r in report.runs] == ["max_steps"] * len(long) + ["finished"] * 2
    assert all(r.solved_with_two_more_steps for r in report.early_stops)


def test_a_number_in_a_stop_message_never_scores_but_a_fallback_answer_does():
    task = Task("five", "arithmetic", "What is 2 + 3?", 5, "numeric", ("Calculate",))
    stuck = Rule(REACT_MARKER, "Thought: think more\nAction: Search[two plus three]")
    fallback = Rule("run was stopped early", "Action: Finish[5]")
    for finish_fallback, expected in ((False, False), (True, True)):
        make = lambda: ReActAgent(ScriptedLLM([fallback, stuck]), default_executor(), max_steps=5,  # noqa: E731
                                  repeat_fuse=False, finish_fallback=finish_fallback)
        row = run_task(make, task)
        assert row.stop_reason == "max_steps"
        assert ("5 steps" in row.answer) is not finish_fallback  # "no Finish after 5 steps": a 5, not an answer
        assert row.correct is expected


# --- Ctrl-C and sys.exit ----------------------------------------------------------------


class InterruptedAt(ReActAgent):
    """A stand-in ReAct agent; on one question, the run is stopped by Ctrl-C."""

    stop_on = ""

    def run(self, question, verbose=False):
        if question == self.stop_on:
            time.sleep(0.05)  # the three tasks before it have finished
            raise KeyboardInterrupt
        if question not in [t.question for t in TASKS[:3]]:
            time.sleep(0.3)  # the tasks after it are still running when it is stopped
        return super().run(question, verbose=verbose)


@pytest.mark.parametrize("workers", [1, 4])
def test_ctrl_c_stops_an_evaluation_and_keeps_the_finished_rows(workers):
    from agentkit import evaluate as evaluation

    EvaluationInterrupted = getattr(evaluation, "EvaluationInterrupted", ())

    built = []

    def make_agent():
        agent = InterruptedAt(ScriptedLLM([Rule(REACT_MARKER, "Action: Finish[7006652]")]), default_executor())
        agent.stop_on = TASKS[3].question
        built.append(agent)
        return agent

    with pytest.raises(KeyboardInterrupt) as stop:
        evaluate(make_agent, TASKS[:20], workers=workers, progress=False)
    assert len(built) == 4 if workers == 1 else len(built) < 20  # the tasks after it were not all run
    assert isinstance(stop.value, EvaluationInterrupted)
    assert "interrupted while running the tasks: 3 of 20 tasks had finished" in str(stop.value)
    report = stop.value.report
    assert report.interrupted and [r.task_id for r in report.runs] == [t.id for t in TASKS[:3]]
    assert report.summary.tasks == 3 and all(r.correct or r.stop_reason == "finished" for r in report.runs)


def test_sys_exit_from_an_agent_is_an_error_row_not_the_end_of_the_batch():
    class Exits(ReActAgent):
        def run(self, question, verbose=False):
            if question == TASKS[1].question:
                raise SystemExit("the agent called sys.exit")
            return super().run(question, verbose=verbose)

    report = evaluate(lambda: Exits(ScriptedLLM([Rule(REACT_MARKER, "Action: Finish[1]")]), default_executor()),
                      TASKS[:3], progress=False, review=False)
    assert [r.stop_reason for r in report.runs] == ["finished", "error", "finished"]
    assert report.runs[1].error == "SystemExit: the agent called sys.exit"


# --- the key path, scored beside the answer --------------------------------------------------------


def test_the_key_path_is_scored_beside_the_answer():
    from agentkit.evaluate import key_path_found
    from agentkit.paradigms import make_plan_and_solve, make_react
    from agentkit.tools import ToolCall

    tasks = {t.id: t for t in load_tasks()}
    bridge = tasks["bridge-jobs"]
    made = [ToolCall("search", "steve  WOZNIAK", "...", True, 0.0), ToolCall("Search", "Steve Jobs", "error: down", False, 0.0)]
    assert key_path_found(bridge, made) == 0.5  # case and spaces aside; a call that failed found nothing
    assert key_path_found(bridge, []) == 0.0
    react = evaluate(make_react, [bridge, tasks["multiply"]], progress=False, review=False)
    assert [r.key_path_found for r in react.runs] == [1.0, 1.0] and react.summary.right_off_path == 0
    no_tools = evaluate(make_plan_and_solve, [tasks["multiply"]], progress=False, review=False)
    run, = no_tools.runs
    assert run.correct and run.key_path_found == 0.0 and no_tools.summary.right_off_path == 1
    assert no_tools.summary.key_path_share == 0.0


def test_a_task_without_a_key_path_is_left_out_of_the_share():
    from agentkit.evaluate import key_path_found, summarize
    from agentkit.lakeford import load_suite

    task = load_suite("legit")[0]
    assert key_path_found(task, []) is None
    row = Run(task.id, task.category, task.checker, "2021", True, 3, 3, 10, 2, 2, "finished")
    assert summarize([row]).key_path_share is None and summarize([row]).right_off_path == 0
