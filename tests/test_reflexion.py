"""Reflexion over ReAct with the stand-in: lessons written, retrieved, credited, evicted."""
import pytest

from agentkit.lessons import LessonStore
from agentkit.modes import get_llm
from agentkit.reflexion import (
    LESSONS_HEADER,
    REFLECTION_MARKER,
    ReflexionAgent,
    confidence_by_trial,
    exact_match,
    parse_lesson,
)
from agentkit.scripts.reflexion import ADA_QUESTION, TURING_QUESTION
from agentkit.widgets.reflexion import (
    CONFIDENCE_RANGE,
    THRESHOLD_RANGE,
    WRONG_LESSONS,
    plot_run,
    polluted_run,
)


@pytest.fixture
def store(tmp_path):
    with LessonStore(tmp_path / "lessons.sqlite3") as s:
        yield s


def _reflection_calls(calls):
    return [c for c in calls if REFLECTION_MARKER in c.prompt]


def _react_calls(calls):
    return [c for c in calls if REFLECTION_MARKER not in c.prompt]


def test_a_failed_trial_writes_a_lesson_and_the_retry_succeeds_because_of_it(store):
    llm = get_llm()  # the default course script must answer this chapter
    result = ReflexionAgent(llm, store=store).run(TURING_QUESTION, "41", verbose=False)
    first, second = result.trials
    assert (first.success, second.success, result.trials_to_success) == (False, True, 2)
    assert LESSONS_HEADER not in first.prompt and first.shown == []
    assert len(_reflection_calls(first.calls)) == 1 and _reflection_calls(second.calls) == []
    lesson = store.get(first.lesson_written)
    assert all([lesson.trigger, lesson.error_type, lesson.fix, lesson.applies_to])
    # The retry's every ReAct prompt carries the lesson, and the agent names it when applying it.
    assert all(lesson.as_prompt_line() in c.prompt for c in _react_calls(second.calls))
    assert second.shown == second.used == [lesson.id]
    assert store.get(lesson.id).confidence > store.initial_confidence
    assert len(llm.calls) == sum(len(t.calls) for t in result.trials)


def test_the_reflection_prompt_has_the_verdict_but_not_the_gold_answer(store):
    result = ReflexionAgent(get_llm(), store=store, max_trials=1).run(TURING_QUESTION, "41", verbose=False)
    (reflection,) = _reflection_calls(result.trials[0].calls)
    assert "judged this answer wrong" in reflection.prompt and "Final answer: 42" in reflection.prompt
    assert "41" not in reflection.prompt


def test_without_a_store_every_trial_repeats_the_same_failure():
    llm = get_llm()
    result = ReflexionAgent(llm, store=None, max_trials=3).run(TURING_QUESTION, "41", verbose=False)
    assert [t.success for t in result.trials] == [False] * 3 and result.trials_to_success is None
    assert {t.answer for t in result.trials} == {"42"}
    assert _reflection_calls(llm.calls) == [] and all(LESSONS_HEADER not in c.prompt for c in llm.calls)


def test_stored_lessons_help_a_fresh_agent_on_a_new_question(tmp_path):
    # (test_lessons checks that the file itself survives into a new process.)
    path = tmp_path / "lessons.sqlite3"
    with LessonStore(path) as store:
        ReflexionAgent(get_llm(), store=store).run(TURING_QUESTION, "41", verbose=False)
    with LessonStore(path) as reopened:
        result = ReflexionAgent(get_llm(), store=reopened).run(ADA_QUESTION, "36", verbose=False)
    assert result.trials_to_success == 1 and LESSONS_HEADER in result.trials[0].prompt


def test_only_the_top_k_lessons_reach_the_prompt(store):
    for i in range(7):
        store.add(f"how old someone was, note {i}", "age", f"keep note {i} in mind", "people who died")
    result = ReflexionAgent(get_llm(), store=store, top_k=2, max_trials=1).run(TURING_QUESTION, "41", verbose=False)
    trial = result.trials[0]
    assert len(trial.shown) == 2
    for call in _react_calls(trial.calls):
        lesson_lines = [line for line in call.prompt.splitlines() if line.startswith("[L")]
        assert [line.split("]")[0] for line in lesson_lines] == [f"[L{i}" for i in trial.shown]
    with pytest.raises(ValueError, match="top_k"):
        ReflexionAgent(get_llm(), store=store, top_k=6)


def test_a_lesson_the_agent_does_not_name_shares_the_outcome(store):
    # The stand-in recognises no instruction in this lesson, so it names none: credit goes to all shown.
    vague = store.add("how old someone was when they died", "vague", "be careful", "people who died")
    result = ReflexionAgent(get_llm(), store=store, max_trials=1).run(TURING_QUESTION, "41", verbose=False)
    assert result.trials[0].shown == result.trials[0].used == [vague]
    assert store.get(vague).confidence == pytest.approx(store.initial_confidence - store.penalty)


def test_a_wrong_lesson_misleads_until_it_is_evicted():
    run = polluted_run("count the birth year", confidence=0.9, threshold=0.3)
    trials, wrong = run.result.trials, run.injected_id
    gone = run.evicted_after
    assert gone is not None and run.survived == gone
    for t in trials[:gone]:  # every trial it reached, the agent followed it and failed
        assert wrong in t.used and not t.success and t.answer == "43"
    after = trials[gone]  # first trial without it
    assert wrong not in after.shown and after.success and after.number == run.result.trials_to_success
    (audit,) = run.evicted
    assert audit["id"] == wrong and audit["source"] == "injected" and audit["confidence"] < run.threshold
    table = confidence_by_trial(run.history, trials[-1].number)
    assert table[wrong][0] == 0.9 and table[wrong][gone] < run.threshold and table[wrong][gone + 1] is None
    wrong_values = [v for v in table[wrong] if v is not None]
    assert wrong_values == sorted(wrong_values, reverse=True)  # it only ever lost confidence


def _values(bounds):
    return [round(bounds[0] + 0.1 * i, 1) for i in range(round((bounds[1] - bounds[0]) / 0.1) + 1)]


def _check_run(run):
    # Whatever the setting, the wrong lesson is evicted and the very next trial succeeds.
    trials = run.result.trials
    assert run.evicted_after is not None and run.result.trials_to_success == run.evicted_after + 1
    assert all(not t.success for t in trials[:-1]) and trials[-1].success
    assert all(f"trial {t.number}:" in run.text for t in trials)
    return run.survived


def test_the_panel_callback_over_every_value():
    for wrong_lesson in WRONG_LESSONS:
        _check_run(polluted_run(wrong_lesson))
    by_confidence = [_check_run(polluted_run(confidence=c)) for c in _values(CONFIDENCE_RANGE)]
    by_threshold = [_check_run(polluted_run(threshold=t)) for t in _values(THRESHOLD_RANGE)]
    # A more confident wrong lesson, or a lower threshold, keeps it longer.
    assert by_confidence == sorted(by_confidence) and by_confidence[0] < by_confidence[-1]
    assert by_threshold == sorted(by_threshold, reverse=True) and by_threshold[0] > by_threshold[-1]


def test_the_plot_draws_one_line_per_lesson():
    import matplotlib.pyplot as plt

    run = polluted_run()
    left, right = plot_run(run)
    lessons = {h["lesson_id"] for h in run.history}
    assert len(right.get_lines()) == len(lessons) + 1  # + the threshold line
    plt.close("all")


def test_the_panel_refuses_values_out_of_range():
    with pytest.raises(ValueError, match="unknown wrong lesson"):
        polluted_run("be nice")
    with pytest.raises(ValueError, match="confidence"):
        polluted_run(confidence=1.5)
    with pytest.raises(ValueError, match="threshold"):
        polluted_run(threshold=0.0)


def test_exact_match_ignores_case_spacing_and_a_final_period():
    assert exact_match(" 41. ", "41") and exact_match("Paris", "paris")
    assert not exact_match("42", "41") and not exact_match("41 years", "41")


@pytest.mark.parametrize("reply", [None, "", "no json here", "{broken", "[1, 2]", '"a string"',
                                   '{"trigger": "x"}', '{"trigger": "", "error_type": "e", "fix": "f", "applies_to": "a"}',
                                   "{" * 5000 + "}" * 5000])
def test_the_lesson_parser_never_raises_and_refuses_incomplete_lessons(reply):
    assert parse_lesson(reply) is None


def test_the_lesson_parser_reads_a_lesson_wrapped_in_prose():
    reply = 'Here you go:\n{"trigger": "t", "error_type": "e", "fix": "f  now", "applies_to": "a"}\nThanks'
    assert parse_lesson(reply) == {"trigger": "t", "error_type": "e", "fix": "f now", "applies_to": "a"}


def test_max_trials_bounds_the_run(store):
    with pytest.raises(ValueError, match="max_trials"):
        ReflexionAgent(get_llm(), store=store, max_trials=0)
    result = ReflexionAgent(get_llm(), store=store, max_trials=1).run(TURING_QUESTION, "41", verbose=False)
    assert len(result.trials) == 1 and not result.success
