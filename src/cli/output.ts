import Table from 'cli-table3'

/** A column of printRows; `shrink`: on a terminal, cut (with …) so the table fits the terminal's width. */
export interface Column<T> { header: string, value: (row: T) => string, shrink?: true }

/** The width a terminal table fits when the terminal does not say its own (as under some pseudo-terminals). */
const DEFAULT_COLUMNS = 80
const GAP = '  '
const NO_BORDER = Object.fromEntries(['top', 'top-mid', 'top-left', 'top-right', 'bottom', 'bottom-mid', 'bottom-left', 'bottom-right',
  'left', 'left-mid', 'mid', 'mid-mid', 'right', 'right-mid'].map(c => [c, '']))
/** Blanks at the end of a line, before any colour codes that close it. */
const TRAILING_BLANKS = new RegExp(` +((?:${String.fromCharCode(27)}\\[[0-9;]*m)*)$`)

/**
 * Rows for people and for scripts: an aligned table (cli-table3: a bold header, columns two spaces
 * apart, no box) when stdout is a terminal, tab-separated lines of every column without a header when
 * it is piped (stable for cut/awk). Tabs and newlines in values are replaced by spaces so a row stays
 * one line. On a terminal the table shows the `terminal` columns (a narrower choice), a `shrink` one
 * cut to the terminal's width (80 when it says none).
 */
export function printRows<T> (rows: readonly T[], columns: ReadonlyArray<Column<T>>, terminal: ReadonlyArray<Column<T>>, color: boolean): void {
  const clean = (cols: ReadonlyArray<Column<T>>) => rows.map(r => cols.map(c => c.value(r).replace(/[\t\r\n]/g, ' ')))
  if (process.stdout.isTTY !== true) {
    for (const line of clean(columns)) process.stdout.write(line.join('\t') + '\n')
    return
  }
  const cells = clean(terminal)
  const colWidths: Array<number | null> = terminal.map(() => null)
  const cut = terminal.findIndex(c => c.shrink === true)
  if (cut >= 0) {
    const width = process.stdout.columns > 0 ? process.stdout.columns : DEFAULT_COLUMNS
    const natural = terminal.map((c, i) => Math.max(c.header.length, ...cells.map(row => row[i]!.length)))
    const others = natural.reduce((sum, w, i) => i === cut ? sum : sum + w, 0) + GAP.length * (terminal.length - 1)
    // At least the header's width: a terminal too narrow for the other columns wraps rather than hides the names.
    if (others + natural[cut]! > width) colWidths[cut] = Math.max(terminal[cut]!.header.length, width - others)
  }
  const table = new Table({
    head: terminal.map(c => c.header),
    colWidths,
    chars: { ...NO_BORDER, middle: GAP },
    // cli-table3 colours the header red by default; bold only, and only when colour is welcome.
    style: { head: color ? ['bold'] : [], border: [], compact: true, 'padding-left': 0, 'padding-right': 0 }
  })
  table.push(...cells)
  // No trailing blanks (the last column's padding, also inside the header's bold), no empty border lines.
  const lines = table.toString().split('\n').map(l => l.replace(TRAILING_BLANKS, '$1')).filter(l => l !== '')
  process.stdout.write(lines.join('\n') + '\n')
}
