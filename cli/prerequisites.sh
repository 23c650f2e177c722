#!/usr/bin/env bash
# The tools each ./csi command needs from the machine, and the Debian package of each: the one list (issue 35).
#
#   cli/prerequisites.sh [--install] WHAT...
#
# WHAT: a command (test, up, demo, chaos, bench), a group (root, java, jdk, mounts, partitions, compose, browser, python,
# librdkafka)
# or a tool name. Prints nothing and exits 0 when everything is there; else names each missing tool with its package
# and the apt-get command, and exits 1. --install (root with apt-get only): installs the missing packages first, then
# checks again. Runs in well under a second; nothing here needs the Java build.
set -uo pipefail

# tool -> Debian package (bookworm)
declare -A PACKAGE=(
  [java]=openjdk-17-jdk-headless [javac]=openjdk-17-jdk-headless
  [mount]=mount [umount]=mount
  [nsenter]=util-linux [setsid]=util-linux [flock]=util-linux
  [kill]=procps
  [ip]=iproute2 [nft]=nftables
  [docker-compose]=docker-compose
  [chromium]=chromium [chromedriver]=chromium-driver
  [python3]=python3 [python3-cryptography]=python3-cryptography [python3-confluent-kafka]=python3-confluent-kafka
  [kcat]=kcat
)
# tool -> what needs it
declare -A WHY=(
  [java]="Java 17 or newer runs the CLI and the services"
  [javac]="the JDK's compiler builds the modules (./mvnw)"
  [mount]="the node worker's and the hostpath plugin's real bind mounts"
  [umount]="the unmounts of the workers, the fence guard and the teardowns"
  [nsenter]="the fencing faults run node-1 in a network namespace"
  [setsid]="the worker starts its fence guard in a session of its own"
  [flock]="the fence guard's lock"
  [kill]="the CLI and the tests signal processes: kill -9, SIGSTOP"
  [ip]="the fencing faults' network namespace and veth pair"
  [nft]="the fencing faults' network partitions are nftables rules"
  [docker-compose]="deploy-check reads docker-compose.yml as Compose does, no engine needed"
  [chromium]="the status page's browser test, system-it StatusPageIT"
  [chromedriver]="the status page's browser test drives Chromium with it"
  [python3]="the example scheduler in Python (examples/python-scheduler): Debian's /usr/bin/python3"
  [python3-cryptography]="the Python example signs and seals with it (events-schema PythonExampleVectorsTest)"
  [python3-confluent-kafka]="the Python example's Kafka client (librdkafka; cli PythonSchedulerIT)"
  [kcat]="librdkafka's command-line client: checks a client-certificate login as a non-JVM client does"
)

# what each command or group needs (a group name expands, anything else is a tool)
declare -A NEEDS=(
  [java]="java"
  [jdk]="java javac"
  [mounts]="root mount umount setsid flock kill"
  [partitions]="root ip nft nsenter"
  [compose]="docker-compose"
  [browser]="chromium chromedriver"
  [python]="python3 python3-cryptography python3-confluent-kafka"
  # a client that is not ours (issue 33): librdkafka through Debian's python3 and kcat
  [librdkafka]="kcat python"
  # ./mvnw -B verify: every test, the ITs of cli (real systems, partitions, the browser) and deploy-check
  [test]="jdk mounts partitions compose browser python librdkafka"
  # up and demo run real workers and plugins (bind mounts); up --simulated-nodes passes "java" only
  [up]="java mounts"
  [demo]="java mounts"
  # chaos: the system's needs; Chaos.java asks for "partitions" too when a fault of the run cuts the network
  [chaos]="java mounts"
  # bench measures the system `up` left running: the CLI's JVM only
  [bench]="java"
)

install=false
if [[ "${1:-}" == "--install" ]]; then
  install=true
  shift
fi
if (( $# == 0 )); then
  echo "usage: cli/prerequisites.sh [--install] test|up|demo|chaos|bench|GROUP|TOOL..." >&2
  exit 2
fi

declare -A seen=()
tools=()
expand() {
  local item
  for item in "$@"; do
    if [[ -n "${NEEDS[$item]:-}" && "${NEEDS[$item]}" != "$item" ]]; then
      # shellcheck disable=SC2086
      expand ${NEEDS[$item]}
    elif [[ -z "${seen[$item]:-}" ]]; then
      seen[$item]=1
      tools+=("$item")
    fi
  done
}
expand "$@"

java_bin() {
  if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/$1" ]]; then
    echo "$JAVA_HOME/bin/$1"
  else
    command -v "$1" 2>/dev/null
  fi
}

# Prints why the tool is not usable (empty when it is).
problem() {
  case "$1" in
    root)
      [[ "$(id -u)" == 0 ]] || echo "not root: the node worker and the hostpath plugin make real bind mounts (run as root)"
      ;;
    java)
      local bin version
      bin="$(java_bin java)" || true
      if [[ -z "$bin" ]]; then
        echo "missing"
        return
      fi
      version=""
      [[ "$("$bin" -version 2>&1)" =~ version\ \"([0-9]+) ]] && version="${BASH_REMATCH[1]}"
      if [[ -z "$version" || "$version" -lt 17 ]]; then
        echo "$bin is Java ${version:-of an unknown version}; 17 or newer is needed"
      fi
      ;;
    javac)
      [[ -n "$(java_bin javac)" ]] || echo "missing (a JRE without the JDK)"
      ;;
    python3)
      # Debian's interpreter: the packages below install into it (a pyenv or venv python3 on PATH lacks them)
      [[ -x /usr/bin/python3 ]] || echo "missing (/usr/bin/python3)"
      ;;
    python3-cryptography)
      /usr/bin/python3 -c 'import cryptography' >/dev/null 2>&1 || echo "missing (import cryptography in /usr/bin/python3)"
      ;;
    python3-confluent-kafka)
      /usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || echo "missing (import confluent_kafka in /usr/bin/python3)"
      ;;
    docker-compose)
      if ! docker compose version >/dev/null 2>&1 && ! docker-compose version >/dev/null 2>&1; then
        echo "neither \`docker compose\` nor \`docker-compose\` works"
      fi
      ;;
    *)
      command -v "$1" >/dev/null 2>&1 || echo "missing"
      ;;
  esac
}

missing_lines=()
packages=()
check() {
  missing_lines=()
  packages=()
  local tool why package
  for tool in "${tools[@]}"; do
    why="$(problem "$tool")"
    [[ -z "$why" ]] && continue
    package="${PACKAGE[$tool]:-}"
    if [[ -n "$package" ]]; then
      missing_lines+=("  $(printf '%-15s' "$tool") $why (package $package): ${WHY[$tool]:-}")
      [[ " ${packages[*]} " == *" $package "* ]] || packages+=("$package")
    else
      missing_lines+=("  $(printf '%-15s' "$tool") $why")
    fi
  done
}

check
if $install && (( ${#packages[@]} > 0 )) && [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "csi: installing ${packages[*]} (apt-get install -y)" >&2
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"; } >&2; then
    echo "csi: apt-get install -y ${packages[*]} failed" >&2
  fi
  hash -r
  check
fi
if (( ${#missing_lines[@]} > 0 )); then
  echo "csi: this machine lacks what '$*' needs:" >&2
  printf '%s\n' "${missing_lines[@]}" >&2
  if (( ${#packages[@]} > 0 )); then
    echo "install with: apt-get install -y ${packages[*]}" >&2
  fi
  exit 1
fi
exit 0
