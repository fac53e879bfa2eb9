#!/usr/bin/env bash
# The GPU command: builds this tree against the CUDA LibTorch inside a machine's Python torch,
# with every other dependency taken from the Debian 12 .debs in .gpu/debs (tests/gpu/fetch_debs.sh)
# unpacked under $DEPS, never into /; then runs what can be checked there and writes a summary.
#
#   tests/gpu/fetch_debs.sh                                  # here, on Debian 12 with apt
#   OUT=/tmp/gpu-out bash tests/gpu/build_and_check.sh        # there, in the checkout
#
# Checks, in one run: the server's answer to --device=cuda and --device=auto, the demo model
# served over HTTP and gRPC, every family on the GPU against its torch.nn reference and bf16
# against fp32 (tests/gpu/reference_checks.py), the bare forward pass (forward_bench) and
# PyTorch's own figures on the same GPU and shapes (tests/gpu/pytorch_peer_bench.py,
# transformers with SDPA). Environment: OUT (summary, logs), DEPS (prefix), BUILD,
# TORCH_PREFIX (LibTorch's CMake prefix; default: python3's torch), DRY=1 (stop after
# configure), JOBS, REFERENCE_ONLY and REFERENCE_TIMEOUT (the reference checks, run last).
set -uo pipefail
T0=$SECONDS
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-/tmp/gpu-out}
DEPS=${DEPS:-/tmp/emb-deps}
BUILD=${BUILD:-/tmp/emb-build}
JOBS=${JOBS:-$(nproc)}
ARCH=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
say() { echo "[$((SECONDS - T0)) s] $*" | tee -a "$SUMMARY"; }

# ---- the machine --------------------------------------------------------------------------------
TORCH_PREFIX=${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)}
{
  uname -srm; nproc
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -4
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "TORCH_PREFIX=$TORCH_PREFIX"
} >"$OUT/machine.txt" 2>&1
say "machine: $(tr '\n' ';' <"$OUT/machine.txt")"
[ -n "$TORCH_PREFIX" ] || { say "no LibTorch: set TORCH_PREFIX"; exit 1; }

# ---- the carried packages, under $DEPS ------------------------------------------------------------
rm -rf "$DEPS" && mkdir -p "$DEPS"
n=0
for deb in "$SRC"/.gpu/debs/*.deb; do
  [ -e "$deb" ] || { say "no .gpu/debs: run tests/gpu/fetch_debs.sh first"; exit 1; }
  dpkg -x "$deb" "$DEPS" && n=$((n + 1))
done
L=$DEPS/usr/lib/$ARCH
# Runtime libraries the machine has itself stay the machine's: nothing it runs (cmake, python)
# should load Debian's zlib, OpenSSL or curl through LD_LIBRARY_PATH.
for so in libz.so.1 libssl.so.3 libcrypto.so.3 libcurl.so.4 libbrotlicommon.so.1 \
          libbrotlidec.so.1 libbrotlienc.so.1 libOpenCL.so.1; do
  system=$(ldconfig -p | awk -v s="$so" '$1 == s {print $NF; exit}')
  [ -n "$system" ] && rm -f "$L/$so"* "$DEPS/lib/$ARCH/$so"*
done
# Absolute symlinks point into $DEPS; a -dev package's .so whose runtime was removed above
# points at the machine's library of that soname.
while IFS= read -r link; do
  target=$(readlink "$link")
  if [ "${target#/}" != "$target" ] && [ -e "$DEPS$target" ]; then ln -sfn "$DEPS$target" "$link"; continue; fi
  [ -e "$link" ] && continue
  soname=$(basename "$target" | sed -E 's/(\.so\.[0-9]+).*/\1/')
  system=$(ldconfig -p | awk -v s="$soname" '$1 == s {print $NF; exit}')
  [ -n "$system" ] && ln -sfn "$system" "$link"
done < <(find "$DEPS" -type l)
for pc in "$L"/pkgconfig/*.pc "$DEPS"/usr/share/pkgconfig/*.pc; do
  [ -e "$pc" ] && sed -i -E "s#(=|-I|-L)/usr([/ ]|\$)#\1$DEPS/usr\2#g" "$pc"
done
# A pip LibTorch carries oneDNN 3.x headers among its -isystem directories; the kernels use
# Debian's 2.6 API, so its headers get a folder of their own (GCC ignores an -I that is also
# an -isystem directory).
mkdir -p "$DEPS/dnnl2/include" && cp -a "$DEPS/usr/include/oneapi" "$DEPS/dnnl2/include/"
export LD_LIBRARY_PATH="$L:$DEPS/lib/$ARCH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PKG_CONFIG_LIBDIR="$L/pkgconfig:$DEPS/usr/share/pkgconfig"
say "unpacked $n packages under $DEPS ($(du -sh "$DEPS" | cut -f1))"

# ---- configure and build ------------------------------------------------------------------------------
GENERATOR="Unix Makefiles"; command -v ninja >/dev/null && GENERATOR=Ninja
PKG_CONFIG=$(command -v pkg-config || echo "$DEPS/usr/bin/pkgconf")
cmake -S "$SRC" -B "$BUILD" -G "$GENERATOR" -DCMAKE_BUILD_TYPE=Release -DEMB_BUILD_TESTS=OFF \
  -DEMB_BUILD_GPU_TOOLS=ON \
  "-DCMAKE_PREFIX_PATH=$DEPS/usr;$L/cmake;$TORCH_PREFIX" \
  "-DCMAKE_CXX_FLAGS=-isystem $DEPS/usr/include/$ARCH -isystem $DEPS/usr/include" \
  "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$L:$DEPS/lib/$ARCH" \
  "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,-rpath-link,$L:$DEPS/lib/$ARCH" \
  "-DPKG_CONFIG_EXECUTABLE=$PKG_CONFIG" \
  "-DProtobuf_INCLUDE_DIR=$DEPS/usr/include" "-DProtobuf_LIBRARY=$L/libprotobuf.so" \
  "-DProtobuf_PROTOC_EXECUTABLE=$DEPS/usr/bin/protoc" \
  "-DOPENSSL_ROOT_DIR=$DEPS/usr" "-DCURL_INCLUDE_DIR=$DEPS/usr/include/$ARCH" \
  -DCURL_NO_CURL_CMAKE=ON "-DCURL_LIBRARY=$L/libcurl.so" \
  "-DBoost_DIR=$L/cmake/Boost-1.74.0" -DBoost_NO_SYSTEM_PATHS=ON \
  "-DDNNL_LIBRARY=$L/libdnnl.so" "-DDNNL_INCLUDE_DIR=$DEPS/dnnl2/include" \
  >"$OUT/configure.log" 2>&1 || { say "configure failed:"; grep -A8 'CMake Error' "$OUT/configure.log" | head -40 | tee -a "$SUMMARY"; exit 1; }
say "configured: $(grep -m1 -E 'LibTorch .* (with CUDA|CPU only)' "$OUT/configure.log")"
[ "${DRY:-0}" = 1 ] && { say "DRY=1: stopping after configure"; exit 0; }
if ! cmake --build "$BUILD" -j "$JOBS" \
    --target embedding_server embedctl write_demo_model encode_ids forward_bench \
    >"$OUT/build.log" 2>&1; then
  say "build failed:"; grep -E 'error:|undefined reference' "$OUT/build.log" | head -30 | tee -a "$SUMMARY"; exit 1
fi
say "built embedding_server, embedctl, write_demo_model, encode_ids, forward_bench"

# ---- what the server says about the device -------------------------------------------------------
SERVER=$BUILD/server/embedding_server
# The random-weight demo BERT from the carried word list (the retrieval demo's corpora are
# pinned to Debian's own WordNet and man pages).
"$BUILD/model_store/write_demo_model" --out=/tmp/emb-demo \
  --word_list="$DEPS/usr/share/dict/american-english" >"$OUT/demo_model.log" 2>&1
for device in cuda auto; do
  timeout 60 "$SERVER" --model=demo=/tmp/emb-demo --device=$device --listen=127.0.0.1:0 \
    --http-listen=127.0.0.1:0 --model-poll-interval-s=0 >"$OUT/server_$device.log" 2>&1 &
  pid=$!; sleep 15; kill "$pid" 2>/dev/null; wait "$pid"; rc=$?
  say "--device=$device: exit $rc; $(grep -m1 -E 'device|--device' "$OUT/server_$device.log")"
done

# ---- the demo model served (on the device auto chose) -----------------------------------------------
"$SERVER" --model=demo=/tmp/emb-demo --listen=127.0.0.1:50151 --http-listen=127.0.0.1:18080 \
  --openai-listen=127.0.0.1:18000 --model-poll-interval-s=0 >"$OUT/server.log" 2>&1 &
pid=$!
python3 - >>"$SUMMARY" 2>&1 <<'PY'
import json, time, urllib.request
deadline = time.time() + 60
while time.time() < deadline:
    try:
        if urllib.request.urlopen("http://127.0.0.1:18080/readyz", timeout=2).read().strip() == b"SERVING":
            break
    except OSError:
        time.sleep(0.5)
body = json.dumps({"model": "demo", "input": ["hello world", "a longer second input"]}).encode()
request = urllib.request.Request("http://127.0.0.1:18000/v1/embeddings", body,
                                 {"Content-Type": "application/json"})
answer = json.loads(urllib.request.urlopen(request, timeout=30).read())
print("served:", len(answer["data"]), "vectors of", len(answer["data"][0]["embedding"]))
for model in json.loads(urllib.request.urlopen("http://127.0.0.1:18000/v1/models").read())["data"]:
    print("model", model["id"], model["dtype"], "batch_invariance_bound",
          model.get("batch_invariance_bound", "not measured (the CPU)"))
metrics = urllib.request.urlopen("http://127.0.0.1:18080/metrics").read().decode()
print("\n".join(l for l in metrics.splitlines() if l.startswith("embedding_device_")))
PY
"$BUILD/client/embedctl" --address=127.0.0.1:50151 models >>"$SUMMARY" 2>&1
kill "$pid"; wait "$pid"

# ---- the bare forward, then PyTorch on the same GPU with the same shapes ---------------------------------
WORDS=--word_list="$DEPS/usr/share/dict/american-english"
W=$BUILD/model_store/write_demo_model
"$W" --out=/tmp/emb-bert-base --layers=12 --hidden=768 --heads=12 --max_positions=512 \
  --vocab_size=30522 "$WORDS" >/dev/null 2>&1
"$W" --out=/tmp/emb-modernbert-base --architecture=modernbert --layers=22 --hidden=768 --heads=12 \
  --intermediate=1152 --max_positions=8192 --vocab_size=30522 "$WORDS" >/dev/null 2>&1
"$W" --out=/tmp/emb-qwen3-0.6b --architecture=qwen3 --layers=28 --hidden=1024 --heads=16 \
  --kv_heads=8 --head_dim=128 --intermediate=3072 --max_positions=32768 --vocab_size=32000 \
  --pooling=last_token "$WORDS" >/dev/null 2>&1
bench() {  # MODEL DTYPE BATCH TOKENS
  timeout 300 "$BUILD/tests/gpu/forward_bench" "$1" --device=cuda --dtype="$2" --batch="$3" \
    --tokens="$4" --passes=5 >>"$SUMMARY" 2>&1 || say "forward_bench $*: failed"
}
bench /tmp/emb-bert-base bf16 128 512
bench /tmp/emb-bert-base fp32 128 512
bench /tmp/emb-bert-base fp16 128 512
bench /tmp/emb-bert-base bf16 1 128
bench /tmp/emb-modernbert-base bf16 8 8192
bench /tmp/emb-qwen3-0.6b bf16 16 2048
bench /tmp/emb-qwen3-0.6b bf16 1 32768
timeout 300 python3 "$SRC/tests/gpu/pytorch_peer_bench.py" --json="$OUT/pytorch_peer.json" \
  >>"$SUMMARY" 2>&1 || say "pytorch_peer_bench.py failed (see summary.txt)"
say "figures done"

# ---- every family on the GPU against its torch.nn reference (fp32), and bf16 against fp32 ----------
# Last, bounded: a session's device time is short. REFERENCE_ONLY=name,... picks checks.
timeout "${REFERENCE_TIMEOUT:-300}" python3 "$SRC/tests/gpu/reference_checks.py" "$BUILD" \
  /tmp/emb-ref-models --device=cuda --only="${REFERENCE_ONLY:-}" >>"$SUMMARY" 2>&1 \
  || say "reference_checks.py: failed or cut short (see summary.txt)"
say "done"
