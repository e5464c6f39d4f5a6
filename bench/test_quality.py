#!/usr/bin/env python3
"""Unit tests of bench/quality.py's metric math and helpers (stdlib only).

  python3 bench/test_quality.py
"""

import json
import math
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quality as q  # noqa: E402


class Metrics(unittest.TestCase):
    def test_hand_computed_row(self):
        # ref uniform over 2; cand gives p = (3/4, 1/4); target 0
        s = q.chunk_sums_python([[0.0, 0.0]], [[math.log(3.0), 0.0]], [0])
        self.assertEqual(s["n"], 1)
        self.assertAlmostEqual(s["nll_ref"], math.log(2.0))
        self.assertAlmostEqual(s["nll_cand"], -math.log(0.75))
        self.assertAlmostEqual(s["kl"], 0.5 * math.log(4.0 / 3.0))
        self.assertEqual(s["agree"], 1.0)  # ties go to the first index, as numpy's argmax
        self.assertAlmostEqual(s["sq_err"], math.log(3.0) ** 2)
        self.assertEqual(s["sq_ref"], 0.0)

    def test_identical_logits(self):
        rows = [[1.0, 2.0, -1.0], [0.5, 0.1, 3.0]]
        m = q.summarize(q.chunk_sums_python(rows, rows, [1, 2]))
        self.assertEqual(m["positions"], 2)
        self.assertAlmostEqual(m["kl_mean_nats"], 0.0)
        self.assertEqual(m["top1_agreement_pct"], 100.0)
        self.assertEqual(m["rel_logit_error"], 0.0)
        self.assertAlmostEqual(m["perplexity_delta_pct"], 0.0)
        self.assertAlmostEqual(m["perplexity"], m["perplexity_ref"])

    def test_summary_and_shift_invariance(self):
        ref = [[1.0, 2.0, 3.0], [3.0, 0.0, 0.0]]
        shifted = [[x + 5.0 for x in r] for r in ref]  # same distribution, different logits
        m = q.summarize(q.chunk_sums_python(ref, shifted, [2, 0]))
        self.assertAlmostEqual(m["kl_mean_nats"], 0.0, places=12)
        self.assertAlmostEqual(m["perplexity_delta_pct"], 0.0, places=9)
        self.assertEqual(m["top1_agreement_pct"], 100.0)
        self.assertAlmostEqual(m["rel_logit_error"], math.sqrt(6 * 25.0) / math.sqrt(1 + 4 + 9 + 9))

    def test_disagreement_and_sums_add(self):
        a = q.chunk_sums_python([[1.0, 0.0]], [[0.0, 1.0]], [0])
        b = q.chunk_sums_python([[1.0, 0.0]], [[1.0, 0.0]], [0])
        m = q.summarize(q.add_sums(a, b))
        self.assertEqual(m["top1_agreement_pct"], 50.0)
        self.assertGreater(m["kl_mean_nats"], 0.0)
        self.assertGreater(m["perplexity_delta_pct"], 0.0)

    def test_no_positions(self):
        with self.assertRaises(q.QualityError):
            q.summarize(q.empty_sums())


class Greedy(unittest.TestCase):
    def test_prefix_and_exact(self):
        g = q.greedy_agreement([[1, 2, 3, 4], [5, 6, 7, 8]], [[1, 2, 9, 4], [5, 6, 7, 8]], 4)
        self.assertAlmostEqual(g["greedy_prefix_pct"], (2 / 4 + 4 / 4) / 2 * 100)
        self.assertEqual(g["greedy_exact_pct"], 50.0)
        self.assertEqual(g["greedy_prefix_per_prompt"], [2, 4])
        with self.assertRaises(q.QualityError):
            q.greedy_agreement([[1]], [], 1)


class Gates(unittest.TestCase):
    def row(self, delta, top1, err):
        return {"perplexity_delta_pct": delta, "top1_agreement_pct": top1, "rel_logit_error": err}

    def test_hf_gates(self):
        bf16 = self.row(0.3, 98.0, 1e-2)
        self.assertTrue(all(p for _, p, _ in q.gates_hf(self.row(0.1, 99.0, 1e-3), bf16)))
        self.assertTrue(all(p for _, p, _ in q.gates_hf(self.row(-0.5, 97.5, 1e-2), bf16)))
        failed = [n for n, p, _ in q.gates_hf(self.row(0.6, 97.4, 2e-2), bf16) if not p]
        self.assertEqual(len(failed), 3)

    def test_plan_gate(self):
        self.assertTrue(q.gates_plans(self.row(0.4, 0, 0))[0][1])
        self.assertFalse(q.gates_plans(self.row(-0.7, 0, 0))[0][1])


class Helpers(unittest.TestCase):
    def test_last_json_object(self):
        out = 'loading plan...\n{"tokens": 3, "nll": 1.5}\n'
        self.assertEqual(q.last_json_object(out), {"tokens": 3, "nll": 1.5})
        self.assertEqual(q.last_json_object('{\n "a": 1\n}\n'), {"a": 1})
        self.assertIsNone(q.last_json_object("no json here"))

    def test_table(self):
        m = q.summarize(q.chunk_sums_python([[1.0, 0.0]], [[1.0, 0.1]], [0]))
        m.update(q.greedy_agreement([[1, 2]], [[1, 3]], 2))
        table = q.format_table({"sol": m, "hf_bf16": dict(m)}, "Transformers float32")
        self.assertIn("sol", table)
        self.assertIn("50.00", table)

    def test_load_prompts(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = Path(tmp) / "p.json"
            p.write_text(json.dumps(["a", "b"]))
            self.assertEqual(q.load_prompts(p), (["a", "b"], None))
            p.write_text(json.dumps({"goldens": [{"prompt": "x", "prompt_ids": [0, 5], "ids": [1]}]}))
            prompts, goldens = q.load_prompts(p)
            self.assertEqual(prompts, ["x"])
            self.assertEqual(goldens[0]["prompt_ids"], [0, 5])
            p.write_text(json.dumps({"goldens": []}))
            with self.assertRaises(q.QualityError):
                q.load_prompts(p)
            p.write_text(json.dumps({"x": 1}))
            with self.assertRaises(q.QualityError):
                q.load_prompts(p)


if __name__ == "__main__":
    unittest.main(verbosity=1)
