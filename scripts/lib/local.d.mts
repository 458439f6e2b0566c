export function freePort (): Promise<number>
export const isRoot: boolean
export function postgresOwner (): { uid: number, gid: number } | undefined
export function asPostgresUser (bin: string, args: string[]): [string, string[]]
