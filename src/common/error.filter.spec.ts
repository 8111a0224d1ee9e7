import { BadRequestException, type ArgumentsHost } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import type { AppLogger } from './logger';
import { ErrorEnvelopeFilter } from './error.filter';

function render(exception: unknown): { status: number; body: { error: { code: string } } } {
  let status = 0;
  let body: unknown;
  const adapter = { setHeader: () => undefined, reply: (_res: unknown, b: unknown, s: number) => ((body = b), (status = s)) };
  const logger = { warn: () => undefined, error: () => undefined } as unknown as AppLogger;
  const filter = new ErrorEnvelopeFilter({ httpAdapter: adapter } as unknown as HttpAdapterHost, logger);
  const host = { switchToHttp: () => ({ getRequest: () => ({ requestId: 'req_test' }), getResponse: () => ({}) }) } as unknown as ArgumentsHost;
  filter.catch(exception, host);
  return { status, body: body as { error: { code: string } } };
}

describe('ErrorEnvelopeFilter: a path Express cannot percent-decode', () => {
  it('is a 404 not_found (it names no resource), not a validation error', () => {
    const { status, body } = render(new BadRequestException("Failed to decode param '%E0%A4%A'"));
    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
  });

  it('leaves other 400s as 422 validation_failed', () => {
    const { status, body } = render(new BadRequestException('something else'));
    expect(status).toBe(422);
    expect(body.error.code).toBe('validation_failed');
  });
});
