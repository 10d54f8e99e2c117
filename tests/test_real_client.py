"""The real client, driven through the real openai SDK against the loopback server.

Here the server answers from a list of canned responses (the n-th request gets the n-th, the
last one repeats): a sick server on purpose. It records every request it saw, and asks the SDK
to retry after 1 ms so retries stay fast.
"""
import pytest

from agentkit.llm import LLMError, MissingSettingError, OpenAIChatLLM
from agentkit.modes import VALID_MODES, get_llm
from agentkit.local import CompletionLLM
from agentkit.loopback import Canned, serve

SETTINGS = ("LLM_API_KEY", "LLM_BASE_URL", "LLM_MODEL_ID", "AP_MODE")
FAST_RETRY = {"retry-after-ms": "1", "retry-after": "0"}


def chat_body(content="Paris.", prompt_tokens=12, completion_tokens=3, cached_tokens=8):
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
        },
    }


def reply(status=200, body=None, raw=None, headers=None):
    """A canned HTTP response: a JSON body, or raw bytes for malformed cases."""
    return Canned(status, body if body is not None else {}, raw, {**FAST_RETRY, **(headers or {})})


def in_turn(*responses):
    """A replier that answers the n-th request with the n-th response; the last one repeats."""
    seen = []

    def answer(body):
        seen.append(body)
        return responses[min(len(seen), len(responses)) - 1]

    return answer


@pytest.fixture
def server():
    with serve(in_turn(reply(body=chat_body()))) as srv:
        yield srv


@pytest.fixture(autouse=True)
def clean_settings(monkeypatch, tmp_path):
    """No setting leaks in from the shell or a .env file up the tree."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def client(server, max_retries=2):
    return OpenAIChatLLM(
        api_key="test-key", base_url=server.base_url, model="test-model", max_retries=max_retries
    )


def test_round_trip_puts_server_usage_in_the_ledger(server):
    llm = client(server)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}]

    answer = llm.think(messages, temperature=0.3)

    assert answer == "Paris."
    [request] = server.requests
    path, headers, body = request.path, request.headers, request.body
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer test-key"
    assert body["model"] == "test-model"
    assert body["messages"] == messages
    assert body["temperature"] == 0.3
    [record] = llm.calls
    assert (record.prompt_tokens, record.completion_tokens, record.cached_tokens) == (12, 3, 8)
    assert record.reply == "Paris." and record.messages == messages
    assert record.model == "test-model" and record.temperature == 0.3


def test_a_429_is_retried_then_succeeds(server):
    server.replier = in_turn(
        reply(429, {"error": {"message": "slow down", "type": "rate_limit"}}),
        reply(body=chat_body("Second time lucky.")),
    )
    llm = client(server, max_retries=2)

    assert llm.think("hello") == "Second time lucky."
    assert len(server.requests) == 2
    assert len(llm.calls) == 1  # retries are the SDK's business: one call in the ledger


def test_a_persistent_500_becomes_one_clear_error(server):
    server.replier = in_turn(reply(500, {"error": {"message": "boom", "type": "server_error"}}))
    llm = client(server, max_retries=2)

    with pytest.raises(LLMError) as failure:
        llm.think("hello")

    assert len(server.requests) == 1 + 2
    message = str(failure.value)
    assert "HTTP 500" in message
    assert "after 2 retries" in message
    for setting in ("LLM_BASE_URL", "LLM_MODEL_ID", "LLM_API_KEY"):
        assert setting in message
    assert server.base_url in message
    assert llm.calls == []


@pytest.mark.parametrize(
    "status, hint",
    [(401, "LLM_API_KEY is probably wrong"), (404, "end in /v1")],
)
def test_a_refused_key_or_a_wrong_url_fails_at_once_saying_what_to_fix(server, status, hint):
    server.replier = in_turn(reply(status, {"error": {"message": "nope", "type": "invalid_request_error"}}))
    llm = client(server, max_retries=2)

    with pytest.raises(LLMError) as failure:
        llm.think("hello")

    assert len(server.requests) == 1  # the SDK does not retry these, and we do not claim it did
    message = str(failure.value)
    assert f"HTTP {status}" in message and hint in message and "not retried" in message


def test_a_server_slower_than_the_timeout_is_a_clear_error(server):
    server.replier, server.latency_s = in_turn(reply(body=chat_body("too late"))), 0.5
    llm = OpenAIChatLLM(api_key="k", base_url=server.base_url, model="m", timeout=0.1, max_retries=0)

    with pytest.raises(LLMError, match="timed out") as failure:
        llm.think("hello")

    assert "0.1 s" in str(failure.value) and llm.calls == []


def test_a_body_that_is_not_json_is_a_clear_error(server):
    server.replier = in_turn(reply(raw=b"<html>gateway says hi</html>"))
    llm = client(server, max_retries=0)

    with pytest.raises(LLMError, match="not JSON") as failure:
        llm.think("hello")

    assert "LLM_BASE_URL" in str(failure.value)
    assert len(server.requests) == 1 and llm.calls == []


def test_json_without_choices_is_a_clear_error(server):
    server.replier = in_turn(reply(body={"object": "chat.completion", "note": "no choices here"}))
    llm = client(server, max_retries=0)

    with pytest.raises(LLMError, match="Malformed response") as failure:
        llm.think("hello")

    assert "LLM_BASE_URL" in str(failure.value)
    assert llm.calls == []


def test_a_server_that_is_down_is_a_clear_error(server):
    url = server.base_url
    server.stop()
    llm = OpenAIChatLLM(api_key="k", base_url=url, model="m", max_retries=0)

    with pytest.raises(LLMError, match="Could not connect") as failure:
        llm.think("hello")

    assert "that the server is up" in str(failure.value)


def test_missing_key_fails_at_construction_naming_the_variable():
    with pytest.raises(MissingSettingError, match="LLM_API_KEY"):
        OpenAIChatLLM(base_url="http://127.0.0.1:9/v1", model="m")


def test_missing_key_in_real_mode_fails_in_get_llm(monkeypatch):
    monkeypatch.setenv("AP_MODE", "real")
    with pytest.raises(MissingSettingError, match="LLM_API_KEY"):
        get_llm()


def test_an_unknown_mode_lists_the_valid_ones():
    with pytest.raises(ValueError) as failure:
        get_llm("bogus")
    message = str(failure.value)
    assert "bogus" in message
    for mode in VALID_MODES:
        assert mode in message


def test_settings_are_read_from_a_dotenv_file(server, tmp_path):
    (tmp_path / ".env").write_text(
        f"LLM_API_KEY=key-from-dotenv\nLLM_BASE_URL={server.base_url}\nLLM_MODEL_ID=dotenv-model\n"
    )
    llm = OpenAIChatLLM(max_retries=0)

    assert llm.think("hi") == "Paris."
    [request] = server.requests
    headers, body = request.headers, request.body
    assert headers["authorization"] == "Bearer key-from-dotenv"
    assert body["model"] == "dotenv-model"


def test_the_environment_wins_over_dotenv(server, tmp_path, monkeypatch):
    (tmp_path / ".env").write_text(f"LLM_API_KEY=from-file\nLLM_BASE_URL={server.base_url}\nLLM_MODEL_ID=m\n")
    monkeypatch.setenv("LLM_API_KEY", "from-env")
    OpenAIChatLLM(max_retries=0).think("hi")

    assert server.requests[0].headers["authorization"] == "Bearer from-env"


def test_an_empty_variable_hides_the_dotenv_value(tmp_path, monkeypatch):
    # How the test command shields stored outputs from a learner's .env (AP_MODE=fake LLM_API_KEY=).
    (tmp_path / ".env").write_text("LLM_API_KEY=from-file\nLLM_MODEL_ID=m\nAP_MODE=real\n")
    monkeypatch.setenv("LLM_API_KEY", "")
    monkeypatch.setenv("AP_MODE", "")

    with pytest.raises(MissingSettingError, match="LLM_API_KEY"):
        OpenAIChatLLM()
    assert type(get_llm()).__name__ == "ScriptedLLM"


def completion_body(text=" I should search.\nAction: Search[Steve Jobs]"):
    return {
        "id": "cmpl-test", "object": "text_completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop", "text": text}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49,
                  "prompt_tokens_details": {"cached_tokens": 32}},
    }


def test_completion_style_sends_examples_then_question_and_stops_before_observations(server):
    server.replier = in_turn(reply(body=completion_body()))
    llm = CompletionLLM("Question: an example\nThought: ...", api_key="k", base_url=server.base_url, model="m")
    messages = [{"role": "system", "content": "ROLE PROMPT"}, {"role": "user", "content": "Question: the real one"}]

    answer = llm.think(messages)

    [request] = server.requests
    path, body = request.path, request.body
    assert path == "/v1/completions"
    assert body["prompt"] == "Question: an example\nThought: ...\n\nQuestion: the real one\nThought:"
    assert "ROLE PROMPT" not in body["prompt"]  # system text only with system=True
    assert "\nObservation" in body["stop"] and body["max_tokens"] == llm.max_tokens
    assert answer == "Thought: I should search.\nAction: Search[Steve Jobs]"  # the prime, then the text
    [record] = llm.calls
    assert record.prompt == body["prompt"]  # the ledger keeps the exact text sent
    assert (record.prompt_tokens, record.completion_tokens, record.cached_tokens) == (40, 9, 32)


def test_completion_style_failures_are_clear_errors(server):
    server.replier = in_turn(reply(raw=b"not json at all"))
    llm = CompletionLLM("", api_key="k", base_url=server.base_url, model="m", max_retries=0)

    with pytest.raises(LLMError, match="LLM_BASE_URL"):
        llm.think("Question: anything")
    assert llm.calls == []


# --- secrets, deep JSON, bad usage, a reply that is not text ----------------------------


def test_an_error_never_carries_url_credentials_or_an_echoed_key(server):
    key = "sk-proj-Secret123456789"
    echo = {"error": {"message": f"Incorrect API key provided: {key}. Authorization: Bearer {key}",
                      "type": "invalid_request_error"}}
    server.replier = in_turn(reply(401, echo))
    secret_url = server.base_url.replace("http://", "http://alice:hunter2pass@")
    llm = OpenAIChatLLM(api_key=key, base_url=secret_url, model="test-model", max_retries=0)
    with pytest.raises(LLMError) as failure:
        llm.think("hello")
    shown = "".join(__import__("traceback").format_exception(failure.value))  # what a notebook prints
    for secret in (key, "hunter2pass", "alice", "Secret123"):
        assert secret not in shown
    assert "HTTP 401" in shown and server.base_url in shown and "[redacted]" in shown


def test_an_evaluation_row_never_carries_the_key():
    from agentkit.evaluate import run_task
    from agentkit.react import ReActAgent
    from agentkit.tasks import load_tasks
    from agentkit.tools import default_executor

    key = "sk-live-abcdef0123456789"
    with serve(in_turn(reply(401, {"error": {"message": f"bad key {key}", "type": "x"}}))) as srv:
        llm = OpenAIChatLLM(api_key=key, base_url=srv.base_url, model="m", max_retries=0)
        row = run_task(lambda: ReActAgent(llm, default_executor()), load_tasks()[0])
    assert row.stop_reason == "error" and "HTTP 401" in row.error and key not in row.error


def test_a_deeply_nested_reply_is_an_llm_error_not_a_recursion_error(server):
    server.replier = in_turn(reply(raw=b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))
    with pytest.raises(LLMError, match="nests too deeply"):
        client(server, max_retries=0).think("hello")


@pytest.mark.parametrize("prompt_tokens, completion_tokens", [("lots", 3), (-5, 3), (12, -1), (12, "many")])
def test_usage_that_is_not_a_whole_number_is_counted_locally(server, prompt_tokens, completion_tokens):
    body = chat_body(prompt_tokens=0, completion_tokens=0)
    body["usage"].update(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    server.replier = in_turn(reply(body=body))
    llm = client(server, max_retries=0)
    assert llm.think("hello") == "Paris."
    call = llm.calls[0]
    assert call.prompt_tokens == 8 and call.completion_tokens == 2  # o200k: the chat overhead + "hello"; "Paris."
    assert "not whole numbers" in call.note


def test_a_reply_that_is_not_text_is_an_llm_error_never_returned():
    from agentkit.llm import LedgerLLM

    class Numeric(LedgerLLM):
        def _complete(self, messages, temperature):
            return 42, {"prompt_tokens": 1, "completion_tokens": 1}

    with pytest.raises(LLMError, match="replied with a int"):
        Numeric().think("hello")


def test_a_numeric_tool_turn_content_is_an_llm_error(server):
    server.replier = in_turn(reply(body=chat_body(content=42)))
    with pytest.raises(LLMError, match="content is int"):
        client(server, max_retries=0).act("hello", [{"type": "function", "function": {"name": "f", "parameters": {}}}])
