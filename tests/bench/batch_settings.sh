#!/usr/bin/env bash
# The same closed-loop workload against one model under several batch settings, interleaved
# over rounds so a noisy machine hits every setting alike. Prints tokens/s and batch fill.
#   tests/bench/batch_settings.sh MODEL_DIR [DTYPE] [ROUNDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
MODEL=${1:?model directory}
DTYPE=${2:-bf16}
ROUNDS=${3:-2}
BUILD=${BUILD_DIR:-build}
SETTINGS=("--max-batch-tokens=512 --max-batch-padding=1"
          "--max-batch-tokens=2048 --max-batch-padding=0.2"
          "--max-batch-tokens=2048 --max-batch-padding=1"
          "--max-batch-tokens=8192 --max-batch-padding=1")
for round in $(seq "$ROUNDS"); do
  for setting in "${SETTINGS[@]}"; do
    # shellcheck disable=SC2086
    "$BUILD/server/embedding_server" --model="m=$MODEL" --dtype="$DTYPE" --threads="$(nproc)" \
      --listen=127.0.0.1:50997 --http-listen=127.0.0.1:50996 $setting >/dev/null 2>&1 &
    pid=$!
    trap 'kill $pid 2>/dev/null || true' EXIT
    until "$BUILD/client/embedctl" health --address=127.0.0.1:50997 --timeout-s=2 >/dev/null 2>&1; do
      sleep 0.5
    done
    result=$("$BUILD/client/embedctl" bench --address=127.0.0.1:50997 --requests=120 \
      --concurrency=16 --median-words=150 --strategies=chunk_mean --seed=3 \
      --metrics-address=127.0.0.1:50996 | grep -E "^throughput|^server" | tr -s ' ' | tr '\n' ' ')
    echo "round $round | $setting | $result"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
done
