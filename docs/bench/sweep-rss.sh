#!/usr/bin/env bash
# sweep-rss.sh <tree> <label>: up, 60 s at 10 ops/s, the sweep, then each service's RSS (ps)
cd "$1"; ./csi down >/dev/null 2>&1; ./csi up > ${RSS_OUT:-/tmp}/up-$2.log 2>&1 || exit 1
{ echo "== $2 $(git log --oneline -1) $(date -u +%T)"
  ./csi bench --rate 10 --duration 60s | grep achieved
  ./csi bench --sweep 2>&1 | grep -vE "^\s*$" | tail -25
  for p in $(pgrep -f quarkus-run.jar); do n=$(tr '\0' ' ' < /proc/$p/cmdline | grep -oE '(claim-service|plugin-registry-service|node-mount-worker)' | head -1); echo "$n rss_kb=$(grep VmRSS /proc/$p/status | awk '{print $2}')"; done
} > ${RSS_OUT:-/tmp}/sweep-$2.txt 2>&1
./csi down >/dev/null 2>&1
