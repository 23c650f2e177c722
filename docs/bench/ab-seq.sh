#!/usr/bin/env bash
# up --fresh; 90 s at 10 ops/s; 200 sequential cycles; down. Usage: ab-seq.sh <tree> <label>
set -u
cd "$1"; label=$2; mkdir -p "${CSI_BENCH_OUT:-/tmp/bench-out}"; out=${CSI_BENCH_OUT:-/tmp/bench-out}/seq-$label-$(date +%H%M).txt
./csi up --fresh > ${CSI_BENCH_OUT:-/tmp/bench-out}/up-$label.log 2>&1 || { echo "up failed"; ./csi down; exit 1; }
{ echo "== $label $(git log --oneline -1 | cut -c1-80) $(date -u +%FT%TZ)"
  ./csi bench --rate 10 --duration 90s | grep -E 'achieved'
  ./csi bench --sequential --cycles 200; } > "$out" 2>&1
./csi down > /dev/null 2>&1
cat "$out"
