"""The sliding windows of `solrun --perplexity`, shared by every Python script that must
score exactly the same positions (models/sol-tiny/train.py, bench/quality.py).

Given N token ids (BOS first), a window W and a stride S (1 <= S <= W): windows begin at
b = 0, S, 2S, ...; window k covers ids[b : min(b + W, N)] and scores the positions t in
[max(prev_end, b + 1), end), where prev_end is the previous window's end (0 for the
first); token ids[t] is predicted from the logits at position t - 1 of the same window.
The last window is the first whose end is N. With S < W every position 1..N-1 is scored
exactly once, each with at least W - S tokens of context (except the first W); with
S == W the first position of each later window has no context in its window and is
skipped, as in solrun.

Stdlib only.
"""


def perplexity_windows(n_ids, window=1024, stride=512):
    """[(begin, end, first_scored), ...] for n_ids ids; window k scores [first_scored, end)."""
    if not isinstance(n_ids, int) or n_ids < 2:
        raise ValueError(f"perplexity needs at least 2 token ids, got {n_ids}")
    if window < 2:
        raise ValueError(f"window must be >= 2, got {window}")
    if not 1 <= stride <= window:
        raise ValueError(f"stride must be in [1, window={window}], got {stride}")
    windows = []
    prev_end = 0
    begin = 0
    while True:
        end = min(begin + window, n_ids)
        first = max(prev_end, begin + 1)
        windows.append((begin, end, first))
        if end == n_ids:
            return windows
        prev_end = end
        begin += stride


def scored_positions(windows):
    """Every scored position t, in increasing order (the rows of solrun's --logits-out)."""
    out = []
    for _, end, first in windows:
        out.extend(range(first, end))
    return out


def logit_rows(begin, end, first):
    """Which rows of a window's logits (computed over ids[begin:end]) score [first, end):
    the slice [first - 1 - begin, end - 1 - begin)."""
    return first - 1 - begin, end - 1 - begin


def limit_ids(ids, limit):
    """The first `limit` ids (all when limit is None or 0), as solrun's --limit-tokens."""
    if limit:
        if limit < 2:
            raise ValueError(f"--limit-tokens must be >= 2, got {limit}")
        return ids[:limit]
    return ids
