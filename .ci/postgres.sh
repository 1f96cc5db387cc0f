#!/usr/bin/env bash
# Start a throwaway PostgreSQL on 127.0.0.1 for the store tests and print its DSN.
# Installs the distribution's server package if it is missing. Usage: eval "$(bash .ci/postgres.sh)"
# SESSION_GRAPH_PG_FSYNC=on keeps fsync on (durable writes, for benchmarks); tests run with it off.
set -euo pipefail
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2
fi
bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")
data=$(mktemp -d /tmp/sg-pg.XXXXXX)
port=${SESSION_GRAPH_PG_PORT:-55432}
chown postgres:postgres "$data"
runuser -u postgres -- "$bin/initdb" -D "$data/db" -A trust -U postgres >&2
runuser -u postgres -- "$bin/pg_ctl" -D "$data/db" -l "$data/log" -w \
  -o "-h 127.0.0.1 -p $port -k $data -c fsync=${SESSION_GRAPH_PG_FSYNC:-off} -c max_connections=100" start >&2
echo "export SESSION_GRAPH_PG_DSN='postgresql://postgres@127.0.0.1:$port/postgres'"
echo "export SESSION_GRAPH_PG_DATA='$data'"
