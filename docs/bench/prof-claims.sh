#!/usr/bin/env bash
# prof-claims.sh <tree> <label>: up --fresh, 90 s at 10 ops/s, then JFR of claim-service for 50 s during 60 s at 20 ops/s
set -u
cd "$1"; label=$2
./csi up --fresh > ${CSI_BENCH_OUT:-/tmp/bench-out}/up-prof-$label.log 2>&1 || { echo up failed; ./csi down; exit 1; }
./csi bench --rate 10 --duration 90s | grep achieved
pid=$(pgrep -f "claim-service.*quarkus-run.jar|quarkus-run.jar.*claim-service" | head -1)
[ -z "$pid" ] && pid=$(for p in $(pgrep java); do tr '\0' ' ' < /proc/$p/cmdline | grep -q claim-service && echo $p; done | head -1)
echo "claim-service pid $pid"
( sleep 5; /usr/lib/jvm/temurin-25-jdk-amd64/bin/jcmd $pid JFR.start name=p settings=profile 'jdk.ExecutionSample#period=2ms' duration=50s filename=${CSI_BENCH_OUT:-/tmp/bench-out}/cs-$label.jfr > /dev/null ) &
./csi bench --rate 20 --duration 60s | grep -E "claim-service  |^total|claim → ready"
sleep 2
./csi down > /dev/null 2>&1
ls -la ${CSI_BENCH_OUT:-/tmp/bench-out}/cs-$label.jfr
