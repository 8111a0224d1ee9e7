#!/usr/bin/env bash
# `npm run lint:api`: redocly lint and Spectral (OWASP ruleset, .spectral.yaml)
# on the document the BUILT server serves (npm run build first). Fails on errors.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/src/main.js ] || { echo "lint:api: dist/ missing, run npm run build" >&2; exit 1; }

work="$(mktemp -d)"
port="$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})")"
PGLITE_DIR=memory PORT="$port" HOST=127.0.0.1 LOG_LEVEL=warn DATABASE_URL= node dist/src/main.js >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
node -e "
const url = 'http://127.0.0.1:$port/api/v1/openapi.json';
const deadline = Date.now() + 60000;
(async function poll() {
  try {
    const res = await fetch(url);
    if (res.ok) { require('fs').writeFileSync('$work/openapi.json', await res.text()); return; }
  } catch {}
  if (Date.now() > deadline) { console.error('lint:api: the server did not answer'); process.exit(1); }
  setTimeout(poll, 200);
})();
" || { cat "$work/server.log" >&2; exit 1; }

echo "lint:api: redocly lint"
NO_UPDATE_NOTIFIER=1 REDOCLY_TELEMETRY=off node_modules/.bin/redocly lint "$work/openapi.json" --config redocly.yaml --format=stylish 2>&1 | grep -v -E '^\s*(║|╔|╚)' 
echo "lint:api: spectral lint (OWASP)"
node_modules/.bin/spectral lint "$work/openapi.json" --ruleset .spectral.yaml --fail-severity=error --display-only-failures
