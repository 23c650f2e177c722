#!/usr/bin/env bash
# usage: rss-run.sh <tree> <label> [up args...]; env passes through (CSI_JVM_OPTIONS etc.)
# Session 27 (issue 36, memory): up, 60 s at 10 ops/s, 60 s at 30 ops/s, then each service's RSS and loaded classes.
cd "$1"; label=$2; shift 2
out=${RSS_OUT:-/tmp}/rss-$label.txt
./csi down >/dev/null 2>&1
./csi up "$@" > ${RSS_OUT:-/tmp}/up-$label.log 2>&1 || { echo up failed; tail -5 ${RSS_OUT:-/tmp}/up-$label.log; exit 1; }
{ echo "== $label CSI_JVM_OPTIONS=$CSI_JVM_OPTIONS $(date -u +%T)"
  ./csi bench --rate 10 --duration 60s | grep achieved
  ./csi bench --rate 30 --duration 60s | sed -n '/achieved/p;/PROCESS/,/^total/p'
  for p in $(pgrep -f quarkus-run.jar); do n=$(tr '\0' ' ' < /proc/$p/cmdline | grep -oE '(claim-service|plugin-registry-service|node-mount-worker)[^ ]*quarkus-run' | head -1); 
    c=$(/usr/lib/jvm/temurin-25-jdk-amd64/bin/jcmd $p PerfCounter.print 2>/dev/null | grep -E 'java.cls.loadedClasses|sun.cls.sharedLoadedClasses' | tr '\n' ' ');
    echo "$n rss=$(grep VmRSS /proc/$p/status | awk '{print $2}') $c"; done
} > $out 2>&1
cat $out
