# Sourced by the throw-away server scripts (pg-test-cluster.sh, pgbouncer-test.sh).

# PostgreSQL and PgBouncer refuse to run as root, so as root a command runs as
# RUN_USER (set by the caller), from / so that user never needs access to the
# caller's directory.
as_owner() {
  (
    cd /
    if [ "$(id -u)" -ne 0 ]; then
      "$@"
    elif command -v runuser >/dev/null 2>&1; then
      runuser -u "$RUN_USER" -- "$@"
    else
      su -s /bin/sh "$RUN_USER" -c "$(printf '%q ' "$@")"
    fi
  )
}

# a port nothing listens on now
free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"
}
