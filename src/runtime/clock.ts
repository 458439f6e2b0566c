/**
 * The time as the service decides by it: milliseconds since the Unix epoch. One is made at each entry
 * (start-server.ts, the CLI) and handed down as an option to everything that compares a time with
 * it: authentication (key expiry, scheduled revocation, the key cache's trust), the in-memory rate
 * windows, Idempotency-Key expiry and the getPet sunset. Tests hand the app a clock they move.
 * Timeouts, retry pacing and durations measured for logs or metrics keep their own timers: they
 * bound waits or describe them, and no answer depends on them.
 */
export type Clock = () => number

/** The system's clock. */
export const systemClock: Clock = () => Date.now()
