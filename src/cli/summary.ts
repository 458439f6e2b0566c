import type { Counts } from '../services/transfer/format.js'

/** The `--json` summary on stdout (for scripts), with the process's peak RSS; otherwise a line on stderr (a terminal or a log). */
export function report (json: boolean, summary: Record<string, unknown>, human: string): void {
  if (json) {
    const peakRssBytes = process.resourceUsage().maxRSS * 1024
    process.stdout.write(JSON.stringify({ ...summary, peakRssBytes }) + '\n')
  } else {
    process.stderr.write(human + '\n')
  }
}

export const describeCounts = (c: Counts) =>
  `${c.pets} pets, ${c.apiKeys} API keys, ${c.idempotencyKeys} Idempotency-Keys, ${c.settings} settings`

export const secondsSince = (started: number) => Math.round((performance.now() - started) / 10) / 100
