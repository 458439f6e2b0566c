/** The CLI's exit codes. Scripts branch on them (docs/reference/cli.md lists EXIT_MEANINGS). */
export const EXIT = { ok: 0, failure: 1, usage: 2, nothingToDo: 3 } as const

export const EXIT_MEANINGS: Record<(typeof EXIT)[keyof typeof EXIT], string> = {
  [EXIT.ok]: 'done',
  [EXIT.failure]: 'failed; one line on stderr says why (never a stack trace)',
  [EXIT.usage]: 'usage error: a missing or mistyped argument or option; nothing was tried',
  [EXIT.nothingToDo]: 'nothing to do: the store was already as asked (e.g. revoking a revoked key)'
}

/** A failure the CLI reports as one line on stderr, with its exit code; never a stack. */
export class CliError extends Error {
  constructor (message: string, readonly exitCode: number = EXIT.failure) {
    super(message)
    this.name = 'CliError'
  }
}
