import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { promisify } from 'node:util'
import { ROOT } from './process.js'

/*
 * The build before the newest PostgreSQL migration, taken from the project's git history: the parent
 * of the last commit that added a migration to src/store/postgres/migrations.ts (or HEAD while that file has
 * uncommitted changes), extracted with `git archive`, installed and built with `npm ci`. Installed
 * once per commit into the system's temporary directory (petstore-build-<commit>) and reused by
 * later runs and other checkouts.
 */

const MIGRATIONS = 'src/store/postgres/migrations.ts'
const exec = promisify(execFile)

export interface PreviousBuild {
  commit: string
  dir: string
  server: string
  cli: string
  /** The OpenAPI document that build serves. */
  document: Record<string, any>
}

/** Why the git history cannot give the previous build, or undefined when it can. */
export async function historyMissing (): Promise<string | undefined> {
  try {
    const { stdout } = await exec('git', ['rev-parse', '--is-inside-work-tree'], { cwd: ROOT })
    return stdout.trim() === 'true' ? undefined : 'not a git work tree'
  } catch (err) {
    return `no git history here (${(err as Error).message.split('\n')[0]})`
  }
}

async function git (...args: string[]): Promise<string> {
  return (await exec('git', args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 })).stdout.trim()
}

const MIGRATION_ENTRY = '^\\s*version: [0-9]+,'

/** The commit whose tree is the build before the newest migration. */
async function previousCommit (): Promise<string> {
  // A shallow clone may lack the commit that changed the migrations, or its parent.
  if (await git('rev-parse', '--is-shallow-repository') === 'true') await git('fetch', '--quiet', '--unshallow')
  // A migration is a `version: N` entry: commits that changed only comments or layout do not count.
  const dirty = await exec('git', ['diff', '--quiet', `-G${MIGRATION_ENTRY}`, 'HEAD', '--', MIGRATIONS], { cwd: ROOT }).then(() => false, () => true)
  if (dirty) return await git('rev-parse', 'HEAD')
  const last = await git('log', '-1', '--format=%H', `-G${MIGRATION_ENTRY}`, '--', MIGRATIONS)
  if (last === '') throw new Error(`git log finds no commit that changed ${MIGRATIONS}`)
  return await git('rev-parse', `${last}^`)
}

function run (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => { out = (out + d).slice(-20_000) })
    child.stderr.setEncoding('utf8').on('data', (d: string) => { out = (out + d).slice(-20_000) })
    child.once('error', reject)
    child.once('exit', (code, signal) => code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} in ${cwd} ended with ${code ?? signal}:\n${out}`)))
  })
}

/** The previous build, installed and built (reused when a run before installed it). */
export async function previousBuild (): Promise<PreviousBuild> {
  const commit = await previousCommit()
  const dir = join(tmpdir(), `petstore-build-${commit}`)
  const server = join(dir, 'dist', 'server.js')
  const cli = join(dir, 'dist', 'cli', 'index.js')
  if (!existsSync(join(dir, '.installed'))) {
    const work = mkdtempSync(join(tmpdir(), `petstore-build-${commit.slice(0, 12)}-`))
    try {
      await run('sh', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'sh', ROOT, commit, work], work, process.env)
      // npm's own variables of the running `npm test` stay out; the build's scripts run on this
      // test's Node (first on PATH), so nothing else is installed for them.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')))
      await run('npm', ['ci', '--no-audit', '--no-fund'], work, { ...env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, PETSTORE_NODE_VERSION: 'system' })
      writeFileSync(join(work, '.installed'), `${commit}\n`)
      try {
        renameSync(work, dir)
      } catch (err) {
        // Another run installed it meanwhile: use that one.
        if (!existsSync(join(dir, '.installed'))) throw err
        rmSync(work, { recursive: true, force: true })
      }
    } catch (err) {
      rmSync(work, { recursive: true, force: true })
      throw err
    }
  }
  const document = JSON.parse(readFileSync(join(dir, 'openapi', 'openapi.json'), 'utf8')) as Record<string, any>
  return { commit, dir, server, cli, document }
}
