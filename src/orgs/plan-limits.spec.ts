import { ApiError } from '../common/api-error';
import { checkCountCap, planLimitReached } from './plan-limits';

describe('the one plan-cap answer', () => {
  it('is 422 validation_failed with details { limit, max, fields["limits.<cap>"] }', () => {
    const error = planLimitReached('sources', 5, 'the organization has 5 sources');
    expect(error.status).toBe(422);
    expect(error.code).toBe('validation_failed');
    expect(error.message).toBe('Plan limit reached: limits.sources allows 5; the organization has 5 sources.');
    expect(error.details).toEqual({ limit: 'sources', max: 5, fields: { 'limits.sources': ['the organization has 5 sources'] }, field_count: 1 });
  });

  it('a count cap refuses the row past it; null and undefined are unlimited, and then nothing is counted', async () => {
    const count = (n: number) => jest.fn(async () => n);
    await expect(checkCountCap('agents', 2, count(1), 'live agents')).resolves.toBeUndefined();
    const error = await checkCountCap('agents', 2, count(2), 'live agents').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).details).toEqual({ limit: 'agents', max: 2, fields: { 'limits.agents': ['the organization has 2 live agents'] }, field_count: 1 });
    for (const max of [null, undefined]) {
      const uncounted = count(1_000);
      await expect(checkCountCap('agents', max, uncounted, 'live agents')).resolves.toBeUndefined();
      expect(uncounted).not.toHaveBeenCalled();
    }
  });
});
