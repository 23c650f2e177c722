#!/usr/bin/env bash
# A/B bench of one tree: up --fresh, 60 s warm-up, idle 60 s, bench 20/s 60 s, down
set -u
cd "$1"; label=$2; mkdir -p /work/bench-out; out=/work/bench-out/ab-$label-$(date +%H%M).txt
./csi up --fresh > /work/bench-out/up-$label.log 2>&1 || { echo "up failed"; tail -20 /work/bench-out/up-$label.log; ./csi down; exit 1; }
sleep 60
{ echo "== $label $(git log --oneline -1) $(date -u +%FT%TZ)"; echo "-- idle (docs/bench/idle-cpu-own.sh .csi/up 60)"; /work/idle-cpu2.sh .csi/up 60;
  echo "-- ./csi bench --rate 20 --duration 60s"; ./csi bench --rate 20 --duration 60s; } > "$out" 2>&1
./csi down > /dev/null 2>&1
cat "$out"
