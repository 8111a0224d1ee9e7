import { BadRequestException, type ArgumentsHost } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import type { AppLogger } from '../common/logger';
import { ErrorEnvelopeFilter } from './error.filter';
import { Metrics } from '../metrics/metrics';

function render(exception: unknown): { status: number; body: { error: { code: string } } } {
  let status = 0;
  let body: unknown;
  const adapter = { setHeader: () => undefined, reply: (_res: unknown, b: unknown, s: number) => ((body = b), (status = s)) };
  const logger = { warn: () => undefined, error: () => undefined } as unknown as AppLogger;
  const filter = new ErrorEnvelopeFilter({ httpAdapter: adapter } as unknown as HttpAdapterHost, logger, new Metrics(false));
  const host = { switchToHttp: () => ({ getRequest: () => ({ requestId: 'req_test' }), getResponse: () => ({}) }) } as unknown as ArgumentsHost;
  filter.catch(exception, host);
  return { status, body: body as { error: { code: string } } };
}

describe('ErrorEnvelopeFilter: framework errors', () => {
  it('maps a framework 400 to 422 validation_failed', () => {
    const { status, body } = render(new BadRequestException('something else'));
    expect(status).toBe(422);
    expect(body.error.code).toBe('validation_failed');
  });

  it("maps a platform error's statusCode (415: a Content-Type that does not parse) to 422", () => {
    const { status, body } = render(Object.assign(new Error('Unsupported Media Type'), { statusCode: 415 }));
    expect(status).toBe(422);
    expect(body.error.code).toBe('validation_failed');
  });

  it('answers anything else as 500 internal_error', () => {
    const { status, body } = render(new Error('boom'));
    expect(status).toBe(500);
    expect(body.error.code).toBe('internal_error');
  });
});

describe('ErrorEnvelopeFilter: database errors', () => {
  function renderLogged(exception: unknown) {
    const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
    const logger = {
      warn: (obj: Record<string, unknown>, msg: string) => lines.push({ level: 'warn', obj, msg }),
      error: (obj: Record<string, unknown>, msg: string) => lines.push({ level: 'error', obj, msg }),
    } as unknown as AppLogger;
    let status = 0;
    const adapter = { setHeader: () => undefined, reply: (_res: unknown, _b: unknown, s: number) => (status = s) };
    const host = { switchToHttp: () => ({ getRequest: () => ({ requestId: 'req_test' }), getResponse: () => ({}) }) } as unknown as ArgumentsHost;
    new ErrorEnvelopeFilter({ httpAdapter: adapter } as unknown as HttpAdapterHost, logger, new Metrics(false)).catch(exception, host);
    return { status, lines };
  }
  const failedQuery = (code: string) => Object.assign(new Error('Failed query: select 1'), { params: [], cause: Object.assign(new Error('db error'), { code, severity: 'ERROR' }) });

  it('answers a prepared statement a pooler left on the connection (42P05) with 503, logged as the database being unavailable', () => {
    const { status, lines } = renderLogged(failedQuery('42P05'));
    expect(status).toBe(503);
    expect(lines.map((line) => [line.level, line.msg])).toEqual([['warn', 'database unavailable']]);
  });

  it('logs a database error it has no answer for as a database error with its SQLSTATE, never as an unhandled one', () => {
    const { status, lines } = renderLogged(failedQuery('XX000'));
    expect(status).toBe(500);
    expect(lines.map((line) => [line.level, line.msg, line.obj.sqlstate])).toEqual([['error', 'database error', 'XX000']]);
  });
});
