#!/usr/bin/env bash
# Instructions per loopback request of benches/layer.rs's cases, counted by valgrind's
# callgrind: repeatable where wall-clock medians move by several percent from run to run.
# Each case runs twice, with a few and with many more requests; the difference divided by
# the extra requests is the per-request count, free of start-up and of the first
# connection. Client and server share one thread, so a request's count is both sides'.
#
#   integrations/http/benches/instructions.sh              # every case
#   integrations/http/benches/instructions.sh hyper/layer  # the cases named
#
# Counts only instructions: the time of a system call, of a wait the kernel times out,
# or of a cache miss is not in it (tonic's layer is 1.7% of a call's instructions and
# 5-8% of its time).
# Needs valgrind (Debian: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/../../.."

few=300
many=3300

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
    cases=(hyper/plain hyper/one_copy hyper/sleep hyper/layer tonic/plain tonic/layer)
fi

bench=$(cargo bench -p hedging-http --all-features --bench layer --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d '"' -f 4)

count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --requests "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : //p'
}

per_request() {
    local a b
    a=$(count "$1" "$few")
    b=$(count "$1" "$many")
    echo $(((b - a) / (many - few)))
}

echo "| case | instructions per request | over plain |"
echo "|---|---|---|"
declare -A plain
for case in "${cases[@]}"; do
    n=$(per_request "$case")
    base=${case%%/*}
    if [ "${case#*/}" = plain ]; then
        plain[$base]=$n
    fi
    if [ -z "${plain[$base]:-}" ]; then
        plain[$base]=$(per_request "$base/plain")
    fi
    over=$((n - plain[$base]))
    pct=$(awk -v o="$over" -v p="${plain[$base]}" 'BEGIN { printf "%+.1f%%", 100 * o / p }')
    echo "| $case | $n | $over ($pct) |"
done
