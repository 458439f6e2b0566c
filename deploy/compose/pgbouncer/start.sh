#!/bin/sh
# Writes PgBouncer's auth file from DB_USER and DB_PASSWORD (readable by this user only), then runs
# PgBouncer in the foreground as PID 1 (SIGTERM, SIGINT: it shuts down).
set -eu
umask 077
printf '"%s" "%s"\n' "$DB_USER" "$DB_PASSWORD" > /tmp/pgbouncer-userlist.txt
# The console's users (pgbouncer.ini: admin_users, stats_users), when given a password.
[ -z "${PGBOUNCER_ADMIN_PASSWORD:-}" ] || printf '"pgbouncer" "%s"\n' "$PGBOUNCER_ADMIN_PASSWORD" >> /tmp/pgbouncer-userlist.txt
[ -z "${PGBOUNCER_STATS_PASSWORD:-}" ] || printf '"pgbouncer_stats" "%s"\n' "$PGBOUNCER_STATS_PASSWORD" >> /tmp/pgbouncer-userlist.txt
exec pgbouncer /etc/pgbouncer/pgbouncer.ini
