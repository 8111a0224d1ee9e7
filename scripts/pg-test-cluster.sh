#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for tests: initdb into a temp dir, trust auth
# on loopback only, a free port, owned by this run. Usable locally and by CI.
#
#   scripts/pg-test-cluster.sh start [DIR]   init (if needed) + start; prints shell
#                                            assignments: PG_TEST_DIR, PG_TEST_PORT, DATABASE_URL
#   scripts/pg-test-cluster.sh pause DIR     stop the server (fast), keep the data
#   scripts/pg-test-cluster.sh resume DIR    start it again on the same port
#   scripts/pg-test-cluster.sh stop DIR      stop the server and delete DIR
#
# initdb and postgres refuse to run as root: as root, the cluster belongs to an
# unprivileged user (PG_TEST_USER, default `pgtest`, created when absent).
set -euo pipefail

log() { echo "pg-test-cluster: $*" >&2; }

find_pg_bin() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return 0
  fi
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

PG_BIN="$(find_pg_bin)" || { log "no PostgreSQL server binaries found (install the Debian package 'postgresql')"; exit 1; }
RUN_USER="${PG_TEST_USER:-pgtest}"

# shellcheck source=throwaway-server.sh
. "$(dirname "${BASH_SOURCE[0]}")/throwaway-server.sh"

absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

ensure_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  id -u "$RUN_USER" >/dev/null 2>&1 && return 0
  useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER" 2>/dev/null ||
    adduser --system --no-create-home --disabled-login "$RUN_USER" >/dev/null
}

start_server() {
  local dir="$1" port
  port="$(cat "$dir/port")"
  as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=128MB" \
    start >/dev/null || { log "server did not start; log:"; tail -n 30 "$dir/server.log" >&2; exit 1; }
}

cmd="${1:-}"
case "$cmd" in
  start)
    ensure_user
    dir="${2:+$(absolute "$2")}"
    if [ -z "$dir" ]; then
      dir="$(mktemp -d "${TMPDIR:-/tmp}/pg-test.XXXXXX")"
    fi
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown "$RUN_USER" "$dir"
    chmod 700 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
        { log "initdb failed:"; cat "$dir/initdb.log" >&2; exit 1; }
      # trust, but only over loopback (and the run's own socket directory)
      cat >"$dir/data/pg_hba.conf" <<HBA
local all all trust
host  all all 127.0.0.1/32 trust
host  all all ::1/128 trust
HBA
    fi
    [ -f "$dir/port" ] || free_port >"$dir/port"
    start_server "$dir"
    port="$(cat "$dir/port")"
    as_owner "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qAtc \
      "select 1 from pg_database where datname='app'" | grep -q 1 ||
      as_owner "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qc "create database app" >/dev/null
    echo "PG_TEST_DIR=$dir"
    echo "PG_TEST_PORT=$port"
    echo "DATABASE_URL=postgres://postgres@127.0.0.1:$port/app"
    ;;
  pause)
    dir="$(absolute "${2:?DIR}")"
    as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  resume)
    dir="$(absolute "${2:?DIR}")"
    start_server "$dir"
    ;;
  stop)
    dir="$(absolute "${2:?DIR}")"
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    case "$dir" in
      */pg-test.*) rm -rf "$dir" ;;
      *) log "kept $dir (not a directory this script created)" ;;
    esac
    ;;
  bin)
    echo "$PG_BIN"
    ;;
  *)
    echo "usage: $0 start [DIR] | pause DIR | resume DIR | stop DIR | bin" >&2
    exit 2
    ;;
esac
