"""ReWOO: the plan parser's references, one-pass substitution, and 2 LLM calls whatever the tool calls."""
import pytest

from agentkit.llm import Rule, ScriptedLLM
from agentkit.rewoo import (
    PLANNER_MARKER, SOLVER_MARKER, PlanError, ReWOOAgent, answer_from, parse_rewoo_plan, substitute,
)
from agentkit.tools import ToolExecutor, default_executor

GOOD_PLAN = """Plan: Find when Steve Jobs was born.
#E1 = Search[Steve Jobs]
Plan: Count the days to 2024.
#E2 = Calculate[(2024 - 1955) * 365]"""


def rewoo_llm(plan: str, answer: str = "Answer: 25185") -> ScriptedLLM:
    return ScriptedLLM([Rule(PLANNER_MARKER, plan), Rule(SOLVER_MARKER, answer)])


def test_a_plan_reads_as_variables_tools_inputs_and_reasons():
    steps = parse_rewoo_plan(GOOD_PLAN)
    assert [(s.variable, s.tool, s.input) for s in steps] == [
        ("#E1", "Search", "Steve Jobs"), ("#E2", "Calculate", "(2024 - 1955) * 365")]
    assert [s.reason for s in steps] == ["Find when Steve Jobs was born.", "Count the days to 2024."]


def test_the_papers_one_line_form_fences_and_list_marks_are_accepted():
    raw = "```\nPlan: look him up. #E1 = Search[Ada Lovelace]\n- **Plan 2:** then him\n2. #E2 = Search[#E1]\n```"
    steps = parse_rewoo_plan(raw)
    assert [(s.variable, s.input, s.reason) for s in steps] == [
        ("#E1", "Ada Lovelace", "look him up."), ("#E2", "#E1", "then him")]


@pytest.mark.parametrize("line,why", [
    ("#E2 = Calculate[#E3 + 1]", "#E3 refers to evidence that does not exist before this line"),
    ("#E2 = Calculate[#E2 * 2]", "#E2 refers to evidence that does not exist before this line"),
    ("#E2 = Calculate[#E9 - #E1]", "#E9 refers to evidence"),
    ("#E1 = Search[again]", "#E1 is defined twice"),
    ("#E2: Search[Alan Turing]", "must read #E<n> = Tool[input]"),
])
def test_a_bad_reference_or_line_is_refused_quoting_the_line(line, why):
    with pytest.raises(PlanError) as error:
        parse_rewoo_plan(f"#E1 = Search[Steve Jobs]\n{line}\n#E3 = Search[x]")
    assert why in str(error.value) and f"Plan line 2 {line!r}" in str(error.value)


def test_a_reply_without_evidence_lines_or_with_too_many_is_refused():
    with pytest.raises(PlanError, match="no evidence line"):
        parse_rewoo_plan("First I would search for Steve Jobs, then calculate.")
    with pytest.raises(PlanError, match="more than 3 steps"):
        parse_rewoo_plan("\n".join(f"#E{i} = Search[x{i}]" for i in range(1, 5)), max_steps=3)


def test_a_forward_reference_stops_the_run_before_any_tool_runs():
    agent = ReWOOAgent(rewoo_llm("#E1 = Calculate[#E2 + 1]\n#E2 = Search[Steve Jobs]"), default_executor())
    with pytest.raises(PlanError, match=r"Plan line 1 '#E1 = Calculate\[#E2 \+ 1\]'"):
        agent.run("question", verbose=False)
    assert agent.tools.log == [] and len(agent.llm.calls) == 1  # no tool ever saw "#E2"


def test_references_are_replaced_in_one_pass_and_e10_is_not_e1():
    evidence = {"#E1": "one, with #E2 inside", "#E2": "two", **{f"#E{i}": str(i) for i in range(3, 11)}}
    assert substitute("#E1 | #E10 | #e2", evidence) == "one, with #E2 inside | 10 | two"


def test_tools_receive_the_evidence_and_the_solver_sees_all_of_it():
    seen = []
    tools = ToolExecutor()
    tools.register("Echo", lambda text: seen.append(text) or f"<{text}>", "echo")
    plan = "#E1 = Echo[a]\n#E2 = Echo[#E1 and b]\n#E3 = Echo[#E2, #E1]"
    agent = ReWOOAgent(rewoo_llm(plan, "Answer: done"), tools)
    assert agent.run("q", verbose=False) == "done"
    assert seen == ["a", "<a> and b", "<<a> and b>, <a>"]
    solver_prompt = agent.llm.calls[1].prompt
    assert all(f"Evidence: {agent.evidence[v]}" in solver_prompt for v in ("#E1", "#E2", "#E3"))


@pytest.mark.parametrize("n_steps", [1, 6])
def test_two_llm_calls_whatever_the_number_of_tool_calls(n_steps):
    plan = "\n".join(f"#E{i} = Calculate[{i} * 2]" for i in range(1, n_steps + 1))
    agent = ReWOOAgent(rewoo_llm(plan), default_executor())
    agent.run("q", verbose=False)
    assert len(agent.llm.calls) == 2 and len(agent.tools.log) == n_steps == agent.steps
    assert agent.stop_reason == "finished"


def test_an_unknown_tool_or_a_tool_error_is_evidence_not_a_crash():
    agent = ReWOOAgent(rewoo_llm("#E1 = Browse[x]\n#E2 = Calculate[1/0]", "Answer: Unknown"), default_executor())
    agent.run("q", verbose=False)
    assert agent.evidence["#E1"].startswith("error: unknown tool") and agent.evidence["#E2"] == "error: division by zero"


def test_the_solver_answer_loses_its_label_only():
    assert answer_from("\n**Answer:** 1791\nbecause ...") == "1791"
    assert answer_from("1791") == "1791" and answer_from("") == ""


def test_the_course_stand_in_plans_blind_on_a_bridge():
    """The second look-up needs a name only #E1 holds, so the whole paragraph becomes the query."""
    agent = ReWOOAgent()
    answer = agent.run("In what year was the designer of the engine that Ada Lovelace wrote her algorithm for born?",
                       verbose=False)
    assert [s.input for s in agent.plan] == ["Ada Lovelace", "#E1"]
    assert agent.inputs["#E2"] == agent.evidence["#E1"] and answer.startswith("Unknown")
    assert len(agent.llm.calls) == 2
