// Lint: neostandard, the style Fastify itself uses (no semicolons, two spaces, space before function
// parentheses), with its TypeScript rules. `npm run lint` checks, `npm run lint:fix` fixes what it can.
import neostandard, { plugins } from 'neostandard'

export default [
  ...neostandard({
    ts: true,
    ignores: ['dist/**', 'packages/client/dist/**', 'openapi/**', 'bench/results/**', 'coverage/**']
  }),
  {
    rules: {
      // `void promise` marks a promise deliberately not awaited (a floating one is a bug elsewhere).
      'no-void': ['error', { allowAsStatement: true }],
      // Flags that other async code sets (a timer, a handler) end our loops; this rule reads only the loop body.
      'no-unmodified-loop-condition': 'off',
      // A handle assigned once but read first by a cleanup registered before it exists (onCleanup).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }]
    }
  },
  {
    // Tests clean up with onCleanup (test/helpers/cleanup.ts): node:test's t.after runs first
    // registered first and stops at the first failure, which once left a server running for 88 minutes.
    files: ['test/**/*.ts'],
    ignores: ['test/helpers/cleanup.ts'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: "CallExpression[callee.type='MemberExpression'][callee.property.name='after'][arguments.length=1]",
        message: 'Register cleanups with onCleanup(t, fn) from test/helpers/cleanup.ts (last first, all of them), not t.after.'
      }]
    }
  },
  {
    files: ['**/*.ts'],
    plugins: { '@typescript-eslint': plugins['typescript-eslint'].plugin },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_' }]
    }
  }
]
