import { TransferLineError } from './format.js'

/** A line longer than this is refused, so a damaged file cannot make the import hold it all in memory. */
export const MAX_LINE_BYTES = 1 << 20

export interface Line { no: number, text: string }

/**
 * "\n"-terminated lines numbered from 1, in strict UTF-8. Not node:readline: import must know that the
 * last line ended with "\n" (else the file was cut short) and must refuse invalid UTF-8, not replace it.
 */
export async function * readLines (input: AsyncIterable<Buffer>): AsyncGenerator<Line> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  const decode = (bytes: Buffer, no: number): string => {
    try {
      return decoder.decode(bytes)
    } catch {
      throw new TransferLineError(no, 'not valid UTF-8')
    }
  }
  // The start of a line whose end is still to come: at most MAX_LINE_BYTES, joined to the next chunk.
  let rest = Buffer.alloc(0)
  let no = 0
  for await (const data of input) {
    const chunk = Buffer.concat([rest, data])
    let start = 0
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      no++
      if (nl - start > MAX_LINE_BYTES) throw new TransferLineError(no, `longer than ${MAX_LINE_BYTES} bytes`)
      yield { no, text: decode(chunk.subarray(start, nl), no) }
      start = nl + 1
    }
    rest = chunk.subarray(start)
    if (rest.length > MAX_LINE_BYTES) throw new TransferLineError(no + 1, `longer than ${MAX_LINE_BYTES} bytes`)
  }
  if (rest.length > 0) throw new TransferLineError(no + 1, 'the file ends in the middle of this line (no final newline): it is truncated')
}
