import { SchedulerRegistry } from '@nestjs/schedule';
import pino from 'pino';
import { Writable } from 'node:stream';
import type { AppConfig } from '../config/config';
import { Metrics } from '../metrics/metrics';
import { ScheduledJobs } from './scheduled-jobs';

function setup(jobsEnabled = true) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>), done()) });
  const logger = pino({ level: 'debug' }, sink);
  const registry = new SchedulerRegistry();
  const jobs = new ScheduledJobs({ jobsEnabled } as AppConfig, logger, new Metrics(false), registry);
  return { jobs, registry, lines };
}

describe('ScheduledJobs: the one place a scheduled job runs', () => {
  it('registers a job under its name, runs it, and records name, duration and rows removed', async () => {
    const { jobs, registry, lines } = setup();
    expect(jobs.schedule({ name: 'purge-a', cron: '0 0 1 1 *', run: () => Promise.resolve(7) })).toBe(true);
    expect(registry.doesExist('cron', 'purge-a')).toBe(true);
    const run = await jobs.runNow('purge-a');
    expect(run).toMatchObject({ job: 'purge-a', outcome: 'ok', rows_removed: 7 });
    expect(run.duration_ms).toBeGreaterThanOrEqual(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.find((l) => l.msg === 'scheduled job ran')).toMatchObject({ job: 'purge-a', rows_removed: 7, outcome: 'ok' });
    jobs.onApplicationShutdown();
    expect(registry.doesExist('cron', 'purge-a')).toBe(false);
  });

  it('records the batches of a job that works in batches', async () => {
    const { jobs, lines } = setup();
    jobs.schedule({ name: 'purge-b', cron: '0 0 1 1 *', run: () => Promise.resolve({ rows: 2500, batches: 3, longestBatchMs: 12.34 }) });
    expect(await jobs.runNow('purge-b')).toMatchObject({ outcome: 'ok', rows_removed: 2500, batches: 3, longest_batch_ms: 12.3 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.find((l) => l.msg === 'scheduled job ran')).toMatchObject({ job: 'purge-b', rows_removed: 2500, batches: 3 });
    jobs.onApplicationShutdown();
  });

  it('a cron of null (setting "off") or jobs disabled registers nothing', () => {
    expect(setup().jobs.schedule({ name: 'off', cron: null, run: () => Promise.resolve(0) })).toBe(false);
    const disabled = setup(false);
    expect(disabled.jobs.schedule({ name: 'x', cron: '* * * * *', run: () => Promise.resolve(0) })).toBe(false);
    expect(disabled.registry.doesExist('cron', 'x')).toBe(false);
  });

  it('one run at a time: a tick during a run does nothing; a failure is contained and logged', async () => {
    const { jobs, lines } = setup();
    let release!: () => void;
    let calls = 0;
    jobs.schedule({
      name: 'slow',
      cron: '0 0 1 1 *',
      run: () => {
        calls += 1;
        return new Promise<number>((resolve, reject) => (release = () => (calls === 1 ? resolve(1) : reject(new Error('db down')))));
      },
    });
    const first = jobs.runNow('slow');
    expect(await jobs.runNow('slow')).toMatchObject({ outcome: 'still-running' });
    release();
    expect(await first).toMatchObject({ outcome: 'ok', rows_removed: 1 });
    const failing = jobs.runNow('slow');
    release();
    expect(await failing).toMatchObject({ outcome: 'failed', rows_removed: 0 });
    expect(calls).toBe(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.find((l) => l.outcome === 'failed')).toMatchObject({ job: 'slow', err: { message: 'db down' } });
    jobs.onApplicationShutdown();
  });
});
