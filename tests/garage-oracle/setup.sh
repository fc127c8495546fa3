#!/usr/bin/env bash
# Installs Garage 2.5.0 (Deuxfleurs, AGPL-3.0), the S3-compatible distributed object store the
# remote tests push to and fetch from (tests/cli/remote_garage.rs, tests/cli/fault_remote.rs),
# from crates.io into ./root. It runs as a separate process on loopback, never linked into
# shake. Built only when the binary is not there: the build takes about 10 minutes of CPU.
set -euo pipefail
cd "$(dirname "$0")"
if [ -x root/bin/garage ] && root/bin/garage --version 2>/dev/null | grep -q '2\.5\.0'; then
  exit 0
fi
cargo install garage --version 2.5.0 --locked --root root
root/bin/garage --version
