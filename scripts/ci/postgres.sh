#!/bin/sh
# Install PostgreSQL (Debian's), start a cluster listening on 127.0.0.1 only, create a
# role and database for perflab's store tests, and print the line to use it:
#
#     eval "$(scripts/ci/postgres.sh)"    # sets PERFLAB_TEST_PG
#
# Meant for a fresh Debian 12 machine as root (no service manager needed). Safe to run
# twice. All progress goes to stderr so stdout is only the export line.
set -eu

PORT="${PERFLAB_PG_PORT:-5432}"
ROLE=perflab
PASSWORD=perflab
DB=perflab_test

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    echo "installing postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
fi

VERSION=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | awk '{print $1, $2}' | grep -qx "$VERSION main"; then
    pg_createcluster "$VERSION" main >&2
fi
CONF="/etc/postgresql/$VERSION/main/postgresql.conf"
sed -i "s/^#\?listen_addresses.*/listen_addresses = '127.0.0.1'/; s/^#\?port = .*/port = $PORT/" "$CONF"
if ! pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $4}' | grep -q online; then
    pg_ctlcluster "$VERSION" main start >&2
fi

# Wait until the server accepts connections.
i=0
until su postgres -c "psql -p $PORT -qAtc 'SELECT 1'" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 60 ]; then
        echo "postgresql did not start; see /var/log/postgresql/" >&2
        exit 1
    fi
    sleep 0.5
done

# CREATEDB: the tests make one scratch database per test so they can run in parallel.
su postgres -c "psql -p $PORT -qAtc \"SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'\"" | grep -q 1 ||
    su postgres -c "psql -p $PORT -qc \"CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'\"" >&2
# pg_signal_backend: dropping a scratch database WITH (FORCE) must end the backends a
# killed test process left behind, whichever role the server counts them under.
su postgres -c "psql -p $PORT -qc \"GRANT pg_signal_backend TO $ROLE\"" >/dev/null 2>&1 || true
su postgres -c "psql -p $PORT -qAtc \"SELECT 1 FROM pg_database WHERE datname = '$DB'\"" | grep -q 1 ||
    su postgres -c "psql -p $PORT -qc \"CREATE DATABASE $DB OWNER $ROLE\"" >&2

echo "export PERFLAB_TEST_PG=postgres://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
