#!/usr/bin/env bash
# `npm run test:pgbouncer`: the PostgreSQL tests that exercise what a pooler in
# transaction mode breaks (prepared statements on every hot path, writes and
# their transactions, idempotency races, the trash purge's lock, keyed retries
# across kill -9) through a throw-away PgBouncer
# (scripts/pgbouncer-test.sh, pool_mode = transaction) in front of a throw-away
# cluster, with DATABASE_POOLER=transaction. Paths given replace the chosen
# files; options go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."

# the files that cover it; the rest of test:pg runs directly against the server
CHOSEN=(
  test/pg/engine.pg-spec.ts
  test/agents.e2e-spec.ts
  test/agents-lifecycle.e2e-spec.ts
  test/idempotency.e2e-spec.ts
  test/idempotency-endpoints.e2e-spec.ts
  test/conversations.e2e-spec.ts
  test/org-team.e2e-spec.ts
  test/auth.e2e-spec.ts
  # keyed retries through the pooler while PostgreSQL stops, backends die and instances are SIGKILLed
  # (its own cluster and PgBouncer, so that the faults touch nothing else)
  test/pg/write-faults.pg-spec.ts
)
# paths given replace the chosen files; options (-…) go to jest as they are
paths=()
options=()
for arg in "$@"; do
  case "$arg" in
    -*) options+=("$arg") ;;
    *) paths+=("$arg") ;;
  esac
done
[ ${#paths[@]} -eq 0 ] || CHOSEN=("${paths[@]}")

cluster="$(scripts/pg-test-cluster.sh start)"
eval "$cluster"
bouncer=""
cleanup() {
  [ -z "$bouncer" ] || scripts/pgbouncer-test.sh stop "$PGBOUNCER_DIR"
  scripts/pg-test-cluster.sh stop "$PG_TEST_DIR"
}
trap cleanup EXIT
# behind a transaction pooler statement_timeout is the database's setting (the service cannot send it)
node -e '
const { Client } = require("pg");
const c = new Client({ connectionString: process.argv[1] });
c.connect().then(() => c.query("alter database app set statement_timeout = 5000")).then(() => c.end()).catch((e) => { console.error(e.message); process.exit(1); });
' "$DATABASE_URL"
# 20 server connections for the whole run, however many clients the tests open
bouncer="$(PGBOUNCER_POOL_SIZE="${PGBOUNCER_POOL_SIZE:-20}" scripts/pgbouncer-test.sh start "$DATABASE_URL")"
eval "$bouncer"
export DATABASE_URL DATABASE_POOLER=transaction
echo "test:pgbouncer: PgBouncer (transaction mode) on port $PGBOUNCER_PORT in front of the cluster on port $PG_TEST_PORT"
export CURSOR_SECRET="${CURSOR_SECRET:-test-pg-cursor-secret-0123456789}"
export ENCRYPTION_KEY="${ENCRYPTION_KEY:-$(node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64'))")}"

node --experimental-vm-modules --no-warnings=ExperimentalWarning node_modules/jest/bin/jest.js -c jest.pg.config.ts ${options[@]+"${options[@]}"} --runTestsByPath "${CHOSEN[@]}"
