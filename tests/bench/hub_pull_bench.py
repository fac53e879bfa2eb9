#!/usr/bin/python3
"""Hub model start-up costs against a mock Hub on 127.0.0.1, with peers from the same run:
`embedctl pull` cold, warm (a branch: one metadata request), by commit (no request) and offline,
beside @huggingface/hub's snapshotDownload cold on the same mock; and the server's time to
ready from the model's directory, from a cold Hub fetch, from a warm cache, and from a warm cache
with the Hub unreachable. Median of --runs each.

usage: hub_pull_bench.py SERVER EMBEDCTL MODEL_DIR HUB_TEST_DIR [--runs=5]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e", "hub"))
from mock_hub import MockHub  # noqa: E402
from server_runner import ServerRunner  # noqa: E402

REPO = "org/demo"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("server")
    parser.add_argument("embedctl")
    parser.add_argument("model_dir")
    parser.add_argument("hub_dir")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    hub_dir = os.path.abspath(args.hub_dir)
    tmp = tempfile.mkdtemp(prefix="hub_pull_bench_")
    cache = os.path.join(tmp, "cache")
    hub = MockHub(hub_dir, tmp, {"repos": {REPO: {"revisions": {"main": args.model_dir},
                                                  "exclude": ["README.md"]}}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=hub.url, HF_HUB_CACHE=cache, HF_HOME=tmp)

    def timed(command, fresh=False, extra=None, cwd=None):
        times = []
        for _ in range(args.runs):
            if fresh:
                shutil.rmtree(cache, ignore_errors=True)
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, env={**env, **(extra or {})},
                           cwd=cwd)
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    def server_ready(model, fresh=False, extra=None):
        times = []
        for _ in range(args.runs):
            if fresh:
                shutil.rmtree(cache, ignore_errors=True)
            started = time.perf_counter()
            with ServerRunner(args.server, [f"--model={model}"], env={**env, **(extra or {})}):
                times.append(time.perf_counter() - started)
        return statistics.median(times)

    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(args.model_dir)
               for f in fs if f != "README.md")
    rows = [("embedctl pull, cold", timed([args.embedctl, "pull", REPO], fresh=True)),
            ("@huggingface/hub snapshotDownload, cold",
             timed(["node", os.path.join(hub_dir, "official_snapshot.mjs"), hub.url, REPO, "main",
                    cache], fresh=True, cwd=hub_dir))]
    subprocess.run([args.embedctl, "pull", REPO], check=True, capture_output=True, env=env)
    with open(os.path.join(cache, "models--org--demo", "refs", "main")) as f:
        commit = f.read()
    rows += [("embedctl pull, warm (branch)", timed([args.embedctl, "pull", REPO])),
             ("embedctl pull, warm (commit)", timed([args.embedctl, "pull", f"{REPO}@{commit}"])),
             ("embedctl pull, offline", timed([args.embedctl, "pull", REPO],
                                              extra={"HF_HUB_OFFLINE": "1"})),
             ("server ready, from the directory", server_ready(f"demo={args.model_dir}")),
             ("server ready, cold from the Hub", server_ready(REPO, fresh=True)),
             ("server ready, warm cache", server_ready(REPO))]
    hub.stop()
    rows.append(("server ready, warm cache, Hub down", server_ready(REPO)))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"model: {args.model_dir} ({size / 1e6:.1f} MB), median of {args.runs}")
    for name, seconds in rows:
        print(f"  {name:44s} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
