#!/usr/bin/env python3
"""Runs the official `openai` and `@langchain/openai` Node SDKs
(test/server/sdk/sdk_test.mjs) against `solrun --serve` on the tiny test
model. The packages are installed with `npm ci` from the committed
package-lock.json into the work directory (never the source tree); a failed
install fails the test.

  sdk_test.py --solc BIN --solrun BIN --work DIR --tokenizers DIR
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from serverlib import Server, build_plan, check

SDK = Path(__file__).resolve().parent / "sdk"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--tokenizers", required=True,
                    help="the test tokenizers' folder (qwen3/, llama3.1/)")
    A = ap.parse_args()
    work = Path(A.work)
    app = work / "sdk"
    app.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json", "sdk_test.mjs"):
        shutil.copyfile(SDK / name, app / name)
    for tool in ("node", "npm"):
        check(shutil.which(tool), f"{tool} is not installed: the SDK test needs Node 20 and npm")
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=app,
                   check=True)
    plan = build_plan(A.solc, work, A.tokenizers)
    S = Server(A.solrun, plan, "--api-key", "sekret", "--served-model-name", "sol-tiny")
    try:
        env = dict(os.environ, SOL_BASE_URL=f"http://127.0.0.1:{S.port}/v1",
                   SOL_MODEL="sol-tiny", SOL_API_KEY="sekret")
        rc = subprocess.run(["node", "sdk_test.mjs"], cwd=app, env=env, timeout=600).returncode
        check(rc == 0, "the SDK checks failed (exit code %d)" % rc)
        S.wait_idle()
    finally:
        stop = S.stop()
    check(stop == 0, "server exit code", stop)
    print("SDK test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
