# Helpers the bench/ scripts share (sourced, not run).
# median: of the whitespace-separated numbers on stdin ("-" when none).
# (no grep: an empty list must not fail a `set -o pipefail` script)
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "-")}'; }
# ratio A B: A/B to two decimals, "-" when either is missing or zero.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b+0 > 0 && a+0 > 0) printf "%.2f", a/b; else printf "-" }'; }
# ox_p50_rss ITERS BINARY MODEL THREADS [ENV=VALUE...]: "p50_ms rss_MiB" of
# one `bench --json` run (2 warm-up runs per 10 iterations, at least 2).
ox_p50_rss() {
    local iters=$1 bin=$2 m=$3 t=$4; shift 4
    env "$@" "$bin" bench "$m" --threads "$t" --warmup $(( iters / 5 > 2 ? iters / 5 : 2 )) \
        --iters "$iters" --no-profile --json 2>/dev/null |
        awk -F'[:,]' '/"p50"/ {p=$2} /"peak_rss_bytes"/ {r=$2} END {printf "%.4f %.0f\n", p, r / 1048576}'
}
