/**
 * Code samples of each operation, written into the document as `x-codeSamples` (the extension
 * Redoc and Scalar read; the docs page shows them too): curl, the typed client in packages/client,
 * and plain fetch. They address a server on the default port (`PORT=8080`) with the key in
 * `PETSTORE_KEY`; the fetch samples parse with lossless-json, as `JSON.parse` would round the int64
 * `id` and `categoryId` past 2^53.
 */
export interface CodeSample {
  lang: 'Shell' | 'TypeScript' | 'JavaScript'
  label: 'curl' | 'TypeScript client' | 'fetch'
  source: string
}

/** The origin the samples call. */
export const SAMPLE_ORIGIN = 'http://127.0.0.1:8080'

const CLIENT = [
  "import { createClient } from '@petstore/client'",
  '',
  `const petstore = createClient({ baseUrl: '${SAMPLE_ORIGIN}/v1', apiKey: process.env.PETSTORE_KEY! })`
]

const AUTH = '-H "Authorization: Bearer $PETSTORE_KEY"'
const FETCH_AUTH = 'Authorization: `Bearer ${process.env.PETSTORE_KEY}`' // eslint-disable-line no-template-curly-in-string

function samples (curl: string, fetch: string[], client?: string[]): CodeSample[] {
  return [
    { lang: 'Shell', label: 'curl', source: curl },
    ...(client === undefined ? [] : [{ lang: 'TypeScript' as const, label: 'TypeScript client' as const, source: [...CLIENT, ...client].join('\n') }]),
    { lang: 'JavaScript', label: 'fetch', source: fetch.join('\n') }
  ]
}

/** A fetch sample that reads the answer it requests: an Error object, or the body with exact integers. */
const EXACT_FETCH = (request: string[]): string[] => [
  "import { parse } from 'lossless-json'",
  '',
  ...request,
  'const text = await res.text()',
  'if (!res.ok) throw new Error(`${res.status}: ${text}`) // an Error object: branch on its code', // eslint-disable-line no-template-curly-in-string
  'const body = parse(text, null, BigInt) // id and categoryId as exact bigint values',
  'console.log(body)'
]

const PUBLIC_FETCH = (path: string): string[] => [
  `const res = await fetch('${SAMPLE_ORIGIN}${path}')`,
  'console.log(res.status, await res.json())'
]

/** The samples by operationId. */
export const CODE_SAMPLES: Readonly<Record<string, CodeSample[]>> = {
  listPets: samples(
    `curl -sS '${SAMPLE_ORIGIN}/v1/pets?limit=20&status=available' ${AUTH}`,
    [
      ...EXACT_FETCH([`const res = await fetch('${SAMPLE_ORIGIN}/v1/pets?limit=20&status=available', { headers: { ${FETCH_AUTH} } })`]),
      "console.log(res.headers.get('link')) // the next page, when more animals follow"
    ],
    [
      "const page = await petstore.listPets({ limit: 20, status: 'available' })",
      'console.log(page.pets, page.nextCursor)',
      '// or every animal, page after page:',
      "for await (const pet of petstore.pets({ status: 'available' })) console.log(pet.id, pet.name)"
    ]
  ),
  createPet: samples(
    `curl -sS -X POST '${SAMPLE_ORIGIN}/v1/pets' ${AUTH} \\\n  -H 'Content-Type: application/json' \\\n  -d '{"name":"Rex","categoryId":3,"status":"available"}'`,
    EXACT_FETCH([
      `const res = await fetch('${SAMPLE_ORIGIN}/v1/pets', {`,
      "  method: 'POST',",
      `  headers: { ${FETCH_AUTH}, 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() },`,
      '  body: \'{"name":"Rex","categoryId":3,"status":"available"}\' // write int64 values as plain digits, not through JSON.stringify of a number',
      '})'
    ]),
    [
      "const rex = await petstore.createPet({ name: 'Rex', categoryId: 3n, status: 'available' }, { idempotencyKey: crypto.randomUUID() })",
      'console.log(rex.id, rex.categoryId) // exact bigint values'
    ]
  ),
  getPet: samples(
    `curl -sS '${SAMPLE_ORIGIN}/v1/pets/1' ${AUTH}`,
    EXACT_FETCH([`const res = await fetch('${SAMPLE_ORIGIN}/v1/pets/1', { headers: { ${FETCH_AUTH} } })`]),
    [
      'const pet = await petstore.getPet(1n) // deprecated: prefer listPets',
      'console.log(pet.name, pet.status)'
    ]
  ),
  listOrders: samples(
    `curl -sS '${SAMPLE_ORIGIN}/v1/store/orders' ${AUTH}`,
    [
      `const res = await fetch('${SAMPLE_ORIGIN}/v1/store/orders', { headers: { ${FETCH_AUTH} } })`,
      'console.log(res.status, await res.json()) // 501 not_implemented'
    ]
  ),
  index: samples(`curl -sS '${SAMPLE_ORIGIN}/'`, PUBLIC_FETCH('/')),
  liveness: samples(`curl -sS '${SAMPLE_ORIGIN}/healthz'`, PUBLIC_FETCH('/healthz')),
  readiness: samples(`curl -sS '${SAMPLE_ORIGIN}/readyz'`, PUBLIC_FETCH('/readyz'))
}
