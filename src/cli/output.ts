import Table from 'cli-table3'

export interface Column<T> { header: string, value: (row: T) => string }

/**
 * Rows for people and for scripts: an aligned table (cli-table3) when stdout is a terminal,
 * tab-separated lines without a header when it is piped (stable for cut/awk). Tabs and newlines in
 * values are replaced by spaces so a row stays one line.
 */
export function printRows<T> (rows: readonly T[], columns: ReadonlyArray<Column<T>>, opts: { color: boolean }): void {
  const cells = rows.map(r => columns.map(c => c.value(r).replace(/[\t\r\n]/g, ' ')))
  if (process.stdout.isTTY !== true) {
    for (const line of cells) process.stdout.write(line.join('\t') + '\n')
    return
  }
  // cli-table3 colours the header red by default; bold only, and only when colour is welcome.
  const table = new Table({ head: columns.map(c => c.header), style: { head: opts.color ? ['bold'] : [], border: [], compact: true } })
  table.push(...cells)
  process.stdout.write(table.toString() + '\n')
}
