import type { FastifyInstance } from 'fastify'
import { namesStatements, noticesGone } from '../store/store.js'

/** Tells the operator once what the store decided on its own: named statements off, or its SQLite file gone. */
export default async function storeNotices (app: FastifyInstance, { store }: { store: object }): Promise<void> {
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
