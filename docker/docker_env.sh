# Sourced by the docker scripts: a Docker engine and a local Debian base image, with no
# registry. Starts dockerd by hand when none runs (these machines have no init system for it)
# and builds the base with mmdebstrap from Debian's own repositories.
BASE_IMAGE=${BASE_IMAGE:-embedding-debian-base:bookworm}

ensure_docker() {
  if ! docker info >/dev/null 2>&1; then
    # No iptables or bridge here: builds use --network host, containers --network none.
    nohup dockerd --iptables=false --bridge=none >/tmp/embedding-dockerd.log 2>&1 &
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /tmp/embedding-dockerd.log" >&2; return 1; }
  fi
}

ensure_base_image() {
  if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    mmdebstrap --variant=minbase --include=ca-certificates bookworm - | docker import - "$BASE_IMAGE"
  fi
}
