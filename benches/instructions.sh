#!/usr/bin/env bash
# Instructions per call of benches/overhead.rs cases, counted by valgrind's callgrind:
# repeatable where wall-clock medians are noisy. Each case runs twice, with a few and with
# many more calls; the difference divided by the extra calls is the per-call count, free
# of the binary's start-up.
#
#   benches/instructions.sh                 # the fast-path, armed-path and budget cases
#   benches/instructions.sh ready/bare ...  # the cases named (ids as in the table)
#
# Needs valgrind (Debian: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."

few=1000
many=21000

cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
    cases=(
        ready/bare ready/hedging_1_copy ready/hedging_3_copies ready/hedging_2_copies_tokio
        ready/tower_hedge
        pending_once/bare pending_once/hedging_1_copy
        pending_once/bare+futures_timer pending_once/hedging_futures_timer
        pending_once/bare+async_io pending_once/hedging_async_io
        pending_once/bare+tokio_sleep pending_once/hedging_tokio
        pending_once/tower_hedge
        hedged/no_budget hedged/budget_0_1 hedged/budget_0_1_burst_10
    )
fi

bench=$(cargo bench --all-features --bench overhead --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d '"' -f 4)

count() { # case, calls -> instructions of the whole run
    HEDGING_BENCH_PROFILE="$1" HEDGING_BENCH_ITERS="$2" \
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}

printf '| case | instructions/call |\n|---|---:|\n'
for case in "${cases[@]}"; do
    low=$(count "$case" "$few")
    high=$(count "$case" "$many")
    printf '| `%s` | %s |\n' "$case" "$(( (high - low) / (many - few) ))"
done
