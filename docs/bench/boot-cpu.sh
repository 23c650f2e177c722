#!/usr/bin/env bash
# The CPU of one claim-service boot, measured alone on a running `./csi up --work-dir /tmp/upm` system (README "Tests",
# 2026-11-30): stops the running claim-service (SIGTERM), starts it again with the command line and environment it had
# (recorded once, before the first call, from /proc/<pid>/cmdline and /proc/<pid>/environ into claims.cmdline and
# claims.environ in the current directory; the environ holds the database password: chmod 600, never commit it),
# and prints the process's CPU when Quarkus logs "started in" and ten seconds later.
#   usage: boot-cpu.sh NAME [EXTRA_JVM_OPTIONS]      JAR=<dir> replaces /work/main/claim-service (an A build)
#                                                    CWD=<dir> starts it elsewhere than /tmp/upm
# The claim-service it restarts is the one listening on 8081 (quarkus.http.port in its recorded command line: up's).
# Interleave A and B calls (A B A B ...): one boot varies by about a second on this machine.
name=$1; extra=$2
old=$(pgrep -f "quarkus.http.port=8081" | grep -v $$ | head -1)
[ -n "$old" ] && kill "$old" && while kill -0 "$old" 2>/dev/null; do sleep 0.2; done
mapfile -d "" -t cmd < claims.cmdline
[ -n "${JAR:-}" ] && cmd=("${cmd[@]/\/work\/main\/claim-service/$JAR}")
mapfile -d '' -t envs < claims.environ
log=/tmp/upm/logs/claim-service.log; : > $log
( cd "${CWD:-/tmp/upm}" && exec env -i "${envs[@]}" "${cmd[0]}" $extra "${cmd[@]:1}" >> $log 2>&1 ) &
p=$!; hz=$(getconf CLK_TCK); t0=$(date +%s.%N)
until grep -q "started in" $log; do sleep 0.1; kill -0 $p || { echo died; tail $log; exit 1; }; done
c1=$(awk '{print $14+$15}' /proc/$p/stat); t1=$(date +%s.%N)
sleep 10; c2=$(awk '{print $14+$15}' /proc/$p/stat)
printf "%s started %.1f s wall, cpu %.2f s, +10s %.2f s\n" "$name" "$(echo "$t1-$t0"|bc)" "$(echo "$c1/$hz"|bc -l)" "$(echo "$c2/$hz"|bc -l)"
