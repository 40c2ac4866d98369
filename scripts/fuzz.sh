#!/usr/bin/env bash
# Runs a libFuzzer target of the Fuzz/ package for a while, from the committed seed corpus.
#
#   bash scripts/fuzz.sh TARGET SECONDS     TARGET: toml, config, calendar, time, spec, wire
#   bash scripts/fuzz.sh all SECONDS        each target in turn, SECONDS each
#
# Fails (non-zero) on any crash, leak, timeout (a hang) or out-of-memory, after printing what
# each target did: executions, coverage (cov: edges, ft: features) and corpus size.
# The seed corpus is copied to a temporary working corpus, so runs never write into the repo.
# FUZZ_CORPUS=DIR keeps the working corpus in DIR instead (to resume a long run); crash inputs
# land in .build-fuzz/artifacts/TARGET/ and are reproduced by running the binary on the file:
#   .build-fuzz/release/fuzz-TARGET .build-fuzz/artifacts/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(toml config calendar time spec wire)
usage() { echo "usage: $0 {${targets[*]// /|}|all} SECONDS" >&2; exit 2; }
[[ $# -eq 2 && $2 =~ ^[0-9]+$ ]] || usage
if [[ $1 == all ]]; then selected=("${targets[@]}")
elif [[ " ${targets[*]} " == *" $1 "* ]]; then selected=("$1")
else usage; fi
seconds=$2

# The libraries under test are instrumented too (-sanitize=fuzzer on every Swift module), so the
# flags go on the command line rather than on the Fuzz package's targets. Release: the point is
# executions per second; bounds and overflow checks stay on at -O.
scratch=.build-fuzz
# Only errors and the last lines are shown: the dependencies' warnings drown everything else.
build_log=$(mktemp)
if ! swift build --package-path Fuzz --scratch-path "$scratch" -c release \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -g >"$build_log" 2>&1; then
    grep -E 'error' "$build_log" >&2 || tail -n 30 "$build_log" >&2
    rm -f "$build_log"
    exit 1
fi
tail -n 1 "$build_log"
rm -f "$build_log"

# Per target: the largest input worth trying (calendar and time take at most 256 bytes, which
# is far beyond any real expression; configs and specs need room for several tables or fields),
# and the seconds one input may take before it counts as a hang.
max_len() { case $1 in toml|config) echo 4096 ;; spec|wire) echo 1024 ;; *) echo 256 ;; esac; }
input_timeout() { case $1 in toml|config) echo 10 ;; *) echo 5 ;; esac; }
dict() { case $1 in toml|config|calendar|time) echo "Fuzz/dict/$1.dict" ;; *) echo "" ;; esac; }

# Objects Swift keeps alive through pointers LeakSanitizer cannot see (see the file).
export LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

failed=()
summary=()
for t in "${selected[@]}"; do
    bin=$scratch/release/fuzz-$t
    artifacts=$scratch/artifacts/$t
    mkdir -p "$artifacts"
    if [[ -n ${FUZZ_CORPUS:-} ]]; then work=$FUZZ_CORPUS/$t; mkdir -p "$work"; cleanup=""
    else work=$(mktemp -d "${TMPDIR:-/tmp}/tocsin-fuzz-$t.XXXXXX"); cleanup=$work; fi
    cp -n Fuzz/corpus/$t/* "$work"/ 2>/dev/null || true
    log=$artifacts/last-run.log
    args=(-max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout="$(input_timeout "$t")"
          -rss_limit_mb=2048 -malloc_limit_mb=1024 -use_value_profile=1 -print_final_stats=1
          -artifact_prefix="$artifacts/" -print_pcs=0)
    d=$(dict "$t"); [[ -n $d ]] && args+=(-dict="$d")
    echo "== fuzz-$t for ${seconds}s (corpus $work, log $log)"
    set +e
    "$bin" "${args[@]}" "$work" >"$log" 2>&1
    rc=$?
    set -e
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -n 1)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
    corp=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$last")
    extra=$(grep -E ': slowest call ' "$log" | tail -n 1 || true)
    line="fuzz-$t: ${runs:-?} executions in ${seconds}s, cov: ${cov:-?} ft: ${ft:-?}, corpus ${corp:-?}${extra:+, $extra}"
    if [[ $rc -ne 0 ]]; then
        line+=" -- FAILED (exit $rc)"
        failed+=("$t")
        grep -E 'ERROR: |FUZZ INVARIANT|SUMMARY|ALARM|out-of-memory|Test unit written|Fatal error|leak' "$log" | head -n 20 || true
    fi
    echo "$line"
    summary+=("$line")
    [[ -n $cleanup ]] && rm -rf "$cleanup"
done

echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzzing found problems in: ${failed[*]} (inputs in $scratch/artifacts/)" >&2
    exit 1
fi
