"""Chapter 15's topologies: who is called, how often, what reaches which prompt, and how each stops."""
import threading

import pytest

from agentkit import get_llm
from agentkit.instruments import NoisyTaskLLM
from agentkit.scripted import Rule, ScriptedLLM
from agentkit.tasks import load_tasks
from agentkit.members import DROPPED, MEMBER_MARKER, MemberAgent, member_tools
from agentkit.teams import (MANAGER_MARKER, ORCHESTRATOR_MARKER, SUPERVISOR_MARKER, AgentsAsTools,
                            OrchestratorWorkers, Supervisor, parse_handoff, parse_sub_tasks)

TASKS = {t.id: t for t in load_tasks()}
WOZ = TASKS["woz-torvalds"].question  # two look-ups, then 1969 - 1950 = 19


def prompts(llm, marker):
    return [c.prompt for c in llm.calls if marker in c.prompt]


@pytest.mark.parametrize("make, calls, sequential, lead", [
    (Supervisor, 8, 8, 3),  # supervisor: researcher, analyst, FINISH; members 3 + 2
    (AgentsAsTools, 6, 6, 3),  # manager: Research, Calculate, Finish; researcher 3
    (OrchestratorWorkers, 10, 8, 4),  # plans: 2 workers, 1 worker, []; the answer; workers 2 + 2 + 2
])
def test_each_topology_answers_and_its_ledger_says_what_it_cost(make, calls, sequential, lead):
    llm = get_llm("fake")
    team = make(llm)
    assert team.run(WOZ) == "19" and team.stop_reason == "finished"
    assert len(llm.calls) == len(team.llm.calls) == calls  # one shared client, read once
    assert team.sequential_calls == sequential and team.lead_calls == lead
    assert team.lead_calls + sum(r.calls for r in team.member_runs) == calls


def test_the_supervisors_context_reaches_the_analysts_prompt():
    llm = get_llm("fake")
    Supervisor(llm).run(WOZ)
    analyst = [p for p in prompts(llm, MEMBER_MARKER) if "the analyst" in p][0]
    assert "Context from the team: Steve Wozniak (born August 11, 1950)" in analyst
    assert "Linus Torvalds (born December 28, 1969)" in analyst
    assert "Action: Calculate[1969 - 1950]" in llm.calls[-2].prompt or any(
        "Calculate[1969 - 1950]" in c.reply for c in llm.calls)
    last = prompts(llm, SUPERVISOR_MARKER)[-1]
    assert "Handoff 2 to analyst:" in last and "Result: 19" in last


def test_a_managers_prompt_holds_its_members_reports_never_their_steps():
    llm = get_llm("fake")
    AgentsAsTools(llm).run(WOZ)
    for prompt in prompts(llm, MANAGER_MARKER):
        assert "Action: Search[" not in prompt  # the researcher's own steps stay in its own prompt
    assert "Observation: Steve Wozniak (born August 11, 1950)" in prompts(llm, MANAGER_MARKER)[1]


def test_workers_of_one_round_run_at_the_same_time_and_the_next_round_sees_their_reports():
    # The two look-ups' first calls meet at a barrier: it lets them through only if both are in a call at once.
    # One after another, the first would wait alone until the barrier's backstop broke it. No clock decides it.
    slow, seen, lock, together = get_llm("fake"), [], threading.Lock(), threading.Barrier(2, timeout=120)
    inner = slow.think

    def think(messages, temperature=0):
        text = messages[-1]["content"] if isinstance(messages, list) else messages
        if "Your assignment: Search for" in str(text):
            with lock:
                seen.append(text)
                first_two = len(seen) <= 2
            if first_two:
                together.wait()
        return inner(messages, temperature)

    slow.think = think
    team = OrchestratorWorkers(slow)
    assert team.run(WOZ) == "19"
    assert len(seen) == 4 and not together.broken  # the two look-ups ran at the same time
    calculate = [p for p in prompts(slow, MEMBER_MARKER) if "Your assignment: Calculate" in p][0]
    assert "Linus Torvalds (born December 28, 1969)" in calculate
    assert "Steve Wozniak (born August 11, 1950)" in calculate
    assert [r.assignment for r in team.member_runs] == ["Search for Steve Wozniak.", "Search for Linus Torvalds.",
                                                       team.member_runs[2].assignment]  # in plan order


def test_a_bridge_has_nothing_to_run_in_parallel():
    team = OrchestratorWorkers(get_llm("fake"))
    team.run(TASKS["bridge-babbage"].question)
    assert team.sequential_calls == len(team.llm.calls) == 8


def test_a_supervisor_that_never_finishes_stops_at_max_turns():
    looping = ScriptedLLM([Rule(SUPERVISOR_MARKER, "Next: researcher\nInstruction: Search for Steve Wozniak.\n"
                                                   "Context: none", "loop")])
    looping.rules += get_llm("fake").rules
    team = Supervisor(looping, max_turns=3)
    answer = team.run(WOZ)
    assert team.stop_reason == "max_turns" and answer.startswith("Stopped by max_turns")
    assert team.lead_calls == 3 and len(team.member_runs) == 3 and not team.unverified


def test_an_unreadable_supervisor_reply_is_answered_and_counts_as_a_turn():
    chatty = ScriptedLLM([Rule(SUPERVISOR_MARKER, "Let me think about who should do this.", "chat")])
    team = Supervisor(chatty, max_turns=2)
    team.run(WOZ)
    assert team.member_runs == [] and team.lead_calls == 2
    assert "could not be read: it had no Next: line" in chatty.calls[1].prompt


@pytest.mark.parametrize("reply, member, problem", [
    ("Next: researcher\nInstruction: Search for Ada.\nContext: none", "researcher", ""),
    ("**Next:** Analyst\n**Instruction:** Calculate 2 + 2.", "analyst", ""),
    ("Next: FINISH\nAnswer: 19", "FINISH", ""),
    ("Next: FINISH", "", "a FINISH needs an Answer: line"),
    ("Next: poet\nInstruction: write", "", "it named 'poet'"),
    ("Next: researcher", "", "no Instruction: line"),
    ("", "", "it had no Next: line"),
    (None, "", "it had no Next: line"),
])
def test_parse_handoff_never_raises_and_says_what_is_wrong(reply, member, problem):
    handoff = parse_handoff(reply)
    assert handoff.member == member and problem in handoff.problem


@pytest.mark.parametrize("reply, tasks, problem", [
    ('["Search for A.", "Search for B."]', ["Search for A.", "Search for B."], ""),
    ("Sub-tasks:\n[\"Search for A.\"]\nDone.", ["Search for A."], ""),
    ("[]", [], ""),
    ("I will look things up.", [], "no JSON list"),
    ('["a", 3]', [], "non-empty string"),
    ('["1", "2", "3", "4", "5", "6"]', ["1", "2", "3", "4"], ""),
])
def test_parse_sub_tasks_never_raises_and_keeps_at_most_max_workers(reply, tasks, problem):
    assert parse_sub_tasks(reply, 4) == (tasks, problem) or (parse_sub_tasks(reply, 4)[0] == tasks and
                                                               problem in parse_sub_tasks(reply, 4)[1])


def test_an_unreadable_plan_means_no_workers_and_one_answer():
    chatty = ScriptedLLM([Rule(ORCHESTRATOR_MARKER, "I would ask two workers.", "chat")])
    chatty.rules += get_llm("fake").rules
    team = OrchestratorWorkers(chatty)
    team.run(WOZ)
    assert team.member_runs == [] and team.lead_calls == 2 and team.stop_reason == "finished"


def test_a_member_has_only_its_own_tools_and_its_own_role():
    analyst = MemberAgent("analyst", get_llm("fake"), member_tools(("Calculate",)))
    assert analyst.tools.names == ["Calculate"]
    system = analyst.messages("q")[0]["content"]
    assert system.startswith(MEMBER_MARKER + ": the analyst. You do arithmetic.") and "Search[" not in system
    with pytest.raises(ValueError, match="unknown member"):
        MemberAgent("poet", get_llm("fake"), member_tools(()))


def test_a_doubtful_member_run_escalates_to_the_stronger_model_with_its_evidence():
    liar = ScriptedLLM([Rule(lambda p: MEMBER_MARKER in p and "Observation:" in p,
                             "Thought: done.\nAction: Finish[Grace Hopper was born in 1977.]", "liar"),
                        Rule(MEMBER_MARKER, "Thought: look.\nAction: Search[Grace Hopper]", "search")])
    liar.rules += get_llm("fake").rules
    strong = get_llm("fake")
    team = AgentsAsTools(get_llm("fake"), liar, escalate_to=strong, threshold=1.0)
    assert team.run(TASKS["hopper-born"].question) == "1906"
    assert [r.escalated for r in team.member_runs] == [True]
    member_prompt = prompts(strong, MEMBER_MARKER)[0]
    assert "Hints from earlier work:\n- Search[Grace Hopper] -> Grace Hopper (December 9, 1906" in member_prompt
    assert "1977" not in member_prompt


def test_without_escalation_the_same_liar_costs_the_answer():
    liar = ScriptedLLM([Rule(lambda p: MEMBER_MARKER in p and "Observation:" in p,
                             "Thought: done.\nAction: Finish[Grace Hopper was born in 1977.]", "liar"),
                        Rule(MEMBER_MARKER, "Thought: look.\nAction: Search[Grace Hopper]", "search")])
    liar.rules += get_llm("fake").rules
    team = AgentsAsTools(get_llm("fake"), liar)
    answer = team.run(TASKS["hopper-born"].question)
    assert answer.startswith("Unknown") and [r.escalated for r in team.member_runs] == [False]


def test_every_topology_gets_every_task_right_on_the_perfect_stand_in():
    for make in (Supervisor, AgentsAsTools, OrchestratorWorkers):
        wrong = [t.id for t in load_tasks() if not t.check(make(get_llm("fake")).run(t.question))]
        assert wrong == [], make.__name__


def test_the_dropped_report_marker_is_no_finding():
    team = Supervisor(get_llm("fake"))
    run = team.ask("researcher", "Search for Steve Wozniak.", WOZ)
    run.report = DROPPED
    team._keep(run)
    assert team.findings == [] and team.member_runs == [run]


def test_noisy_members_still_leave_a_ledger_the_harness_can_read():
    from agentkit.evaluate import evaluate

    report = evaluate(lambda: Supervisor(NoisyTaskLLM(0.3, seed=1)), load_tasks()[:8], review=False, progress=False)
    assert all(run.calls > 0 and not run.error for run in report.runs)


# --- every setting is checked where it is given -----------------------------------------------------------------


@pytest.mark.parametrize("make", [Supervisor, AgentsAsTools, OrchestratorWorkers])
@pytest.mark.parametrize("bad", [75, -0.5, "0.75", float("nan"), True, None], ids=repr)
def test_a_team_refuses_an_escalation_threshold_that_is_not_a_confidence(make, bad):
    # 75 and -0.5 were taken without a word; "0.75" failed later, deep inside a member's run.
    with pytest.raises(ValueError, match=r"threshold must be a confidence between 0 and 1 .*got"):
        make(get_llm("fake"), threshold=bad)


@pytest.mark.parametrize("make, setting, bad", [
    (Supervisor, "max_turns", "3"), (Supervisor, "max_turns", 2.5), (Supervisor, "member_steps", 0),
    (AgentsAsTools, "max_steps", 0), (AgentsAsTools, "max_steps", "6"), (AgentsAsTools, "member_steps", None),
    (OrchestratorWorkers, "max_workers", "2"), (OrchestratorWorkers, "max_rounds", 0.5),
])
def test_a_team_refuses_a_count_that_is_not_a_whole_number_of_at_least_one(make, setting, bad):
    with pytest.raises(ValueError, match=f"{setting} must be a whole number, at least 1; got {bad!r}"):
        make(get_llm("fake"), **{setting: bad})


def test_a_team_refuses_models_and_guards_that_are_not_what_it_calls():
    with pytest.raises(ValueError, match=r"member_llm must be an LLM \(an object with think"):
        Supervisor(get_llm("fake"), "gpt-4o")
    with pytest.raises(ValueError, match=r"escalate_to must be an LLM"):
        Supervisor(get_llm("fake"), escalate_to="strong")
    with pytest.raises(ValueError, match=r"guard must be a TeamGuard"):
        Supervisor(get_llm("fake"), guard=True)
