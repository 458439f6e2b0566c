#!/bin/sh
# `postgres …`: as the official postgres image does it, a first start initialises $PGDATA with the
# superuser POSTGRES_USER (password POSTGRES_PASSWORD, scram-sha-256 from any address) and the
# database POSTGRES_DB, then runs the server as user postgres. Anything else runs as given.
set -eu
if [ "${1:-}" = postgres ]; then
  user=${POSTGRES_USER:-postgres}
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    pw=$(mktemp)
    printf '%s' "$POSTGRES_PASSWORD" > "$pw"
    chown postgres "$pw"
    as_postgres initdb --username="$user" --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pw"
    echo 'host all all all scram-sha-256' >> "$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    db=${POSTGRES_DB:-$user}
    if [ "$db" != postgres ]; then
      as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
      as_postgres createdb --username="$user" "$db"
      as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
  fi
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
fi
exec "$@"
