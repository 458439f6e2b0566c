import cliProgress from 'cli-progress'
import type { Progress } from '../store/transfer/contract.js'

/**
 * A progress bar (count, rate, ETA) on stderr when stderr is a terminal; nothing at all otherwise,
 * so pipes, files and scripts see no progress output. Drawn by cli-progress.
 */
export function terminalProgress (label: string): Progress {
  if (process.stderr.isTTY !== true) return { start () {}, update () {}, stop () {} }
  let bar: cliProgress.SingleBar | undefined
  let startedAt = 0
  return {
    start (total, unit) {
      startedAt = Date.now()
      bar = new cliProgress.SingleBar({
        stream: process.stderr,
        format: `${label} {bar} {percentage}% | {value}/{total} ${unit} | {rate}/s | ETA {eta_formatted}`,
        hideCursor: true,
        etaBuffer: 50
      }, cliProgress.Presets.shades_classic)
      bar.start(total, 0, { rate: 0 })
    },
    update (done) {
      const seconds = (Date.now() - startedAt) / 1000
      bar?.update(done, { rate: seconds > 0 ? Math.round(done / seconds) : 0 })
    },
    stop () {
      bar?.stop()
      bar = undefined
    }
  }
}
