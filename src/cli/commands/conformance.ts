import { readFile } from 'node:fs/promises'
import { InvalidArgumentError, Option, type Command } from 'commander'
import { LARGEST_BODY_LIMIT } from '../../config/index.js'
import { checkDeployment, KeyRefused, NAME_PREFIX, type CheckResult } from '../../contract/deployment-check.js'
import { CliError, EXIT } from '../exit.js'

// The document this CLI ships: openapi/openapi.json, three levels up from src/cli/commands/ and dist/cli/commands/.
const SHIPPED = new URL('../../../openapi/openapi.json', import.meta.url)

function parseBaseUrl (value: string): URL {
  const url = URL.parse(value)
  if (url === null) throw new InvalidArgumentError('URL must be an absolute http:// or https:// URL, e.g. https://pets.example.com')
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError(`URL must be http:// or https://, not ${url.protocol}`)
  if (url.search !== '' || url.hash !== '') throw new InvalidArgumentError('URL must have no query or fragment')
  // The service serves /openapi.json and /v1 at its root, and its Location and Link headers are paths
  // from there: checks under a prefix would test a proxy's rewriting, not the contract.
  if (url.pathname !== '/') throw new InvalidArgumentError(`URL must be the deployment's origin, without a path (not ${url.pathname}): the checks request /openapi.json and the document's /v1 paths from the root; behind a proxy that adds a prefix, give the address that serves the root`)
  return url
}

function parseKey (value: string): string {
  if (value.trim() === '' || /[\s,]/.test(value)) throw new InvalidArgumentError('KEY must be one API key, without spaces')
  return value
}

function parsePositive (value: string): number {
  if (!/^[1-9][0-9]{0,6}$/.test(value)) throw new InvalidArgumentError('must be a positive whole number')
  return Number(value)
}

/** One line per failed check: its name, the request, what the document promises and what came back. */
function describe (r: CheckResult): string {
  return `FAIL ${r.id}: ${r.where === undefined ? '' : `${r.where}: `}expected ${r.expected ?? '?'}; got ${r.got ?? '?'}`
}

export function registerConformanceCommand (program: Command): void {
  program.command('conformance')
    .summary('Check a live deployment against the API contract')
    .description('Check a live deployment, from outside, against the contract: the OpenAPI document it serves at /openapi.json ' +
      '(compared with the one this CLI ships) and every operation, status, header and body it promises that can be checked without ' +
      'changing data, HTTP/1.1 framing on a raw connection included. Read-only unless --write. Exit 0 when everything checked conforms, ' +
      '1 with one line per failed check on stdout (what was expected, what came back). The key is never printed. ' +
      'See docs/how-to/check-a-deployment.md.')
    .requiredOption('--base-url <url>', 'where the deployment answers, e.g. https://pets.example.com (its /openapi.json and the /v1 paths it lists)', parseBaseUrl)
    .addOption(new Option('--key <key>', 'an API key of the deployment with read scope (and write scope for --write); PETSTORE_API_KEY instead keeps it out of ps and shell history').env('PETSTORE_API_KEY').argParser(parseKey).makeOptionMandatory())
    .option('--write', `also create pets (named ${NAME_PREFIX}…; they stay) and check 201, Location, reading it back and the Idempotency-Key replay`)
    .option('--json', 'print a JSON report on stdout instead of the failure lines')
    .option('--timeout <ms>', 'longest wait for one answer, in milliseconds', parsePositive, 10000)
    .option('--max-pages <n>', 'most pages the cursor walk follows', parsePositive, 20)
    .action(async (opts: { baseUrl: URL, key: string, write?: boolean, json?: boolean, timeout: number, maxPages: number }) => {
      const shipped = await readFile(SHIPPED, 'utf8').then(text => JSON.parse(text) as Record<string, unknown>).catch((err: Error) => {
        throw new CliError(`cannot read the OpenAPI document this CLI ships (${err.message})`)
      })
      const results = await checkDeployment({
        target: { base: opts.baseUrl, timeoutMs: opts.timeout },
        key: opts.key,
        shipped,
        write: opts.write === true,
        maxPages: opts.maxPages,
        largestBodyLimit: LARGEST_BODY_LIMIT
      }).catch((err: unknown) => {
        if (err instanceof KeyRefused) throw new CliError(`${err.message}; check --key (or PETSTORE_API_KEY): it must be a key of ${opts.baseUrl.origin}, not revoked or expired, with read scope (and write scope for --write)`)
        throw err
      })
      // Nothing a deployment sends back may carry the key into the output.
      const scrub = (s: string): string => s.split(opts.key).join('[key]')
      const { passed = [], failed = [], skipped = [] } = Object.groupBy(results, r => r.outcome)
      if (opts.json === true) {
        const report = { baseUrl: opts.baseUrl.href, write: opts.write === true, conforms: failed.length === 0, passed: passed.length, failed: failed.length, skipped: skipped.length, checks: results }
        process.stdout.write(scrub(JSON.stringify(report, null, 2)) + '\n')
      } else {
        for (const r of failed) process.stdout.write(scrub(describe(r)).replace(/[\r\n]+/g, ' ') + '\n')
        for (const r of skipped) process.stderr.write(scrub(`skipped ${r.id}: ${r.reason ?? ''}`) + '\n')
      }
      process.stderr.write(`${results.length} checks against ${opts.baseUrl.origin}: ${passed.length} passed, ${failed.length} failed, ${skipped.length} skipped\n`)
      if (failed.length > 0) process.exitCode = EXIT.failure
    })
}
