#!/usr/bin/env bash
# Session 13 A/B of one tree (issue 36 item 1): up --fresh, 60 s warm-up, idle 60 s, 10 ops/s for 60 s,
# 50 sequential cycles, 20 ops/s for 60 s, down. Usage: docs/bench/ab-s13.sh <packaged tree> <label>
set -u
cd "$1"; label=$2; mkdir -p /work/bench-out; out=/work/bench-out/s13-$label-$(date +%H%M).txt
./csi up --fresh > /work/bench-out/up-$label.log 2>&1 || { echo "up failed"; tail -20 /work/bench-out/up-$label.log; ./csi down; exit 1; }
sleep 60
{ echo "== $label $(git log --oneline -1) $(date -u +%FT%TZ)"; echo "-- idle (docs/bench/idle-cpu-own.sh .csi/up 60)"; docs/bench/idle-cpu-own.sh .csi/up 60 2>/dev/null || /work/idle-cpu2.sh .csi/up 60;
  echo "-- ./csi bench --rate 10 --duration 60s"; ./csi bench --rate 10 --duration 60s;
  echo "-- ./csi bench --sequential --cycles 50"; ./csi bench --sequential --cycles 50;
  echo "-- ./csi bench --rate 20 --duration 60s"; ./csi bench --rate 20 --duration 60s; } > "$out" 2>&1
./csi down > /dev/null 2>&1
cat "$out"
