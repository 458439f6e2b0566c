import { readFileSync } from 'node:fs'

/** A fenced code block of a Markdown file: its opening line's language and the word after it (`sh run`). */
export interface CodeBlock { file: string, line: number, lang: string, kind: string, text: string }

/** The fenced code blocks of a Markdown file, in order; `line` is the opening fence's (1-based). */
export function codeBlocks (file: string): CodeBlock[] {
  const out: CodeBlock[] = []
  const lines = readFileSync(file, 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i]!)
    if (open === null) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i]!)
    out.push({ file, line: start + 1, lang: open[1]!, kind: open[2]!.trim(), text: body.join('\n') })
  }
  return out
}
