# Helpers of the tmux-driven TUI tests (sourced): one private tmux server
# per scenario, keys in, polled captures out. Needs BIN and TMP set by the
# caller; counts CHECKS and FAILS. START_ENV (an array, may be empty) is
# put in front of every session's environment.
SOCK_BASE="oxtui-$$-$RANDOM"
SOCK="$SOCK_BASE-0"
NSOCK=0
FAILS=0
CHECKS=0
SCEN=""
[ -n "${START_ENV+x}" ] || START_ENV=()

tmux_cleanup() {
    local i
    for i in $(seq 0 "$NSOCK"); do
        tmux -L "$SOCK_BASE-$i" kill-server >/dev/null 2>&1
        rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK_BASE-$i"
    done
}

# start W H ENV... -- ARGS... : a fresh server per session (reusing a
# socket right after kill-server races with the old server's exit).
start() {
    local w=$1 h=$2
    shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    tmux -L "$SOCK" kill-server >/dev/null 2>&1
    NSOCK=$((NSOCK + 1))
    SOCK="$SOCK_BASE-$NSOCK"
    local cmd
    cmd=$(printf '%q ' env "${START_ENV[@]}" "${envs[@]}" "$BIN" "$@")
    tmux -L "$SOCK" new-session -d -s t -x "$w" -y "$h" \
        "$cmd; echo \"EXIT=\$?\"; sleep 120"
}

screen() { tmux -L "$SOCK" capture-pane -p -t t 2>/dev/null; }
keys() { tmux -L "$SOCK" send-keys -t t "$@"; }
typed() { tmux -L "$SOCK" send-keys -t t -l "$1"; }

fail() {
    echo "FAIL [$SCEN]: $*"
    echo "----- screen -----"
    screen
    echo "------------------"
    FAILS=$((FAILS + 1))
}

# wait_for TEXT [SECONDS]: polls the screen until TEXT (fixed string) shows.
wait_for() {
    local text=$1 limit=${2:-10}
    local deadline=$(( $(date +%s%N) / 1000000 + limit * 1000 ))
    CHECKS=$((CHECKS + 1))
    while :; do
        if screen | grep -qF -- "$text"; then
            return 0
        fi
        if [ $(( $(date +%s%N) / 1000000 )) -ge $deadline ]; then
            fail "timed out waiting for '$text'"
            return 1
        fi
        sleep 0.05
    done
}

# wait_re REGEX [SECONDS]: the same with an extended regular expression.
wait_re() {
    local re=$1 limit=${2:-10}
    local deadline=$(( $(date +%s%N) / 1000000 + limit * 1000 ))
    CHECKS=$((CHECKS + 1))
    while :; do
        if screen | grep -qE -- "$re"; then
            return 0
        fi
        if [ $(( $(date +%s%N) / 1000000 )) -ge $deadline ]; then
            fail "timed out waiting for /$re/"
            return 1
        fi
        sleep 0.05
    done
}

assert_screen() {
    CHECKS=$((CHECKS + 1))
    screen | grep -qF -- "$1" || fail "screen lacks '$1'"
}

assert_not_screen() {
    CHECKS=$((CHECKS + 1))
    if screen | grep -qF -- "$1"; then fail "screen unexpectedly has '$1'"; fi
}

# The alternate screen is gone: no tab bar left behind.
quit_clean() {
    keys q
    wait_for "EXIT=0" || return
    assert_not_screen "Overview"
}
