#!/usr/bin/env bash
# idle CPU per process of one ./csi up work dir (% of one core): its pids file plus its own PostgreSQL server
# processes (the postmaster whose -D is under WORKDIR, and its children). usage: idle-cpu2.sh WORKDIR SECONDS
w=$(cd "$1" && pwd); n=${2:-60}; hz=$(getconf CLK_TCK)
list() {
  awk '{print $2, $1}' "$w/pids"
  pm=$(ps -eo pid=,args= | awk -v d="$w/postgres/data" '$2 ~ /bin\/postgres$/ && index($0, d) {print $1}')
  [ -n "$pm" ] && { echo "$pm postgresql-server"; ps -o pid= --ppid "$pm" | awk '{print $1, "postgresql-server"}'; }
}
snap() { list | while read -r p name; do t=$(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null) && echo "$p $name $t"; done; }
snap > /tmp/idle-a.$$; sleep "$n"; snap > /tmp/idle-b.$$
awk -v n="$n" -v hz="$hz" 'NR==FNR {a[$1]=$3; next} ($1 in a) {d[$2]+=$3-a[$1]} END {for (k in d) {printf "%-28s %6.2f\n", k, 100*d[k]/hz/n; t+=d[k]} printf "%-28s %6.2f\n", "total", 100*t/hz/n}' /tmp/idle-a.$$ /tmp/idle-b.$$ | sort -k2 -n -r
rm -f /tmp/idle-a.$$ /tmp/idle-b.$$
