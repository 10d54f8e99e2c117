"""Chapter 15's team guards: each of the four checks on its own, and each guard against the fault it is for, with
the guard on, off, and with only that check turned off (so every guard has a test that fails without it)."""
import pytest

from agentkit import get_llm
from agentkit.react import Step
from agentkit.tasks import load_tasks
from agentkit.team_faults import CHECK_OF, TEAM_KNOBS, TOPOLOGY_OF, FaultyTeamLLM, injected, injection
from agentkit.team_guards import (CHECKS, IGNORED_ASSIGNMENT, MAST, REPEATED_HANDOFF, UNVERIFIED_REPORT,
                                  WITHHELD_CONTEXT, TeamGuard, ignored_assignment, repeated_handoff,
                                  unverified_numbers, withheld)
from agentkit.members import DROPPED, MEMBER_MARKER
from agentkit.teams import AgentsAsTools, OrchestratorWorkers, Supervisor

TASKS = {t.id: t for t in load_tasks()}
WOZ = TASKS["woz-torvalds"].question  # gold 19


def ran(action, argument, observation="x"):
    return Step("", action, argument, observation, executed=True)


# --- the checks on their own -----------------------------------------------------------------------


def test_a_repeated_handoff_is_the_same_member_with_nearly_the_same_words_within_the_window():
    earlier = [(1, "researcher", "Search for Steve Wozniak."), (2, "analyst", "Calculate 2 + 2."),
               (3, "researcher", "Search for Linus Torvalds.")]
    assert "repeats handoff 1" in repeated_handoff("researcher", "search for steve wozniak", earlier)
    assert repeated_handoff("analyst", "Search for Steve Wozniak.", earlier) is None  # another member
    assert repeated_handoff("researcher", "Search for Steve Jobs.", earlier) is None  # Jaccard 0.5 < 0.7
    assert repeated_handoff("researcher", "Search for Steve Wozniak.", earlier, window=1) is None


def test_an_ignored_assignment_is_no_call_that_serves_it():
    assert ignored_assignment("Search for Linus Torvalds.", "", [ran("Search", "Steve Wozniak")])
    assert ignored_assignment("Search for Linus Torvalds.", "", [ran("Search", "Steve Wozniak"),
                                                                 ran("Search", "Linus Torvalds")]) is None
    assert ignored_assignment("Search for Steve Wozniak.", "", [ran("Search", "Steve Jobs")])  # half the words
    assert ignored_assignment("Calculate (the number from Search[A]) - (the number from Search[B]).",
                              "A (born 1969) | B (born 1950)", [ran("Calculate", "1969 - 1950")]) is None
    assert ignored_assignment("Calculate 2 + 2.", "", [ran("Calculate", "3 + 3")])
    assert ignored_assignment("Search for Ada.", "", []) is None  # ran no tool: nothing to judge


def test_an_unverified_report_asserts_a_number_none_of_its_observations_holds():
    seen = ["Steve Wozniak (born August 11, 1950) ... co-founded Apple with Steve Jobs in 1976."]
    assert unverified_numbers("Steve Wozniak (born August 11, 1960) ... in 1976.", seen) == ["1960"]
    assert unverified_numbers("Steve Wozniak (born August 11, 1976) ... in 1976.", seen) == []  # seen is not right
    assert unverified_numbers("I cannot: 3 numbers are missing.", seen) == []  # a refusal asserts nothing


def test_withheld_context_is_a_member_that_cannot_while_the_team_knew():
    findings = ["Linus Torvalds (born December 28, 1969) started Linux.", "Steve Wozniak (born August 11, 1950)."]
    cannot = "I cannot calculate this: the numbers it needs are not in my prompt."
    assert withheld(cannot, "Calculate ... Context from the team: none", findings) == findings
    assert withheld(cannot, "Context from the team: " + " ".join(findings), findings) == []
    assert withheld("19", "Context from the team: none", findings) == []  # it did not say it cannot


def test_a_guard_names_its_checks_and_refuses_unknown_ones():
    assert set(MAST) == set(CHECKS) and all(MAST[c].startswith("FM-") for c in CHECKS)
    with pytest.raises(ValueError, match="unknown check"):
        TeamGuard(checks=("telepathy",))
    with pytest.raises(ValueError, match="jaccard"):
        TeamGuard(jaccard=0)


# --- each guard against its fault: on, off, and with only its own check off -------------------------------


def run(knob, checks=CHECKS, guarded=True, rate=1.0):
    guard = TeamGuard(checks=checks) if guarded else None
    team = TOPOLOGY_OF[knob](FaultyTeamLLM(**{knob: rate}), guard=guard)
    return team, team.run(WOZ), guard


def without(check):
    return tuple(c for c in CHECKS if c != check)


def test_the_report_check_turns_a_wrong_result_back_into_the_right_answer():
    team, answer, _ = run("wrong_result", guarded=False)
    assert answer == "29" and injected(team, "wrong_result")  # 1969 - 1960: the shifted birth year was used
    team, answer, guard = run("wrong_result")
    assert answer == "19" and guard.fired(UNVERIFIED_REPORT) == 3
    assert len(team.llm.calls) == 10  # the guard made no call: it read the tool logs
    _, answer, guard = run("wrong_result", without(UNVERIFIED_REPORT))
    assert answer == "29" and not guard.alarms


def test_the_loop_guard_skips_then_stops_a_looping_supervisor():
    team, answer, _ = run("handoff_loop", guarded=False)
    assert team.stop_reason == "max_turns" and len(team.member_runs) == 8 and len(team.llm.calls) == 32
    team, answer, guard = run("handoff_loop")
    assert team.stop_reason == f"guard: {REPEATED_HANDOFF}" and team.unverified
    assert [a.action for a in guard.alarms] == ["did not carry it out", "stopped the team"]
    assert len(team.member_runs) == 1 and len(team.llm.calls) == 7  # 3 replies, 1 researcher run of 3, the answer
    assert answer.startswith("Unknown")  # the calculation never ran, and the answer says so
    team, _, guard = run("handoff_loop", without(REPEATED_HANDOFF))
    assert team.stop_reason == "max_turns" and not guard.alarms


def test_a_retry_after_a_failed_handoff_is_not_a_repeat():
    team, answer, guard = run("lost_context", checks=(REPEATED_HANDOFF,))
    assert team.stop_reason == "max_turns" and not guard.alarms  # the analyst failed every time: retries, no loop


def test_the_context_guard_gives_the_member_what_the_supervisor_withheld():
    team, answer, _ = run("lost_context", guarded=False)
    assert team.stop_reason == "max_turns" and answer.startswith("Stopped by max_turns")
    team, answer, guard = run("lost_context")
    assert answer == "19" and guard.fired(WITHHELD_CONTEXT) == 1
    analyst = [c.prompt for c in team.member_llm.calls if MEMBER_MARKER in c.prompt and "the analyst" in c.prompt]
    assert "Context from the team: none" in analyst[0]  # what the supervisor passed on
    assert "Linus Torvalds (born December 28, 1969)" in analyst[-1]  # what the guard attached
    _, answer, guard = run("lost_context", without(WITHHELD_CONTEXT))
    assert answer.startswith("Stopped by max_turns") and not guard.alarms


def test_the_assignment_guard_retries_once_then_drops_the_report():
    team, answer, guard = run("ignore_task")
    actions = [a.action for a in guard.alarms if a.check == IGNORED_ASSIGNMENT]
    assert actions[:2] == ["ran it again with its assignment restated", "dropped its report"]
    first = team.member_runs[0]
    assert first.report == DROPPED and first.calls == 4  # two runs of the worker, two calls each
    assert not team.findings  # a dropped report is no finding
    _, _, guard = run("ignore_task", without(IGNORED_ASSIGNMENT))
    assert guard.fired(IGNORED_ASSIGNMENT) == 0


def test_at_a_lower_rate_the_retry_wins_back_what_the_ignored_task_cost():
    off = injection("ignore_task", 0.5, False, seed=0)
    on = injection("ignore_task", 0.5, True, seed=0)
    assert on["caught"] > 0 and on["success"] > off["success"]


@pytest.mark.parametrize("make", [Supervisor, AgentsAsTools, OrchestratorWorkers])
def test_no_check_fires_on_a_clean_team(make):
    for task in load_tasks():
        guard = TeamGuard()
        make(get_llm("fake"), guard=guard).run(task.question)
        assert guard.alarms == [], (task.id, guard.alarms)


# --- the knobs ------------------------------------------------------------------------------------------


def test_each_knob_fires_only_on_its_role_and_is_counted_in_the_notes():
    for knob in TEAM_KNOBS:
        team = TOPOLOGY_OF[knob](FaultyTeamLLM(**{knob: 1.0}))
        team.run(WOZ)
        noted = [c for c in team.llm.calls if f"; {knob}" in c.note]
        assert noted, knob
        role = "member" if knob in ("ignore_task", "wrong_result") else "supervisor"
        assert all((MEMBER_MARKER in c.prompt) == (role == "member") for c in noted), knob


def test_at_rate_zero_the_faulty_stand_in_is_the_stand_in():
    llm = FaultyTeamLLM()
    assert Supervisor(llm).run(WOZ) == "19" and not any("; " in c.note for c in llm.calls)


@pytest.mark.parametrize("bad, message", [({"ignore_task": 2}, "between 0 and 1"),
                                          ({"telepathy": 0.1}, "the knobs are misread")])
def test_a_bad_knob_explains_itself(bad, message):
    with pytest.raises(ValueError, match=message):
        FaultyTeamLLM(**bad)


def test_the_check_meant_for_each_knob_is_named_by_its_mast_mode():
    assert {knob: MAST[CHECK_OF[knob]].split()[0] for knob in TEAM_KNOBS} == {
        "ignore_task": "FM-1.1", "handoff_loop": "FM-1.3", "wrong_result": "FM-3.2", "lost_context": "FM-2.4"}
    assert {TOPOLOGY_OF[k] for k in TEAM_KNOBS} == {OrchestratorWorkers, Supervisor}


def test_the_shipped_fault_table_matches_a_live_run():
    import json

    from agentkit.data import read_text

    shipped = next(r for r in json.loads(read_text("team_faults.json"))["rows"]
                   if (r["knob"], r["rate"], r["guard"], r["seed"]) == ("handoff_loop", 0.3, True, 0))
    assert injection("handoff_loop", 0.3, True, seed=0) == shipped


@pytest.mark.parametrize("settings, message", [
    ({"jaccard": "0.7"}, r"jaccard must be a word overlap in \(0, 1\]; got '0.7'"),
    ({"jaccard": 1.5}, r"jaccard must be a word overlap"), ({"jaccard": True}, r"jaccard must be a word overlap"),
    ({"window": 2.5}, "window must be a whole number, at least 1; got 2.5"),
    ({"window": "3"}, "window must be a whole number"),
    ({"checks": REPEATED_HANDOFF}, "checks must be a tuple of check names"),  # a string is not a tuple of names
])
def test_a_guard_refuses_a_setting_where_it_is_given(settings, message):
    with pytest.raises(ValueError, match=message):
        TeamGuard(**settings)


@pytest.mark.parametrize("bad", [2.0, -0.3, "0.3", None], ids=repr)
def test_a_fault_injection_refuses_a_rate_where_it_is_given(bad):
    # A bad rate failed inside every run, and the harness turned each exception into a failed task: a row of zeros.
    with pytest.raises(ValueError, match=f"rate must be an error rate per reply, between 0 and 1; got {bad!r}"):
        injection("handoff_loop", bad, True, tasks=load_tasks()[:2])


def test_a_fault_injection_whose_runs_raise_reports_the_error_not_a_row(monkeypatch):
    from agentkit import team_faults
    from agentkit.frontier import MeasurementError

    class Broken(Supervisor):
        def run(self, question, verbose=False):
            raise RuntimeError("the lead is down")

    monkeypatch.setitem(team_faults.TOPOLOGY_OF, "handoff_loop", Broken)
    with pytest.raises(MeasurementError, match="2 of 2 runs of 'handoff_loop at 0.3' raised.*the lead is down"):
        injection("handoff_loop", 0.3, True, tasks=load_tasks()[:2])
