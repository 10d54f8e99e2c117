"""The defended ReAct parser: what it accepts, what it drops, and that it never raises."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import parsing
from agentkit.parsing import FORMAT_REMINDER, naive_parse, parse_reply
from agentkit.sick import invented_tail


def test_plain_thought_and_action():
    p = parse_reply("Thought: I need his birth year.\nAction: Search[Steve Jobs]")
    assert (p.thought, p.action, p.argument, p.invented_observation) == (
        "I need his birth year.", "Search", "Steve Jobs", False)


def test_nested_brackets_are_kept_whole():
    p = parse_reply("Thought: compute\nAction: Calculate[(1+2)*[3][0]]")
    assert (p.action, p.argument) == ("Calculate", "(1+2)*[3][0]")


@pytest.mark.parametrize("reply", [
    "action: search[Steve Jobs]",
    "ACTION :  Search  [Steve Jobs]",
    "Action 1: Search[Steve Jobs]",
    "Action： Search【Steve Jobs】",
    "Action: Search［Steve Jobs］",
    "Thought: hm\n```\nAction: Search[Steve Jobs]\n```",
    "```text\nSearch[Steve Jobs]\n```",
    "```Action: Search[Steve Jobs]```",
    "**Action:** Search[Steve Jobs]",
    "Action: `Search[Steve Jobs]`",
    'Action: Search["Steve Jobs"]',
    "Action: Search[  Steve Jobs  ]",
])
def test_tolerates_what_real_models_write(reply):
    p = parse_reply(reply)
    assert p.action.lower() == "search" and p.argument == "Steve Jobs" and not p.problem


def test_fence_and_markdown_never_reach_the_thought_or_the_answer():
    p = parse_reply("```\n**Thought:** done\n**Action:** Finish[25185\n```")
    assert (p.thought, p.action, p.argument) == ("done", "Finish", "25185")
    assert parse_reply("Action: Search[x]\n**Observation:** made up").invented_observation


def test_action_after_the_thought_on_the_same_line():
    p = parse_reply("Thought: I will look it up. Action: Search[Steve Jobs]")
    assert (p.thought, p.action, p.argument) == ("I will look it up.", "Search", "Steve Jobs")


def test_full_width_parentheses_reach_the_calculator_as_ascii():
    assert parse_reply("Action: Calculate[（2024 - 1955） * 365]").argument == "(2024 - 1955) * 365"


def test_finish_may_span_lines_and_stand_anywhere():
    assert parse_reply("Thought: done\nAction: Finish[line one\nline two]").argument == "line one\nline two"
    p = parse_reply("I am sure now, so finish[25185]")
    assert (p.action, p.argument) == ("Finish", "25185")
    assert parse_reply("Action: FINISH [ [a] and [b] ]").argument == "[a] and [b]"


def test_unclosed_finish_stops_at_the_next_label():
    p = parse_reply("Action: Finish[the answer is 42\nThought: wait")
    assert (p.action, p.argument) == ("Finish", "the answer is 42")


def test_invented_observations_are_dropped_and_recorded():
    reply = "Thought: look\nAction: Search[Steve Jobs]\nObservation: born 1956\nAction: Finish[24820]"
    p = parse_reply(reply)
    assert (p.action, p.argument, p.invented_observation) == ("Search", "Steve Jobs", True)
    assert "1956" not in p.as_history() and "Finish" not in p.as_history()


def test_observation_before_any_action_voids_the_reply():
    p = parse_reply("Thought: x\nObservation: made up\nAction: Search[y]")
    assert p.action == "" and p.invented_observation and p.problem == FORMAT_REMINDER


def test_tool_input_comes_from_the_action_line_only():
    reply = "Thought: look\nAction: Search[Steve Jobs\n" + invented_tail() + "]"
    p = parse_reply(reply)
    assert (p.action, p.argument, p.invented_observation) == ("Search", "Steve Jobs", True)


def test_incident_parser_takes_everything_after_the_first_action_as_tool_input():
    reply = "Thought: look\nAction: Search[Steve Jobs]\n" + invented_tail()
    naive, defended = naive_parse(reply), parse_reply(reply)
    assert naive.action == "Search" and len(naive.argument) > 1500 and "Observation:" in naive.argument
    assert naive.argument.startswith("Steve Jobs]\nObservation:") and naive.argument.endswith("Finish[24820")
    assert defended.argument == "Steve Jobs"


@pytest.mark.parametrize("reply, expected", [
    ("Thought: ok\nAction: Search[Steve Jobs]", ("Search", "Steve Jobs")),  # a clean reply parses fine
    ("Action: Finish[25185]\n", ("Finish", "25185")),
    ("Action:\nFinish[\n25185\n]", ("Finish", "25185")),
    ("no action here", ("", "")),
])
def test_incident_parser_on_clean_replies(reply, expected):
    assert (naive_parse(reply).action, naive_parse(reply).argument) == expected


@pytest.mark.parametrize("reply", ["", "   ", "The answer is probably 25185.", "Thought: only thinking", None, 42])
def test_no_action_gives_the_format_reminder(reply):
    p = parse_reply(reply)
    assert p.action == "" and p.problem == FORMAT_REMINDER


def test_action_label_on_finish_is_not_part_of_the_thought():
    p = parse_reply("Thought: got it\nAction: Finish[25185]")
    assert (p.thought, p.action) == ("got it", "Finish")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_any_text(text):
    p = parse_reply(text)
    assert isinstance(p.action, str) and isinstance(p.argument, str)
    assert (p.action == "") == bool(p.problem)
    assert "\n" not in p.argument or p.action == "Finish"  # tool input is single-line


react_alphabet = st.sampled_from(list("[]【】［］：:()（）`\n Ff") + [
    "Action:", "Finish[", "Observation:", "Thought:", "Search[", "```", "**", "action 2 :", "\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(react_alphabet, max_size=40).map("".join))
def test_never_raises_on_react_shaped_noise(text):
    p = parse_reply(text)
    assert (p.action == "") == bool(p.problem)
    assert "\n" not in p.argument or p.action == "Finish"


# --- the well-formed shortcut gives what the full rules give ---------------------------

thought_text = st.lists(st.sampled_from(list("ab :*`[]\t\r\"'-é【\u212a") + ["finish", "Finish[", "action", "Observation",
                                                                        "Thought:"]), max_size=12).map("".join)
tool_names = st.sampled_from(["Echo", "Search", "Finish", "FINISH", "finish", "Finished", "Action", "_x-1", "Thought"])
arguments = st.lists(st.sampled_from(list("ab 1:*`[]\t\"'é】") + ["finish[", "\nObservation: x"]), max_size=10).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), thought_text), tool_names, arguments, st.sampled_from(["", " ", "\n", "\nObservation: y"]))
def test_the_well_formed_shortcut_agrees_with_the_full_rules(thought, name, argument, tail):
    reply = ("" if thought is None else f"Thought: {thought}\n") + f"Action: {name}[{argument}]" + tail
    shortcut = parsing._parse_well_formed(reply)
    assert shortcut is None or shortcut == parsing._parse(reply), repr(reply)


def test_the_well_formed_shortcut_reads_the_replies_the_role_prompt_asks_for():
    for reply in ["Thought: look it up\nAction: Search[Steve Jobs]", "Action: Finish[25185]", "Thought: done\nAction: finish['x']"]:
        assert parsing._parse_well_formed(reply) == parsing._parse(reply) is not None
