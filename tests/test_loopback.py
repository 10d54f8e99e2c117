"""The loopback server: real HTTP through the real openai SDK, latency that overlaps, 429s the SDK honours."""
import json

import pytest

from agentkit.batch import run_batch
from agentkit.llm import LLMError, ScriptedLLM, Rule
from agentkit.channels import chapter_client, time_batch
from agentkit.loopback import Canned, serve, tool_call
from agentkit.native import NativeReActAgent
from agentkit.scripts.react import CHECKPOINT_QUESTION


def test_the_default_replier_is_the_stand_in_and_usage_reaches_the_ledger():
    with serve() as server:
        llm = server.client()
        agent = NativeReActAgent(llm, max_steps=4)
        answer = agent.run(CHECKPOINT_QUESTION, verbose=False)

    assert answer == "25185" and agent.stop_reason == "finished"
    assert [r.status for r in server.requests] == [200, 200, 200]
    assert all(r.body["tools"] and r.body["tool_choice"] == "required" for r in server.requests)
    # The second request re-sends the first call and its result, as the chat API wants them.
    second = server.requests[1].body["messages"]
    assert second[2]["tool_calls"][0]["function"]["name"] == "Search"
    assert second[3]["role"] == "tool" and second[3]["tool_call_id"] == second[2]["tool_calls"][0]["id"]
    assert "1955" in second[3]["content"]
    assert all(c.prompt_tokens > 0 and c.completion_tokens > 0 for c in llm.calls)
    assert [c.tool_calls[0].name for c in llm.calls] == ["Search", "Calculate", "Finish"]


def test_a_replier_can_send_text_tool_calls_or_a_raw_response():
    def replier(body):
        last = body["messages"][-1]["content"]
        if last == "text":
            return "plain words"
        if last == "call":
            return {"content": None, "tool_calls": [tool_call("Search", "{not json")]}
        return Canned(418, {"error": {"message": "I am a teapot", "type": "teapot"}})

    with serve(replier) as server:
        llm = server.client(max_retries=0)
        assert llm.think("text") == "plain words"
        turn = llm.act("call", [{"type": "function", "function": {"name": "Search", "parameters": {}}}])
        assert (turn.tool_calls[0].name, turn.tool_calls[0].arguments) == ("Search", "{not json")
        assert turn.tool_calls[0].id  # the server gave the call an id
        with pytest.raises(LLMError, match="HTTP 418"):
            llm.think("other")


def test_a_replier_that_raises_is_a_500_and_an_unknown_path_a_404():
    def broken(body):
        raise KeyError("no such thing")

    with serve(broken) as server:
        with pytest.raises(LLMError, match="HTTP 500") as failure:
            server.client(max_retries=0).think("hi")
        assert "KeyError" in str(failure.value)
        assert len(server.requests) == 1
        assert server.answer("/v1/embeddings", {}).status == 404


def test_latency_overlaps_across_workers():
    import threading

    # Each request waits out its latency on its own thread, then meets the others here: the four calls get their
    # answers only if all four are in the server at once. One after another, the first would wait alone until the
    # barrier's backstop broke it (a server error). No clock decides the outcome.
    together = threading.Barrier(4, timeout=120)

    def replier(body):
        if body["messages"][-1]["content"] == "hi":
            together.wait()
        return "ok"

    with serve(replier, latency_s=0.2) as server:
        llm = server.client(max_retries=0)
        llm.think("warm up")
        results = run_batch(lambda _: llm.think("hi"), range(4), workers=4, progress=False)

    assert [r.value for r in results] == ["ok"] * 4 and not together.broken
    assert len(llm.calls) == 5 and all(c.latency_s >= 0.2 for c in llm.calls)  # each waited its latency


def test_the_sdk_waits_as_long_as_retry_after_says():
    # Without the header the SDK's first backoff is at most 0.5 s; a longer gap proves it read the header.
    with serve(lambda body: "after the wait", throttle=1, retry_after_s=0.6) as server:
        llm = server.client(max_retries=2)
        assert llm.think("hi") == "after the wait"

    refused, served = server.requests
    assert (refused.status, served.status) == (429, 200)
    assert served.at - refused.at >= 0.6
    assert len(llm.calls) == 1  # retries are the SDK's business: one call in the ledger


def test_a_retry_after_beyond_two_minutes_is_not_retried_at_all():
    with serve(lambda body: "never", throttle=5, retry_after_s=600) as server:
        with pytest.raises(LLMError, match="HTTP 429"):
            server.client(max_retries=2).think("hi")
    assert [r.status for r in server.requests] == [429]


def test_throttle_counts_per_distinct_request_so_concurrency_does_not_change_the_429s():
    with serve(lambda body: body["messages"][-1]["content"], throttle=1, retry_after_s=0.05) as server:
        llm = server.client(max_retries=2)
        results = run_batch(lambda n: llm.think(f"task {n}"), range(6), workers=6, progress=False)

    assert [r.value for r in results] == [f"task {n}" for n in range(6)]
    assert sorted(r.status for r in server.requests) == [200] * 6 + [429] * 6


def test_the_stand_in_replier_answers_completions_and_temperature_passes_through():
    llm = ScriptedLLM([Rule("Question: ping", "pong")])
    from agentkit.loopback import stand_in_replier

    with serve(stand_in_replier(llm)) as server:
        client = server.client()
        assert client.think("Question: ping", temperature=0.7) == "pong"
        completion = client.client.completions.create(model="m", prompt="Question: ping")
    assert completion.choices[0].text == "pong"
    assert [c.temperature for c in llm.calls] == [0.7, 0]
    assert json.loads(json.dumps(server.requests[0].body))["temperature"] == 0.7


def test_a_tool_call_left_unanswered_is_refused_like_a_hosted_api_would():
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("Search", "{}", "c1"), tool_call("Search", "{}", "c2")]}
    answered = [{"role": "tool", "tool_call_id": "c1", "content": "r1"}, {"role": "tool", "tool_call_id": "c2", "content": "r2"}]
    with serve(lambda body: "fine") as server:
        llm = server.client(max_retries=0)
        assert llm.think([{"role": "user", "content": "q"}, call, *answered, {"role": "user", "content": "next"}]) == "fine"
        with pytest.raises(LLMError, match="HTTP 400.*c2 have no tool message"):
            llm.think([{"role": "user", "content": "q"}, call, answered[0], {"role": "user", "content": "next"}])
        with pytest.raises(LLMError, match="HTTP 400.*answers 'c9'"):
            llm.think([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c9", "content": "r"}])


def test_time_batch_times_the_same_tasks_on_one_worker_then_on_several():
    result = time_batch(tasks=4, latency_s=0.02, workers=4)
    assert result["calls"] == 2 * 4 * 3  # both batches, three calls per checkpoint run
    # Lower bounds only (that several workers overlap is test_latency_overlaps_across_workers): one worker waits
    # out every call's latency in turn; on four, each task still waits for its own three calls in turn.
    assert result["wall_s"][1] >= 4 * 3 * 0.02 and result["wall_s"][4] >= 3 * 0.02


def test_the_chapter_client_is_the_stand_in_behind_http_by_default(monkeypatch):
    monkeypatch.setenv("AP_MODE", "fake")
    mode, llm, server = chapter_client()
    try:
        assert mode == "fake" and llm.base_url == server.base_url
        assert llm.think("Question: nothing scripted").startswith("[no script")
    finally:
        server.stop()
    monkeypatch.setenv("AP_MODE", "bogus")
    with pytest.raises(ValueError, match="bogus"):
        chapter_client()


# --- hostile and careless clients (all traffic to 127.0.0.1, bounded in count and time) -----


def _raw_exchange(server, data: bytes, wait_s: float = 5.0, closed=None) -> bytes:
    """Send raw bytes to the server and read what comes back until it closes (or wait_s passes).

    `closed`, a list, gets True when the server closed the connection, False when our wait ran out."""
    import socket

    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=wait_s) as sock:
        sock.sendall(data)
        answer, ended = b"", True
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except TimeoutError:
            ended = False
        except ConnectionResetError:
            pass
        if closed is not None:
            closed.append(ended)
        return answer


@pytest.mark.parametrize("length", ["abc", "-5", "1e3", ""])
def test_a_content_length_that_is_not_a_number_is_answered_400(length):
    with serve(lambda body: "never asked", idle_timeout_s=2) as server:
        answer = _raw_exchange(server, f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {length}"
                                       f"\r\n\r\n{{}}".encode())
    assert answer.startswith(b"HTTP/1.0 400") and b"is not a number of bytes" in answer
    assert [r.status for r in server.requests] == [400]


def test_a_body_nested_too_deep_is_answered_400():
    body = b"[" * 200_000 + b"]" * 200_000
    with serve(lambda body: "never asked", idle_timeout_s=2) as server:
        answer = _raw_exchange(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: "
                               + str(len(body)).encode() + b"\r\n\r\n" + body)
    assert answer.startswith(b"HTTP/1.0 400") and b"nests deeper" in answer


def test_a_body_over_the_cap_is_answered_413_without_being_read():
    from agentkit.loopback import MAX_BODY_BYTES

    # The other 49,999,000 bytes never come: a server that waited for them would answer nothing before our 60 s
    # wait ran out (its own idle timeout is longer still). No clock decides the outcome.
    with serve(lambda body: "never asked", idle_timeout_s=120) as server:
        closed = []
        answer = _raw_exchange(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000"
                                       b"\r\n\r\n" + b"x" * 1000, wait_s=60, closed=closed)
    assert closed == [True] and answer.startswith(b"HTTP/1.0 413") and f"at most {MAX_BODY_BYTES:,}".encode() in answer


def test_an_idle_connection_is_closed_after_the_idle_timeout():
    with serve(lambda body: "ok", idle_timeout_s=0.3) as server:
        closed = []
        answer = _raw_exchange(server, b"", wait_s=60, closed=closed)  # connects, then says nothing
        assert answer == b"" and closed == [True]  # closed by the server, not by our 60 s wait
        assert server.client(max_retries=0).think("still serving") == "ok"


def test_a_burst_of_100_clients_is_queued_not_refused():
    import concurrent.futures
    import http.client

    def post(server):
        connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=20)
        try:
            connection.request("POST", "/v1/chat/completions", body=json.dumps({"messages": []}),
                               headers={"Content-Type": "application/json"})
            return connection.getresponse().status
        finally:
            connection.close()

    with serve(lambda body: "ok", latency_s=0.05) as server:
        assert server.request_queue_size >= 128
        with concurrent.futures.ThreadPoolExecutor(100) as pool:
            statuses = list(pool.map(lambda _: post(server), range(100)))
    assert statuses == [200] * 100
