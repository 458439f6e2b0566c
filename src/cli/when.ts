import { InvalidArgumentError } from 'commander'

/*
 * The times the keys commands take: WHEN (an ISO 8601 time, or a duration from now) and DURATION.
 * Written here rather than taken from a duration library: the forms are few and fixed, and a
 * library's looser grammar ("1.5h", "2 days", "1y") would accept what the help does not promise.
 */

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
/** At most 100 years ahead: further is no expiry worth writing, and Dates stay four-digit years. */
const MAX_MS = 36_500 * UNIT_MS.d
const DURATION = /^([1-9][0-9]{0,9})([smhd])$/
// A calendar date, optionally with a time (minutes at least) and then a zone (Z or ±HH:MM) required.
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?(Z|[+-]\d{2}:\d{2}))?$/

export const DURATION_FORMS = 'a whole number of seconds, minutes, hours or days: 30s, 15m, 12h, 90d'
export const WHEN_FORMS = `an ISO 8601 UTC date or time (2027-01-31, 2027-01-31T12:00:00Z, 2027-01-31T13:00+01:00) or a duration from now (${DURATION_FORMS.replace('a whole', 'whole')})`

/** A duration in ms, or undefined when `value` is not one of the forms. */
function durationMs (value: string): number | undefined {
  const m = DURATION.exec(value)
  if (m === null) return undefined
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS]
}

/** An ISO 8601 date (midnight UTC) or time with its zone, in ms; undefined when not one, or not a real calendar time. */
function isoMs (value: string): number | undefined {
  const m = ISO_TIME.exec(value)
  // Date.parse reads the forms ISO_TIME admits and refuses minute 60, second 60 or a zone past 23:59.
  const ms = Date.parse(value)
  if (m === null || Number.isNaN(ms)) return undefined
  // It also rolls 2027-02-30 over to March and reads hour 24 as the next day's midnight: neither is a time.
  const [, y, mo, d, h] = m
  if (new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d))).getUTCDate() !== Number(d) || h === '24') return undefined
  return ms
}

/** Commander's parser for --after DURATION: the duration in ms (a usage error, exit 2, naming the forms otherwise). */
export function parseDuration (value: string): number {
  const ms = durationMs(value)
  if (ms === undefined || ms > MAX_MS) throw new InvalidArgumentError(`DURATION must be ${DURATION_FORMS} (at most 36500d); got ${JSON.stringify(value)}`)
  return ms
}

/**
 * Commander's parser for --expires WHEN (a usage error, exit 2, naming the forms otherwise): the time
 * it names seen from a `now` given later (a duration counts from then).
 */
export function parseWhen (value: string): (now: number) => Date {
  const ms = durationMs(value)
  if (ms !== undefined && ms <= MAX_MS) return now => new Date(now + ms)
  const at = isoMs(value)
  if (at === undefined || ms !== undefined) throw new InvalidArgumentError(`WHEN must be ${WHEN_FORMS}; got ${JSON.stringify(value)}`)
  return () => new Date(at)
}
