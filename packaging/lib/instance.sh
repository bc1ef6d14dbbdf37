# Shared by the private servers' scripts (dav-server.sh, rclone-dav.sh, nginx-dav.sh,
# lighttpd-dav.sh, wsgidav-dav.sh): messages, usage, and the pid file of a
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

# `stop DIR` of nginx-dav.sh, lighttpd-dav.sh and wsgidav-dav.sh: stop the instance in DIR, if DIR exists.
stop_in() {
    local dir=$1
    [[ -d "$dir" ]] || return 0
    dir=$(cd "$dir" && pwd -P)
    stop_instance "$dir" || die "could not stop the $server instance in $dir"
}

# After a start in DIR on PORT that never answered: stops what is left and returns 0
# when DIR/error.log says the port was taken meanwhile (the caller tries another, this
# being attempt ATTEMPT); otherwise shows the log's tail and exits 1.
retry_if_port_taken() {
    local dir=$1 port=$2 attempt=$3
    stop_instance "$dir" || true
    if grep -q 'Address already in use' "$dir/error.log"; then
        say "port $port was taken meanwhile; trying another (attempt $attempt)"
        return 0
    fi
    say "tail of $dir/error.log:"
    tail -n 30 "$dir/error.log" >&2
    exit 1
}

# A TCP port on 127.0.0.1 that is free right now, from 20000-31999: below the
# kernel's ephemeral range (32768-60999 by default), so no outgoing connection
# takes it while a test has this Apache stopped and means to start it again on
# the same port. A port taken meanwhile anyway is met by start's retry loop.
free_port() {
    local py port i
    for py in python3 /usr/bin/python3; do
        if command -v "$py" >/dev/null 2>&1 &&
            port=$("$py" -c 'import random, socket
for _ in range(200):
    port = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break' 2>/dev/null) && [[ "$port" =~ ^[0-9]+$ ]]; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    # No python3: try random ports until one refuses connections.
    for ((i = 0; i < 100; i++)); do
        port=$((20000 + RANDOM % 12000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    return 1
}

# True once PROPFIND Depth 0 of URL, as USER:PASSWORD (one word, $2), answers 207 within
# START_TIMEOUT seconds while process $3 lives; else says the last HTTP code and fails.
await_dav() {
    local url=$1 credentials=$2 pid=$3 code=000 i
    for ((i = 0; i < START_TIMEOUT * 10; i++)); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
            -u "$credentials" -X PROPFIND -H 'Depth: 0' "$url" 2>/dev/null || true)
        [[ "$code" == 207 ]] && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    say "$server did not answer PROPFIND $url with 207 within ${START_TIMEOUT}s (last HTTP code: $code)"
    return 1
}

# A random password (36 hex digits) on stdout.
random_password() {
    local password
    password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
    [[ ${#password} -eq 36 ]] || die "could not generate a password from /dev/urandom"
    printf '%s\n' "$password"
}

# DIR must be a plain path: the generated configuration files cannot quote anything else.
plain_dir() {
    case "$1" in
    *[!A-Za-z0-9._/+@=,~-]*)
        die "DIR '$1' contains characters (space, quote, ...) this script does not quote safely; use a plain path such as /tmp/tidesync-$me.XXXXXX"
        ;;
    esac
}

# Writes DIR/env (mode 600) for the tests: TIDESYNC_TEST_<NAME>_URL, _USER, _PASSWORD,
# _ROOT (the served folder) and _ACCESS_LOG (one line a request).
#   write_env DIR NAME URL USER PASSWORD ROOT ACCESS_LOG
write_env() {
    local dir=$1 name=$2
    (
        umask 077
        {
            printf '# Source this file: environment for tidesync tests (packaging/%s.sh).\n' "$me"
            printf 'export TIDESYNC_TEST_%s_URL=%q\n' "$name" "$3"
            printf 'export TIDESYNC_TEST_%s_USER=%q\n' "$name" "$4"
            printf 'export TIDESYNC_TEST_%s_PASSWORD=%q\n' "$name" "$5"
            printf 'export TIDESYNC_TEST_%s_ROOT=%q\n' "$name" "$6"
            printf 'export TIDESYNC_TEST_%s_ACCESS_LOG=%q\n' "$name" "$7"
        } >"$dir/env.tmp"
    )
    mv -f "$dir/env.tmp" "$dir/env"
}
