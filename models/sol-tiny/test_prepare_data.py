#!/usr/bin/env python3
"""Unit tests of prepare_data.py's text rebuilding and split (stdlib only).

  python3 models/sol-tiny/test_prepare_data.py
"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import prepare_data as pd  # noqa: E402


def tagged(text):
    """'The/at jury/nn' -> Brown words."""
    return [pd.split_token(t)[0] for t in text.split()]


class Detokenize(unittest.TestCase):
    def check(self, brown, expected):
        self.assertEqual(pd.detokenize(tagged(brown)), expected)

    def test_punctuation_attaches_left(self):
        self.check("The/at jury/nn ,/, it/pps said/vbd ,/, was/bedz right/jj ./.",
                   "The jury, it said, was right.")

    def test_double_quotes_and_punctuation_moved_inside(self):
        self.check("``/`` Only/rb a/at handful/nn ''/'' ,/, the/at jury/nn said/vbd ./.",
                   '"Only a handful," the jury said.')
        self.check("laws/nns ``/`` are/ber outmoded/jj ''/'' ./.", 'laws "are outmoded."')

    def test_question_mark_stays_outside(self):
        self.check("Did/dod he/pps say/vb ``/`` no/rb ''/'' ?/.", 'Did he say "no"?')

    def test_single_quotes_alternate(self):
        self.check("more/ap '/' pro/jj '/' letters/nns than/in '/' con/jj '/' ./.",
                   "more 'pro' letters than 'con.'")

    def test_doubled_semicolon_and_abbreviation_period(self):
        self.check("relations/nns ;/. ;/. Ivan/np Allen/np Jr./np ./.", "relations; Ivan Allen Jr.")
        self.check("40/cd lbs./nns ''/'' ./.", '40 lbs."')

    def test_brackets_dash_slash_and_words_with_slashes(self):
        self.check("(/( even/rb the/at best/jjt )/) --/-- counts/nns //in minute/nn 1/4''/cd",
                   '(even the best) -- counts/minute 1/4"')

    def test_clitics(self):
        self.check("they/ppss do/do n't/* know/vb", "they don't know")

    def test_tags_split_at_last_slash(self):
        self.assertEqual(pd.split_token("and/or/cc"), ("and/or", "cc"))
        self.assertEqual(pd.split_token("Atlanta's/np$"), ("Atlanta's", "np$"))


class Document(unittest.TestCase):
    RAW = ("\n\n\tThe/at jury/nn said/vbd ./.\nIt/pps agreed/vbd ./.\n\n\n"
           "Merger/nn-hl proposed/vbn-hl \nHowever/wrb ,/, it/pps said/vbd no/rb ./.\n\n\n"
           "Austin/np-hl ,/,-hl Texas/np-hl \n--/-- Committee/nn approval/nn ./.\n")

    def test_paragraphs_headlines_and_datelines(self):
        self.assertEqual(pd.document_text(self.RAW),
                         "The jury said. It agreed.\n\nMerger proposed\n\nHowever, it said no."
                         "\n\nAustin, Texas -- Committee approval.")

    def test_counts(self):
        self.assertEqual(pd.count_raw("The/at jury/nn ,/, said/vbd ./."), (5, 3))


class Split(unittest.TestCase):
    def test_split_by_document_index(self):
        ids = [f"c{chr(ord('a') + i // 40)}{i % 40 + 1:02d}" for i in range(500)]
        s = pd.assign_splits(ids)
        self.assertEqual([len(s[k]) for k in ("train", "val", "test")], [450, 25, 25])
        ordered = sorted(ids)
        self.assertEqual(s["test"], ordered[0::20])
        self.assertEqual(s["val"], ordered[10::20])
        self.assertFalse(set(s["train"]) & (set(s["val"]) | set(s["test"])))


if __name__ == "__main__":
    unittest.main(verbosity=1)
