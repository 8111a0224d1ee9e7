#!/usr/bin/env bash
# A throw-away PgBouncer in transaction pooling mode in front of a PostgreSQL
# server (typically one from scripts/pg-test-cluster.sh): a free port, trust
# auth on loopback, every database of the server reachable through it.
#
#   scripts/pgbouncer-test.sh start SERVER_URL [DIR]   start; prints shell assignments:
#                                                      PGBOUNCER_DIR, PGBOUNCER_PORT, DATABASE_URL (through the pooler)
#   scripts/pgbouncer-test.sh stop DIR                 stop it and delete DIR
#
# PGBOUNCER_POOL_SIZE (default 20) is the server connections per database and
# user; the pooler holds at most that many whatever the clients open.
# pgbouncer refuses to run as root: as root, it runs as PG_TEST_USER (default
# `pgtest`, the user scripts/pg-test-cluster.sh creates).
set -euo pipefail

log() { echo "pgbouncer-test: $*" >&2; }

PGBOUNCER="$(command -v pgbouncer || true)"
[ -n "$PGBOUNCER" ] || [ ! -x /usr/sbin/pgbouncer ] || PGBOUNCER=/usr/sbin/pgbouncer
[ -n "$PGBOUNCER" ] || { log "pgbouncer not found (install the Debian package 'pgbouncer')"; exit 1; }
RUN_USER="${PG_TEST_USER:-pgtest}"

# shellcheck source=throwaway-server.sh
. "$(dirname "${BASH_SOURCE[0]}")/throwaway-server.sh"

cmd="${1:-}"
case "$cmd" in
  start)
    server_url="${2:?SERVER_URL}"
    dir="${3:-}"
    [ -n "$dir" ] || dir="$(mktemp -d "${TMPDIR:-/tmp}/pgbouncer-test.XXXXXX")"
    mkdir -p "$dir"
    [ "$(id -u)" -ne 0 ] || chown "$RUN_USER" "$dir"
    # host, port and user of the server, from its URL
    read -r host port user < <(node -e '
      const u = new URL(process.argv[1]);
      process.stdout.write([u.hostname, u.port || "5432", decodeURIComponent(u.username) || "postgres"].join(" ") + "\n");
    ' "$server_url")
    listen_port="$(free_port)"
    printf '"%s" ""\n' "$user" >"$dir/userlist.txt"
    cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=$host port=$port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $listen_port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = ${PGBOUNCER_POOL_SIZE:-20}
max_client_conn = ${PGBOUNCER_MAX_CLIENT_CONN:-1000}
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
admin_users = $user
INI
    [ "$(id -u)" -ne 0 ] || chown -R "$RUN_USER" "$dir"
    as_owner "$PGBOUNCER" -d -q "$dir/pgbouncer.ini" || { log "pgbouncer did not start; log:"; tail -n 30 "$dir/pgbouncer.log" >&2 || true; exit 1; }
    # ready when it accepts connections
    for _ in $(seq 1 100); do
      node -e "require('net').connect($listen_port,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" && break
      sleep 0.1
    done
    database="$(node -e 'process.stdout.write(new URL(process.argv[1]).pathname.slice(1) || "postgres")' "$server_url")"
    echo "PGBOUNCER_DIR=$dir"
    echo "PGBOUNCER_PORT=$listen_port"
    echo "DATABASE_URL=postgres://$user@127.0.0.1:$listen_port/$database"
    ;;
  stop)
    dir="${2:?DIR}"
    if [ -f "$dir/pgbouncer.pid" ]; then
      pid="$(cat "$dir/pgbouncer.pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    case "$dir" in
      */pgbouncer-test.*) rm -rf "$dir" ;;
      *) log "kept $dir (not a directory this script created)" ;;
    esac
    ;;
  *)
    echo "usage: $0 start SERVER_URL [DIR] | stop DIR" >&2
    exit 2
    ;;
esac
