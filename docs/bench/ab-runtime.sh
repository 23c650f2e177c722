#!/usr/bin/env bash
# Issue 36 item 5 (runtime by measurement): one run of one JVM configuration, after a 3-minute warm-up under load.
# up --fresh; 180 s at 10 ops/s (JIT warm-up); 60 s idle (../shared/tools/idle-cpu); 50 sequential cycles;
# 20 ops/s for 60 s; down. The configuration comes from the environment (JAVA_HOME for the JDK of every JVM
# `./csi` starts, CSI_SERVICE_JAVA_HOME, CSI_JVM_OPTIONS). Usage: docs/bench/ab-runtime.sh <tree> <label>
set -u
cd "$1"; label=$2; mkdir -p /work/bench-out; out=/work/bench-out/runtime-$label-$(date +%H%M).txt
./csi up --fresh > /work/bench-out/up-$label.log 2>&1 || { echo "up failed"; tail -20 /work/bench-out/up-$label.log; ./csi down; exit 1; }
{ echo "== $label $(git log --oneline -1) $(date -u +%FT%TZ)"
  echo "JAVA_HOME=${JAVA_HOME:-} CSI_SERVICE_JAVA_HOME=${CSI_SERVICE_JAVA_HOME:-} CSI_JVM_OPTIONS=${CSI_JVM_OPTIONS:-}"
  echo "-- warm-up: ./csi bench --rate 10 --duration 180s"; ./csi bench --rate 10 --duration 180s | grep -E 'achieved|ms/op|CPU' | head -5
  sleep 20
  echo "-- idle (idle-cpu .csi/up 60)"; /work/shared/tools/idle-cpu .csi/up 60 2>/dev/null || docs/bench/idle-cpu-own.sh .csi/up 60
  echo "-- ./csi bench --sequential --cycles 50"; ./csi bench --sequential --cycles 50
  echo "-- ./csi bench --rate 20 --duration 60s"; ./csi bench --rate 20 --duration 60s; } > "$out" 2>&1
./csi down > /dev/null 2>&1
cat "$out"
