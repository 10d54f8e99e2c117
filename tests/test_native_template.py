"""TOOL_CHAT_TEMPLATE renders a chat without tools exactly as SmolLM2's own template does.

SmolLM2's template is read from the GGUF file's metadata (no server, no generation), then both
templates are rendered with jinja2 on the conversations the course sends.
"""
import json
import struct

import jinja2
import pytest

from agentkit.native import TOOL_CHAT_TEMPLATE, NativeReActAgent, tool_schemas
from agentkit.react import ReActAgent
from agentkit.modes import get_llm
from agentkit.scripts.react import CHECKPOINT_QUESTION
from agentkit.tools import default_executor

def gguf_string(path, key: str) -> str:
    """One string value from a GGUF file's metadata: the key, then its type (8: string), length and bytes."""
    with open(path, "rb") as f:
        data = f.read(16 * 1024 * 1024)  # the metadata sits before the tensors
    assert data[:4] == b"GGUF"
    name = key.encode()
    at = data.find(struct.pack("<Q", len(name)) + name)
    if at < 0:
        raise KeyError(key)
    at += 8 + len(name)
    kind, length = struct.unpack_from("<IQ", data, at)
    assert kind == 8, f"{key} is not a string (GGUF type {kind})"
    return data[at + 12: at + 12 + length].decode()


@pytest.fixture(scope="module")
def smollm2_template():
    from agentkit.local import MissingPackageError, model_path

    try:
        return gguf_string(model_path(), "tokenizer.chat_template")
    except MissingPackageError as e:
        pytest.skip(str(e))


def render(template, messages, **extra):
    env = jinja2.Environment()
    env.filters["tojson"] = json.dumps
    return env.from_string(template).render(messages=messages, add_generation_prompt=True, **extra)


def test_without_tools_the_prompt_is_the_models_own(smollm2_template):
    react = ReActAgent(get_llm("fake"), max_steps=4)
    react.run(CHECKPOINT_QUESTION, verbose=False)
    conversations = [[{"role": "user", "content": "hi"}], react.llm.calls[-1].messages,
                     [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
                      {"role": "assistant", "content": "A"}, {"role": "user", "content": "B"}]]
    for messages in conversations:
        assert render(TOOL_CHAT_TEMPLATE, messages) == render(smollm2_template, messages)


def test_with_tools_the_schemas_calls_and_results_are_in_the_prompt():
    native = NativeReActAgent(get_llm("fake"), max_steps=4)
    native.run(CHECKPOINT_QUESTION, verbose=False)
    prompt = render(TOOL_CHAT_TEMPLATE, native.llm.calls[-1].messages, tools=tool_schemas(default_executor()))

    assert prompt.count("<|im_start|>system") == 1 and "You are a tool-calling agent" in prompt
    assert json.dumps(tool_schemas(default_executor())[0]) in prompt
    assert '<tool_call>\n{"name": "Search", "arguments": {"input": "Steve Jobs"}}\n</tool_call>' in prompt
    assert "<tool_response>\n25185\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
