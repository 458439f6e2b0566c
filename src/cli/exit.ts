/**
 * The CLI's exit codes, documented in the README. Scripts branch on them:
 * 0 done, 1 failed, 2 usage error (nothing was tried), 3 nothing to do (already in the asked state).
 */
export const EXIT = { ok: 0, failure: 1, usage: 2, nothingToDo: 3 } as const

/** A failure the CLI reports as one line on stderr, with its exit code; never a stack. */
export class CliError extends Error {
  constructor (message: string, readonly exitCode: number = EXIT.failure) {
    super(message)
    this.name = 'CliError'
  }
}

/** Not a failure: the store was already as asked (e.g. revoking a revoked key). Exit 3. */
export class NothingToDo extends CliError {
  constructor (message: string) {
    super(message, EXIT.nothingToDo)
    this.name = 'NothingToDo'
  }
}
