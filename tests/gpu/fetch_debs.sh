#!/usr/bin/env bash
# Downloads the Debian 12 packages of carried_debs.txt into .gpu/debs (ignored by git, carried
# to the GPU machine by the device tool's `carry`). Run on a Debian 12 machine with apt; the
# files already there are kept.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mkdir -p .gpu/debs
cd .gpu/debs
# shellcheck disable=SC2046
apt-get download $(grep -v '^#' ../../tests/gpu/carried_debs.txt) >/dev/null
echo "fetch_debs.sh: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1) in .gpu/debs"
