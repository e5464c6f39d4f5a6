#!/usr/bin/env python3
"""End-to-end tests of `solrun --serve` on the CPU reference executor with a
tiny random Qwen3-shaped model and the real Qwen3 tokenizer (standard library
only): the OpenAI API (completions, chat, streaming, usage, n, stop,
logprobs), every error status, HTTP edge cases (malformed JSON, huge bodies,
wrong content type, unknown fields, slow clients, disconnects mid-stream),
metrics, and graceful shutdown. After each edge case the server must still
serve, and /metrics must show no KV block held once idle.

  server_test.py --solc BIN --solrun BIN --work DIR --tokenizers DIR [-k NAME]
"""
import argparse
import json
import math
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

from serverlib import MAX_MODEL_LEN, Server, build_plan, check, raw_socket, recv_all

COMPLETIONS = "/v1/completions"
CHAT = "/v1/chat/completions"
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def greedy(**kw):
    body = {"temperature": 0, "ignore_eos": True}
    body.update(kw)
    return body


def expect_error(S, path, body, status, param=None, contains=None, code=None,
                 method="POST", headers=None, raw=None):
    got, got_headers, payload = S.request(method, path, body, headers=headers, raw=raw)
    check(got == status, method, path, body, "->", got, payload, "expected", status)
    check(isinstance(payload, dict) and "error" in payload, "no OpenAI error body:", payload)
    e = payload["error"]
    check(set(e) == {"message", "type", "param", "code"}, e)
    if param is not None:
        check(e["param"] == param, "param", e, "expected", param)
    if contains is not None:
        check(contains in e["message"], "message", e["message"], "lacks", contains)
    if code is not None:
        check(e["code"] == code, "code", e, "expected", code)
    return got_headers, e


# --- API -------------------------------------------------------------------


@test
def health_and_models(S, A):
    status, _, _ = S.request("GET", "/health")
    check(status == 200)
    models = S.request("GET", "/v1/models")[2]
    check(models["object"] == "list" and models["data"][0]["id"] == "qwen", models)
    check(models["data"][0]["max_model_len"] == MAX_MODEL_LEN, models)
    one = S.request("GET", "/v1/models/qwen")
    check(one[0] == 200 and one[2]["id"] == "qwen", one)


@test
def completion_matches_the_cli(S, A):
    out = S.ok(COMPLETIONS, greedy(model="qwen", prompt="Hello world", max_tokens=5,
                                   return_token_ids=True))
    check(out["object"] == "text_completion" and out["id"].startswith("cmpl-"), out)
    check(out["model"] == "qwen" and isinstance(out["created"], int), out)
    (choice,) = out["choices"]
    check(choice["index"] == 0 and choice["finish_reason"] == "length", choice)
    check(choice["logprobs"] is None, choice)
    check(out["usage"] == {"prompt_tokens": 2, "completion_tokens": 5, "total_tokens": 7}, out)
    check(choice["prompt_token_ids"] == [9707, 1879], choice)
    cli = json.loads(subprocess.run(
        [A.solrun, str(A.plan), "--prompt", "Hello world", "--max-tokens", "5",
         "--ignore-eos", "--device", "cpu", "--json"],
        check=True, capture_output=True, text=True).stdout)
    check(choice["token_ids"] == cli["ids"], choice["token_ids"], cli["ids"])
    check(choice["text"] == cli["text"], repr(choice["text"]), repr(cli["text"]))


@test
def prompt_forms(S, A):
    ids = S.ok(COMPLETIONS, greedy(prompt=[5, 6, 7], max_tokens=3, return_token_ids=True))
    check(ids["usage"]["prompt_tokens"] == 3 and ids["choices"][0]["prompt_token_ids"] == [5, 6, 7])
    many = S.ok(COMPLETIONS, greedy(prompt=[[5, 6, 7], [8, 9]], max_tokens=3,
                                    return_token_ids=True))
    check([c["index"] for c in many["choices"]] == [0, 1], many)
    check(many["choices"][0]["token_ids"] == ids["choices"][0]["token_ids"], many)
    check(many["usage"]["prompt_tokens"] == 5 and many["usage"]["completion_tokens"] == 6, many)
    texts = S.ok(COMPLETIONS, greedy(prompt=["Hello world", "Hi"], max_tokens=2))
    check(len(texts["choices"]) == 2 and texts["usage"]["prompt_tokens"] == 3, texts)
    # max_tokens absent: up to the context limit, as vLLM.
    full = S.ok(COMPLETIONS, greedy(prompt=list(range(1, MAX_MODEL_LEN - 11))))
    check(full["usage"]["completion_tokens"] == 12 and
          full["choices"][0]["finish_reason"] == "length", full["usage"])


@test
def n_choices_and_seeds(S, A):
    body = {"prompt": "Hello world", "max_tokens": 6, "n": 3, "temperature": 1.0,
            "seed": 1234, "ignore_eos": True, "return_token_ids": True}
    a = S.ok(COMPLETIONS, body)
    b = S.ok(COMPLETIONS, body)
    check([c["index"] for c in a["choices"]] == [0, 1, 2], a)
    check([c["token_ids"] for c in a["choices"]] == [c["token_ids"] for c in b["choices"]],
          "a seeded request is not reproducible")
    check(len({tuple(c["token_ids"]) for c in a["choices"]}) > 1, "n choices are all equal", a)
    check(a["usage"] == {"prompt_tokens": 2, "completion_tokens": 18, "total_tokens": 20}, a)
    chat = S.ok(CHAT, {"messages": [{"role": "user", "content": "Hi"}], "n": 2,
                       "max_tokens": 3, "seed": 5, "ignore_eos": True})
    check([c["index"] for c in chat["choices"]] == [0, 1], chat)


@test
def chat_matches_the_cli(S, A):
    out = S.ok(CHAT, greedy(model="qwen", max_tokens=3, return_token_ids=True, messages=[
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]))
    check(out["object"] == "chat.completion" and out["id"].startswith("chatcmpl-"), out)
    (choice,) = out["choices"]
    check(choice["message"]["role"] == "assistant", choice)
    check(choice["finish_reason"] == "length", choice)
    cli = json.loads(subprocess.run(
        [A.solrun, str(A.plan), "--chat", "Hi", "--system", "Be brief.", "--max-tokens", "3",
         "--ignore-eos", "--device", "cpu", "--json"],
        check=True, capture_output=True, text=True).stdout)
    check(choice["prompt_token_ids"] == cli["prompt_ids"], choice, cli)
    check(choice["token_ids"] == cli["ids"], choice["token_ids"], cli["ids"])
    check(choice["message"]["content"] == cli["text"], choice, cli)
    check(out["usage"]["prompt_tokens"] == len(cli["prompt_ids"]), out["usage"])
    # Content parts are joined as text.
    parts = S.ok(CHAT, greedy(max_tokens=3, return_token_ids=True, messages=[
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Hi"}]))
    check(parts["choices"][0]["token_ids"] == cli["ids"], parts)


@test
def streaming_completions(S, A):
    body = greedy(prompt="Hello world", max_tokens=8)
    whole = S.ok(COMPLETIONS, body)
    events = S.stream(COMPLETIONS, dict(body, stream=True))
    check(all(e["object"] == "text_completion" and "usage" not in e for e in events), events)
    check(len({e["id"] for e in events}) == 1, "chunks of one stream have different ids")
    text = "".join(e["choices"][0]["text"] for e in events)
    check(text == whole["choices"][0]["text"], repr(text), whole)
    check(events[-1]["choices"][0]["finish_reason"] == "length", events[-1])
    check(all(e["choices"][0]["finish_reason"] is None for e in events[:-1]), events)
    # include_usage: usage null in every chunk, then one chunk with usage and
    # no choices.
    events = S.stream(COMPLETIONS, dict(body, stream=True, n=2,
                                        stream_options={"include_usage": True}))
    check(all(e["usage"] is None for e in events[:-1]), events)
    check(events[-1]["choices"] == [] and events[-1]["usage"] == {
        "prompt_tokens": 2, "completion_tokens": 16, "total_tokens": 18}, events[-1])
    for index in (0, 1):
        text = "".join(c["text"] for e in events[:-1] for c in e["choices"] if c["index"] == index)
        check(text == whole["choices"][0]["text"], index, repr(text))


@test
def streaming_chat(S, A):
    body = greedy(messages=[{"role": "user", "content": "Hi"}], max_tokens=6)
    whole = S.ok(CHAT, body)
    events = S.stream(CHAT, dict(body, stream=True, stream_options={"include_usage": True}))
    check(all(e["object"] == "chat.completion.chunk" for e in events), events)
    check(events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}, events[0])
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1])
    check(text == whole["choices"][0]["message"]["content"], repr(text), whole)
    check(events[-2]["choices"][0]["finish_reason"] == "length", events[-2])
    check(events[-1]["usage"] == whole["usage"], events[-1], whole["usage"])


@test
def stop_strings_and_ids(S, A):
    base = S.ok(COMPLETIONS, greedy(prompt="Hello world", max_tokens=12,
                                    return_token_ids=True))["choices"][0]
    text, ids = base["text"], base["token_ids"]
    # A stop string taken from the middle of the greedy text.
    start = len(text) // 2
    stop = text[start:start + 2]
    check(stop, "empty greedy text", repr(text))
    cut = text[:text.find(stop)]
    for stream in (False, True):
        body = greedy(prompt="Hello world", max_tokens=12, stop=[stop, "never-there"],
                      stream=stream)
        if stream:
            events = S.stream(COMPLETIONS, body)
            got = "".join(e["choices"][0]["text"] for e in events)
            reason = events[-1]["choices"][0]["finish_reason"]
        else:
            c = S.ok(COMPLETIONS, body)["choices"][0]
            got, reason = c["text"], c["finish_reason"]
        check(reason == "stop" and got == cut, stream, repr(stop), repr(got), repr(cut))
    # A stop token id: the third generated id ends the request there.
    out = S.ok(COMPLETIONS, greedy(prompt="Hello world", max_tokens=12,
                                   stop_token_ids=[ids[2]], return_token_ids=True))
    first = ids.index(ids[2])
    check(out["choices"][0]["finish_reason"] == "stop", out)
    check(out["usage"]["completion_tokens"] == first + 1, out, ids)
    # Its text is that of the ids before the stop id (built on the HTTP
    # thread: no stop strings), streamed or not.
    before = S.ok(COMPLETIONS, greedy(prompt="Hello world", max_tokens=first))
    want = before["choices"][0]["text"] if first > 0 else ""
    check(out["choices"][0]["text"] == want, repr(out["choices"][0]["text"]), repr(want))
    events = S.stream(COMPLETIONS, greedy(prompt="Hello world", max_tokens=12,
                                          stop_token_ids=[ids[2]], stream=True))
    streamed = "".join(e["choices"][0]["text"] for e in events if e["choices"])
    check(streamed == want, repr(streamed), repr(want))
    # min_tokens keeps it going past the stop id.
    out = S.ok(COMPLETIONS, greedy(prompt="Hello world", max_tokens=12, min_tokens=12,
                                   stop_token_ids=[ids[2]]))
    check(out["usage"]["completion_tokens"] == 12, out)


@test
def logprobs(S, A):
    out = S.ok(COMPLETIONS, greedy(prompt="Hello world", max_tokens=4, logprobs=2,
                                   return_token_ids=True))
    c = out["choices"][0]
    lp = c["logprobs"]
    check(set(lp) == {"tokens", "token_logprobs", "top_logprobs", "text_offset"}, lp)
    check(len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) ==
          len(lp["text_offset"]) == 4, lp)
    check(lp["text_offset"][0] == 0 and lp["text_offset"] == sorted(lp["text_offset"]), lp)
    for chosen, top in zip(lp["token_logprobs"], lp["top_logprobs"]):
        check(chosen <= 0 and 2 <= len(top) <= 3, lp)
        # Greedy: the chosen token is the most likely one.
        check(math.isclose(chosen, max(top.values()), abs_tol=1e-4), chosen, top)
    chat = S.ok(CHAT, greedy(messages=[{"role": "user", "content": "Hi"}], max_tokens=3,
                             logprobs=True, top_logprobs=3))
    content = chat["choices"][0]["logprobs"]["content"]
    check(len(content) == 3, content)
    for e in content:
        check(set(e) == {"token", "logprob", "bytes", "top_logprobs"}, e)
        check(len(e["top_logprobs"]) == 3 and all(isinstance(b, int) for b in e["bytes"]), e)
        check(math.isclose(e["logprob"], e["top_logprobs"][0]["logprob"], abs_tol=1e-4), e)
    plain = S.ok(CHAT, greedy(messages=[{"role": "user", "content": "Hi"}], max_tokens=2,
                              logprobs=True))
    check(all(e["top_logprobs"] == [] for e in plain["choices"][0]["logprobs"]["content"]),
          plain)
    events = S.stream(COMPLETIONS, greedy(prompt="Hello world", max_tokens=4, logprobs=1,
                                          stream=True))
    tokens = [t for e in events for t in (e["choices"][0]["logprobs"] or {}).get("tokens", [])]
    check(tokens == lp["tokens"], tokens, lp["tokens"])


@test
def sampling_parameters_are_accepted(S, A):
    out = S.ok(COMPLETIONS, {"prompt": "Hello world", "max_tokens": 4, "temperature": 0.8,
                             "top_p": 0.9, "top_k": 50, "min_p": 0.05, "seed": 3,
                             "presence_penalty": 0.5, "frequency_penalty": 0.5,
                             "repetition_penalty": 1.2, "response_format": {"type": "text"},
                             "user": "someone", "echo": False, "ignore_eos": True,
                             "logit_bias": {"100": -100}})
    check(out["usage"]["completion_tokens"] == 4, out)
    # logit_bias steers greedy decoding.
    base = S.ok(COMPLETIONS, greedy(prompt=[1, 2, 3], max_tokens=1,
                                    return_token_ids=True))["choices"][0]["token_ids"][0]
    forced = S.ok(COMPLETIONS, greedy(prompt=[1, 2, 3], max_tokens=1, return_token_ids=True,
                                      logit_bias={str(base + 1): 100}))
    check(forced["choices"][0]["token_ids"] == [base + 1], forced)


# --- errors ----------------------------------------------------------------


@test
def error_statuses(S, A):
    _, e = expect_error(S, COMPLETIONS, {"model": "gpt-4", "prompt": "x"}, 404, "model",
                        "'qwen'", "model_not_found")
    check("gpt-4" in e["message"], e)
    expect_error(S, CHAT, {"model": "nope", "messages": [{"role": "user", "content": "x"}]},
                 404, "model", "'qwen'", "model_not_found")
    n = MAX_MODEL_LEN - 10
    expect_error(S, COMPLETIONS, {"prompt": list(range(1, n + 1)), "max_tokens": 20}, 400,
                 "prompt", f"This model's maximum context length is {MAX_MODEL_LEN} tokens. "
                 f"However, you requested {n + 20} tokens ({n} in the prompt, 20 in the "
                 "completion)", "context_length_exceeded")
    expect_error(S, CHAT, {"messages": [{"role": "user", "content": "word " * MAX_MODEL_LEN}]},
                 400, "messages", f"maximum context length is {MAX_MODEL_LEN} tokens",
                 "context_length_exceeded")
    expect_error(S, COMPLETIONS, None, 400, None, "not valid JSON", raw='{"prompt": [1,')
    expect_error(S, COMPLETIONS, None, 400, None, "not valid JSON", raw='')
    expect_error(S, COMPLETIONS, None, 400, None, "must be a JSON object", raw='[1, 2]')
    expect_error(S, COMPLETIONS, {"prompt": [1], "max_tokens": "ten"}, 400, "max_tokens",
                 "'max_tokens' must be an integer, got a string")
    expect_error(S, COMPLETIONS, {"prompt": [1], "temperature": [1]}, 400, "temperature",
                 "'temperature' must be a number, got an array")
    expect_error(S, CHAT, {"messages": "hi"}, 400, "messages", "must be an array")
    expect_error(S, COMPLETIONS, {"prompt": [1], "response_format": {"type": "json_object"}},
                 400, "response_format", "not supported")
    expect_error(S, COMPLETIONS, {"prompt": [1], "echo": True}, 400, "echo")
    expect_error(S, COMPLETIONS, {"prompt": [1], "logit_bias": {"x": 1}}, 400, "logit_bias")
    expect_error(S, COMPLETIONS, {"prompt": [999999]}, 400, "prompt", "outside the vocabulary")
    expect_error(S, COMPLETIONS, {"prompt": [1]}, 415, None, "Content-Type: application/json",
                 headers={"Content-Type": "text/plain"})
    expect_error(S, COMPLETIONS, {"prompt": [1]}, 415, None, None,
                 headers={"Content-Type": None})
    expect_error(S, "/v1/nothing", {}, 404, None, "no route for POST /v1/nothing")
    expect_error(S, "/v2/completions", None, 404, None, None, method="GET")
    headers, _ = expect_error(S, COMPLETIONS, None, 405, None, "use POST", method="GET")
    check(headers.get("allow") == "POST", headers)
    expect_error(S, "/v1/models", {}, 405, None, "use GET", method="POST")
    expect_error(S, "/health", {}, 405, None, None, method="DELETE")
    # Body too large (the main server runs with --max-request-bytes 100000).
    big = json.dumps({"prompt": "x" * 200000})
    expect_error(S, COMPLETIONS, None, 413, None, "the limit is 100000", raw=big)
    S.still_serves()


@test
def unknown_fields_are_ignored(S, A):
    out = S.ok(COMPLETIONS, greedy(prompt=[1, 2], max_tokens=2, some_new_field={"a": [1]},
                                   another=None, stream_options=None))
    check(out["usage"]["completion_tokens"] == 2, out)
    S.still_serves()


@test
def api_key(S, A):
    K = Server(A.solrun, A.plan, env={"SOL_API_KEY": "sekret"})
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "sekret"}):
            _, e = expect_error(K, COMPLETIONS, {"prompt": [1], "max_tokens": 1}, 401,
                                headers=headers)
            check(e["code"] == "invalid_api_key", e)
        expect_error(K, "/v1/models", None, 401, method="GET")
        ok = K.ok(COMPLETIONS, {"prompt": [1], "max_tokens": 1},
                  headers={"Authorization": "Bearer sekret"})
        check(ok["usage"]["completion_tokens"] == 1, ok)
        # /health and /metrics need no key, as in vLLM.
        check(K.request("GET", "/health")[0] == 200)
        check(K.request("GET", "/metrics")[0] == 200)
    finally:
        check(K.stop() == 0)
    # --api-key wins over the environment.
    K = Server(A.solrun, A.plan, "--api-key", "flag", env={"SOL_API_KEY": "env"})
    try:
        check(K.post(COMPLETIONS, {"prompt": [1], "max_tokens": 1},
                     headers={"Authorization": "Bearer flag"})[0] == 200)
        check(K.post(COMPLETIONS, {"prompt": [1], "max_tokens": 1},
                     headers={"Authorization": "Bearer env"})[0] == 401)
    finally:
        check(K.stop() == 0)


@test
def overload_gets_429(S, A):
    O = Server(A.solrun, A.plan, "--max-num-seqs", "1", "--max-waiting-requests", "1")
    try:
        results = []

        def long_request():
            results.append(O.post(COMPLETIONS, greedy(prompt=[1, 2, 3], max_tokens=1500))[0])

        threads = [threading.Thread(target=long_request) for _ in range(2)]
        for t in threads:
            t.start()
            time.sleep(0.2)
        # One runs, one waits: the next is refused.
        status, headers, payload = O.post(COMPLETIONS, greedy(prompt=[1], max_tokens=1))
        check(status == 429, status, payload)
        check(headers.get("retry-after") == "1", headers)
        check(payload["error"]["code"] == "server_overloaded", payload)
        for t in threads:
            t.join()
        check(results == [200, 200], results)
        O.still_serves()
    finally:
        check(O.stop() == 0)


# --- HTTP edge cases -------------------------------------------------------


@test
def slow_client_does_not_block_others(S, A):
    slow = raw_socket(S.port)
    body = json.dumps({"prompt": [1, 2], "max_tokens": 2}).encode()
    request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
    slow.sendall(request[:len(request) // 2])
    start = time.time()
    for _ in range(3):
        S.ok(COMPLETIONS, greedy(prompt=[4, 5], max_tokens=2))
    # The server runs with --request-read-timeout 4: had the slow client held
    # the others up, they would have waited that long.
    check(time.time() - start < 3, "other clients waited for the slow one")
    answer = recv_all(slow, timeout=10).decode()
    check(answer.startswith("HTTP/1.1 408 Request Timeout"), repr(answer[:200]))
    check('"error"' in answer, answer)
    slow.close()
    S.still_serves()


@test
def disconnect_mid_stream_frees_blocks(S, A):
    before = S.metrics()['sol_request_success_total{finished_reason="abort"}']
    s = raw_socket(S.port)
    body = json.dumps(greedy(prompt="Hello world", max_tokens=1500, stream=True)).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    got = b""
    while got.count(b"data: ") < 3:
        chunk = s.recv(4096)
        check(chunk, "the stream ended early", got)
        got += chunk
    check(b"Transfer-Encoding: chunked" in got, got[:300])
    m = S.metrics()
    check(m["sol_kv_cache_blocks_used"] > 0, "the request holds no blocks while running")
    s.close()
    m = S.wait_idle()
    check(m['sol_request_success_total{finished_reason="abort"}'] == before + 1, m)
    S.still_serves()


@test
def disconnect_while_waiting_for_a_whole_response(S, A):
    before = S.metrics()['sol_request_success_total{finished_reason="abort"}']
    s = raw_socket(S.port)
    body = json.dumps(greedy(prompt="Hello world", max_tokens=1500)).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.3)
    s.close()
    m = S.wait_idle()
    check(m['sol_request_success_total{finished_reason="abort"}'] == before + 1,
          "the request of a client that left was not aborted", m)
    S.still_serves()


@test
def raw_http_edge_cases(S, A):
    cases = [
        (b"GARBAGE\r\n\r\n", b"HTTP/1.1 400"),
        (b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"5\r\nhello\r\n0\r\n\r\n", b"HTTP/1.1 411"),
        (b"GET /health HTTP/3.0\r\n\r\n", b"HTTP/1.1 505"),
        (b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", b"HTTP/1.1 414"),
        (b"GET / HTTP/1.1\r\nX: " + b"b" * 40000 + b"\r\n\r\n", b"HTTP/1.1 431"),
        (b"POST /v1/completions HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n", b"HTTP/1.1 413"),
    ]
    for request, expected in cases:
        s = raw_socket(S.port)
        try:
            s.sendall(request)
        except OSError:
            pass  # the server may answer and close before reading it all
        answer = recv_all(s, timeout=5)
        s.close()
        check(answer.startswith(expected), request[:60], "->", answer[:200])
        check(b'{"error":' in answer, answer[:300])
    # Keep-alive and pipelining: two requests in one write, two answers.
    s = raw_socket(S.port)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n"
              b"Connection: close\r\n\r\n")
    answer = recv_all(s, timeout=10)
    s.close()
    check(answer.count(b"HTTP/1.1 200 OK") == 2 and b'"object":"list"' in answer, answer)
    S.still_serves()


@test
def metrics(S, A):
    m = S.metrics()
    for name in ("sol_time_to_first_token_seconds_count", "sol_time_per_output_token_seconds_count",
                 "sol_e2e_request_latency_seconds_count", "sol_prompt_tokens_total",
                 "sol_generation_tokens_total", "sol_kv_cache_usage_perc",
                 "sol_num_requests_swapped", "sol_prefix_cache_hit_rate",
                 "sol_prefix_cache_queries_total", "sol_prefix_cache_hits_total",
                 'sol_request_success_total{finished_reason="length"}',
                 'sol_time_to_first_token_seconds_bucket{le="+Inf"}'):
        check(name in m, name, "missing from /metrics")
    check(m["sol_time_to_first_token_seconds_count"] > 0 and m["sol_generation_tokens_total"] > 0, m)
    check(m["sol_num_requests_swapped"] == 0, m)
    text = S.request("GET", "/metrics")[2]
    check("# TYPE sol_time_to_first_token_seconds histogram" in text, text[:500])
    S.wait_idle()


@test
def flags(S, A):
    def fails(*args):
        r = subprocess.run([A.solrun, str(A.plan), *args], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode != 0, args, "did not fail")
        return r.stderr

    err = fails("--serve", "--prompt", "hi")
    check("--prompt does not go with --serve" in err, err)
    err = fails("--serve", "--num-prompts", "3")
    check("--num-prompts does not go with --serve" in err, err)
    err = fails("--serve", "--max-tokens", "3")
    check("--max-tokens does not go with --serve" in err, err)
    err = fails("--port", "8001", "--prompt-ids", "1")
    check("--port goes with --serve" in err, err)
    err = fails("--max-num-seqs", "4", "--prompt-ids", "1")
    check("--max-num-seqs goes with --bench (the offline benchmark) or --serve" in err, err)
    err = fails("--serve", "--device", "cpu", "--port", str(S.port))
    check("cannot listen on 127.0.0.1:%d" % S.port in err, err)


# --- shutdown ----------------------------------------------------------------


@test
def shutdown_lets_running_requests_finish(S, A):
    D = Server(A.solrun, A.plan, "--shutdown-timeout", "60")
    results = []
    t = threading.Thread(target=lambda: results.append(
        D.post(COMPLETIONS, greedy(prompt=[1, 2, 3], max_tokens=60))))
    t.start()
    time.sleep(0.3)
    D.signal(signal.SIGTERM)
    t.join(60)
    rc = D.stop()
    check(rc == 0, "exit code", rc, "".join(D.log))
    check(results and results[0][0] == 200 and
          results[0][2]["usage"]["completion_tokens"] == 60, results)
    check(any("shutting down" in l for l in D.log), D.log)
    # New connections are refused once shutdown began.
    try:
        D.request("GET", "/health")
        raise AssertionError("the stopped server still accepts")
    except OSError:
        pass


@test
def shutdown_aborts_what_outlives_the_grace_period(S, A):
    D = Server(A.solrun, A.plan, "--shutdown-timeout", "0.5")
    results = []
    t1 = threading.Thread(target=lambda: results.append(
        D.post(COMPLETIONS, greedy(prompt=[1, 2, 3], max_tokens=1500))))
    events = []

    def stream():
        s = raw_socket(D.port)
        body = json.dumps(greedy(prompt=[1, 2, 3], max_tokens=1500, stream=True)).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                  b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        events.append(recv_all(s, timeout=30))
        s.close()

    t2 = threading.Thread(target=stream)
    t1.start()
    t2.start()
    time.sleep(0.5)
    start = time.time()
    D.signal(signal.SIGINT)
    t1.join(30)
    t2.join(30)
    rc = D.stop()
    check(rc == 0, "exit code", rc)
    check(time.time() - start < 10, "shutdown took", time.time() - start)
    status, headers, payload = results[0]
    check(status == 503 and "shut down" in payload["error"]["message"], results)
    check(headers.get("retry-after") == "1", headers)
    raw = events[0]
    check(b'"error"' in raw and raw.rstrip().endswith(b"0"), raw[-300:])
    check(b"data: [DONE]" in raw, raw[-300:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokenizers", required=True,
                    help="the test tokenizers' folder (qwen3/, llama3.1/)")
    ap.add_argument("-k", help="run the tests whose name contains this")
    A = ap.parse_args()
    A.plan = build_plan(A.solc, A.work, A.tokenizers)
    S = Server(A.solrun, A.plan, "--max-request-bytes", "100000",
               "--request-read-timeout", "4")
    failed = []
    try:
        for fn in TESTS:
            if A.k and A.k not in fn.__name__:
                continue
            start = time.time()
            try:
                fn(S, A)
                print(f"PASS {fn.__name__} ({time.time() - start:.1f} s)", flush=True)
            except Exception:
                failed.append(fn.__name__)
                print(f"FAIL {fn.__name__}", flush=True)
                traceback.print_exc()
                if S.proc.poll() is not None:
                    print("the server died:\n" + "".join(S.log[-30:]))
                    break
    finally:
        rc = S.stop()
        if rc != 0:
            failed.append(f"server exit code {rc}")
    if failed:
        print("server log (tail):\n" + "".join(S.log[-40:]))
        print("FAILED:", ", ".join(failed))
        return 1
    print("all server tests passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
