#!/usr/bin/env python3
"""solbench against the mock OpenAI server (mock_openai_server.py).

Each test starts a mock with known delays and behaviour on a free port, runs
the solbench binary ($SOLBENCH) against it, and checks the exit code, the
messages, the JSON and HTML reports and what the mock received. Run by ctest
(label solbench) from the source root:

  SOLBENCH=build/bin/solbench SOL_TEST_TOKENIZERS=third_party/tokenizers python3 test/solbench/solbench_test.py -v
"""
import json
import os
import pty
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
MOCK = os.path.join(HERE, "mock_openai_server.py")
SOLBENCH = os.environ.get("SOLBENCH", os.path.join(SOURCE_ROOT, "build", "bin", "solbench"))


def qwen3_tokenizer():
    """The real Qwen3 tokenizer's folder, $SOL_TEST_TOKENIZERS/qwen3: ctest sets
    the variable, scripts/setup fetches the files. Fails the test when missing."""
    root = os.environ.get("SOL_TEST_TOKENIZERS")
    if not root:
        raise AssertionError("SOL_TEST_TOKENIZERS is not set: run the test through ctest "
                             "(scripts/test), or set it to third_party/tokenizers")
    path = os.path.join(root, "qwen3")
    if not os.path.isfile(os.path.join(path, "tokenizer.json")):
        raise AssertionError(f"{path}/tokenizer.json is missing: run scripts/setup (or "
                             "scripts/fetch-test-data), which fetches the test tokenizers")
    return path


class Mock:
    """A running mock server; stopped when the `with` block ends."""

    def __init__(self, tmp, *args):
        self.dir = tempfile.mkdtemp(dir=tmp)
        port_file = os.path.join(self.dir, "port")
        self.log = os.path.join(self.dir, "requests.jsonl")
        self.proc = subprocess.Popen(
            [sys.executable, MOCK, "--port", "0", "--port-file", port_file,
             "--log", self.log] + [str(a) for a in args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("the mock server did not start")
            time.sleep(0.02)
        with open(port_file) as f:
            self.port = int(f.read())
        self.url = "http://127.0.0.1:%d/v1" % self.port

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=10)

    def stats(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/mock/stats" % self.port) as r:
            return json.load(r)

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]


def free_port():
    """A port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def solbench(*args, env=None, timeout=120, stderr=subprocess.PIPE):
    e = dict(os.environ)
    e.pop("OPENAI_API_KEY", None)
    e.update(env or {})
    return subprocess.run([SOLBENCH] + [str(a) for a in args], env=e, text=True,
                          stdout=subprocess.PIPE, stderr=stderr, timeout=timeout)


class SolbenchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="solbench-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def ok(self, r):
        self.assertEqual(r.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (r.stdout, r.stderr))

    def fails(self, r, message):
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn(message, r.stderr)

    def load(self, name):
        with open(self.path(name)) as f:
            return json.load(f)

    # --- Figures --------------------------------------------------------

    def test_concurrency_sweep_figures_and_reports(self):
        ttft_s, token_s, out_len = 0.05, 0.01, 12
        with Mock(self.tmp, "--first-token-delay", ttft_s, "--token-delay", token_s) as m:
            r = solbench("--url", m.url, "--concurrency", "1,4", "--num-prompts", 8,
                         "--input-len", 32, "--output-len", out_len,
                         "--json", self.path("r.json"), "--html", self.path("r.html"))
            self.ok(r)
            self.assertEqual(m.stats()["max_in_flight"], 4)
            sent = m.requests()
        # Piped: no progress line, no warnings.
        self.assertEqual(r.stderr, "")
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "solbench: mock-model at %s (completions), "
                         "input 32 tokens, output 12 tokens" % m.url)
        self.assertIn("TTFT (ms)", lines[1])
        self.assertTrue(lines[2].startswith("concurrency"))
        self.assertRegex(lines[3], r"^1 +8 +0 ")
        self.assertRegex(lines[4], r"^4 +8 +0 ")

        j = self.load("r.json")
        self.assertEqual(j["config"]["model"], "mock-model")
        self.assertEqual(j["config"]["concurrency"], [1, 4])
        self.assertEqual([lv["concurrency"] for lv in j["levels"]], [1, 4])
        for lv in j["levels"]:
            self.assertEqual((lv["completed"], lv["failed"]), (8, 0))
            self.assertEqual(lv["output_tokens"], 8 * out_len)
            self.assertEqual(lv["prompt_tokens"], 8 * 32)
            self.assertEqual(lv["usage_reported"], 8)
            self.assertEqual(lv["output_len_mismatches"], 0)
            # No token can come before the mock's delay.
            self.assertGreaterEqual(lv["ttft_ms"]["min"], ttft_s * 1000)
            self.assertLess(lv["ttft_ms"]["p50"], ttft_s * 1000 + 300)
            self.assertEqual(lv["tpot_ms"]["count"], 8)
            # The mock sends token i no sooner than i delays after the first;
            # the bounds leave room for a loaded CI machine (a client that is
            # descheduled reads several tokens at once).
            self.assertGreater(lv["tpot_ms"]["mean"], token_s * 1000 * 0.5)
            self.assertLess(lv["tpot_ms"]["mean"], token_s * 1000 * 3)
            self.assertEqual(lv["itl_ms"]["count"], 8 * (out_len - 1))
            self.assertGreater(lv["itl_ms"]["p50"], token_s * 1000 * 0.3)
            self.assertLess(lv["itl_ms"]["p50"], token_s * 1000 * 3)
            self.assertGreaterEqual(lv["e2e_ms"]["min"],
                                    (ttft_s + (out_len - 1) * token_s) * 1000)
            self.assertAlmostEqual(lv["requests_per_s"], 8 / lv["duration_s"], places=6)
            self.assertAlmostEqual(lv["output_tokens_per_s"],
                                   8 * out_len / lv["duration_s"], places=3)
        # Four at a time take about a quarter of the time.
        self.assertLess(j["levels"][1]["duration_s"], j["levels"][0]["duration_s"] / 2)

        # What the server received.
        self.assertEqual(len(sent), 16)
        for q in sent:
            b = q["body"]
            self.assertEqual(q["path"], "/v1/completions")
            self.assertEqual(b["model"], "mock-model")
            self.assertEqual(len(b["prompt"]), 32)
            self.assertTrue(all(1000 <= t < 20000 for t in b["prompt"]))
            self.assertEqual(b["max_tokens"], out_len)
            self.assertIs(b["stream"], True)
            self.assertEqual(b["stream_options"], {"include_usage": True})
            self.assertIs(b["ignore_eos"], True)

        with open(self.path("r.html")) as f:
            html = f.read()
        self.assertTrue(html.startswith("<!DOCTYPE html>"))
        self.assertEqual(html.count("<svg"), 6)  # throughput, req/s, 4 latencies
        for title in ("Throughput", "Requests per second", "Time to first token",
                      "Time per output token", "Inter-token latency", "End-to-end latency"):
            self.assertIn('aria-label="%s"' % title, html)
        self.assertEqual(html.count("<tr><td>"), 2)
        self.assertNotIn("<script", html)
        self.assertNotIn("src=", html)

    def test_request_rate(self):
        with Mock(self.tmp, "--token-delay", "0.002") as m:
            r = solbench("--url", m.url, "--request-rate", "40", "--num-prompts", 20,
                         "--input-len", 8, "--output-len", 4, "--save-detailed",
                         "--json", self.path("rate.json"))
            self.ok(r)
        j = self.load("rate.json")
        self.assertEqual(j["config"]["mode"], "request_rate")
        lv = j["levels"][0]
        self.assertEqual((lv["request_rate"], lv["completed"]), (40, 20))
        starts = [q["start_s"] for q in lv["requests"]]
        # Sent in arrival order (two arrivals close together may swap by a
        # thread's wake-up), spread over 19 exponential gaps of mean 25 ms.
        for a, b in zip(starts, starts[1:]):
            self.assertGreater(b, a - 0.02)
        self.assertGreater(starts[-1], 0.1)
        self.assertRegex(r.stdout.splitlines()[3], r"^40 +20 +0 ")

        # All at once, but never more than 3 in flight.
        with Mock(self.tmp, "--first-token-delay", "0.05", "--token-delay", "0.01") as m:
            r = solbench("--url", m.url, "--request-rate", "inf", "--max-concurrency", 3,
                         "--num-prompts", 9, "--input-len", 8, "--output-len", 4,
                         "--json", self.path("inf.json"))
            self.ok(r)
            self.assertEqual(m.stats()["max_in_flight"], 3)
        lv = self.load("inf.json")["levels"][0]
        self.assertEqual((lv["request_rate"], lv["max_concurrency"], lv["completed"]),
                         ("inf", 3, 9))

    def test_warmup_is_not_counted(self):
        with Mock(self.tmp) as m:
            r = solbench("--url", m.url, "--concurrency", 2, "--warmup", 3, "--num-prompts", 5,
                         "--input-len", 4, "--output-len", 2, "--json", self.path("w.json"))
            self.ok(r)
            self.assertEqual(m.stats()["requests"], 8)
        lv = self.load("w.json")["levels"][0]
        self.assertEqual((lv["completed"], lv["warmup"]), (5, 3))

    def test_seed(self):
        def prompts(seed):
            with Mock(self.tmp) as m:
                self.ok(solbench("--url", m.url, "--concurrency", 1, "--num-prompts", 3,
                                 "--input-len", 6, "--output-len", 1, "--seed", seed))
                return [q["body"]["prompt"] for q in m.requests()]
        self.assertEqual(prompts(5), prompts(5))
        self.assertNotEqual(prompts(5), prompts(6))

    def test_vocab_size(self):
        with Mock(self.tmp) as m:
            self.ok(solbench("--url", m.url, "--concurrency", 1, "--num-prompts", 4,
                             "--input-len", 50, "--output-len", 1, "--vocab-size", 2048))
            ids = [t for q in m.requests() for t in q["body"]["prompt"]]
        self.assertTrue(all(512 <= t < 1536 for t in ids), ids)

    # --- Chat -----------------------------------------------------------

    def test_chat_words(self):
        with Mock(self.tmp, "--first-token-delay", "0.1", "--token-delay", "0.005") as m:
            r = solbench("--url", m.url, "--endpoint", "chat", "--concurrency", 2,
                         "--num-prompts", 4, "--input-len", 20, "--output-len", 6,
                         "--json", self.path("chat.json"))
            self.ok(r)
            sent = m.requests()
        self.assertIn("(chat), input 20 tokens (about: words), output 6 tokens", r.stdout)
        for q in sent:
            b = q["body"]
            self.assertEqual(q["path"], "/v1/chat/completions")
            self.assertEqual(b["max_completion_tokens"], 6)
            self.assertEqual(b["messages"][0]["role"], "user")
            self.assertEqual(len(b["messages"][0]["content"].split()), 20)
        lv = self.load("chat.json")["levels"][0]
        self.assertEqual((lv["completed"], lv["output_tokens"]), (4, 24))
        # The mock's first chunk (the role, no text) comes at once: TTFT is
        # the first text, after the delay.
        self.assertGreaterEqual(lv["ttft_ms"]["min"], 100)

    def test_chat_with_tokenizer(self):
        tokenizer = qwen3_tokenizer()
        with Mock(self.tmp) as m:
            r = solbench("--url", m.url, "--endpoint", "chat", "--tokenizer", tokenizer,
                         "--concurrency", 1, "--num-prompts", 3, "--input-len", 30,
                         "--output-len", 2, "--json", self.path("tok.json"))
            self.ok(r)
            sent = m.requests()
        self.assertEqual(len(sent), 3)
        for q in sent:
            self.assertTrue(q["body"]["messages"][0]["content"])
        cfg = self.load("tok.json")["config"]
        self.assertEqual(cfg["tokenizer"], tokenizer)
        self.assertIn("input 30 tokens, output 2 tokens", cfg["workload"])

    # --- Framing and counting -------------------------------------------

    def test_no_usage_and_close_delimited_stream(self):
        with Mock(self.tmp, "--no-usage", "--framing", "close") as m:
            r = solbench("--url", m.url, "--concurrency", 2, "--num-prompts", 4,
                         "--input-len", 4, "--output-len", 7, "--json", self.path("n.json"))
            self.ok(r)
        lv = self.load("n.json")["levels"][0]
        # Counted from the chunks with text.
        self.assertEqual((lv["completed"], lv["output_tokens"], lv["usage_reported"]),
                         (4, 28, 0))

    # --- Failures -------------------------------------------------------

    def test_partial_failures(self):
        args = ["--concurrency", 2, "--num-prompts", 8, "--input-len", 4, "--output-len", 2]
        with Mock(self.tmp, "--fail-every", 4) as m:
            r = solbench("--url", m.url, "--json", self.path("f.json"), *args)
        self.ok(r)
        lv = self.load("f.json")["levels"][0]
        self.assertEqual((lv["completed"], lv["failed"]), (6, 2))
        self.assertEqual(lv["failures"], {"HTTP 500 Internal Server Error: mock failure": 2})
        self.assertEqual(r.stderr, "concurrency 2: 2 of 8 requests failed:\n"
                         "  2 x HTTP 500 Internal Server Error: mock failure\n")
        self.assertRegex(r.stdout.splitlines()[3], r"^2 +6 +2 ")
        with Mock(self.tmp, "--fail-every", 4) as m:
            r = solbench("--url", m.url, "--fail-on-error", *args)
        self.fails(r, "solbench: error: 2 requests failed (--fail-on-error)")

    def test_every_request_fails(self):
        with Mock(self.tmp, "--fail-every", 1) as m:
            r = solbench("--url", m.url, "--concurrency", "1,2", "--num-prompts", 3,
                         "--input-len", 4, "--output-len", 2, "--json", self.path("a.json"))
        self.fails(r, "solbench: error: every request of concurrency 1 failed (HTTP 500 "
                   "Internal Server Error: mock failure); the sweep stops here")
        levels = self.load("a.json")["levels"]
        self.assertEqual([(lv["completed"], lv["failed"]) for lv in levels], [(0, 3)])

    def test_timeout(self):
        with Mock(self.tmp, "--first-token-delay", "3") as m:
            r = solbench("--url", m.url, "--concurrency", 2, "--num-prompts", 2,
                         "--input-len", 4, "--output-len", 2, "--timeout", 0.3)
        self.fails(r, "every request of concurrency 2 failed (timed out after 0.3 s "
                   "(--timeout))")

    def test_unknown_model(self):
        with Mock(self.tmp) as m:
            r = solbench("--url", m.url, "--model", "other", "--concurrency", 1,
                         "--num-prompts", 2, "--input-len", 4, "--output-len", 2)
        self.assertIn("solbench: warning: the server lists no model 'other' "
                      "(it serves: mock-model)", r.stderr)
        self.fails(r, "every request of concurrency 1 failed (HTTP 404 Not Found: "
                   "The model 'other' does not exist)")

    def test_api_key(self):
        args = ["--concurrency", 1, "--num-prompts", 2, "--input-len", 4, "--output-len", 2]
        with Mock(self.tmp, "--api-key", "sekret") as m:
            r = solbench("--url", m.url, *args)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr, "solbench: error: GET %s/models: HTTP 401 "
                             "Unauthorized: Incorrect API key provided (no API key given: "
                             "use --api-key or OPENAI_API_KEY)\n" % m.url)
            r = solbench("--url", m.url, "--api-key", "wrong", *args)
            self.fails(r, "Incorrect API key provided (check --api-key or OPENAI_API_KEY)")
            self.ok(solbench("--url", m.url, "--api-key", "sekret", *args))
            self.ok(solbench("--url", m.url, *args, env={"OPENAI_API_KEY": "sekret"}))
            self.assertEqual(m.stats()["requests"], 4)

    def test_unreachable_server(self):
        port = free_port()
        r = solbench("--url", "http://127.0.0.1:%d/v1" % port, "--concurrency", 1)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "solbench: error: cannot connect to 127.0.0.1:%d: "
                         "connection refused (is the server running?)\n" % port)
        r = solbench("--url", "http://no-such-host.invalid:8000/v1")
        self.fails(r, "solbench: error: cannot resolve the host 'no-such-host.invalid'")

    def test_https_is_rejected(self):
        r = solbench("--url", "https://api.openai.com/v1")
        self.fails(r, "solbench: error: --url 'https://api.openai.com/v1': https is not "
                   "supported (solbench speaks plain HTTP)")

    def test_bad_flags(self):
        cases = [
            (["--concurrency", "0"], "--concurrency: '0' is not a number of requests from "
             "1 to 100000 (expected a comma-separated list such as 1,4,16,64)"),
            (["--concurrency", "1,x"], "--concurrency: 'x' is not a number"),
            (["--concurrency", "4", "--request-rate", "2"],
             "give --concurrency (a sweep of fixed concurrency) or --request-rate "
             "(Poisson arrivals), not both"),
            (["--max-concurrency", "2"], "--max-concurrency goes with --request-rate"),
            (["--request-rate", "-1"], "--request-rate: '-1' is not a positive number"),
            (["--request-rate", "fast"], "--request-rate: 'fast' is not a positive number"),
            (["--input-len", "4", "--random-input-len", "2:3"],
             "give --input-len or --random-input-len, not both"),
            (["--random-output-len", "9:4"],
             "--random-output-len: the range '9:4' is empty (expected A:B with A <= B)"),
            (["--input-len", "1:4"],
             "--input-len takes one length; use --random-input-len A:B for a range"),
            (["--output-len", "0"], "--output-len: '0' is not a positive integer"),
            (["--timeout", "0"], "--timeout must be > 0 seconds"),
            (["--vocab-size", "1"], "--vocab-size 1 is out of range"),
            (["--endpoint", "chat", "--vocab-size", "5000"],
             "--vocab-size has no effect with --endpoint chat without --tokenizer"),
            (["--json", "/nonexistent-dir/r.json"],
             "--json: the directory '/nonexistent-dir' does not exist"),
            (["--html", "/nonexistent-dir/r.html"],
             "--html: the directory '/nonexistent-dir' does not exist"),
            (["--tokenizer", "/nonexistent-dir"], "/nonexistent-dir"),
            (["--endpoint", "bogus"], "--endpoint: bogus not in {completions,chat}"),
            (["--num-prompts", "0"], "--num-prompts: Value 0 not in range 1 to 10000000"),
            (["--frobnicate"], "The following argument was not expected: --frobnicate"),
        ]
        # A URL nothing listens on: every case must fail before connecting.
        url = "http://127.0.0.1:%d/v1" % free_port()
        for args, message in cases:
            with self.subTest(args=args):
                r = solbench("--url", url, *args)
                self.fails(r, message)
                self.assertNotIn("cannot connect", r.stderr)

    # --- Datasets -------------------------------------------------------

    def write(self, name, lines):
        with open(self.path(name), "w") as f:
            f.write("\n".join(lines) + "\n")
        return self.path(name)

    def test_dataset(self):
        data = self.write("d.jsonl", [
            json.dumps({"prompt": "The capital of France is", "max_tokens": 10}),
            "",
            json.dumps({"prompt": [11, 12, 13], "max_tokens": 10}),
        ])
        # Without --ignore-eos (the default for datasets) the mock stops after
        # 3 tokens, and solbench says so.
        with Mock(self.tmp, "--eos-after", 3) as m:
            r = solbench("--url", m.url, "--dataset", data, "--concurrency", 1,
                         "--json", self.path("d.json"))
            self.ok(r)
            sent = m.requests()
        self.assertEqual([q["body"]["prompt"] for q in sent],
                         ["The capital of France is", [11, 12, 13]])
        self.assertTrue(all("ignore_eos" not in q["body"] for q in sent))
        lv = self.load("d.json")["levels"][0]
        self.assertEqual((lv["completed"], lv["output_tokens"], lv["output_len_mismatches"]),
                         (2, 6, 2))
        self.assertIn("2 completed requests returned another number of tokens than they "
                      "asked for (the model stopped early: see --ignore-eos)", r.stderr)
        # --ignore-eos and --output-len: every request generates 5.
        with Mock(self.tmp, "--eos-after", 3) as m:
            r = solbench("--url", m.url, "--dataset", data, "--concurrency", 2,
                         "--num-prompts", 5, "--ignore-eos", "--output-len", 5,
                         "--json", self.path("e.json"))
            self.ok(r)
        lv = self.load("e.json")["levels"][0]
        self.assertEqual((lv["completed"], lv["output_tokens"]), (5, 25))

    def test_chat_dataset(self):
        data = self.write("c.jsonl", [
            json.dumps({"messages": [{"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "Hi"}], "max_tokens": 2}),
            json.dumps({"prompt": "Hello", "max_tokens": 3}),
        ])
        with Mock(self.tmp) as m:
            self.ok(solbench("--url", m.url, "--endpoint", "chat", "--dataset", data,
                             "--concurrency", 1))
            sent = [q["body"] for q in m.requests()]
        self.assertEqual(sent[0]["messages"][0], {"role": "system", "content": "Be brief."})
        self.assertEqual(sent[1]["messages"], [{"role": "user", "content": "Hello"}])
        self.assertEqual([b["max_completion_tokens"] for b in sent], [2, 3])

    def test_bad_dataset_lines(self):
        good = json.dumps({"prompt": "a", "max_tokens": 1})
        url = "http://127.0.0.1:%d/v1" % free_port()
        cases = [
            ([good, '{"prompt": "a", "max_tokens": 1'], [],
             ":2: not valid JSON: column 32: syntax error while parsing object"),
            ([good, good, '{"prompt": "a", "max_tokens": -3}'], [],
             ':3: "max_tokens" must be a positive integer, got -3'),
            (['{"messages": [{"role": "user", "content": "a"}], "max_tokens": 1}'], [],
             ':1: "messages" needs --endpoint chat (completions takes "prompt")'),
            (['{"prompt": "a"}'], [],
             ':1: no "max_tokens" (give it on every line, or --output-len for all)'),
            (["", "  "], [], "holds no requests (no non-empty lines)"),
            ([good], ["--input-len", "5"],
             "--input-len and --random-input-len make synthetic prompts"),
        ]
        for i, (lines, extra, message) in enumerate(cases):
            with self.subTest(message=message):
                path = self.write("bad%d.jsonl" % i, lines)
                r = solbench("--url", url, "--dataset", path, *extra)
                self.fails(r, message)
                self.assertNotIn("cannot connect", r.stderr)
        r = solbench("--url", url, "--dataset", self.path("missing.jsonl"))
        self.fails(r, "solbench: error: --dataset: cannot read '%s'" % self.path("missing.jsonl"))

    # --- Terminal -------------------------------------------------------

    def test_progress_only_on_a_terminal(self):
        with Mock(self.tmp, "--token-delay", "0.1") as m:
            master, slave = pty.openpty()
            try:
                r = solbench("--url", m.url, "--concurrency", 1, "--num-prompts", 3,
                             "--input-len", 4, "--output-len", 4, stderr=slave)
                os.close(slave)
                err = b""
                while True:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        break
                    if not chunk:
                        break
                    err += chunk
            finally:
                os.close(master)
        self.ok(r)
        self.assertIn(b"concurrency 1: ", err)
        self.assertRegex(err, rb"\d/3 done, 0 failed")
        self.assertNotIn("done", r.stdout)


if __name__ == "__main__":
    if not os.access(SOLBENCH, os.X_OK):
        sys.exit("solbench_test.py: no solbench binary at %s (set SOLBENCH)" % SOLBENCH)
    unittest.main()
