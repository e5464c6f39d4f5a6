#!/usr/bin/env python3
"""A mock OpenAI-compatible server for solbench's tests (Python stdlib only).

Serves GET /v1/models, POST /v1/completions and POST /v1/chat/completions,
streamed as server-sent events with a configurable delay before the first
token and between tokens, so the figures solbench measures are known. It can
fail every Nth request, require an API key, stop early unless ignore_eos is
sent, leave out usage, and frame streams with chunked coding or by closing
the connection. GET /mock/stats reports requests seen and the most in flight
at once.

  mock_openai_server.py --port 0 --port-file PORT_FILE [--first-token-delay S]
      [--token-delay S] [--fail-every N] [--api-key KEY] [--eos-after K]
      [--no-usage] [--framing chunked|close] [--log FILE]
"""
import argparse
import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0  # generation requests, in arrival order
        self.in_flight = 0
        self.max_in_flight = 0


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # listen() backlog: many clients connect at once (the default, 5, drops
    # connections and the client retries a second later).
    request_queue_size = 256


def make_handler(args, state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):  # quiet
            pass

        def setup(self):
            super().setup()
            # Small events go out at once (no Nagle delay behind an ACK).
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def send_json(self, status, obj):
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def send_error_json(self, status, message, type_="invalid_request_error", code=None):
            self.send_json(status, {"error": {"message": message, "type": type_,
                                              "param": None, "code": code}})

        def authorized(self):
            if not args.api_key:
                return True
            if self.headers.get("Authorization") == "Bearer " + args.api_key:
                return True
            self.send_error_json(401, "Incorrect API key provided", code="invalid_api_key")
            return False

        def do_GET(self):
            if self.path == "/mock/stats":
                with state.lock:
                    self.send_json(200, {"requests": state.requests,
                                         "max_in_flight": state.max_in_flight})
                return
            if not self.authorized():
                return
            if self.path == "/v1/models":
                self.send_json(200, {"object": "list", "data": [
                    {"id": args.model, "object": "model", "owned_by": "mock"}]})
                return
            self.send_error_json(404, "no route " + self.path)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            if not self.authorized():
                return
            chat = self.path == "/v1/chat/completions"
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self.send_error_json(404, "no route " + self.path)
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self.send_error_json(400, "the body is not JSON")
                return
            if args.log:
                with state.lock, open(args.log, "a") as f:
                    f.write(json.dumps({"path": self.path, "body": body}) + "\n")
            if body.get("model") != args.model:
                self.send_error_json(404, "The model '%s' does not exist" % body.get("model"),
                                     code="model_not_found")
                return
            with state.lock:
                state.requests += 1
                number = state.requests
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            # Leaves the in-flight count before the response's last bytes go
            # out: the client cannot start its next request before that, so
            # max_in_flight never counts one request twice.
            finished = []

            def leave():
                if not finished:
                    finished.append(True)
                    with state.lock:
                        state.in_flight -= 1
            try:
                if args.fail_every and number % args.fail_every == 0:
                    leave()
                    self.send_error_json(500, "mock failure", type_="server_error")
                    return
                self.stream(body, chat, leave)
            finally:
                leave()

        def stream(self, body, chat, leave):
            start = time.monotonic()
            max_tokens = body.get("max_completion_tokens", body.get("max_tokens", 16))
            n = max_tokens
            finish = "length"
            if args.eos_after and not body.get("ignore_eos") and n > args.eos_after:
                n, finish = args.eos_after, "stop"
            if chat:
                prompt_tokens = sum(len(str(m.get("content", "")).split())
                                    for m in body.get("messages", []))
            else:
                p = body.get("prompt")
                prompt_tokens = len(p) if isinstance(p, list) else len(str(p).split())
            include_usage = (body.get("stream_options") or {}).get("include_usage")

            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            chunked = args.framing == "chunked"
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()

            def event(obj):
                data = b"data: " + (obj if isinstance(obj, bytes) else
                                    json.dumps(obj).encode()) + b"\n\n"
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                else:
                    self.wfile.write(data)
                self.wfile.flush()

            base = {"id": "cmpl-mock", "created": int(time.time()), "model": args.model,
                    "object": "chat.completion.chunk" if chat else "text_completion"}

            def choice(text, finish_reason=None):
                if chat:
                    return dict(base, choices=[{"index": 0, "delta": {"content": text},
                                                "finish_reason": finish_reason}])
                return dict(base, choices=[{"index": 0, "text": text, "logprobs": None,
                                            "finish_reason": finish_reason}])

            if chat:
                # As OpenAI: a role-only chunk first, before any token.
                event(dict(base, choices=[{"index": 0, "delta": {"role": "assistant",
                                                                 "content": ""},
                                           "finish_reason": None}]))
            first = None
            for i in range(n):
                # The first token no sooner than --first-token-delay after the
                # request, token i no sooner than i * --token-delay after the
                # first: on a schedule, so late wake-ups do not accumulate.
                target = (start + args.first_token_delay if first is None
                          else first + i * args.token_delay)
                delay = target - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if first is None:
                    first = time.monotonic()
                event(choice(" tok%d" % i))
            event(choice("", finish))
            if include_usage and not args.no_usage:
                event(dict(base, choices=[], usage={
                    "prompt_tokens": prompt_tokens, "completion_tokens": n,
                    "total_tokens": prompt_tokens + n}))
            leave()
            event(b"[DONE]")
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--model", default="mock-model")
    ap.add_argument("--first-token-delay", type=float, default=0.0)
    ap.add_argument("--token-delay", type=float, default=0.0)
    ap.add_argument("--fail-every", type=int, default=0,
                    help="answer every Nth generation request with HTTP 500")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--eos-after", type=int, default=0,
                    help="stop after K tokens unless the request sets ignore_eos")
    ap.add_argument("--no-usage", action="store_true", help="never send a usage chunk")
    ap.add_argument("--framing", choices=["chunked", "close"], default="chunked")
    ap.add_argument("--log", help="append each request's path and body (JSONL)")
    args = ap.parse_args()

    server = Server((args.host, args.port), make_handler(args, State()))
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(server.server_address[1]))
        os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
