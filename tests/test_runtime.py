"""The runtime: each detector on its positive and negative cases, the ladder in order, and no change by default."""
import re
from types import SimpleNamespace

import pytest

from agentkit.llm import Rule, ScriptedLLM
from agentkit.modes import get_llm
from agentkit.react import REACT_MARKER, ReActAgent, Step
from agentkit.runtime import (
    CHECKPOINT_MARKER, DRIFT, REPEAT, USELESS, Runtime, jaccard, parse_state, useless_reason, words,
)
from agentkit.scripts.react import CHECKPOINT_QUESTION, FALLBACK_MARKER

QUESTION = "How much rain fell at Lakeford in 2006?"


def step(argument, observation, action="Search", executed=True):
    return Step("thinking", action, argument, observation, executed)


def watch(steps, runtime=None, llm=None, question=QUESTION):
    """Feed steps to a runtime as a loop would; return the fake agent and what review returned."""
    runtime = runtime or Runtime(checkpoint_every=0)
    runtime.begin(question)
    agent = SimpleNamespace(trace=[], llm=llm or ScriptedLLM([]), interventions=[])
    stops = []
    for s in steps:
        agent.trace.append(s)
        stops.append(runtime.review(agent, question, s))
    return agent, stops


PAGE = "In {y}, the Lakeford station recorded {v} mm of rain."


# --- repeated parameters -----------------------------------------------------------------------


def test_normalising_ignores_case_punctuation_word_order_stopwords_and_possessives():
    assert words("Lakeford's RAINFALL, 2006?") == words("the rainfall at lakeford in 2006") == {"lakeford", "rainfall", "2006"}
    assert words("1,034 mm") == {"1034", "mm"}
    assert jaccard(words("x y z"), words("x y w")) == 0.5 and jaccard(frozenset(), frozenset()) == 1.0


def test_a_paraphrase_of_the_same_search_is_a_repeat():
    agent, _ = watch([step("Lakeford rainfall 2006", PAGE.format(y=2006, v=1050)),
                      step("rainfall at Lakeford in 2006?", "Other words: 1,050 mm at the Lakeford gauge.")])
    (note,) = agent.interventions
    assert (note.step, note.instability, note.level) == (2, REPEAT, 1)
    assert "at step 1 (word overlap 1.00)" in note.text


def test_year_by_year_searches_and_another_tool_are_not_repeats():
    agent, _ = watch([step(f"Lakeford rainfall {y}", PAGE.format(y=y, v=700 + y)) for y in (2018, 2019, 2020)]
                     + [step("1718 + 1719", "3437", action="Calculate"),
                        step("Lakeford rainfall 2021", PAGE.format(y=2021, v=1172))])
    assert agent.interventions == []


def test_the_same_input_to_another_tool_is_not_a_repeat():
    agent, _ = watch([step("Lakeford rainfall 2006", PAGE.format(y=2006, v="1,050")),
                      step("Lakeford rainfall 2006", "The almanac lists Lakeford with 1,050 mm for 2006.", action="Almanac")])
    assert agent.interventions == []


@pytest.mark.parametrize("window, instability", [(1, USELESS), (2, REPEAT)])
def test_the_window_decides_whether_a_b_a_is_a_repeat(window, instability):
    a, b = step("Lakeford rainfall 2017", PAGE.format(y=2017, v=1136)), step("Millbrook rainfall 2017", PAGE.format(y=2017, v=944).replace("Lakeford", "Millbrook"))
    agent, _ = watch([a, b, step("rainfall Lakeford 2017", a.observation)], Runtime(window=window, checkpoint_every=0))
    assert [(n.step, n.instability) for n in agent.interventions] == [(3, instability)]


def test_the_threshold_decides_how_near_is_near():
    pages = [step(f"Lakeford station rainfall archive listing page {k}",
                  f"Archive listing, page {k}: the Lakeford logbooks for {1918 + 5 * k} to {1922 + 5 * k}.") for k in (1, 2)]
    assert watch(pages, Runtime(jaccard=0.7, checkpoint_every=0))[0].interventions[0].instability == REPEAT
    assert watch(pages, Runtime(jaccard=0.8, checkpoint_every=0))[0].interventions == []


# --- useless results ---------------------------------------------------------------------------------


@pytest.mark.parametrize("observation, reason", [
    ("error: unknown tool 'Browse'. Known tools: Search.", "an error"),
    ("No results for 'Lakeford precipitation 2010'.", "empty"),
    ("No information about 'x' in the knowledge base.", "empty"),
    ("   ", "empty"),
    ('<div class="cookie-banner">Accept all</div><nav><a href="/">Home</a></nav><script>x()</script>', "HTML junk"),
    ("Millbrook's bakery has baked rye bread since 1984.", "off-topic"),
    ("Rain fell at Lakeford in 2006.", "nothing new"),
])
def test_useless_results(observation, reason):
    topic = set(words(QUESTION))
    assert useless_reason(observation, topic, topic | {"station"}).startswith(reason)


@pytest.mark.parametrize("observation", [
    PAGE.format(y=2006, v="1,050"),
    "25185",  # a bare number is a calculator's answer, never off-topic
    "<main><p>In 2006, the Lakeford station recorded 1,050 mm of rain.</p></main><nav>Home</nav>",
])
def test_useful_results(observation):
    assert useless_reason(observation, set(words(QUESTION)), set(words(QUESTION))) is None


def test_a_result_already_seen_is_nothing_new_even_for_a_different_query():
    page = PAGE.format(y=2003, v=893)
    agent, _ = watch([step("Lakeford rainfall 2003", page), step("Lakeford 2003 summary", page)])
    assert [(n.step, n.instability) for n in agent.interventions] == [(2, USELESS)]
    assert "nothing new" in agent.interventions[0].text


# --- drift -----------------------------------------------------------------------------------------------


def checkpointer(*states):
    """A stand-in that writes the k-th state for the k-th checkpoint (it counts Step lines it was shown)."""
    def reply(prompt):
        first = int(re.search(r"^Step (\d+):", prompt, re.MULTILINE).group(1))
        return states[min(first // 3, len(states) - 1)]
    return ScriptedLLM([Rule(CHECKPOINT_MARKER, reply)])


SIDE = [step(f"Lakeford {topic}", f"The Lakeford {topic} dates from {1800 + i}.") for i, topic in
        enumerate(["history", "lighthouse", "ferry", "market", "bridge", "school", "lake", "museum"])]
NOTHING = "Goal: rain in 2006\nStrategy: read around\nFound: nothing\nMissing: the rainfall at Lakeford in 2006"


def test_first_checkpoint_with_nothing_found_flags_drift_and_costs_one_ledger_call():
    llm = checkpointer(NOTHING)
    agent, stops = watch(SIDE[:5], Runtime(), llm)
    assert [(n.step, n.instability, n.level) for n in agent.interventions] == [(3, DRIFT, 1), (4, DRIFT, 2), (5, DRIFT, 3)]
    assert stops[-1] == "runtime: drift"
    (call,) = llm.calls
    assert CHECKPOINT_MARKER in call.prompt and QUESTION in call.prompt and "Step 3: Search[Lakeford ferry]" in call.prompt
    assert "Still missing: the rainfall at Lakeford in 2006" in agent.interventions[1].text


def test_missing_that_shrinks_is_progress_and_missing_that_stays_is_drift():
    two = "Found: the 2005 figure\nMissing: the 2006 figure; the 2007 figure"
    one = "Found: the 2005 figure; the 2006 figure\nMissing: the 2007 figure"
    assert watch(SIDE[:6], Runtime(), checkpointer(two, one))[0].interventions == []
    agent, _ = watch(SIDE[:6], Runtime(), checkpointer(two, two))
    assert [(n.step, n.instability) for n in agent.interventions] == [(6, DRIFT)]
    assert "did not shrink between the checkpoints at steps 3 and 6" in agent.interventions[0].text


def test_an_unreadable_checkpoint_is_recorded_and_flags_nothing():
    runtime = Runtime()
    agent, _ = watch(SIDE[:6], runtime, ScriptedLLM([Rule(CHECKPOINT_MARKER, "I am not sure what you mean.")]))
    assert agent.interventions == [] and [s.step for s in runtime.states] == [3, 6]
    assert not any(s.readable for s in runtime.states)


def test_drift_clears_when_a_result_brings_what_was_missing():
    found = step("Lakeford rainfall 2006", PAGE.format(y=2006, v="1,050"))
    agent, _ = watch(SIDE[:3] + [found, SIDE[3]], Runtime(), checkpointer(NOTHING))
    assert [(n.step, n.level) for n in agent.interventions] == [(3, 1)]  # step 4 found it: the ladder reset


def test_checkpoints_wait_for_a_clean_step_and_can_be_switched_off():
    error = step("x", "error: boom")
    llm = checkpointer(NOTHING)
    watch([SIDE[0], SIDE[1], error, SIDE[2]], Runtime(), llm)
    assert len(llm.calls) == 1 and "Step 4:" in llm.calls[0].prompt
    off = checkpointer(NOTHING)
    assert watch(SIDE, Runtime(checkpoint_every=0), off)[0].interventions == [] and off.calls == []


def test_parse_state_reads_loose_labels_and_never_raises():
    state = parse_state("**Goal:** rain\n- Found: a; b.\nMISSING : nothing", 6)
    assert (state.goal, state.found, state.missing, state.readable) == ("rain", ["a", "b"], [], True)
    assert not parse_state(None, 1).readable and not parse_state("Found: x", 1).readable


# --- the ladder ---------------------------------------------------------------------------------------------


def test_interventions_escalate_hint_redirect_stop():
    errors = [step(f"query {i}", f"error: bad query {i}") for i in range(4)]
    agent, stops = watch(errors[:3])
    assert [(n.level, n.kind) for n in agent.interventions] == [(1, "hint"), (2, "redirect"), (3, "stop")]
    assert stops == [None, None, "runtime: useless results"]
    hint, redirect, stop = (n.text for n in agent.interventions)
    assert "A result is not progress" in hint
    assert all(part in redirect for part in ("Stop sending queries like this one", "Found so far:", "Still missing:", "Next:"))
    assert "unverified" in stop
    assert errors[2].intervention.startswith("Observation (runtime guard, stop): ")


def test_a_clean_step_resets_the_ladder_and_a_step_without_action_leaves_it():
    bad = lambda i: step(f"query {i}", f"error: bad {i}")
    no_action = Step("chat", "", "", "Your reply had no action I could run.", executed=False)
    agent, _ = watch([bad(1), step("Lakeford rainfall 2006", PAGE.format(y=2006, v=1050)), bad(2), no_action, bad(3)])
    assert [(n.step, n.level) for n in agent.interventions] == [(1, 1), (3, 1), (5, 2)]


def test_without_stop_the_ladder_tops_out_at_the_redirect():
    agent, stops = watch([step(f"q{i}", "error: no") for i in range(5)], Runtime(stop=False, checkpoint_every=0))
    assert [n.level for n in agent.interventions] == [1, 2, 2, 2, 2] and not any(stops)


@pytest.mark.parametrize("settings", [dict(jaccard=0), dict(jaccard=1.5), dict(window=0), dict(checkpoint_every=-1)])
def test_bad_settings_explain_themselves(settings):
    with pytest.raises(ValueError, match=next(iter(settings))):
        Runtime(**settings)


# --- in the ReAct loop --------------------------------------------------------------------------------------


def paraphraser():
    queries = ["Lakeford rainfall 2006", "rainfall at Lakeford in 2006", "Lakeford's 2006 rainfall", "LAKEFORD RAINFALL 2006"]

    def reply(prompt):
        done = len(re.findall(r"^Action: ", prompt.split("Question:", 1)[1], re.MULTILINE))
        return f"Thought: once more.\nAction: Search[{queries[done % 4]}]"

    return ScriptedLLM([Rule(FALLBACK_MARKER, "Action: Finish[1,050 mm, from what I saw]"), Rule(REACT_MARKER, reply)])


def lakeford_tools():
    from agentkit.runtime_suites import web_tools
    return web_tools()


def test_the_loop_shows_interventions_as_observations_and_stops_with_an_unverified_fallback():
    agent = ReActAgent(paraphraser(), lakeford_tools(), 20, repeat_fuse=False, runtime=Runtime())
    answer = agent.run(QUESTION, verbose=False)
    assert agent.stop_reason == "runtime: repeated parameters" and agent.unverified
    assert answer == "1,050 mm, from what I saw" and len(agent.llm.calls) == 5  # 4 steps + the fallback
    assert FALLBACK_MARKER in agent.llm.calls[-1].prompt and len(agent.tools.log) == 4
    third = agent.llm.calls[2].messages
    assert "Observation (runtime guard, hint): Search[rainfall at Lakeford in 2006]" in third[1]["content"]
    assert "runtime guard" not in third[0]["content"]  # never in the system prompt
    assert [n.kind for n in agent.interventions] == ["hint", "redirect", "stop"]


def test_without_a_runtime_the_same_model_burns_every_step():
    agent = ReActAgent(paraphraser(), lakeford_tools(), 20, repeat_fuse=False)
    agent.run(QUESTION, verbose=False)
    assert (agent.stop_reason, len(agent.llm.calls), agent.interventions) == ("max_steps", 20, [])


def test_the_default_runtime_changes_nothing_on_the_chapter_02_checkpoint(capsys):
    plain, guarded = (ReActAgent(get_llm("fake"), None, 5, runtime=r) for r in (None, Runtime()))
    for agent in (plain, guarded):
        agent.run(CHECKPOINT_QUESTION)
    assert [c.messages for c in guarded.llm.calls] == [c.messages for c in plain.llm.calls]
    assert len(guarded.llm.calls) == 3 and guarded.answer == "25185" and guarded.interventions == []
    assert guarded.runtime.states == []  # it finished before the first checkpoint was due
    out = capsys.readouterr().out
    assert out[: len(out) // 2] == out[len(out) // 2:]  # the printed traces are identical too
