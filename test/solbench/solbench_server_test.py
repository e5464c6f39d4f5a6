#!/usr/bin/env python3
"""solbench against the real server: `solrun --serve` on the CPU reference
executor, with the tiny Llama test model (test/models/llama) compiled by solc.
A concurrency sweep of 1 and 4 must complete every request with exactly the
asked number of tokens. Run by ctest (label solbench):

  SOLBENCH=... SOLC=... SOLRUN=... SOL_TEST_TOKENIZERS=third_party/tokenizers python3 test/solbench/solbench_server_test.py -v
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

from solbench_test import qwen3_tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(SOURCE_ROOT, "build", "bin")
SOLBENCH = os.environ.get("SOLBENCH", os.path.join(BIN, "solbench"))
SOLC = os.environ.get("SOLC", os.path.join(BIN, "solc"))
SOLRUN = os.environ.get("SOLRUN", os.path.join(BIN, "solrun"))
MODEL = os.path.join(SOURCE_ROOT, "test", "models", "llama")
MAKE_RANDOM_MODEL = os.path.join(SOURCE_ROOT, "test", "e2e", "make-random-model.py")


class Server:
    """`solrun PLAN --serve --device cpu --port 0`; its port is read from the
    line it prints once listening."""

    def __init__(self, plan):
        self.proc = subprocess.Popen(
            [SOLRUN, plan, "--serve", "--device", "cpu", "--port", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.url = None
        ready = threading.Event()

        def pump():
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"serving (\S+) on (http://\S+:\d+)", line)
                if m and not self.url:
                    self.name, self.url = m.group(1), m.group(2) + "/v1"
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(120)
        if not self.url:
            self.stop()
            raise RuntimeError("solrun --serve did not start:\n" + "".join(self.log))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stderr.close()


def solbench(*args):
    return subprocess.run([SOLBENCH] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=600)


class SolbenchServerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="solbench-server-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def check_levels(self, r, server, out, prompt_tokens=True):
        self.assertEqual(r.returncode, 0, "stdout:\n%s\nstderr:\n%s\nserver:\n%s"
                         % (r.stdout, r.stderr, "".join(server.log)))
        with open(out) as f:
            j = json.load(f)
        self.assertEqual(j["config"]["model"], server.name)  # from GET /v1/models
        self.assertEqual([lv["concurrency"] for lv in j["levels"]], [1, 4])
        for lv in j["levels"]:
            self.assertEqual((lv["completed"], lv["failed"]), (8, 0), lv["failures"])
            self.assertEqual(lv["output_tokens"], 8 * 8)
            if prompt_tokens:
                self.assertEqual(lv["prompt_tokens"], 8 * 16)
            self.assertEqual(lv["usage_reported"], 8)
            self.assertEqual(lv["output_len_mismatches"], 0)
            self.assertGreater(lv["ttft_ms"]["min"], 0)
            self.assertLessEqual(lv["ttft_ms"]["max"], lv["e2e_ms"]["max"])
            self.assertGreater(lv["output_tokens_per_s"], 0)
        return j

    def test_tiny_llama(self):
        """The test model without a tokenizer: token ids in, no text out."""
        plan = os.path.join(self.tmp, "tiny.plan")
        subprocess.run([SOLC, MODEL, "--gpu", "none", "-q", "-o", plan], check=True)
        server = Server(plan)
        out, html = os.path.join(self.tmp, "run.json"), os.path.join(self.tmp, "run.html")
        try:
            # Its vocabulary has 2048 ids and 256 positions.
            r = solbench("--url", server.url, "--concurrency", "1,4", "--num-prompts", 8,
                         "--input-len", 16, "--output-len", 8, "--vocab-size", 2048,
                         "--timeout", 300, "--json", out, "--html", html)
        finally:
            server.stop()
        j = self.check_levels(r, server, out)
        # No tokenizer, no text: solbench says so.
        self.assertEqual([lv["requests_without_text"] for lv in j["levels"]], [8, 8])
        self.assertIn("streamed no text (does the model have a tokenizer?)", r.stderr)
        with open(html) as f:
            self.assertEqual(f.read().count("<svg"), 6)

    def test_text_model_completions_and_chat(self):
        """A random Qwen3-shaped model with the real Qwen3 tokenizer: text is
        streamed, so TTFT and inter-token latency come from real chunks."""
        model = os.path.join(self.tmp, "qwen")
        subprocess.run([sys.executable, MAKE_RANDOM_MODEL, model, "151669"], check=True)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(qwen3_tokenizer(), name), model)
        plan = os.path.join(self.tmp, "qwen.plan")
        subprocess.run([SOLC, model, "--gpu", "none", "-q", "-o", plan], check=True)
        server = Server(plan)
        try:
            common = ["--url", server.url, "--concurrency", "1,4", "--num-prompts", 8,
                      "--input-len", 16, "--output-len", 8, "--timeout", 300]
            out = os.path.join(self.tmp, "completions.json")
            r = solbench(*common, "--json", out)
            j = self.check_levels(r, server, out)
            chat_out = os.path.join(self.tmp, "chat.json")
            chat = solbench(*common, "--endpoint", "chat", "--tokenizer", plan,
                            "--json", chat_out)
            # The chat template adds its tokens to the 16 of the text.
            jc = self.check_levels(chat, server, chat_out, prompt_tokens=False)
        finally:
            server.stop()
        for lv in j["levels"] + jc["levels"]:
            self.assertEqual(lv["requests_without_text"], 0)
            self.assertGreater(lv["itl_ms"]["count"], 0)
        for lv in jc["levels"]:
            self.assertGreater(lv["prompt_tokens"], 8 * 16)


if __name__ == "__main__":
    for tool in (SOLBENCH, SOLC, SOLRUN):
        if not os.access(tool, os.X_OK):
            sys.exit("solbench_server_test.py: no binary at %s (set SOLBENCH, SOLC, SOLRUN)"
                     % tool)
    unittest.main()
