#!/usr/bin/env bash
# shake grep and shake scan beside ripgrep over the same bytes (docs/benchmarks.md, "Search").
# Makes COPIES copies of every real session in tests/fixtures/ (30 MB each time: 34 copies is
# about 1 GB), imports them into a fresh store (forks and copies share their objects, so the
# store stays small, but every copy is a session of its own and is searched whole), then times
# each search: shake over the store, rg over the session files themselves (the host's files read
# directly), cold caches aside (everything is in the page cache: /dev/shm).
# Usage: docs/bench/grep.sh [COPIES] (from the repository's root, after cargo build --release).
set -euo pipefail
COPIES=${1:-34}
SHAKE=${SHAKE:-$PWD/target/release/shake}
B=${BENCH_DIR:-/dev/shm/shake-grep-bench}
rm -rf "$B" && mkdir -p "$B/files"
for n in $(seq -w 1 "$COPIES"); do
  (cd tests/fixtures && find . -name '*.jsonl' | while read -r f; do
    mkdir -p "$B/files/m$n/$(dirname "$f")" && cp "$f" "$B/files/m$n/$(dirname "$f")/"; done)
done
export SHAKE_DIR=$B/store NO_COLOR=1
find "$B/files" -name '*.jsonl' -print0 | xargs -0 -n 200 "$SHAKE" import >/dev/null 2>&1 || true
echo "files: $(find "$B/files" -name '*.jsonl' | wc -l), $(du -sh "$B/files" | cut -f1); store: $(du -sh "$B/store" | cut -f1)"
t() { local what=$1; shift; /usr/bin/time -f "$what: %e s wall, %U+%S s CPU, %M KB" "$@" >/dev/null || true; }
for pat in 'nonexistent-shake-dir' '(?i)permission denied' 'fn [a-z_]+\('; do
  echo "== $pat"
  t "cat (read the files)" sh -c "cat \$(find $B/files -name '*.jsonl') > /dev/null"
  t "rg (2 threads)" rg -e "$pat" "$B/files"
  t "rg -j1" rg -j1 -e "$pat" "$B/files"
  t "shake grep" "$SHAKE" grep -- "$pat"
  t "shake grep --json" "$SHAKE" grep --json -- "$pat"
done
echo "== scan"
t "shake scan" "$SHAKE" scan
