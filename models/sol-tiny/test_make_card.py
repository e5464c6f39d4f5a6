#!/usr/bin/env python3
"""Tests make-card.py on a made-up eval.json shaped like train.py's (stdlib only).

  python3 models/sol-tiny/test_make_card.py
"""

import importlib.util
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("make_card", HERE / "make-card.py")
mc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mc)


def fake_eval():
    shape = dict(hidden_size=384, num_hidden_layers=8, num_attention_heads=6, num_key_value_heads=3,
                 intermediate_size=1024)
    return {
        "model": {"shape": {**shape, "head_dim": 64, "vocab_size": 8192, "max_position_embeddings": 1024,
                            "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": True},
                  "parameters": 16128384, "train_tokens": 1281234, "epochs": 7.5, "train_seconds": 61.2,
                  "best_val_loss": 3.9876, "best_step": 280, "steps": 300, "stop": "planned steps done",
                  "seed": 0, "batch": 32, "seq_len": 1024, "lr": 0.001, "recipe": "...",
                  "safetensors_bytes": 32260000},
        "tokenizer": {"vocab_size": 8192, "bos_token_id": 0, "eos_token_id": 1},
        "heldout": {"file": "heldout.txt", "window": 1024, "stride": 512, "tokens": 69000,
                    "nll_fp32": 4.1, "perplexity_fp32": 60.34, "nll_bf16": 4.102, "perplexity_bf16": 60.46},
        "ci": {"file": "heldout.txt", "limit": 8193, "window": 1024, "stride": 512, "tokens": 8192,
               "nll_fp32": 4.0, "perplexity_fp32": 54.6},
        "goldens": [{"prompt": "The history of the city", "prompt_ids": [0, 5, 6, 7, 8], "ids": [9] * 128,
                     "text": "x", "min_top2_margin": 0.0123}],
        "samples": [{"prompt": "The jury said", "text": " that the | city\n\nwas"}],
        "sweep": [{"shape": shape, "parameters": 16128384, "val_loss": 4.0},
                  {"shape": dict(shape, hidden_size=512, num_attention_heads=8, num_key_value_heads=4,
                                 num_hidden_layers=6, intermediate_size=1152),
                   "parameters": 19536384, "val_loss": 4.1}],
        "versions": {"torch": "2.11", "transformers": "5.17.0", "tokenizers": "0.23.2", "gpu": "NVIDIA H200"},
        "timing": {"total_s": 400.0},
    }


class MakeCard(unittest.TestCase):
    def test_renders_the_real_card(self):
        card = (HERE / "README.md").read_text(encoding="utf-8")
        out = mc.fill(card, mc.render_all(fake_eval()))
        self.assertNotIn("Not trained yet", out)
        self.assertIn("| parameters | 16,128,384 |", out)
        self.assertIn("60.340", out)
        self.assertIn("**chosen**", out)
        self.assertIn("The jury said that the | city", out)   # samples keep their text in a code block
        self.assertIn("0.0123", out)
        self.assertEqual(mc.fill(out, mc.render_all(fake_eval())), out)  # idempotent

    def test_command_line_and_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            card = Path(tmp) / "README.md"
            card.write_text((HERE / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
            ev = Path(tmp) / "eval.json"
            ev.write_text(json.dumps(fake_eval()))
            run = lambda *a: subprocess.run([sys.executable, str(HERE / "make-card.py"), "--eval", str(ev),
                                             "--card", str(card), *a], capture_output=True, text=True)
            self.assertEqual(run("--check").returncode, 1)
            self.assertEqual(run().returncode, 0)
            self.assertEqual(run("--check").returncode, 0)
            ev.write_text(json.dumps({"model": {}}))
            r = run()
            self.assertEqual(r.returncode, 2)
            self.assertIn("lacks a field", r.stderr)

    def test_missing_marker(self):
        with self.assertRaises(mc.CardError):
            mc.fill("no markers", mc.render_all(fake_eval()))


if __name__ == "__main__":
    unittest.main(verbosity=1)
