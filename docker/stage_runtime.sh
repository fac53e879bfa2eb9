#!/usr/bin/env bash
# Lays out what the runtime image carries, from a build directory: bin/ (the server and
# embedctl), lib/ (the shared libraries `ldd` resolves for them, OpenBLAS included, less glibc
# and the C++ runtime the base image already has), models/demo (written by the build's demo
# writer) and share/swagger-ui (Swagger UI's two files for GET /docs, from npm: dev.sh's
# node_setup installs them in docker/swagger-ui). Run inside the image's build stage, or on a host whose build is of the same Debian
# (the smoke test's prebuilt image).
#   docker/stage_runtime.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$1 out=$2
mkdir -p "$out/bin" "$out/lib" "$out/models"
cp "$build/server/embedding_server" "$build/client/embedctl" "$out/bin/"
ldd "$out/bin/embedding_server" "$out/bin/embedctl" \
  | awk '$3 ~ /^\// {print $3}' | sort -u \
  | grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+)\.so' \
  | xargs -I{} cp -L {} "$out/lib/"
"$build/model_store/write_retrieval_demo_model" --out="$out/models/demo" >/dev/null
swagger_ui="$(dirname "$0")/swagger-ui/node_modules/swagger-ui-dist"
if [ ! -f "$swagger_ui/swagger-ui-bundle.js" ]; then
  echo "stage_runtime.sh: no $swagger_ui; run: (cd docker/swagger-ui && npm install)" >&2
  exit 1
fi
mkdir -p "$out/share/swagger-ui"
cp "$swagger_ui/swagger-ui-bundle.js" "$swagger_ui/swagger-ui.css" "$out/share/swagger-ui/"
