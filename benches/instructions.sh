#!/usr/bin/env bash
# Instructions per call of benches/overhead/ cases, counted by valgrind's callgrind:
# repeatable where wall-clock medians are noisy. Each case runs twice, with a few and with
# many more calls; the difference divided by the extra calls is the per-call count, free
# of the binary's start-up.
#
#   benches/instructions.sh                 # the fast-path, armed-path and budget cases
#   benches/instructions.sh ready/bare ...  # the cases named (ids as in the table)
#   RUNS=5 benches/instructions.sh ...      # the median of 5 counts per case
#   OWN=1 benches/instructions.sh ...       # less the timer's own work (see below)
#
# futures-timer and async-io hand part of their work to a helper thread, and how much
# of it runs, and where, moves from run to run by a hundred instructions and more. With
# `OWN=1` a case counts its calling thread only, less the inclusive cost of the timer's
# own functions (making, polling and dropping a sleep): what is left is the bench's loop
# and what hedging adds, and it repeats within a few instructions. Quote "over the timer
# alone" for those timers from `OWN=1` runs.
#
# Needs valgrind (Debian: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."

few=1000
many=21000
runs=${RUNS:-1}

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
        ready/adaptive_unkeyed ready/adaptive_keyed
        pending_once/adaptive_unkeyed_tokio pending_once/adaptive_keyed_tokio
    )
fi

bench=$(cargo bench --all-features --bench overhead --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d '"' -f 4)

# The timer's own functions a case calls (outermost only: their costs are inclusive).
timer_functions() {
    case "$1" in
    *futures_timer)
        echo 'futures_timer::native::delay::Delay::new_handle'
        echo '<futures_timer::native::timer::TimerHandle as core::default::Default>::default'
        echo '<futures_timer::native::delay::Delay as core::future::future::Future>::poll'
        echo '<futures_timer::native::delay::Delay as core::ops::drop::Drop>::drop'
        echo 'alloc::sync::Arc<T,A>::drop_slow' # the sleep's node, when its last holder
        ;;
    *async_io)
        echo '<async_io::Timer as core::future::future::Future>::poll'
        echo '<async_io::Timer as core::ops::drop::Drop>::drop'
        ;;
    esac
}

count() { # case, calls -> instructions of the whole run (with OWN=1: see above)
    if [ "${OWN:-0}" = 1 ]; then
        local out
        out=$(mktemp -d)
        HEDGING_BENCH_PROFILE="$1" HEDGING_BENCH_ITERS="$2" \
            valgrind --tool=callgrind --separate-threads=yes \
            --callgrind-out-file="$out/callgrind.out" "$bench" >/dev/null 2>&1
        callgrind_annotate --inclusive=yes --threshold=100 "$out/callgrind.out-01" |
            awk -v functions="$(timer_functions "$1")" '
                BEGIN { n = split(functions, names, "\n"); for (i = 1; i <= n; i++) own[names[i]] = 1 }
                /^ *[0-9,]+ +\(/ {
                    cost = $1; gsub(",", "", cost)
                    name = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", name)
                    sub(/ \[[^]]*\]$/, "", name); sub(/^[^:]*\?\?\?:/, "", name)
                    if (name ~ /PROGRAM TOTALS/) total = cost
                    else if (name in own) timer += cost
                }
                END { print total - timer }'
        rm -rf "$out"
    else
        HEDGING_BENCH_PROFILE="$1" HEDGING_BENCH_ITERS="$2" \
            valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" 2>&1 |
            sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
    fi
}

per_call() { # case -> instructions per call, from one pair of runs
    local low high
    low=$(count "$1" "$few")
    high=$(count "$1" "$many")
    echo $(( (high - low) / (many - few) ))
}

printf '| case | instructions/call |\n|---|---:|\n'
for case in "${cases[@]}"; do
    counts=$(for _ in $(seq "$runs"); do per_call "$case"; done | sort -n)
    median=$(echo "$counts" | sed -n "$(( (runs + 1) / 2 ))p")
    printf '| `%s` | %s |\n' "$case" "$median"
done
