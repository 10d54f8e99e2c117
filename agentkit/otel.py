"""A run's ledgers as a trace in OpenTelemetry's GenAI semantic conventions.

The conventions followed are version CONVENTIONS (status: Development, so names may still change; the
attribute names are checked against the constants of the `opentelemetry-semantic-conventions` package
that requirements-bridge.txt pins). The trace is built after the run, from the ledgers alone: the LLM
client's `.calls` and the tool executor's `.log`, each entry with its start (`started_s`) and latency.

`spans_of(calls, tool_log, agent_name=...)` returns plain `Span` records, no OpenTelemetry import needed:
* one root span `invoke_agent {agent}` (kind INTERNAL) over the whole run, with the run's token sums;
* one `chat {model}` span (kind CLIENT) per ledger entry: operation `chat`, provider, requested model,
  temperature, input and output tokens;
* one `execute_tool {tool}` span (kind INTERNAL) per tool call: the tool's name, its call id when the
  model's reply carried one (native tool calls do; the text protocol has none, and the span leaves the
  attribute out, as the conventions allow), `error.type` "_OTHER" and status ERROR for a failed call.
With `content=True` the opt-in attributes are added: the tool's arguments and result.

`export(spans, exporter)` sends them through the OpenTelemetry SDK with their own start and end times
(an `InMemorySpanExporter` in tests, `otlp_exporter()` for a local viewer: off unless you call it).
`show(spans)` prints the tree without times (the same on every machine); `waterfall(spans)` draws it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

CONVENTIONS = "1.41.0"  # OpenTelemetry semantic conventions; GenAI moved to its own repository after it
SCHEMA_URL = f"https://opentelemetry.io/schemas/{CONVENTIONS}"
OTLP_HTTP_ENDPOINT = "http://localhost:4318/v1/traces"  # a local collector or Jaeger: OTLP over HTTP

# The attribute names used here, exactly as the conventions spell them.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
TEMPERATURE = "gen_ai.request.temperature"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"


@dataclass
class Span:
    """One span: times in seconds of time.perf_counter(), `parent` the index of its parent in the list."""

    name: str
    kind: str  # "INTERNAL" or "CLIENT"
    start_s: float
    end_s: float
    attributes: dict = field(default_factory=dict)
    parent: Optional[int] = None
    error: bool = False

    @property
    def operation(self) -> str:
        return self.attributes[OPERATION]


def provider_of(llm) -> str:
    """`gen_ai.provider.name` by our best knowledge: "openai" for the openai SDK's client, "agentkit" otherwise."""
    return "openai" if type(llm).__name__ == "OpenAIChatLLM" else "agentkit"


def _call_ids(calls) -> list:
    """(tool name, call id) of every tool call the replies asked for, in order."""
    return [(c.name.lower(), c.id) for record in calls for c in (record.tool_calls or []) if c.id]


def spans_of(calls, tool_log, *, agent_name: str, provider: str = "agentkit", content: bool = False) -> list[Span]:
    """The spans of one run: its LLM ledger entries and tool log entries under one invoke_agent span."""
    events = [(c.started_s, 0, i, c) for i, c in enumerate(calls)] + [(t.started_s, 1, i, t) for i, t in enumerate(tool_log)]
    events.sort(key=lambda e: (e[0], e[1], e[2]))  # by start; ledger order breaks a tie
    ids = _call_ids(calls)
    spans = [Span(f"invoke_agent {agent_name}", "INTERNAL", 0.0, 0.0, {
        OPERATION: "invoke_agent", PROVIDER: provider, AGENT_NAME: agent_name}, None)]
    for start, is_tool, _, entry in events:
        end = start + entry.latency_s
        if not is_tool:
            spans.append(Span(f"chat {entry.model or 'unknown'}", "CLIENT", start, end, {
                OPERATION: "chat", PROVIDER: provider, REQUEST_MODEL: entry.model or "unknown",
                TEMPERATURE: float(entry.temperature), INPUT_TOKENS: entry.prompt_tokens,
                OUTPUT_TOKENS: entry.completion_tokens}, 0))
            continue
        attributes = {OPERATION: "execute_tool", TOOL_NAME: entry.tool, TOOL_TYPE: "function"}
        match = next((k for k, (name, _) in enumerate(ids) if name == entry.tool.lower()), None)
        if match is not None:  # the first unclaimed call id the replies gave this tool
            attributes[TOOL_CALL_ID] = ids.pop(match)[1]
        if content:
            attributes[TOOL_ARGUMENTS], attributes[TOOL_RESULT] = entry.argument, entry.output
        if not entry.ok:
            attributes[ERROR_TYPE] = "_OTHER"
        spans.append(Span(f"execute_tool {entry.tool}", "INTERNAL", start, end, attributes, 0, not entry.ok))
    root = spans[0]
    if len(spans) > 1:
        root.start_s, root.end_s = min(s.start_s for s in spans[1:]), max(s.end_s for s in spans[1:])
    models = {s.attributes[REQUEST_MODEL] for s in spans if s.operation == "chat"}
    if len(models) == 1:
        root.attributes[REQUEST_MODEL] = models.pop()
    root.attributes[INPUT_TOKENS] = sum(c.prompt_tokens for c in calls)
    root.attributes[OUTPUT_TOKENS] = sum(c.completion_tokens for c in calls)
    return spans


def trace_of(agent, agent_name: str = "", content: bool = False) -> list[Span]:
    """The spans of an agent's last run, from its ledgers (`run_calls` and `run_tool_calls` where it keeps them)."""
    from .protocol import ledger

    calls = getattr(agent, "run_calls", None)
    calls = calls if calls is not None else ledger(agent.llm)
    tools = getattr(agent, "run_tool_calls", None)
    tools = tools if tools is not None else (agent.tools.log if getattr(agent, "tools", None) is not None else [])
    return spans_of(calls, tools, agent_name=agent_name or type(agent).__name__, provider=provider_of(agent.llm),
                    content=content)


# --- reading a trace ---------------------------------------------------------------


def show(spans: list[Span], attributes: bool = True) -> str:
    """The span tree as text, attributes sorted, no times: the same on every machine."""
    lines = []
    for span in spans:
        depth = 0 if span.parent is None else 1
        flag = "  [ERROR]" if span.error else ""
        lines.append(f"{'    ' * depth}{span.name} ({span.kind}){flag}")
        if attributes:
            lines += [f"{'    ' * depth}    {key} = {value!r}" for key, value in sorted(span.attributes.items())]
    return "\n".join(lines)


COLOURS = {"invoke_agent": "#4c72b0", "chat": "#dd8452", "execute_tool": "#55a868"}


def waterfall(spans: list[Span], ax=None, title: str = ""):
    """Each span as a bar from its start to its end, in ms since the run began, children under their parent."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.3 * len(spans) + 1))
    origin = spans[0].start_s
    for row, span in enumerate(spans):
        left, width = (span.start_s - origin) * 1000, max((span.end_s - span.start_s) * 1000, 1e-3)
        ax.barh(row, width, left=left, color="#c44e52" if span.error else COLOURS.get(span.operation, "grey"))
    ax.set_yticks(range(len(spans)), [("  " if s.parent is not None else "") + s.name for s in spans], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ms since the run began")
    ax.set_title(title or spans[0].name, fontsize=10)
    return ax


# --- through the OpenTelemetry SDK ---------------------------------------------------------


def export(spans: list[Span], exporter, service_name: str = "agentkit-course") -> None:
    """Send the spans, with their own times, through the OpenTelemetry SDK to `exporter` (needs the bridge extra)."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import SpanKind, Status, StatusCode

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agentkit.otel", schema_url=SCHEMA_URL)
    to_epoch_ns = time.time_ns() - time.perf_counter_ns()  # perf_counter's clock, read as wall-clock time
    made = []
    for span in spans:
        context = trace.set_span_in_context(made[span.parent]) if span.parent is not None else None
        made.append(tracer.start_span(span.name, context=context, kind=getattr(SpanKind, span.kind),
                                      attributes=span.attributes, start_time=to_epoch_ns + int(span.start_s * 1e9)))
        if span.error:
            made[-1].set_status(Status(StatusCode.ERROR))
    for span, live in reversed(list(zip(spans, made))):  # children end before their parent
        live.end(end_time=to_epoch_ns + int(span.end_s * 1e9))
    provider.shutdown()  # flushes the exporter


def otlp_exporter(endpoint: str = OTLP_HTTP_ENDPOINT):
    """An OTLP/HTTP exporter to a local viewer (Jaeger, Arize Phoenix, a collector); nothing is sent until `export`."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint, timeout=5)
