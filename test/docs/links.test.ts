import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { ROOT } from '../helpers/process.js'

/** README.md and every Markdown file under docs/. */
function pages (): string[] {
  const out = [join(ROOT, 'README.md')]
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith('.md')) out.push(path)
    }
  }
  walk(join(ROOT, 'docs'))
  return out
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string): string => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')

function anchors (file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '')
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map(m => slug(m[1]!)))
}

describe('links between the docs', () => {
  it('point to files that exist, and to headings that exist', () => {
    const broken: string[] = []
    for (const page of pages()) {
      const text = readFileSync(page, 'utf8').replace(/^```[\s\S]*?^```/gm, '')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue // http:, https:, mailto:
        const [path, anchor] = target!.split('#') as [string, string | undefined]
        const file = path === '' ? page : join(dirname(page), path)
        const where = `${relative(ROOT, page)} → ${target}`
        if (!existsSync(file)) broken.push(`${where}: no such file`)
        else if (anchor !== undefined && file.endsWith('.md') && !anchors(file).has(anchor)) broken.push(`${where}: no such heading`)
      }
    }
    assert.deepEqual(broken, [])
  })
})
