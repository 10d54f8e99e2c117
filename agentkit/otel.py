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

What the model wrote never becomes a name: a tool the run's registry (`registered`, the executor's names)
does not hold is the span `execute_tool` with no `gen_ai.tool.name`, `error.type` "unknown_tool", whatever
name the reply asked for (50,000 characters, or a string shaped like a key). A call id is kept only when it
is an id (at most MAX_ID_CHARS of letters, digits and `_-.:`) and not shaped like a secret. Every attribute
is bounded: names and models at MAX_NAME_CHARS, opt-in content at MAX_CONTENT_CHARS (cut, saying how much).

`export(spans, exporter)` sends them through the OpenTelemetry SDK with their own start and end times, as
one batch, and waits at most `timeout_s` in all; it returns an `ExportReport`: how many spans were sent,
how many were lost and why (an endpoint that hangs, refuses, or is not there). `otlp_exporter()` is one
for a local viewer (off unless you call it); an `InMemorySpanExporter` serves in tests.
`show(spans)` prints the tree without times (the same on every machine); `waterfall(spans)` draws it.
"""
from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Iterable, Optional

from .openai_client import redact

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

MAX_NAME_CHARS = 128  # a model, agent or provider name: longer is cut
MAX_ID_CHARS = 64  # a tool call id: longer, or made of other characters, is left out
MAX_CONTENT_CHARS = 4096  # an opt-in argument or result: longer is cut, saying by how much
EXPORT_TIMEOUT_S = 10.0  # the whole export waits at most this long
UNKNOWN_TOOL = "unknown_tool"  # error.type of a call to a tool the registry does not hold
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,%d}" % MAX_ID_CHARS)


def bounded(text, limit: int = MAX_NAME_CHARS) -> str:
    """`text` as a string of at most about `limit` characters; a cut one says how many were left out."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}...[{len(text) - limit} more characters]"


def _safe_id(call_id) -> str:
    """The id, or "" when it is not an id or looks like a secret (redaction would change it)."""
    call_id = str(call_id)
    return call_id if _ID.fullmatch(call_id) and redact(call_id) == call_id else ""


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


def _call_ids(calls, registered: dict) -> list:
    """(registered tool name, call id) of every call the replies asked of a registered tool, in order."""
    return [(registered[str(c.name).lower()], _safe_id(c.id)) for record in calls for c in (record.tool_calls or [])
            if str(c.name).lower() in registered and _safe_id(c.id)]


def spans_of(calls, tool_log, *, agent_name: str, provider: str = "agentkit", content: bool = False,
             registered: Optional[Iterable[str]] = None) -> list[Span]:
    """The spans of one run: its LLM ledger entries and tool log entries under one invoke_agent span.

    `registered`: the tool names the run's registry holds; a logged name outside them is not written."""
    registered = {str(name).lower(): str(name) for name in registered or ()}
    agent_name, provider = bounded(agent_name), bounded(provider)
    events = [(c.started_s, 0, i, c) for i, c in enumerate(calls)] + [(t.started_s, 1, i, t) for i, t in enumerate(tool_log)]
    events.sort(key=lambda e: (e[0], e[1], e[2]))  # by start; ledger order breaks a tie
    ids = _call_ids(calls, registered)
    spans = [Span(f"invoke_agent {agent_name}", "INTERNAL", 0.0, 0.0, {
        OPERATION: "invoke_agent", PROVIDER: provider, AGENT_NAME: agent_name}, None)]
    for start, is_tool, _, entry in events:
        end = start + entry.latency_s
        if not is_tool:
            model = bounded(entry.model or "unknown")
            spans.append(Span(f"chat {model}", "CLIENT", start, end, {
                OPERATION: "chat", PROVIDER: provider, REQUEST_MODEL: model,
                TEMPERATURE: float(entry.temperature), INPUT_TOKENS: entry.prompt_tokens,
                OUTPUT_TOKENS: entry.completion_tokens}, 0))
            continue
        tool = registered.get(str(entry.tool).lower())  # the registry's spelling, never the reply's
        attributes = {OPERATION: "execute_tool", TOOL_TYPE: "function"}
        if tool is not None:
            attributes[TOOL_NAME] = tool
            match = next((k for k, (name, _) in enumerate(ids) if name == tool), None)
            if match is not None:  # the first unclaimed call id the replies gave this tool
                attributes[TOOL_CALL_ID] = ids.pop(match)[1]
        if content:
            attributes[TOOL_ARGUMENTS] = bounded(entry.argument, MAX_CONTENT_CHARS)
            attributes[TOOL_RESULT] = bounded(entry.output, MAX_CONTENT_CHARS)
        failed = not entry.ok or tool is None
        if failed:
            attributes[ERROR_TYPE] = "_OTHER" if tool is not None else UNKNOWN_TOOL
        spans.append(Span("execute_tool" + (f" {tool}" if tool else ""), "INTERNAL", start, end, attributes, 0, failed))
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
    registry = getattr(getattr(agent, "tools", None), "names", None) or []
    return spans_of(calls, tools, agent_name=agent_name or type(agent).__name__, provider=provider_of(agent.llm),
                    content=content, registered=registry)


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


@dataclass
class ExportReport:
    """What one export did: spans sent, spans lost, and why they were lost ("" when none were)."""

    sent: int
    lost: int
    reason: str = ""

    def __str__(self) -> str:
        return f"sent {self.sent} spans" + (f"; lost {self.lost}: {self.reason}" if self.lost else "")


def export(spans: list[Span], exporter, service_name: str = "agentkit-course",
           timeout_s: float = EXPORT_TIMEOUT_S) -> ExportReport:
    """Send the spans, with their own times, through the OpenTelemetry SDK to `exporter`, as one batch.

    Waits at most `timeout_s` in all (an exporter still stuck then is left to its own timeout, in a
    daemon thread) and never raises for the exporter: the report says what was sent and what was lost."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.trace import SpanKind, Status, StatusCode

    if not (isinstance(timeout_s, (int, float)) and 0 < timeout_s < float("inf")):
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    # The SDK's own limit too, for spans that did not come through spans_of.
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}),
                              span_limits=SpanLimits(max_attribute_length=MAX_CONTENT_CHARS + 64))
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
    finished = [live for live in made if live.end_time is not None]  # ended spans are the SDK's ReadableSpans
    outcome: list = []

    def send() -> None:
        try:
            outcome.append(exporter.export(finished))
        except Exception as e:  # noqa: BLE001 - an exporter's failure is reported, never raised into the run
            outcome.append(e)

    worker = threading.Thread(target=send, daemon=True, name="agentkit-otel-export")
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        return ExportReport(0, len(finished), f"the exporter did not finish within {timeout_s:g} s (an endpoint "
                                              "that does not answer?); these spans were not sent")
    try:
        exporter.shutdown()
    except Exception:  # noqa: BLE001 - nothing left to lose
        pass
    if outcome[0] is SpanExportResult.SUCCESS:
        return ExportReport(len(finished), 0)
    why = (f"{type(outcome[0]).__name__}: {bounded(outcome[0], 200)}" if isinstance(outcome[0], Exception)
           else "the exporter reported a failure (refused, unreachable, or an error status)")
    return ExportReport(0, len(finished), why)


def otlp_exporter(endpoint: str = OTLP_HTTP_ENDPOINT, timeout_s: float = 5.0):
    """An OTLP/HTTP exporter to a local viewer (Jaeger, Arize Phoenix, a collector); nothing is sent until `export`.

    `timeout_s` bounds its own requests, retries included; `export` bounds the whole."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint, timeout=timeout_s)
