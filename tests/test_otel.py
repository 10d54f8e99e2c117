"""agentkit.otel: a run's ledgers as spans in OpenTelemetry's GenAI conventions (the version otel.CONVENTIONS
names), checked against the pinned conventions package and through the SDK's in-memory and OTLP exporters."""
from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from agentkit import get_llm, otel
from agentkit.native import NativeReActAgent
from agentkit.protocol import AssistantTurn, CallRecord, FunctionCall
from agentkit.react import ReActAgent
from agentkit.scripted import ScriptedLLM
from agentkit.scripts.react import CHECKPOINT_QUESTION
from agentkit.tools import default_executor


def react_run(agent_class=ReActAgent, tools=None):
    agent = agent_class(get_llm("fake"), tools or default_executor(), max_steps=5)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    return agent


def test_a_react_run_is_one_invoke_agent_span_over_its_chat_and_tool_spans_in_ledger_order():
    agent = react_run()
    spans = otel.trace_of(agent, "ReAct")
    assert [s.name for s in spans] == ["invoke_agent ReAct", "chat scripted-stand-in", "execute_tool Search",
                                       "chat scripted-stand-in", "execute_tool Calculate", "chat scripted-stand-in"]
    assert [s.kind for s in spans] == ["INTERNAL", "CLIENT", "INTERNAL", "CLIENT", "INTERNAL", "CLIENT"]
    assert [s.parent for s in spans] == [None, 0, 0, 0, 0, 0]
    chats = [s for s in spans if s.operation == "chat"]
    assert [(s.attributes[otel.INPUT_TOKENS], s.attributes[otel.OUTPUT_TOKENS]) for s in chats] == \
        [(c.prompt_tokens, c.completion_tokens) for c in agent.llm.calls]
    root = spans[0].attributes
    assert root[otel.INPUT_TOKENS] == sum(c.prompt_tokens for c in agent.llm.calls)
    assert root[otel.AGENT_NAME] == "ReAct" and root[otel.PROVIDER] == "agentkit"
    assert spans[0].start_s == spans[1].start_s and spans[0].end_s == spans[-1].end_s
    assert all(a.end_s <= b.start_s for a, b in zip(spans[1:], spans[2:]))  # one after another, from the ledgers' clocks
    assert all(otel.TOOL_CALL_ID not in s.attributes for s in spans)  # the text protocol has no call ids


def test_native_tool_calls_give_their_ids_to_the_tool_spans():
    agent = react_run(NativeReActAgent)
    spans = otel.trace_of(agent, "native")
    asked = [c.id for record in agent.llm.calls for c in record.tool_calls if c.name != "Finish"]
    assert [s.attributes[otel.TOOL_CALL_ID] for s in spans if s.operation == "execute_tool"] == asked


def test_a_failed_tool_call_is_an_error_span_and_content_is_opt_in():
    tools = default_executor()
    tools.run("Calculate", "1 / 0")
    spans = otel.spans_of([], tools.log, agent_name="x", registered=tools.names)
    assert spans[1].error and spans[1].attributes[otel.ERROR_TYPE] == "_OTHER"
    assert otel.TOOL_RESULT not in spans[1].attributes
    full = otel.spans_of([], tools.log, agent_name="x", content=True, registered=tools.names)[1].attributes
    assert full[otel.TOOL_ARGUMENTS] == "1 / 0" and full[otel.TOOL_RESULT].startswith("error:")


def test_the_text_view_has_no_times():
    text = otel.show(otel.trace_of(react_run(), "ReAct"))
    assert "gen_ai.usage.input_tokens = 172" in text and "_s" not in text


# --- against the pinned conventions and through the SDK ----------------------------------------------


def test_the_attribute_names_are_the_pinned_conventions_own():
    semconv = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
    from opentelemetry.semconv.schemas import Schemas

    assert otel.SCHEMA_URL in {s.value for s in Schemas}
    assert otel.ERROR_TYPE == ERROR_TYPE
    for ours, theirs in [(otel.OPERATION, "GEN_AI_OPERATION_NAME"), (otel.PROVIDER, "GEN_AI_PROVIDER_NAME"),
                         (otel.AGENT_NAME, "GEN_AI_AGENT_NAME"), (otel.REQUEST_MODEL, "GEN_AI_REQUEST_MODEL"),
                         (otel.TEMPERATURE, "GEN_AI_REQUEST_TEMPERATURE"), (otel.INPUT_TOKENS, "GEN_AI_USAGE_INPUT_TOKENS"),
                         (otel.OUTPUT_TOKENS, "GEN_AI_USAGE_OUTPUT_TOKENS"), (otel.TOOL_NAME, "GEN_AI_TOOL_NAME"),
                         (otel.TOOL_CALL_ID, "GEN_AI_TOOL_CALL_ID"), (otel.TOOL_TYPE, "GEN_AI_TOOL_TYPE"),
                         (otel.TOOL_ARGUMENTS, "GEN_AI_TOOL_CALL_ARGUMENTS"), (otel.TOOL_RESULT, "GEN_AI_TOOL_CALL_RESULT")]:
        assert ours == getattr(semconv, theirs)
    operations = {v.value for v in semconv.GenAiOperationNameValues}
    assert {"invoke_agent", "chat", "execute_tool"} <= operations


def test_the_sdk_receives_one_trace_with_the_spans_their_parents_and_their_times():
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    from opentelemetry.trace import SpanKind, StatusCode

    tools = default_executor()
    agent = ReActAgent(get_llm("fake"), tools, max_steps=5)
    agent.run(CHECKPOINT_QUESTION, verbose=False)
    tools.run("Calculate", "1 / 0")  # one failed call, for the status
    spans = otel.spans_of(agent.llm.calls, tools.log, agent_name="ReAct", registered=tools.names)
    exporter = memory.InMemorySpanExporter()
    otel.export(spans, exporter)
    finished = {s.name + str(i): s for i, s in enumerate(exporter.get_finished_spans())}.values()
    root = next(s for s in finished if s.parent is None)
    assert root.name == "invoke_agent ReAct" and root.kind is SpanKind.INTERNAL
    assert len(finished) == len(spans) and {s.context.trace_id for s in finished} == {root.context.trace_id}
    assert all(s.parent.span_id == root.context.span_id for s in finished if s is not root)
    assert sorted(s.name for s in finished) == sorted(s.name for s in spans)
    assert [s.kind for s in finished if s.name.startswith("chat")] == [SpanKind.CLIENT] * 3
    assert all(root.start_time <= s.start_time <= s.end_time <= root.end_time for s in finished)
    failed = [s for s in finished if s.status.status_code is StatusCode.ERROR]
    assert [s.name for s in failed] == ["execute_tool Calculate"] and failed[0].attributes["error.type"] == "_OTHER"
    assert root.instrumentation_scope.schema_url == otel.SCHEMA_URL


def test_otlp_export_reaches_a_local_viewer_over_http():
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received = []

    class Viewer(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Viewer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        spans = otel.trace_of(react_run(), "ReAct")
        otel.export(spans, otel.otlp_exporter(f"http://127.0.0.1:{server.server_port}/v1/traces"))
    finally:
        server.shutdown()
        server.server_close()
    names = []
    for path, body in received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        assert path == "/v1/traces"
        names += [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert sorted(names) == sorted(s.name for s in spans)


# --- hostile replies and endpoints: nothing the model wrote becomes a name, and an export is bounded -------------

HUGE_NAME = "S" * 50_000
KEY_NAME = "sk-proj-" + "AbCdEf0123456789" * 3


def _all_text(spans) -> list[str]:
    return [span.name for span in spans] + [str(value) for span in spans for value in span.attributes.values()]


@pytest.mark.parametrize("name", [HUGE_NAME, KEY_NAME], ids=["50,000 characters", "shaped like a key"])
def test_a_tool_name_the_model_wrote_never_reaches_the_trace(name):
    llm = ScriptedLLM()
    llm.add(lambda prompt: True, f"Thought: I call it.\nAction: {name}[x]")
    agent = ReActAgent(llm, default_executor(), max_steps=2)
    agent.run("What?", verbose=False)
    assert agent.tools.log and agent.tools.log[0].tool == name  # the executor logged what the model asked for
    spans = otel.trace_of(agent, "ReAct")
    tool_spans = [s for s in spans if s.operation == "execute_tool"]
    assert tool_spans and all(s.name == "execute_tool" and otel.TOOL_NAME not in s.attributes for s in tool_spans)
    assert all(s.error and s.attributes[otel.ERROR_TYPE] == otel.UNKNOWN_TOOL for s in tool_spans)
    assert not any(name[:20] in text for text in _all_text(spans))
    assert max(len(text) for text in _all_text(spans)) <= otel.MAX_NAME_CHARS + 40


def test_a_registered_tool_keeps_the_registrys_spelling_and_only_safe_call_ids():
    llm = ScriptedLLM()
    first = AssistantTurn("look up", [FunctionCall(KEY_NAME, "SEARCH", '{"input": "Steve Jobs"}')])
    second = AssistantTurn("compute", [FunctionCall("x" * 5_000, "Calculate", '{"input": "1 + 1"}')])
    third = AssistantTurn("done", [FunctionCall("call_ok-1", "Finish", '{"answer": "2"}')])
    llm.add(lambda prompt: "2" in prompt.rsplit("Steve Jobs", 1)[-1], third)
    llm.add(lambda prompt: "1955" in prompt, second)
    llm.add(lambda prompt: True, first, first=False)
    agent = NativeReActAgent(llm, default_executor(), max_steps=4)
    agent.run("What?", verbose=False)
    spans = [s for s in otel.trace_of(agent, "native") if s.operation == "execute_tool"]
    assert [s.attributes[otel.TOOL_NAME] for s in spans] == ["Search", "Calculate"]
    assert all(otel.TOOL_CALL_ID not in s.attributes for s in spans)  # a key-shaped id, and a 5,000-character one
    assert not any(KEY_NAME in text or "x" * 100 in text for text in _all_text(spans))


def test_every_attribute_is_bounded_even_with_content_on():
    tools = default_executor()
    tools.run("Search", "y" * 50_000)
    record = CallRecord([{"role": "user", "content": "hi"}], "hello", 1, 1, 0.0, 0.01, model="m" * 10_000)
    spans = otel.spans_of([record], tools.log, agent_name="a" * 10_000, content=True, registered=tools.names)
    arguments = spans[-1].attributes[otel.TOOL_ARGUMENTS]
    assert arguments.startswith("y" * 100) and arguments.endswith(f"[{50_000 - otel.MAX_CONTENT_CHARS} more characters]")
    assert max(len(text) for text in _all_text(spans)) <= otel.MAX_CONTENT_CHARS + 40
    assert max(len(s.name) for s in spans) <= otel.MAX_NAME_CHARS + 40


def test_export_to_an_endpoint_that_hangs_is_bounded_as_a_whole_and_says_what_was_lost():
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    listener = socket.create_server(("127.0.0.1", 0))
    held = []

    def accept_and_say_nothing():
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:  # closed: the test is over
                return

    threading.Thread(target=accept_and_say_nothing, daemon=True).start()
    spans = otel.trace_of(react_run(), "ReAct")
    try:
        report = otel.export(spans, otel.otlp_exporter(f"http://127.0.0.1:{listener.getsockname()[1]}/v1/traces"),
                             timeout_s=1.0)
        connections = len(held)
    finally:
        listener.close()
        for connection in held:
            connection.close()
    assert report is not None and (report.sent, report.lost) == (0, len(spans))
    assert "did not finish within 1 s" in report.reason and f"lost {len(spans)}" in str(report)
    assert connections <= 1  # one batch for the whole trace, not one request per span


def test_export_reports_what_it_sent():
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    spans = otel.trace_of(react_run(), "ReAct")
    exporter = memory.InMemorySpanExporter()
    report = otel.export(spans, exporter)
    assert (report.sent, report.lost, str(report)) == (len(spans), 0, f"sent {len(spans)} spans")
    assert len(exporter.get_finished_spans()) == len(spans)
    with pytest.raises(ValueError, match="timeout_s"):
        otel.export(spans, exporter, timeout_s=0)
