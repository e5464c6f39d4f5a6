#!/usr/bin/env python3
"""Unit tests of the perplexity windowing (stdlib only).

  python3 bench/test_perplexity_windows.py
"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perplexity_windows import limit_ids, logit_rows, perplexity_windows, scored_positions  # noqa: E402


class Windows(unittest.TestCase):
    def test_every_position_scored_once(self):
        for n in range(2, 60):
            for w in range(2, 12):
                for s in range(1, w):  # S < W
                    wins = perplexity_windows(n, w, s)
                    self.assertEqual(scored_positions(wins), list(range(1, n)), (n, w, s))
                    self.assertEqual(wins[-1][1], n)
                    for b, e, f in wins:
                        self.assertTrue(b < f <= e <= b + w, (n, w, s, b, e, f))
                        self.assertGreater(e, f, "a window with nothing to score")

    def test_examples(self):
        self.assertEqual(perplexity_windows(10, 4, 2), [(0, 4, 1), (2, 6, 4), (4, 8, 6), (6, 10, 8)])
        self.assertEqual(perplexity_windows(5, 1024, 512), [(0, 5, 1)])
        self.assertEqual(perplexity_windows(1024, 1024, 512), [(0, 1024, 1)])
        self.assertEqual(perplexity_windows(1025, 1024, 512), [(0, 1024, 1), (512, 1025, 1024)])

    def test_ci_subset(self):
        wins = perplexity_windows(8193, 1024, 512)
        self.assertEqual(len(scored_positions(wins)), 8192)
        self.assertEqual(len(wins), 16)
        self.assertEqual(wins[-2], (7168, 8192, 7680))
        self.assertEqual(wins[-1], (7680, 8193, 8192))  # one position left for the last window
        self.assertEqual(wins[1], (512, 1536, 1024))

    def test_stride_equal_window_skips_window_starts(self):
        wins = perplexity_windows(10, 4, 4)
        self.assertEqual(wins, [(0, 4, 1), (4, 8, 5), (8, 10, 9)])
        self.assertEqual(scored_positions(wins), [1, 2, 3, 5, 6, 7, 9])

    def test_logit_rows(self):
        # window over ids[512:1536] scoring t in [1024, 1536): its local logits rows 511..1022
        self.assertEqual(logit_rows(512, 1536, 1024), (511, 1023))
        self.assertEqual(logit_rows(0, 1024, 1), (0, 1023))

    def test_bad_arguments(self):
        for args in [(1, 4, 2), (10, 4, 5), (10, 4, 0), (10, 1, 1)]:
            with self.assertRaises(ValueError):
                perplexity_windows(*args)

    def test_limit(self):
        self.assertEqual(limit_ids(list(range(10)), 4), [0, 1, 2, 3])
        self.assertEqual(limit_ids(list(range(10)), None), list(range(10)))
        with self.assertRaises(ValueError):
            limit_ids([1, 2, 3], 1)


if __name__ == "__main__":
    unittest.main(verbosity=1)
