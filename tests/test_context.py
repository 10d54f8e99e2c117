"""Observation hygiene and the layered context: cleaning, capping, layering, and a budget never exceeded."""
import re

import pytest

from agentkit import tokens
from agentkit.context import MIN_CHARS, LayeredContext, cap, clean_observation, html_to_text, key_facts, looks_like_html
from agentkit.llm import Rule, ScriptedLLM
from agentkit.react import REACT_MARKER, ReActAgent, Step
from agentkit.runtime_suites import web_search
from agentkit.tools import ToolExecutor


def test_html_becomes_its_visible_text_without_boilerplate():
    page = web_search("Lakeford rainfall 2019", scraped=True)
    text = clean_observation(page)
    assert "In 2019, the Lakeford station recorded 660 mm of rain." in text
    for junk in ("privacy", "Accept all", "gtag", "Log in", "newsletter", "font-family", "©", "<"):
        assert junk not in text, junk
    assert len(text) < len(page) / 4


def test_the_parser_handles_nesting_unclosed_tags_and_entities():
    html = ('<div class="cookie-consent"><div><p>Accept?</p></div></div><p>Fish &amp; chips cost &pound;5'
            '<div id="ad-slot"><span>Buy now</span><script>x = "<p>not text</p>"</script></div><p>Second</span>')
    text = clean_observation(html)
    assert text == "Fish & chips cost £5\nSecond"


def test_text_without_tags_is_only_tidied():
    assert not looks_like_html("2 < 3 and 5 > 4")
    assert clean_observation("  2 < 3   and\n\n\n  5 > 4  ") == "2 < 3 and\n5 > 4"
    assert html_to_text("plain") == "plain"


def test_cap_cuts_at_a_word_and_says_where_the_rest_is():
    text = " ".join(f"word{i}" for i in range(200))
    short = cap(text, 100, step=4)
    kept = short.split(" [...")[0]
    assert text.startswith(kept) and len(kept) <= 100 and not kept.endswith("wor")
    assert f"[... {len(text) - len(kept)} more characters cut; the full text is in the trace, step 4]" in short
    assert cap("short", 100) == "short"


def test_key_facts_keep_sentences_with_numbers_but_not_headings_they_repeat():
    text = "Report for 2019\nIn 2019, the station recorded 660 mm of rain. The wettest month was May."
    assert key_facts(text) == ["In 2019, the station recorded 660 mm of rain."]


# --- in a run ------------------------------------------------------------------------------


def looper(*actions):
    """A stand-in that takes the n-th action when the history holds n - 1 (by content, not by count of calls)."""

    def reply(prompt):
        history = prompt.split("Question:", 1)[1]
        done = len(re.findall(r"^(?:Action: |Step \d+: )", history, re.MULTILINE))  # raw or summarised
        return f"Thought: next.\nAction: {actions[min(done, len(actions) - 1)]}"

    return ScriptedLLM([Rule(REACT_MARKER, reply)])


def page_tools(text: str) -> ToolExecutor:
    tools = ToolExecutor()
    tools.register("Fetch", lambda query: text, "fetch a page")
    return tools


def test_truncated_text_stays_retrievable_from_the_trace_and_the_tool_log():
    long_text = "The station log." + " It rained again on the lake today." * 120
    agent = ReActAgent(looper("Fetch[log]", "Finish[done]"), page_tools(long_text), 3,
                       context=LayeredContext(observation_chars=300, budget_tokens=None))
    agent.run("q", verbose=False)
    second_prompt = agent.llm.calls[1].prompt
    assert "more characters cut; the full text is in the trace, step 1]" in second_prompt
    assert long_text not in second_prompt
    assert agent.trace[0].observation == long_text == agent.tools.log[0].output
    shown = re.search(r"Observation: (.*?) \[\.\.\. (\d+) more characters cut", second_prompt, re.DOTALL)
    assert long_text.startswith(shown.group(1)) and len(shown.group(1)) + int(shown.group(2)) == len(long_text)


def test_last_steps_raw_older_summarised_and_a_stable_key_facts_block():
    actions = [f"Search[Lakeford rainfall {y}]" for y in range(2011, 2017)] + ["Finish[done]"]
    agent = ReActAgent(looper(*actions), None, 8, context=LayeredContext(raw_steps=2, budget_tokens=None))
    agent.tools.register("Search", lambda q: web_search(q, scraped=True), "the Lakeford pages")
    agent.run("Lakeford rainfall", verbose=False)
    prompts = [c.messages[1]["content"] for c in agent.llm.calls]
    last = prompts[-1]
    assert last.count("Observation: ") == 2 and "Action: Search[Lakeford rainfall 2016]" in last
    assert "Step 1: Search[Lakeford rainfall 2011] -> key fact 1" in last
    assert "<" not in last  # every page was cleaned
    blocks = [re.search(r"Key facts so far.*?(?=\n\n)", p, re.DOTALL) for p in prompts]
    blocks = [b.group(0).split("\n")[1:] for b in blocks if b]
    assert len(blocks) >= 4 and all(a == b[: len(a)] for a, b in zip(blocks, blocks[1:]))  # only ever appended


def test_with_nothing_to_clean_or_trim_the_layered_prompt_is_the_full_replay():
    actions = ["Calculate[1 + 1]", "Calculate[2 + 2]", "Finish[4]"]
    runs = [ReActAgent(looper(*actions), None, 4, context=context) for context in
            (None, LayeredContext(raw_steps=10, budget_tokens=None))]
    for agent in runs:
        agent.run("add", verbose=False)
    assert [c.messages for c in runs[0].llm.calls] == [c.messages for c in runs[1].llm.calls]


# --- the budget ---------------------------------------------------------------------------------


def scraped_trace(n: int) -> list:
    return [Step("I look it up.", "Search", f"Lakeford rainfall {1995 + i}",
                 web_search(f"Lakeford rainfall {1995 + i}", scraped=True), executed=True) for i in range(n)]


def assembler(question="What was the total rainfall at Lakeford?"):
    def assemble(history):
        return [{"role": "system", "content": "You are a ReAct agent. Tools: Search."},
                {"role": "user", "content": "\n\n".join([f"Question: {question}", *history])}]
    return assemble


@pytest.mark.parametrize("budget", [120, 160, 230, 400, 777, 1000, 1500])
@pytest.mark.parametrize("steps", [0, 1, 6, 28])
def test_the_budget_is_never_exceeded_or_the_error_says_why(budget, steps):
    context = LayeredContext(budget_tokens=budget)
    try:
        messages = context.fit(assembler(), scraped_trace(steps))
    except ValueError as e:
        assert f"budget_tokens={budget} is too small" in str(e)
        need = int(re.search(r"already need (\d+) tokens", str(e)).group(1))
        assert need > budget
        assert tokens.count_messages(LayeredContext(budget_tokens=need).fit(assembler(), scraped_trace(steps))) <= need
        return
    assert tokens.count_messages(messages) <= budget


def test_trimming_keeps_the_key_facts_before_the_summaries():
    trace = scraped_trace(28)
    roomy = LayeredContext(budget_tokens=None).fit(assembler(), trace)[1]["content"]
    tight = LayeredContext(budget_tokens=900).fit(assembler(), trace)[1]["content"]
    assert "Step 1: Search" in roomy and "Step 1: Search" not in tight
    assert "omitted to fit the token budget" in tight
    assert all(f"In {1995 + i}, the Lakeford" in tight for i in range(26))


def test_bad_settings_explain_themselves():
    with pytest.raises(ValueError, match="raw_steps"):
        LayeredContext(raw_steps=-1)
    with pytest.raises(ValueError, match=f"at least {MIN_CHARS}"):
        LayeredContext(observation_chars=10)
    with pytest.raises(ValueError, match="budget_tokens"):
        LayeredContext(budget_tokens=0)


# --- which key facts stay when the budget bites ------------------------------------------------

TOWN_FACTS = [  # thirty steps of a long run: every result states numbers, as real web pages do
    "The Lakeford bakery on Mill Street sells {n} loaves a day and opened in {y}.",
    "Route {n} buses leave the Lakeford depot every {m} minutes since {y}.",
    "The {y} census counted {n} households in the Northvale district.",
    "Lakeford's harbour handled {n} tonnes of cargo in {y}, up {m} percent.",
    "The library lends {n} books a week and has {m} reading rooms since {y}.",
]


def town_trace(steps: int = 30, thought_of_step: dict | None = None) -> list:
    """Step 1 finds the one fact the question needs; every later step finds other numbers."""
    trace = [Step("I look up when the bridge was built.", "Search", "Lakeford old bridge",
                  "The old stone bridge over the Lake river at Lakeford was completed in 1743.", executed=True)]
    for i in range(1, steps):
        text = " ".join(TOWN_FACTS[(i + k) % 5].format(n=100 + 37 * i + k, m=3 + (i + k) % 40, y=1900 + i + k)
                        for k in range(3))
        trace.append(Step((thought_of_step or {}).get(i, "I keep reading the town's pages."), "Search",
                          f"Lakeford page {i}", text, executed=True))
    return trace


BRIDGE = "In which year was the old stone bridge over the Lake river completed?"


def test_the_one_early_fact_the_question_needs_survives_a_30_step_run_under_the_default_budget():
    context = LayeredContext()  # the default budget: 1000 tokens
    prompt = context.fit(assembler(BRIDGE), town_trace(30), BRIDGE)
    text = prompt[1]["content"]
    assert tokens.count_messages(prompt) <= context.budget_tokens
    assert "less relevant to the question were dropped" in text  # the budget did bite
    assert "completed in 1743" in text


def test_a_fact_a_thought_used_is_kept_before_facts_that_only_share_words():
    used = "Route 137 buses leave the Lakeford depot every 4 minutes since 1901."  # a fact of step 2
    trace = town_trace(30, thought_of_step={25: "Route 137 is the one I need."})
    assert used in trace[1].observation
    text = LayeredContext().fit(assembler(BRIDGE), trace, BRIDGE)[1]["content"]
    assert used in text.split("Earlier steps")[0]  # in the key facts, not only in the raw steps


def test_without_a_question_the_oldest_facts_go_first_as_before():
    from agentkit.context import fact_ranking

    facts = ["In 1990 it rained 5 mm.", "In 1991 it rained 6 mm.", "In 1992 it rained 7 mm."]
    assert fact_ranking(facts, "", []) == [0, 1, 2]
    assert fact_ranking(facts, "How much rain fell in 1992?", []) == [0, 1, 2]
    assert fact_ranking(facts, "How much rain fell in 1990?", []) == [1, 2, 0]
    assert fact_ranking(facts, "How much rain fell in 1990?", ["So 6 mm then."]) == [2, 0, 1]


def test_only_a_thought_after_the_fact_counts_as_using_it():
    from agentkit.context import fact_ranking

    facts = ["In 1990 it rained 5 mm.", "In 1991 it rained 6 mm."]
    asked_before = ["I need the rain of 1990.", "Now 1991.", "Done."]  # step 1 asks for 1990, found at step 1
    assert fact_ranking(facts, "", asked_before, found_at=[1, 2]) == [0, 1]  # asking is not using: oldest goes
    used_later = ["I need the rain of 1990.", "Now 1991.", "So 5 mm it is."]
    assert fact_ranking(facts, "", used_later, found_at=[1, 2]) == [1, 0]  # step 3 wrote fact 1's figure
