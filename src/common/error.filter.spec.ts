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
