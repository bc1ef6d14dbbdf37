# Shared by dav-server.sh and rclone-dav.sh: messages, usage, and the pid file of a
# private server instance whose state lives in a DIR. The sourcing script sets
#   me            its name, for messages
#   what          what `start` starts, for the usage text
#   server        the server's process name, for messages
#   pid_file      the pid file's name inside DIR
#   STOP_TIMEOUT  seconds to wait for a SIGTERM before SIGKILL
# and defines
#   is_ours CMDLINE DIR   true when CMDLINE is this script's server for DIR
#   instance_pids PID     the instance's processes (PID and any children)

say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() {
    say "$*"
    exit 1
}

usage() {
    cat >&2 <<EOT
usage: $0 start DIR | stop DIR
  start DIR  start $what on 127.0.0.1; writes DIR/env
  stop DIR   stop the instance whose state is in DIR (no-op if not running)
EOT
    exit 2
}

# The pid in DIR's pid file if that process is alive and is our server for this
# DIR (guards against a stale pid file and pid reuse); empty otherwise.
live_pid() {
    local dir=$1 pid cmdline
    [[ -s "$dir/$pid_file" ]] || return 0
    pid=$(tr -dc '0-9' <"$dir/$pid_file")
    [[ -n "$pid" ]] || return 0
    [[ -r "/proc/$pid/cmdline" ]] || return 0
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
    if is_ours "$cmdline" "$dir"; then
        printf '%s\n' "$pid"
    fi
}

any_alive() {
    local p
    for p in "$@"; do
        if kill -0 "$p" 2>/dev/null; then
            return 0
        fi
    done
    return 1
}

# Stop the instance in DIR; return 0 when it is no longer running.
stop_instance() {
    local dir=$1 pid pids i
    pid=$(live_pid "$dir")
    if [[ -z "$pid" ]]; then
        rm -f "$dir/$pid_file"
        return 0
    fi
    mapfile -t pids < <(instance_pids "$pid")
    if ! kill -TERM "$pid" 2>/dev/null; then
        say "cannot signal $server pid $pid (started by another user?)"
        return 1
    fi
    for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
        any_alive "${pids[@]}" || break
        sleep 0.1
    done
    if any_alive "${pids[@]}"; then
        say "$server (pid ${pids[*]}) still running after ${STOP_TIMEOUT}s; sending SIGKILL"
        kill -KILL "${pids[@]}" 2>/dev/null || true
        sleep 0.2
        if any_alive "${pids[@]}"; then
            say "$server processes ${pids[*]} would not die"
            return 1
        fi
    fi
    rm -f "$dir/$pid_file"
    return 0
}
