#!/usr/bin/env bash
# The memory of each main command on one session, in a fresh private store with the token cache
# warm, in count.sh's order: the peak heap (heaptrack: every allocation the process made, the
# mapped file not included) and the peak resident set (/usr/bin/time: heap + the mapped file's
# pages touched + the binary), each beside the file's size (docs/bench/notebook.md, "Heap and
# resident memory").
#
#   docs/bench/heap.sh SHAKE SESSION.jsonl WORKDIR     # WORKDIR is emptied first
set -euo pipefail
S=$1 F=$2 W=$3
rm -rf "$W" && mkdir -p "$W" && cp "$F" "$W/s.jsonl"
touch -d '-1 hour' "$W/s.jsonl" # as count.sh: a copy older than the store's racy window
export SHAKE_DIR=$W/store SHAKE_QUIET=1
size=$(stat -c %s "$F")
# One command twice on identical bytes and store: heaptrack's peak heap, then the process's
# peak RSS on its own (heaptrack's own memory would count in it). The file is copied back, and
# the store restored, between the two, so a writing command finds what it found the first time.
measure() {
  local name=$1 file=$2
  shift 2
  cp -a "$SHAKE_DIR" "$W/store.before" && cp -a "$file" "$W/file.before"
  heaptrack -o "$W/h" "$S" "$@" "$file" >/dev/null 2>&1
  local heap
  heap=$(heaptrack_print "$W"/h.zst 2>/dev/null | awk '/^peak heap memory consumption/ { print $NF }')
  rm -f "$W"/h.zst
  rm -rf "$SHAKE_DIR" && mv "$W/store.before" "$SHAKE_DIR" && mv "$W/file.before" "$file"
  local rss
  rss=$(/usr/bin/time -f %M "$S" "$@" "$file" 2>&1 >/dev/null | tail -1)
  awk -v n="$name" -v h="$heap" -v r="$rss" -v s="$size" 'BEGIN {
    u = substr(h, length(h)); v = substr(h, 1, length(h) - 1)
    m = (u == "G") ? v * 1024 : (u == "M") ? v : (u == "K") ? v / 1024 : h / 1048576
    printf "%-16s heap %7.1f MiB (%.2fx)  rss %7.1f MiB (%.2fx)\n", n, m, m * 1048576 / s, r / 1024, r * 1024 / s
  }'
}
"$S" import "$W/s.jsonl" >/dev/null
"$S" fold --dry-run "$W/s.jsonl" >/dev/null # warms the token cache
measure "project --json" "$W/s.jsonl" project --json
measure "fold --dry-run" "$W/s.jsonl" fold --dry-run
cp "$W/s.jsonl" "$W/f.jsonl" && touch -d '-1 hour' "$W/f.jsonl" && "$S" import "$W/f.jsonl" >/dev/null
measure fold "$W/f.jsonl" fold
measure status "$W/f.jsonl" status
measure log "$W/f.jsonl" log
measure undo "$W/f.jsonl" undo
