#!/usr/bin/env python3
"""A bounded load test of `solrun --serve` on loopback (CPU reference
executor, the tiny test model): 500 greedy completions with varied prompts
and a fixed max_tokens, sent by 32 concurrent clients; every request must
complete, and its token ids must equal those of the same request sent alone
(one by one, before the load). Afterwards the server must be idle with no KV
block held. Standard library only.

  load_test.py --solc BIN --solrun BIN --work DIR --tokenizers DIR
      [--requests 500] [--concurrency 32] [--max-tokens 8]
"""
import argparse
import http.client
import json
import queue
import random
import sys
import threading
import time

from serverlib import Server, build_plan, check


def body_of(prompt, max_tokens):
    return {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "ignore_eos": True, "return_token_ids": True}


def send(conn, prompt, max_tokens):
    conn.request("POST", "/v1/completions", body=json.dumps(body_of(prompt, max_tokens)),
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    payload = json.loads(r.read())
    check(r.status == 200, r.status, payload)
    (choice,) = payload["choices"]
    check(choice["finish_reason"] == "length", choice)
    return choice["token_ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokenizers", required=True,
                    help="the test tokenizers' folder (qwen3/, llama3.1/)")
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=8)
    A = ap.parse_args()
    plan = build_plan(A.solc, A.work, A.tokenizers)
    rng = random.Random(7)
    # Varied prompts: 4 to 48 ids; some share a prefix, some repeat whole.
    prefix = [rng.randrange(1, 150000) for _ in range(24)]
    prompts = []
    for i in range(A.requests):
        if i % 10 == 3 and prompts:
            prompts.append(list(prompts[rng.randrange(len(prompts))]))
            continue
        own = [rng.randrange(1, 150000) for _ in range(rng.randint(4, 48))]
        prompts.append(prefix + own if i % 4 == 0 else own)

    S = Server(A.solrun, plan, "--enable-prefix-caching")
    try:
        start = time.time()
        alone = []
        conn = S.conn()
        for p in prompts:
            alone.append(send(conn, p, A.max_tokens))
        conn.close()
        sequential = time.time() - start
        S.wait_idle()

        work = queue.Queue()
        for i in range(len(prompts)):
            work.put(i)
        loaded = [None] * len(prompts)
        errors = []
        peak = {"running": 0}

        def client():
            c = S.conn(timeout=300)
            while True:
                try:
                    i = work.get_nowait()
                except queue.Empty:
                    break
                try:
                    loaded[i] = send(c, prompts[i], A.max_tokens)
                except Exception as e:  # noqa: BLE001 (reported below)
                    errors.append((i, repr(e)))
                    c.close()
                    c = S.conn(timeout=300)
            c.close()

        def watch():
            while any(t.is_alive() for t in threads):
                m = S.metrics()
                peak["running"] = max(peak["running"], m["sol_num_requests_running"])
                time.sleep(0.2)

        start = time.time()
        threads = [threading.Thread(target=client) for _ in range(A.concurrency)]
        for t in threads:
            t.start()
        watcher = threading.Thread(target=watch)
        watcher.start()
        for t in threads:
            t.join()
        watcher.join()
        concurrent = time.time() - start
        check(not errors, "failed requests:", errors[:5])
        check(all(x is not None for x in loaded), "requests without an answer")
        different = [i for i in range(len(prompts)) if loaded[i] != alone[i]]
        check(not different, len(different), "outputs differ from the same request alone, e.g.",
              different[:3], [(alone[i], loaded[i]) for i in different[:3]])
        check(peak["running"] > 1, "the load never ran requests together", peak)
        m = S.wait_idle()
        check(m['sol_request_success_total{finished_reason="length"}'] == 2 * len(prompts), m)
        check(m["sol_prefix_cache_hits_total"] > 0, "no prefix-cache hits", m)
        print(f"{len(prompts)} requests: one by one {sequential:.1f} s, "
              f"{A.concurrency} concurrent {concurrent:.1f} s, peak running "
              f"{peak['running']:.0f}, identical outputs", flush=True)
    finally:
        rc = S.stop()
    check(rc == 0, "server exit code", rc)
    print("load test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
