import { loadavg } from 'node:os';

/** The three load averages, printed beside every figure: a busy machine explains a slow one. */
export const loadAverage = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
