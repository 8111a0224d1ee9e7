'use strict';
/**
 * Preloaded into a server process by tests (NODE_OPTIONS=--require …): on
 * SIGUSR2 (sent once the server is ready, so start-up is not slowed) it keeps
 * the event loop busy, as a saturated host does. Every few milliseconds the
 * loop is blocked for CPU_HOG_SPIN_MS (default 40): longer than the 25 ms a
 * request waits for Redis, so the wait's timer is always due before the
 * reply that arrived meanwhile has been read.
 */
const { setInterval } = require('node:timers');
const { performance } = require('node:perf_hooks');

const spinMs = Number(process.env.CPU_HOG_SPIN_MS || 40);
process.once('SIGUSR2', () => {
  setInterval(() => {
    const end = performance.now() + spinMs;
    while (performance.now() < end) {
      // busy: nothing else runs on this event loop meanwhile
    }
  }, 5).unref();
});
