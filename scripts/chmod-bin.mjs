// npm links the bin at install time; the compiled entry must be executable for `npx petstore`.
import { chmodSync } from 'node:fs'
chmodSync(new URL('../dist/cli/index.js', import.meta.url), 0o755)
