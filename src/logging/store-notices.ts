import type { FastifyInstance } from 'fastify'
import { namesStatements, noticesGone } from '../store/store.js'

/**
 * What the store decides on its own while serving, told once to the operator in the log:
 * PG_PREPARED_STATEMENTS=auto giving up named statements because a transaction-mode pooler
 * showed (the server answered 26000 or 42P05; /metrics shows the same as petstore_pg_named_statements),
 * and a SQLite store whose database file is gone from under it (an error: it takes no create from then on).
 */
export default async function storeNotices (app: FastifyInstance, opts: { store: object }): Promise<void> {
  const store = opts.store
  if (noticesGone(store)) store.onGone((line, reason, level) => { app.log[level]({ reason }, line) })
  if (!namesStatements(store)) return
  store.onNamingStopped((e) => {
    app.log.warn(
      { sqlstate: e.code, serverMessage: e.serverMessage, setting: 'PG_PREPARED_STATEMENTS' },
      'PostgreSQL refused a named prepared statement, as a transaction-mode pooler that does not track them does: ' +
      'PG_PREPARED_STATEMENTS=auto sends every statement unnamed from now on, until restart (reads and creates cost a little more PostgreSQL CPU). ' +
      'Set PG_PREPARED_STATEMENTS=off to make this explicit, or on behind a pooler that tracks them (PgBouncer >= 1.21 with max_prepared_statements)'
    )
  })
}
