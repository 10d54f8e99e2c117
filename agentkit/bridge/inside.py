"""Traces from inside the frameworks: their own instrumentation, into the OpenTelemetry SDK's in-memory exporter.

`agentkit.otel` draws a run's spans after it, from the ledgers. The frameworks can also trace themselves while
they run, through instrumentors that wrap their code:
* OpenInference's LangChain instrumentor: a span per LangChain run (the graph, each node and middleware hook,
  each chat model call, each tool), in OpenInference's conventions (`openinference.span.kind`, `llm.*`,
  `input.value`), with GenAI attributes added (`enable_genai_semconv`, its own mapping);
* OpenInference's smolagents instrumentor: the agent's run, each step, each tool call, and each call of
  smolagents' own model classes (it wraps their `generate`; the course's adapter has its own, unwrapped);
* OpenTelemetry's instrumentation of the openai client (opentelemetry-instrumentation-openai-v2): a `chat`
  span per request the openai SDK sends, in the GenAI conventions it calls "latest experimental"
  (OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental, which `tracing` sets before instrumenting;
  without it, that package emits version 1.30.0).

`tracing(content=False)` (a context manager) gives a TracerProvider of its own, whose SpanLimits bound every
attribute, an InMemorySpanExporter behind a SimpleSpanProcessor, and the three instrumentors on; on leaving,
all three are off again. With content=False, OpenInference's TraceConfig hides inputs, outputs and messages,
and the openai instrumentation captures no content (its default).
`available()` names the instrumentors installed here (OpenInference's declare Python < 3.15: there, only the
openai client's is), and `tracing` turns on those.

`record()` traces chapter 16's two runs on the stand-in (create_agent on ChatOpenAI against the loopback
server; smolagents' ToolCallingAgent through the course's adapter) and returns each span as plain data:
scope (and the schema it declares), name, kind, its parent's place in the list, status, and attributes
(without LangGraph's `metadata`, whose checkpoint ids differ between two identical runs).
`python -m agentkit.bridge.inside` writes them, with the versions, to data/inside_spans.json, which the
chapter reads: a recorded run, as for a real model.
Import only where the bridge is installed; the instrumentors come with it (requirements-bridge.txt).
"""
from __future__ import annotations

import importlib.util
import json
import os
from contextlib import contextmanager
from typing import Optional

from ..otel import MAX_CONTENT_CHARS

OPT_IN = ("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
SCOPES = {"openinference.instrumentation.langchain": "LangChain (OpenInference)",
          "openinference.instrumentation.smolagents": "smolagents (OpenInference)",
          "opentelemetry.instrumentation.openai_v2": "openai client (OpenTelemetry)",
          "opentelemetry.util.genai.handler": "openai client (OpenTelemetry)"}


INSTRUMENTORS = {"openinference-instrumentation-langchain": "openinference.instrumentation.langchain",
                 "openinference-instrumentation-smolagents": "openinference.instrumentation.smolagents",
                 "opentelemetry-instrumentation-openai-v2": "opentelemetry.instrumentation.openai_v2"}
VARYING = ("metadata",)  # LangGraph's run metadata carries checkpoint ids, new on every run


def available() -> list[str]:
    """The instrumentors' packages installed here."""
    def found(module):
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            return False
    return [name for name, module in INSTRUMENTORS.items() if found(module)]


def _instrumentors(config) -> list:
    here = available()
    made = []
    if "openinference-instrumentation-langchain" in here:
        from openinference.instrumentation.langchain import LangChainInstrumentor
        made.append((LangChainInstrumentor(), {"config": config}))
    if "openinference-instrumentation-smolagents" in here:
        from openinference.instrumentation.smolagents import SmolagentsInstrumentor
        made.append((SmolagentsInstrumentor(), {"config": config}))
    if "opentelemetry-instrumentation-openai-v2" in here:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        made.append((OpenAIInstrumentor(), {}))
    return made


@contextmanager
def tracing(content: bool = False):
    """The instrumentors installed here on, into an InMemorySpanExporter (yielded); all off again afterwards."""
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    previous = os.environ.get(OPT_IN[0])
    os.environ[OPT_IN[0]] = OPT_IN[1]
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_attribute_length=MAX_CONTENT_CHARS))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = None
    if any(name.startswith("openinference") for name in available()):
        from openinference.instrumentation import TraceConfig

        hidden = not content
        config = TraceConfig(hide_inputs=hidden, hide_outputs=hidden, hide_input_messages=hidden,
                             hide_output_messages=hidden, hide_input_text=hidden, hide_output_text=hidden,
                             enable_genai_semconv=True)
    made = _instrumentors(config)
    instrumentors = [instrumentor for instrumentor, _ in made]
    try:
        for instrumentor, options in made:
            instrumentor.instrument(tracer_provider=provider, skip_dep_check=True, **options)
        yield exporter
    finally:
        for instrumentor in instrumentors:
            if instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.uninstrument()
        provider.shutdown()
        if previous is None:
            os.environ.pop(OPT_IN[0], None)
        else:
            os.environ[OPT_IN[0]] = previous


def scope_of(span) -> str:
    """Which instrumentation made the span, in words."""
    name = span.instrumentation_scope.name if span.instrumentation_scope else ""
    return SCOPES.get(name, name)


def plain(spans) -> list[dict]:
    """Each finished span as data, in the order they started (a parent by its place), no times, ids or `metadata`."""
    ordered = sorted(spans, key=lambda s: s.start_time)
    place = {s.context.span_id: number for number, s in enumerate(ordered)}
    return [{"scope": scope_of(s), "schema_url": (s.instrumentation_scope.schema_url or "") if s.instrumentation_scope
             else "", "name": s.name, "kind": s.kind.name,
             "parent": place.get(s.parent.span_id) if s.parent else None,
             "status": s.status.status_code.name,
             "attributes": {k: list(v) if isinstance(v, tuple) else v for k, v in sorted(s.attributes.items())
                            if k not in VARYING}}
            for s in ordered]


def record() -> dict:
    """Chapter 16's two traced runs on the stand-in: {"versions": ..., "runs": {name: [span, ...]}}."""
    from importlib.metadata import version

    from langchain_core.messages import HumanMessage

    from ..modes import get_llm
    from ..scripts.react import CHECKPOINT_QUESTION
    from ..tools import default_executor
    from .chat_model import chat_model, endpoint, native_agent
    from .with_smolagents import SmolagentsReAct

    runs = {}
    with endpoint(get_llm("fake")) as server, tracing() as exporter:
        native_agent(chat_model(server), default_executor()).invoke(
            {"messages": [HumanMessage(f"Question: {CHECKPOINT_QUESTION}")]})
        runs["create_agent on ChatOpenAI"] = plain(exporter.get_finished_spans())
        exporter.clear()
        SmolagentsReAct(get_llm("fake"), default_executor()).run(CHECKPOINT_QUESTION)
        runs["smolagents ToolCallingAgent"] = plain(exporter.get_finished_spans())
    return {"versions": {name: version(name) for name in available()}, "runs": runs}


def main(argv: Optional[list] = None) -> int:
    import argparse
    from pathlib import Path

    from ..data import DATA_DIR

    parser = argparse.ArgumentParser(prog="python -m agentkit.bridge.inside", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(str(DATA_DIR / "inside_spans.json")))
    args = parser.parse_args(argv)
    recorded = record()
    args.out.write_text(json.dumps(recorded, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {sum(map(len, recorded['runs'].values()))} spans to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
