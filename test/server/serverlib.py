"""Helpers of the server tests (standard library only): build the tiny test
model's plan, start `solrun --serve --device cpu --port 0`, talk HTTP to it,
read /metrics."""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAX_MODEL_LEN = 2048
SOURCE = HERE.parent.parent


def check(cond, *what):
    if not cond:
        raise AssertionError(" ".join(str(w) for w in what))


def build_plan(solc, work, tokenizers):
    """A random Qwen3-shaped model (hidden 16, one layer) with the real Qwen3
    tokenizer and chat template, compiled for the CPU reference executor."""
    work = Path(work)
    plan = work / "qwen.plan"
    # Reuse the plan of an earlier run unless solc is newer (a rebuilt solc
    # may write another plan format).
    if plan.exists() and plan.stat().st_mtime >= Path(solc).stat().st_mtime:
        return plan
    model = work / "qwen"
    subprocess.run([sys.executable, str(SOURCE / "test/e2e/make-random-model.py"),
                    str(model), "151669"], check=True)
    # A longer context than the script's 512, so that long requests run for
    # seconds on the CPU (disconnect, overload and shutdown tests).
    config = json.loads((model / "config.json").read_text())
    config["max_position_embeddings"] = MAX_MODEL_LEN
    (model / "config.json").write_text(json.dumps(config))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        src = Path(tokenizers) / "qwen3" / name
        check(src.exists(), f"{src} is missing: run scripts/setup (or scripts/fetch-test-data), "
              "which fetches the test tokenizers")
        (model / name).write_bytes(src.read_bytes())
    subprocess.run([solc, str(model), "--gpu", "none", "-q", "-o", str(plan) + ".tmp"],
                   check=True)
    os.replace(str(plan) + ".tmp", plan)
    return plan


class Server:
    """A `solrun --serve` child process on a free port."""

    def __init__(self, solrun, plan, *flags, env=None, name="qwen"):
        self.name = name
        args = [solrun, str(plan), "--serve", "--device", "cpu", "--port", "0", *flags]
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self.log = []
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"serving (\S+) on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(2))
                    ready.set()
            ready.set()

        self.reader = threading.Thread(target=pump, daemon=True)
        self.reader.start()
        ready.wait(120)
        check(self.port, "the server did not start:\n" + "".join(self.log))

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None, raw=None):
        """Returns (status, headers dict, parsed JSON or text)."""
        c = conn or self.conn()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers={k: v for k, v in h.items() if v is not None})
        r = c.getresponse()
        text = r.read().decode("utf-8")
        if conn is None:
            c.close()
        try:
            payload = json.loads(text)
        except ValueError:
            payload = text
        return r.status, {k.lower(): v for k, v in r.getheaders()}, payload

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def ok(self, path, body, **kw):
        status, _, payload = self.post(path, body, **kw)
        check(status == 200, path, body, "->", status, payload)
        return payload

    def stream(self, path, body, headers=None):
        """The events of a streamed request: a list of parsed JSON objects and
        the string '[DONE]', checking the SSE framing on the way."""
        c = self.conn()
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", path, body=json.dumps(body), headers=h)
        r = c.getresponse()
        if r.status != 200:
            raise AssertionError(f"stream status {r.status}: {r.read()!r}")
        check(r.getheader("Content-Type") == "text/event-stream", r.getheaders())
        raw = r.read().decode("utf-8")
        c.close()
        check(raw.endswith("data: [DONE]\n\n"), "no [DONE] at the end:", repr(raw[-300:]))
        events = []
        for block in raw.split("\n\n")[:-1]:
            check(block.startswith("data: ") and "\n" not in block, "bad SSE event", repr(block))
            data = block[len("data: "):]
            events.append(data if data == "[DONE]" else json.loads(data))
        check(events.count("[DONE]") == 1 and events[-1] == "[DONE]", events[-3:])
        return events[:-1]

    def metrics(self):
        status, _, text = self.request("GET", "/metrics")
        check(status == 200, "metrics", status)
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def wait_idle(self, timeout=30):
        """Waits until nothing runs or waits, and checks that no KV block is
        held: the check after every edge case."""
        deadline = time.time() + timeout
        while True:
            m = self.metrics()
            if (m["sol_num_requests_running"] == 0 and m["sol_num_requests_waiting"] == 0
                    and m["sol_kv_cache_blocks_used"] == 0):
                return m
            check(time.time() < deadline, "not idle after", timeout, "s:",
                  {k: v for k, v in m.items() if k.startswith(("sol_num", "sol_kv"))})
            time.sleep(0.05)

    def still_serves(self):
        status, _, _ = self.request("GET", "/health")
        check(status == 200, "/health", status)
        out = self.ok("/v1/completions", {"prompt": [1, 2, 3], "max_tokens": 2,
                                          "temperature": 0})
        check(out["usage"]["completion_tokens"] == 2, out)
        self.wait_idle()

    def signal(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the server did not stop within %d s" % timeout)
        self.reader.join(5)
        return rc


def raw_socket(port, timeout=10):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def recv_all(s, timeout=10):
    s.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    return data
