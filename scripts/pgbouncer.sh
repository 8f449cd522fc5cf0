#!/usr/bin/env bash
# Starts a private PgBouncer in transaction mode on 127.0.0.1:${PGBOUNCER_PORT:-6432} in front
# of the PostgreSQL on 127.0.0.1:5432 (any database, user postgres, trust), for the tests that
# run the store through a pooler (TEST_PGBOUNCER_URL). Installs Debian's pgbouncer if absent.
# Leaves one already answering on the port alone. Prints the URL to set TEST_PGBOUNCER_URL to.
set -euo pipefail
port=${PGBOUNCER_PORT:-6432}
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
fi
bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
if pg_isready -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
  echo "postgres://postgres@127.0.0.1:$port/"
  exit 0
fi
dir=/tmp/mcp-tasks-pgbouncer
mkdir -p "$dir"
cat > "$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 8
server_idle_timeout = 10
autodb_idle_timeout = 30
ignore_startup_parameters = extra_float_digits
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
echo '"postgres" ""' > "$dir/users.txt"
# PgBouncer refuses to run as root.
if [ "$(id -u)" = 0 ]; then
  chown -R postgres: "$dir"
  runuser -u postgres -- "$bin" -d "$dir/pgbouncer.ini"
else
  "$bin" -d "$dir/pgbouncer.ini"
fi
for _ in $(seq 1 40); do
  pg_isready -q -h 127.0.0.1 -p "$port" && break
  sleep 0.25
done
pg_isready -q -h 127.0.0.1 -p "$port"
echo "postgres://postgres@127.0.0.1:$port/"
