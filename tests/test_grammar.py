"""The grammar channel: GBNF written from the registry, sent with a request, kept on a cassette."""
import json

import pytest

from agentkit.cassette import CassetteMiss
from agentkit.grammar import (ANY_INPUT, Constrained, GrammarError, accepts, grounded_grammar, one_of_words,
                              react_grammar, to_regex, words_from)
from agentkit.llm import LLMError
from agentkit.loopback import serve
from agentkit.modes import get_llm
from agentkit.react import ReActAgent
from agentkit.recorder import Recorder
from agentkit.replay import ReplayLLM
from agentkit.scripts.react import CHECKPOINT_QUESTION
from agentkit.tools import ToolExecutor, default_executor


def test_the_react_grammar_names_the_registry_and_holds_exactly_one_well_formed_turn():
    grammar = react_grammar(default_executor())
    assert '("Search" | "Calculate")' in grammar
    assert accepts(grammar, "Thought: I need a year.\nAction: Search[Steve Jobs]")
    assert accepts(grammar, "Thought: done\nAction: Finish[25185]")
    for wrong in ("Action: Search[Steve Jobs]",  # no Thought
                  "Thought: x\nAction: WebSearch[Steve Jobs]",  # not in the registry
                  "Thought: x\nAction: Search[Steve Jobs]\nObservation: 1955",  # an invented Observation
                  "Thought: x\nAction: Search[a]b]",  # a bracket inside the input
                  "Thought: x\nAction: Search[]",  # no input
                  "Thought: two\nlines\nAction: Finish[1]"):
        assert not accepts(grammar, wrong), wrong


def test_a_grammar_follows_the_registry_it_was_written_from():
    tools = ToolExecutor()
    tools.register("Lookup", str, "a learner's tool", timeout_s=None)
    grammar = react_grammar(tools)
    assert accepts(grammar, "Thought: x\nAction: Lookup[y]") and not accepts(grammar, "Thought: x\nAction: Search[y]")
    with pytest.raises(ValueError, match="at least one tool"):
        react_grammar(ToolExecutor())


def test_words_of_a_text_and_nothing_else():
    words = words_from("In what year was Grace Hopper born?", most=2)
    grammar = react_grammar(["Search"], argument=words)
    assert accepts(grammar, "Thought: x\nAction: Search[Grace Hopper]")
    assert not accepts(grammar, "Thought: x\nAction: Search[Grace Hopper born]")  # three words
    assert not accepts(grammar, "Thought: x\nAction: Search[Steve Jobs]")
    assert one_of_words("'metres' in 1906.") == '("metres" | "in" | "1906")'  # quotes and end punctuation go
    with pytest.raises(ValueError):
        one_of_words("?!")


def test_a_grounded_grammar_is_written_from_what_the_prompt_holds():
    grammar = grounded_grammar(default_executor())
    asked = [{"role": "system", "content": "You are a ReAct agent"},
             {"role": "user", "content": "Question: In what year was Grace Hopper born?"}]
    before = grammar(asked)
    assert accepts(before, "Thought: look\nAction: Search[Grace Hopper]")
    assert not accepts(before, "Thought: x\nAction: Finish[1906]")  # nothing looked up: no answer yet
    assert not accepts(before, "Thought: x\nAction: Search[your answer]")  # not words of the question
    looked = [asked[0], {"role": "user", "content": asked[1]["content"] + "\n\nThought: look\nAction: Search[Grace "
                         "Hopper]\nObservation: Grace Hopper (December 9, 1906 - January 1, 1992) was an admiral."}]
    after = grammar(looked)
    assert accepts(after, "Thought: found\nAction: Finish[1906]")
    assert not accepts(after, "Thought: again\nAction: Search[Grace Hopper]")  # one look-up, then Finish
    assert not accepts(after, "Thought: x\nAction: Finish[your answer]")  # not words of the Observation
    free = grounded_grammar(default_executor(), one_lookup=False, answer_from_observations=False)
    assert accepts(free(asked), "Thought: x\nAction: Finish[anything at all]")
    assert accepts(free(looked), "Thought: again\nAction: Search[Grace Hopper]")


def test_a_recursive_grammar_or_an_unknown_rule_is_named_not_matched():
    with pytest.raises(GrammarError, match="refers to itself"):
        to_regex('root ::= "(" root ")" | "x"')
    with pytest.raises(GrammarError, match="does not define"):
        to_regex('root ::= thing')
    with pytest.raises(GrammarError, match="no root"):
        to_regex('start ::= "x"')
    assert accepts('root ::= [a-c]{2,3} "\\n" [^x]?', "abc\n") and not accepts('root ::= [a-c]{2,3}', "abcd")


def test_the_grammar_reaches_the_server_in_the_request_body_and_the_ledger():
    grammar = react_grammar(default_executor())
    with serve() as server:
        llm = server.client()
        agent = ReActAgent(Constrained(llm, grammar), max_steps=4)
        assert agent.run(CHECKPOINT_QUESTION, verbose=False) == "25185"
    assert [r.body.get("grammar") for r in server.requests] == [grammar] * 3
    assert [c.grammar for c in llm.calls] == [grammar] * 3 and agent.run_calls == llm.calls


def test_a_grammar_with_tools_is_refused_as_llama_cpp_refuses_it():
    with serve() as server:
        sdk = server.client(max_retries=0).client
        with pytest.raises(Exception, match="400.*Cannot use custom grammar constraints with tools"):
            sdk.chat.completions.create(model="loopback", messages=[{"role": "user", "content": "hi"}],
                                        tools=[{"type": "function", "function": {"name": "Search", "parameters": {}}}],
                                        extra_body={"grammar": 'root ::= "x"'})
    assert [r.status for r in server.requests] == [400]


def test_the_stand_in_refuses_to_pretend_its_reply_fits_a_grammar_it_does_not_fit():
    llm = get_llm("fake")
    assert ReActAgent(Constrained(llm, react_grammar(default_executor()))).run(CHECKPOINT_QUESTION, verbose=False) == "25185"
    with pytest.raises(LLMError, match="does not fit the grammar"):
        ReActAgent(Constrained(llm, react_grammar(["Search"]))).run(CHECKPOINT_QUESTION, verbose=False)


def test_a_client_that_cannot_constrain_says_so():
    from agentkit.protocol import LedgerLLM

    class Plain(LedgerLLM):
        def _complete(self, messages, temperature):
            return "Action: Finish[x]", {"prompt_tokens": 1, "completion_tokens": 1}

    with pytest.raises(NotImplementedError, match="cannot keep its replies to a grammar"):
        Plain().think("hi", grammar='root ::= "x"')


def test_a_recorded_grammar_is_part_of_the_request_a_replay_matches(tmp_path):
    cassette = tmp_path / "g.jsonl"
    grammar = react_grammar(default_executor())
    with serve() as server:
        ReActAgent(Constrained(Recorder(server.client(), cassette), grammar), max_steps=4).run(
            CHECKPOINT_QUESTION, verbose=False)
    lines = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert [line["request"]["grammar"] for line in lines] == [grammar] * 3

    replay = ReplayLLM(cassette)
    assert ReActAgent(Constrained(replay, grammar), max_steps=4).run(CHECKPOINT_QUESTION, verbose=False) == "25185"
    assert [c.grammar for c in replay.calls] == [grammar] * 3
    with pytest.raises(CassetteMiss, match=r"\[grammar\]"):  # another grammar is another request
        ReActAgent(Constrained(replay, react_grammar(["Search"])), max_steps=4).run(CHECKPOINT_QUESTION, verbose=False)
    with pytest.raises(CassetteMiss):  # and no grammar at all too
        ReActAgent(replay, max_steps=4).run(CHECKPOINT_QUESTION, verbose=False)


def test_any_input_is_one_line_without_a_closing_bracket():
    assert accepts(f"root ::= {ANY_INPUT}", "Grace Hopper, 1906") and not accepts(f"root ::= {ANY_INPUT}", "a]")


# --- what was recorded from llama.cpp agrees with what this module says a grammar allows --------------------


def recorded_grammar_calls():
    from agentkit.cassette import shipped_cassettes
    from agentkit.text import json_lines

    for path in shipped_cassettes():
        stamp = {}
        for _, line in json_lines(path):
            entry = json.loads(line)
            if "stamp" in entry:
                stamp = entry["stamp"]
            elif entry["request"].get("grammar"):
                yield path.name, stamp, entry


def test_every_reply_llama_cpp_sampled_under_a_grammar_is_one_the_grammar_allows():
    # The regex this module makes of a grammar is checked against what llama.cpp's sampler wrote under it:
    # a reply in the language, or one cut by the server's reply cap (its last token spent mid-grammar).
    calls = list(recorded_grammar_calls())
    assert len(calls) >= 20, "chapters 10 and 11 ship replies sampled under a grammar"
    for name, stamp, entry in calls:
        reply, grammar = entry["reply"], entry["request"]["grammar"]
        cap = int(stamp["server"].rsplit("capped at ", 1)[1].split()[0]) if "capped at" in stamp.get("server", "") else 64
        generated = reply.removeprefix("Thought:") if "sent" in entry else reply  # a completion prompt primes "Thought:"
        assert accepts(grammar, generated) or entry["usage"]["completion_tokens"] >= cap, (name, reply)


def test_the_shipped_sweep_ran_every_setting_on_every_lookup_task():
    from agentkit.data import read_text
    from agentkit.grammar_sweep import SETTINGS, lookup_tasks

    sweep = json.loads(read_text("grammar_sweep.json"))
    assert sweep["stamp"]["model"] == "SmolLM2-135M-Instruct" and "llama.cpp" in sweep["stamp"]["server"]
    assert sweep["tasks"] == [task.id for task in lookup_tasks()]
    assert [row["channel"] for row in sweep["rows"]] == [name for name in SETTINGS for _ in sweep["tasks"]]
    assert all(row["correct"] in (True, False) and row["LLM calls"] <= 3 for row in sweep["rows"])


def test_the_channel_table_counts_right_answers_format_failures_wrong_tools_and_tokens_from_the_ledger():
    from agentkit.channels import channel_runs, channel_table
    from agentkit.llm import Rule, ScriptedLLM
    from agentkit.tasks import load_tasks

    [task] = [t for t in load_tasks() if t.id == "hopper-born"]
    llm = ScriptedLLM([Rule("Observation: 1906", "Thought: done\nAction: Finish[1906]", "answer"),
                       Rule("Observation: Your reply", "Thought: the year\nAction: Calculate[1906]", "calculate"),
                       Rule("Question:", "I think it was 1906.", "no action")])
    rows = channel_runs(llm, [task], channels=("text", "grammar"), max_steps=3)
    assert rows[0]["actions"] == ["(none)", "Calculate[1906]", "Finish[1906]"]
    table = channel_table(rows)
    assert table["text"] == {"tasks": 1, "right": 1, "format failures": 1, "replies": 3, "wrong tools": 1,
                             "tokens per task": sum(c.total_tokens for c in llm.calls[:3])}
    # Under a grammar the reply with no action cannot be sampled: the stand-in says so, and the row shows the error.
    assert rows[1]["stop"].startswith("error: The stand-in's scripted reply does not fit") and not rows[1]["correct"]
