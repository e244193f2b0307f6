#!/usr/bin/env bash
# Hedged GETs against three real Redis replicas on loopback, one paused at random by
# `DEBUG SLEEP 0.1` about every 300 ms: no hedging, the README's production policy
# (optimal_delay(0.99)), the adaptive p95 it recommended before and fixed delays with the
# same budget, each run twice (the table in docs/performance.md). Real time on a shared
# machine: not a CI step (CI builds the example).
#
#   benches/redis.sh                      # 10 s per run
#   SECONDS_PER_RUN=30 benches/redis.sh   # longer runs
#   RECORD=unhedged.txt benches/redis.sh  # also write the unhedged latencies (ms a line)
#
# Installs Debian's redis-server when it is missing; starts three servers on free
# loopback ports and stops them when it ends, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null; then
    echo "redis-server is missing: installing Debian's package" >&2
    apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
fi

dir=$(mktemp -d)
pids=()
stop() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap stop EXIT

ports=()
for replica in 1 2 3; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --enable-debug-command local --dir "$dir" --daemonize no >"$dir/redis-$replica.log" 2>&1 &
    pids+=($!)
    ports+=("$port")
done
for port in "${ports[@]}"; do
    for _ in $(seq 50); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    redis-cli -p "$port" set key value >/dev/null
done

args=("${ports[@]}" --seconds "${SECONDS_PER_RUN:-10}")
[ -n "${RECORD:-}" ] && args+=(--record "$RECORD")
cargo run --release --quiet --example redis_replicas --features tokio -- "${args[@]}"
