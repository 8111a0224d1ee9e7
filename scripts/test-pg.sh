#!/usr/bin/env bash
# `npm run test:pg`: the e2e suite on a PostgreSQL server. Uses DATABASE_URL
# when set; otherwise starts a throw-away cluster (scripts/pg-test-cluster.sh)
# and removes it on exit. Extra arguments go to jest (e.g. a path filter).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${DATABASE_URL:-}" ]; then
  cluster="$(scripts/pg-test-cluster.sh start)"
  eval "$cluster"
  export DATABASE_URL
  trap 'scripts/pg-test-cluster.sh stop "$PG_TEST_DIR"' EXIT
  echo "test:pg: throw-away cluster on port $PG_TEST_PORT ($PG_TEST_DIR)"
fi
# all instances of a deployment share these; tests use fixed throw-away values
export CURSOR_SECRET="${CURSOR_SECRET:-test-pg-cursor-secret-0123456789}"
export ENCRYPTION_KEY="${ENCRYPTION_KEY:-$(node -e "process.stdout.write(require('crypto').randomBytes(32).toString('base64'))")}"

node --experimental-vm-modules --no-warnings=ExperimentalWarning node_modules/jest/bin/jest.js -c jest.pg.config.ts "$@"
