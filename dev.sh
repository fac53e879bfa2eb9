#!/usr/bin/env bash
# One entry point for people and CI: installs Debian packages (only when missing), configures
# and builds (incrementally), then runs the service or the test suite.
#   ./dev.sh run [server flags...]   serve the demo model (built from WordNet and the man pages on first run)
#   ./dev.sh test                    the whole suite (ctest, every label but bench)
#   ./dev.sh build | build-sanitized | deps | bench | docker
#   ./dev.sh build-deps              only the packages a build needs (used by docker/Dockerfile)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
BUILD_DIR=${BUILD_DIR:-build}
# The ASan + UBSan build with the fuzz targets (clang); `test` builds and runs it too.
SANITIZE_BUILD_DIR=${SANITIZE_BUILD_DIR:-$BUILD_DIR-sanitize}
DEMO_MODEL_DIR=${DEMO_MODEL_DIR:-$BUILD_DIR/models/demo}

BUILD_PACKAGES=(
  ca-certificates cmake g++ make pkg-config
  libtorch-dev libopenblas0-openmp   # without OpenBLAS, libtorch uses reference BLAS (~30x slower)
  libdnnl-dev                        # int8 calls the oneDNN that libtorch links (int8_matmul.h)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev nlohmann-json3-dev libutf8proc-dev libcpp-httplib-dev
  libboost-dev                       # Boost.Beast: the event-driven HTTP listener
  libcurl4-openssl-dev               # the Hub downloader (model_store/hub/http_client.h)
  libonig-dev                        # Oniguruma: byte-level BPE's regex pre-tokenizers
  libzip-dev                         # pytorch_model.bin: torch.save's zip archive
  libfp16-dev                        # half-precision multi-vectors (server/core/vector_encoding.h)
  libgoogle-perftools-dev            # tcmalloc under the server (see CMakeLists.txt)
  wamerican                          # the random-weight test models' vocabulary
  wordnet-base                       # the demo model's training text: general English (pinned by digest)
  manpages-dev                       # ... and technical text, the Linux man-pages (pinned by digest)
)
TEST_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-torch python3-numpy python3-grpcio python3-protobuf
  python3-sentencepiece              # trains the Unigram fixture (test tooling, its own process)
  prometheus                         # promtool and the real-Prometheus test
  openssl                            # certificates for the client TLS test
  docker.io mmdebstrap               # the container smoke test (local base image, no registry)
  clang libclang-rt-dev              # the sanitizer build and libFuzzer (tests/fuzz)
  docker-compose python3-yaml        # docker/compose.yaml and deploy/k8s checks
  python3-jsonschema                 # answers against docs/openapi.json (draft 2020-12)
  python3-scipy                      # token pooling's reference: PyLate's Ward linkage and fcluster
)

# Runs "$@" and says how long it took: the CI budget is spent by stage, and this shows where.
timed() {
  local start=$SECONDS
  "$@"
  echo "dev.sh: $1 took $((SECONDS - start)) s" >&2
}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing_packages() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

install_packages() {
  local missing
  missing=$(missing_packages "$@")
  [ -z "$missing" ] && return 0
  echo "dev.sh: installing:" $missing >&2
  as_root apt-get update -q
  # shellcheck disable=SC2086
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
}

# npm packages of DIR (its package.json), installed again only when package.json changed.
npm_setup() {
  local dir=$1
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package.json" -nt "$dir/node_modules" ]; then
    (cd "$dir" && npm install --no-audit --no-fund --no-package-lock)
    touch "$dir/node_modules"
  fi
}

# Node (Debian's nodejs unless a node exists) and the npm packages the tests use: the Node
# client, the offline Kubernetes schema checks, Hugging Face's tokenizers as a peer, the
# official openai SDK against /v1/embeddings, the official Hub client (@huggingface/hub)
# to compare caches with, a client generated from /openapi.json (openapi-typescript), and
# Swagger UI for the image's GET /docs.
# kubectl (for `kubectl kustomize`) from Debian's kubernetes-client unless one is on PATH.
node_setup() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    install_packages nodejs npm
  fi
  command -v kubectl >/dev/null || install_packages kubernetes-client
  npm_setup client/node
  npm_setup tests/e2e/k8s
  npm_setup tests/reference
  npm_setup tests/e2e/openai
  npm_setup tests/e2e/hub
  npm_setup tests/e2e/tei
  npm_setup tests/e2e/cohere
  npm_setup tests/e2e/openapi
  npm_setup docker/swagger-ui
}

# Extra arguments are CMake cache settings, applied on every call (a re-configure).
build() {
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] || [ $# -gt 0 ]; then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  fi
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

# Only what the suite runs under the sanitizers: unit and integration tests, the server they
# start, the fuzz targets. -O1 with line tables: readable reports at half the compile time of
# -O2 -g. The main build's ctest runs them (tests/CMakeLists.txt).
build_sanitized() {
  if [ ! -f "$SANITIZE_BUILD_DIR/CMakeCache.txt" ]; then
    CC=clang CXX=clang++ cmake -S . -B "$SANITIZE_BUILD_DIR" -DEMB_SANITIZE=ON \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only -DNDEBUG"
  fi
  cmake --build "$SANITIZE_BUILD_DIR" -j "$(nproc)" --target sanitizer_suite
}

# Built again only when its builder changed (about 25 s on 2 cores).
demo_model() {
  local builder="$BUILD_DIR/model_store/write_retrieval_demo_model"
  if [ ! -f "$DEMO_MODEL_DIR/model.safetensors" ] || [ "$builder" -nt "$DEMO_MODEL_DIR/model.safetensors" ]; then
    "$builder" --out="$DEMO_MODEL_DIR"
  fi
}

cmd=${1:-run}
shift || true
case "$cmd" in
  deps) install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" ;;
  build-deps) install_packages "${BUILD_PACKAGES[@]}" ;;
  build-sanitized) timed build_sanitized ;;  # `test` runs it beside the main tests
  docker)
    command -v npm >/dev/null || install_packages nodejs npm
    npm_setup docker/swagger-ui  # the image's GET /docs (docker/stage_runtime.sh)
    exec bash docker/smoke_test.sh "$@"
    ;;
  build) install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"; build ;;
  run)
    install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    build
    demo_model
    echo "dev.sh: serving the demo model (a small BERT built from WordNet and the man pages: good enough to try" \
         "retrieval, TempScale and calibration, not for production). Serve a real checkpoint" \
         "with --model=NAME=/path/to/dir, or a Hub model with --model=ORG/NAME[@REVISION]." >&2
    # Swagger UI at :8000/docs once npm has fetched it (./dev.sh test or docker does).
    swagger_ui=docker/swagger-ui/node_modules/swagger-ui-dist
    docs_flag=()
    [ -f "$swagger_ui/swagger-ui-bundle.js" ] && docs_flag=(--api-docs-dir="$swagger_ui")
    exec "$BUILD_DIR/server/embedding_server" --model="demo=$DEMO_MODEL_DIR" \
      --openai-listen=0.0.0.0:8000 "${docs_flag[@]}" "$@"
    ;;
  test)
    timed install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    timed node_setup
    timed build -DEMB_SANITIZED_BUILD_DIR="$PWD/$SANITIZE_BUILD_DIR"
    # The sanitized tree builds while the main tests run, at idle priority (SCHED_IDLE: it gets
    # only the CPU time they leave: servers waiting on clients, containers starting). In CI it
    # got through about a seventh of its 939 s of building during the main tests' 882 s.
    sanitize_log="$BUILD_DIR/sanitized-build.log"
    chrt --idle 0 "$PWD/dev.sh" build-sanitized >"$sanitize_log" 2>&1 &
    sanitize_pid=$!
    main_rc=0
    (cd "$BUILD_DIR" && ctest --output-on-failure -j 2 --label-exclude 'bench|sanitize|fuzz' "$@") || main_rc=$?
    if ! wait "$sanitize_pid"; then
      cat "$sanitize_log" >&2
      echo "dev.sh: the sanitized build failed (above; $sanitize_log)" >&2
      exit 1
    fi
    tail -n 1 "$sanitize_log" >&2  # its "took ... s"
    (cd "$BUILD_DIR" && ctest --output-on-failure -j 2 --label-regex 'sanitize|fuzz' "$@") || exit $?
    exit "$main_rc"
    ;;
  bench)
    # python3-onnx: tests/bench/quantize_dynamic.py writes onnxruntime's int8 peer model.
    install_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" python3-onnx
    node_setup
    # The onnxruntime-node peer; its CPU binary is inside the package (no download script).
    ONNXRUNTIME_NODE_INSTALL=skip npm_setup tests/bench
    build
    cd "$BUILD_DIR" && ctest --output-on-failure -L bench -V "$@"
    ;;
  *) echo "usage: $0 run|test|build|build-sanitized|deps|build-deps|bench|docker" >&2; exit 2 ;;
esac
