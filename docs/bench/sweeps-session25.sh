#!/usr/bin/env bash
# The acceptance's two sweeps on the current code (ci-clone), 3 min of warm-up each; sequential P50; idle; RSS.
set -u
O=${SWEEP_OUT:-/work/bench-s25}  # session 26: SWEEP_OUT=/work/bench-s26/sweep
cd /work/ci-clone
./csi up --work-dir /tmp/bench-up --free-ports --fresh > $O/up-sweep-real.log 2>&1 || { echo up failed; exit 1; }
{ echo "== real, $(git log --oneline -1 | cut -c1-60) $(date -u +%FT%TZ)"
  ./csi bench --work-dir /tmp/bench-up --rate 10 --duration 180s | grep -E 'achieved'
  ./csi bench --work-dir /tmp/bench-up --sweep
  echo "== RSS after the sweep (kB)"; while read n p; do echo "$n $(ps -o rss= -p $p)"; done < /tmp/bench-up/pids
} > $O/sweep-real.txt 2>&1
sleep 60; bash /work/shared/tools/idle-cpu /tmp/bench-up 60 > $O/idle.txt 2>&1
./csi bench --work-dir /tmp/bench-up --sequential > $O/sequential.txt 2>&1
./csi down --work-dir /tmp/bench-up > /dev/null 2>&1
./csi up --simulated-nodes 100 --work-dir /tmp/sim-up --free-ports --fresh > $O/up-sweep-sim.log 2>&1 || { echo sim up failed; exit 1; }
{ echo "== simulated 100 nodes, $(git log --oneline -1 | cut -c1-60) $(date -u +%FT%TZ)"
  ./csi bench --work-dir /tmp/sim-up --plugin simulated --rate 20 --duration 180s | grep -E 'achieved'
  ./csi bench --work-dir /tmp/sim-up --plugin simulated --sweep
  echo "== RSS after the sweep (kB)"; while read n p; do echo "$n $(ps -o rss= -p $p)"; done < /tmp/sim-up/pids
} > $O/sweep-sim.txt 2>&1
./csi down --work-dir /tmp/sim-up > /dev/null 2>&1
echo done
