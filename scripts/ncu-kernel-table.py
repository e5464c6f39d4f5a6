#!/usr/bin/env python3
"""Per-kernel GPU durations of the last steps of a run, from an Nsight Compute
CSV (`ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum ...`).

Prints the last --last kernels in launch order (name, duration, DRAM bytes and
GB/s), then totals per kernel name over them. ncu serializes kernels, so the
sum is the GPU time without launch gaps or PDL overlap: compare it with the
step time to see what the gaps cost.
"""
import argparse
import collections
import csv
import json
import re
import sys


def short(name):
    # Drop the parameter list; keep the template arguments.
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            return name[:i]
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--last", type=int, default=120)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    kernels = collections.OrderedDict()
    with open(args.csv, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        k = kernels.setdefault(row["ID"], {"name": short(row["Kernel Name"])})
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "")
        if row["Metric Name"] == "gpu__time_duration.sum":
            k["us"] = value / 1000.0 if unit in ("ns", "nsecond") else value
        elif row["Metric Name"] == "dram__bytes_read.sum":
            scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(unit, 1)
            k["bytes"] = value * scale
    rows = list(kernels.values())[-args.last:]
    total = sum(r.get("us", 0) for r in rows)
    print(f"last {len(rows)} kernels, {total:.1f} us of GPU time (serialized)")
    print(f"{'#':>4} {'us':>8} {'MB':>8} {'GB/s':>7}  kernel")
    for i, r in enumerate(rows):
        mb = r.get("bytes", 0) / 1e6
        gbs = r.get("bytes", 0) / (r["us"] * 1e3) if r.get("us") else 0
        print(f"{i:4d} {r.get('us', 0):8.2f} {mb:8.2f} {gbs:7.0f}  {r['name'][:150]}")
    by = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for r in rows:
        b = by[re.sub(r"<.*", "", r["name"])]
        b[0] += 1
        b[1] += r.get("us", 0)
        b[2] += r.get("bytes", 0)
    print(f"\n{'kernel':40} {'count':>5} {'us':>9} {'share':>6} {'GB/s':>6}")
    for name, (n, us, byt) in sorted(by.items(), key=lambda x: -x[1][1]):
        print(f"{name[-40:]:40} {n:5d} {us:9.1f} {100 * us / total:5.1f}% {byt / (us * 1e3) if us else 0:6.0f}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"kernels": rows, "total_us": total}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
