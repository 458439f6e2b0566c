/**
 * Where a response's status and headers are set: Fastify's reply, or the fast lane's answer
 * (fast-lane.ts). The functions that set what a request's answer carries take this, so each is
 * written once for both.
 */
export interface ReplySink {
  // Methods, not function properties: a reply typed by its route's status codes still fits.
  code (status: number): unknown
  header (name: string, value: string): unknown
}
