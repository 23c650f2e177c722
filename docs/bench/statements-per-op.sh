#!/usr/bin/env bash
# statements per operation on tree $1 label $2: up --fresh, log_statement=all (collector on, postgres restarted),
# 60 s warm-up at 20 ops/s, then the statements of a 30 s run at 20 ops/s
here=$(cd "$(dirname "$0")" && pwd)
cd "$1"
./csi up --fresh > /tmp/stmt-up.log 2>&1 || { echo up failed; exit 1; }
port=$(grep ^port= .csi/up/postgres/ports.properties | cut -d= -f2)
P="/usr/lib/postgresql/15/bin/psql -h 127.0.0.1 -p $port -U postgres -d postgres -qAt"
$P -c "ALTER SYSTEM SET log_statement='all'" -c "ALTER SYSTEM SET logging_collector=on"
./csi restart postgres > /tmp/stmt-restart.log 2>&1
sleep 10
./csi bench --rate 20 --duration 60s > /dev/null 2>&1
d=.csi/up/postgres/data/log; declare -A before; for f in $d/*; do before[$f]=$(wc -l < $f); done
./csi bench --rate 20 --duration 30s > /tmp/stmt-bench-$2.txt 2>&1
: > /tmp/stmt-log-$2.txt
for f in $d/*; do tail -n +$(( ${before[$f]:-0} + 1 )) $f >> /tmp/stmt-log-$2.txt; done
./csi down > /dev/null 2>&1
grep achieved /tmp/stmt-bench-$2.txt
python3 "$here/statements-per-op.py" /tmp/stmt-log-$2.txt
