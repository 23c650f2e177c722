#!/usr/bin/env bash
# prof-all.sh <tree> <label>: up --fresh, 150 s at 10 ops/s, then JFR (2 ms sampling, 50 s) of claim-service, node-1's
# worker, the registry and Kafka during 60 s at 20 ops/s; then down. Files: $CSI_BENCH_OUT/<process>-<label>.jfr
set -u
cd "$1"; label=$2; out=${CSI_BENCH_OUT:-/tmp/bench-out}; mkdir -p "$out"
./csi up --fresh > "$out/up-prof-$label.log" 2>&1 || { echo up failed; ./csi down; exit 1; }
./csi bench --rate 10 --duration 150s | grep achieved
pidof() { for p in $(pgrep java); do tr '\0' ' ' < /proc/$p/cmdline | grep -q -- "$1" && echo $p; done | head -1; }
for name in claim-service node-mount-worker-node-1 plugin-registry-service KafkaMain; do
  pid=$(pidof "$name"); 
  [ -z "$pid" ] && { echo "no pid for $name"; continue; }
  echo "$name pid $pid"
  ( sleep 5; /usr/lib/jvm/temurin-25-jdk-amd64/bin/jcmd $pid JFR.start name=p settings=profile 'jdk.ExecutionSample#period=2ms' \
      duration=50s filename="$out/$name-$label.jfr" > /dev/null ) &
done
./csi bench --rate 20 --duration 60s
sleep 2
./csi down > /dev/null 2>&1
ls -la "$out"/*-$label.jfr
