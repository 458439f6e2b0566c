/** Epoch ms, injected wherever an answer depends on the time so tests can move it; timeouts keep timers. */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()
