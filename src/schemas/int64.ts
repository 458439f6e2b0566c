// The signed 64-bit range, in a module of its own: the SQLite background thread needs it (store/rows.ts)
// and must not load TypeBox (schemas/common.ts) to get it, which would weigh on every start.
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
