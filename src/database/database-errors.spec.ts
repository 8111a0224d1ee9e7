import { ErrorCode } from '../common/api-error';
import { databaseErrorState, isDeadlinePassed, isLostConnection, sqlstateClass, translateDatabaseError } from './database-errors';

// Drizzle 0.45 wraps the driver's error: the PostgreSQL code is on `cause`
const wrapped = (code: string, message = 'db error') => Object.assign(new Error('Failed query: ...'), { cause: Object.assign(new Error(message), { code }) });

describe('translateDatabaseError', () => {
  it.each([
    ['22021', 'invalid byte sequence for encoding "UTF8": 0x00'],
    ['22P05', 'unsupported Unicode escape sequence'],
    ['22P02', 'invalid input syntax'],
    ['22001', 'value too long'],
    ['22007', 'invalid datetime format'],
    ['2201B', 'invalid regular expression'],
    ['54000', 'index row size exceeds maximum'],
  ])('maps data exception %s (%s) to 422 validation_failed, not a 500', (code, message) => {
    expect(translateDatabaseError(wrapped(code, message))?.code).toBe(ErrorCode.ValidationFailed);
  });

  it.each(['57P01', '57014', '08006', 'ECONNREFUSED', '53300'])('maps %s to 503 service_unavailable', (code) => {
    expect(translateDatabaseError(wrapped(code))?.code).toBe(ErrorCode.ServiceUnavailable);
  });

  it('maps a unique violation to 409 and leaves unknown errors to the filter (500)', () => {
    expect(translateDatabaseError(wrapped('23505'))?.code).toBe(ErrorCode.Conflict);
    expect(translateDatabaseError(wrapped('XX000'))).toBeNull();
  });
});

describe('database errors of the moment or of a connection (retrying may succeed)', () => {
  // 42P05/26000: a named prepared statement met a server connection a pooler in transaction mode handed over
  it.each(['40001', '40P01', '55P03', '26000', '42P05'])('maps %s to 503 service_unavailable', (code) => {
    expect(translateDatabaseError(wrapped(code))?.code).toBe(ErrorCode.ServiceUnavailable);
  });
});

describe('databaseErrorState', () => {
  const serverError = (code: string) => Object.assign(new Error('Failed query: ...'), { cause: Object.assign(new Error('db error'), { code, severity: 'ERROR' }) });

  it("names the SQLSTATE of a server's error along the cause chain", () => {
    expect(databaseErrorState(serverError('XX000'))).toBe('XX000');
    expect(databaseErrorState(serverError('42703'))).toBe('42703');
  });

  it('is null for errors that are not the database server’s', () => {
    expect(databaseErrorState(new Error('boom'))).toBeNull();
    expect(databaseErrorState(Object.assign(new Error('operation not permitted'), { code: 'EPERM', syscall: 'open' }))).toBeNull();
  });
});

describe('sqlstateClass: the class of a database error, along its cause chain', () => {
  test.each([
    [{ code: '23505' }, '23'],
    // drizzle 0.45 wraps the driver's error
    [{ message: 'Failed query', cause: { code: '40P01' } }, '40'],
    [{ cause: { cause: { code: '57014' } } }, '57'],
    // errno codes and plain errors have no SQLSTATE
    [{ code: 'ECONNREFUSED' }, 'none'],
    [new Error('socket hang up'), 'none'],
    [null, 'none'],
    ['text', 'none'],
  ])('%j → %s', (error, expected) => {
    expect(sqlstateClass(error)).toBe(expected);
  });
});

describe('isLostConnection: the connection was gone when the statement reached it', () => {
  test.each([
    [{ code: '57P01' }, true],
    [{ code: '57P02' }, true],
    [{ code: '08006' }, true],
    [{ code: 'ECONNRESET' }, true],
    [{ code: 'EPIPE' }, true],
    // the statement's own failures, and a timeout that left the connection usable
    [{ code: '57014' }, false],
    [{ code: '23505' }, false],
    [new Error('no code'), false],
    [null, false],
  ])('%j → %s', (error, expected) => {
    expect(isLostConnection(error)).toBe(expected);
  });
});

describe('isDeadlinePassed: the database layer\'s own deadline, bare or wrapped by drizzle', () => {
  const deadline = Object.assign(new Error('statement: the database deadline has passed'), { code: 'ETIMEDOUT' });
  test('on the error itself', () => expect(isDeadlinePassed(deadline)).toBe(true));
  // drizzle 0.45 wraps every failed query ("database query failed: …") with the driver's error as its cause
  test('as the cause of a wrapping error', () => expect(isDeadlinePassed(Object.assign(new Error('database query failed'), { cause: deadline }))).toBe(true));
  test('not a server-side error or a lost connection', () => {
    expect(isDeadlinePassed(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014', severity: 'ERROR' }))).toBe(false);
    expect(isDeadlinePassed(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(false);
  });
});
