import type { TestContext } from 'node:test'

const stacks = new WeakMap<TestContext, Array<() => unknown>>()

/**
 * Runs `fn` when the test ends, like `t.after`, but last registered first (Go's t.Cleanup, Python's
 * addCleanup) and every one of them even when one fails; the failures are thrown together at the end.
 * node:test runs `t.after` hooks first registered first and stops at the first that throws: a
 * temporary directory removed before the server writing into it was stopped failed with ENOTEMPTY,
 * the kill registered after it never ran, and the server kept the test file alive until CI's limit.
 */
export function onCleanup (t: TestContext, fn: () => unknown): void {
  let stack = stacks.get(t)
  if (stack === undefined) {
    const fns: Array<() => unknown> = []
    stack = fns
    stacks.set(t, fns)
    t.after(async () => {
      const errors: unknown[] = []
      while (fns.length > 0) {
        try {
          await fns.pop()!()
        } catch (err) {
          errors.push(err)
        }
      }
      if (errors.length === 1) throw errors[0]
      if (errors.length > 1) throw new AggregateError(errors, `${errors.length} cleanups failed`)
    })
  }
  stack.push(fn)
}
