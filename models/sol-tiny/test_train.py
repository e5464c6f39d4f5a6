#!/usr/bin/env python3
"""Unit tests of train.py's pure-Python parts (stdlib only; torch is not imported here).

  python3 models/sol-tiny/test_train.py
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train  # noqa: E402


def llama3_like_tokenizer_json():
    """What tokenizers serializes for the tokenizer train_tokenizer builds."""
    return {
        "version": "1.0",
        "added_tokens": [
            {"id": 0, "content": train.BOS_TOKEN, "special": True},
            {"id": 1, "content": train.EOS_TOKEN, "special": True},
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": train.LLAMA3_PATTERN}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": train.BOS_TOKEN, "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "byte_fallback": False,
                  "ignore_merges": True, "vocab": {}, "merges": []},
    }


class Shapes(unittest.TestCase):
    def test_parameter_counts(self):
        self.assertEqual(train.count_parameters(train.SWEEP_SHAPES[0], 8192), 16_128_384)
        self.assertEqual(train.count_parameters(train.SWEEP_SHAPES[1], 8192), 19_536_384)
        # Llama-3.2-1B with its own 128256 vocabulary: 1,235,814,400 parameters.
        shape = train.PRESETS["llama-3.2-1b"]["shape"]
        self.assertEqual(train.count_parameters(shape, 128256), 1_235_814_400)

    def test_sweep_shapes_fit_the_budget(self):
        for shape in train.SWEEP_SHAPES + [train.DEFAULT_SHAPE]:
            train.check_shape(shape, "sol-tiny")
            n = train.count_parameters(shape, train.VOCAB_SIZE)
            self.assertTrue(15_000_000 <= n <= 20_000_000, (shape, n))
            self.assertLessEqual(2 * n, 40_000_000)  # bf16 bytes
        self.assertIn(train.DEFAULT_SHAPE, train.SWEEP_SHAPES)
        train.check_shape(train.PRESETS["llama-3.2-1b"]["shape"], "llama-3.2-1b")

    def test_bad_shapes(self):
        with self.assertRaises(ValueError):
            train.check_shape(dict(hidden_size=512, num_hidden_layers=6, num_attention_heads=8,
                                   num_key_value_heads=2, intermediate_size=1024), "sol-tiny")  # group 4
        with self.assertRaises(ValueError):
            train.check_shape(dict(hidden_size=500, num_hidden_layers=6, num_attention_heads=8,
                                   num_key_value_heads=8, intermediate_size=1024), "sol-tiny")


class Schedule(unittest.TestCase):
    def test_warmup_then_cosine(self):
        peak = 1e-3
        self.assertAlmostEqual(train.lr_at(0, 100, 1000, peak), peak / 100)
        self.assertAlmostEqual(train.lr_at(99, 100, 1000, peak), peak)
        self.assertAlmostEqual(train.lr_at(100, 100, 1000, peak), peak)
        self.assertAlmostEqual(train.lr_at(550, 100, 1000, peak), peak * 0.55)
        self.assertAlmostEqual(train.lr_at(1000, 100, 1000, peak), peak * 0.1)
        self.assertAlmostEqual(train.lr_at(5000, 100, 1000, peak), peak * 0.1)
        values = [train.lr_at(s, 100, 1000, peak) for s in range(100, 1001)]
        self.assertTrue(all(a >= b for a, b in zip(values, values[1:])))

    def test_plan(self):
        self.assertEqual(train.plan_total_steps(400, 20, 10.0, 100.0), 400)       # the cap binds
        self.assertEqual(train.plan_total_steps(4000, 20, 10.0, 100.0), 20 + 900)  # time binds
        self.assertEqual(train.plan_total_steps(400, 20, 10.0, -5.0), 21)


class Sampling(unittest.TestCase):
    def test_epochs_are_full_and_seeded(self):
        L, S, B = 1_300_000, 1024, 32
        spe = train.steps_per_epoch(L, S, B)
        self.assertEqual(spe, (L // S - 1) // B)
        seen = []
        for epoch in range(6):
            batches = train.epoch_batches(L, S, B, 0, epoch)
            self.assertEqual(len(batches), spe)
            flat = [o for b in batches for o in b]
            self.assertTrue(all(len(b) == B for b in batches))
            self.assertEqual(len(set(flat)), len(flat))
            self.assertTrue(all(0 <= o <= L - S for o in flat))
            shift = min(flat) % S
            self.assertTrue(all(o % S == shift for o in flat))  # non-overlapping
            seen.append(flat)
            self.assertEqual(batches, train.epoch_batches(L, S, B, 0, epoch))  # deterministic
        self.assertNotEqual(seen[0], seen[1])
        self.assertNotEqual(train.epoch_batches(L, S, B, 1, 0), train.epoch_batches(L, S, B, 0, 0))

    def test_small_stream_worst_shift(self):
        # stream_len // S - 1 windows exist for every shift
        for L in range(3 * 64, 6 * 64):
            for epoch in range(20):
                batches = train.epoch_batches(L, 64, 1, 3, epoch)
                self.assertEqual(len(batches), L // 64 - 1)
                self.assertTrue(all(len(b) == 1 for b in batches))


class Text(unittest.TestCase):
    def test_split_documents(self):
        self.assertEqual(train.split_documents("a\n\nb\n\n\nc\n"), ["a\n\nb", "c"])

    def test_min_margin(self):
        self.assertEqual(train.min_margin([3.0, 0.5, 2.0, 0.5]), (0.5, 1))


class SplitOutput(unittest.TestCase):
    def test_split_then_join(self):
        with tempfile.TemporaryDirectory() as tmp:
            src, dest = Path(tmp) / "src", Path(tmp) / "dest"
            src.mkdir()
            dest.mkdir()
            data = os.urandom(3500)
            (src / "model.safetensors").write_bytes(data)
            parts = train.split_file(src / "model.safetensors", dest, part_bytes=1000)
            self.assertEqual([p.name for p in parts],
                             [f"model.safetensors.part-0{i}" for i in range(4)])
            self.assertTrue(all(p.stat().st_size <= 1000 for p in parts))
            subprocess.run(["bash", str(Path(train.__file__).with_name("join-parts.sh")), str(dest)],
                           check=True, capture_output=True)
            self.assertEqual((dest / "model.safetensors").read_bytes(), data)
            self.assertEqual(sorted(p.name for p in dest.iterdir()), ["model.safetensors"])

    def test_join_refuses_a_bad_checksum(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            (d / "x.bin.part-00").write_bytes(b"abc")
            (d / "x.bin.sha256").write_text("0" * 64 + "  x.bin\n")
            r = subprocess.run(["bash", str(Path(train.__file__).with_name("join-parts.sh")), str(d)],
                               capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("sha256", r.stderr)
            self.assertFalse((d / "x.bin").exists())


class TokenizerJson(unittest.TestCase):
    def test_accepts_llama3_structure(self):
        train.check_tokenizer_json(llama3_like_tokenizer_json())

    def test_rejects_deviations(self):
        cases = [
            ("model", "byte_fallback", True),
            ("model", "unk_token", "<unk>"),
            ("post_processor", "type", "ByteLevel"),
            ("decoder", "type", "Metaspace"),
        ]
        for section, key, value in cases:
            data = llama3_like_tokenizer_json()
            data[section][key] = value
            with self.assertRaises(ValueError, msg=(section, key)):
                train.check_tokenizer_json(data)
        data = llama3_like_tokenizer_json()
        data["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = True
        with self.assertRaises(ValueError):
            train.check_tokenizer_json(data)
        data = llama3_like_tokenizer_json()
        data["added_tokens"][0]["id"] = 8190
        with self.assertRaises(ValueError):
            train.check_tokenizer_json(data)
        data = llama3_like_tokenizer_json()
        data["normalizer"] = {"type": "NFC"}
        with self.assertRaises(ValueError):
            train.check_tokenizer_json(json.loads(json.dumps(data)))

    def test_pattern_is_llama3s(self):
        # The exact string of Llama 3's tokenizer.json, pieces spelled out.
        self.assertEqual(train.LLAMA3_PATTERN,
                         "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
                         " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


if __name__ == "__main__":
    unittest.main(verbosity=1)
