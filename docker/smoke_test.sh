#!/usr/bin/env bash
# Builds the image and runs it with no network: the server must come up on its demo model,
# answer health and Embed from inside the container, expose /metrics, and stop cleanly on
# SIGTERM. Prints "1 passed, 0 failed" on success.
# With PREBUILT_BUILD_DIR set (the test suite sets it to its build), the image takes that
# build's binaries instead of compiling them again (BINARIES=prebuilt in the Dockerfile).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. docker/docker_env.sh
IMAGE=${IMAGE:-embedding-server:dev}

ensure_docker
ensure_base_image
if [ -n "${PREBUILT_BUILD_DIR:-}" ]; then
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
  cp dev.sh "$context/"
  docker/stage_runtime.sh "$PREBUILT_BUILD_DIR" "$context/runtime"
  docker build --network host --build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg BINARIES=prebuilt \
    -f docker/Dockerfile -t "$IMAGE" "$context"
  rm -rf "$context"
  trap - EXIT
else
  docker build --network host --build-arg BASE_IMAGE="$BASE_IMAGE" -f docker/Dockerfile -t "$IMAGE" .
fi

# The runtime stage carries no compiler and no headers.
docker run --rm --network none --entrypoint sh "$IMAGE" -c \
  '! command -v cc && ! command -v c++ && [ -z "$(ls -A /usr/include 2>/dev/null)" ]'
echo "image $IMAGE: $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1 / 1e6}')"

name=embedding-smoke-$$
docker run -d --name "$name" --network none "$IMAGE" --http-listen=127.0.0.1:8080 >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 120); do
  docker exec "$name" embedctl health --timeout-s=2 >/dev/null 2>&1 && break
  sleep 1
done
docker exec "$name" embedctl health --timeout-s=5
# GET /docs: the image's Swagger UI files, which the server read at start (it refuses to start
# when EMBEDDING_API_DOCS_DIR lacks them).
docker exec "$name" sh -c 'test -s "$EMBEDDING_API_DOCS_DIR/swagger-ui-bundle.js"'
out=$(docker exec "$name" embedctl embed --temperature=0.8 "hello from the container")
echo "$out" | grep -q '"length_bucket":"0-63"'
echo "$out" | grep -q '"temperature":0.8'
docker exec "$name" embedctl models | grep -q "^demo (default) "
# AUTO: the model's TempScale schedule (none in the image: tau = 1), reported per sequence.
docker exec "$name" embedctl embed --temperature=auto "hello again" | grep -q '"sequence_temperatures":\[1.0\]'
# /metrics, read by embedctl bench from inside the container.
docker exec "$name" embedctl bench --requests=5 --metrics-address=127.0.0.1:8080 | grep -q "^server"
docker kill --signal=TERM "$name" >/dev/null
code=$(docker wait "$name")
docker logs "$name" 2>&1 | tail -3
[ "$code" = 0 ] || { echo "server exited $code after SIGTERM"; echo "0 passed, 1 failed"; exit 1; }
echo "1 passed, 0 failed"
