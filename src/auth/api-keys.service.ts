import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { constantTimeEqual, randomUrlSafe, sha256Hex } from '../../libs/crypto/crypto';
import { newId } from '../../libs/ids/ids';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { ApiError, ErrorCode } from '../common/api-error';
import { LOGGER, loggableError, type AppLogger } from '../common/logger';
import { AuthenticationFailure, type AuthContext, type AuthFailureReason } from '../common/request-context';
import { ApiKeysRepository, type ApiKeyRow } from './api-keys.repository';
import { API_KEY_PREFIX, isScope, SCOPES, type Scope } from './scopes';

const SECRET_LENGTH = 40;
const LOOKUP_PREFIX_LENGTH = 8;
const TOKEN_PATTERN = /^svc_live_[A-Za-z0-9_-]{32,128}$/;
const MAX_CACHED_KEYS = 10_000;
const LAST_USED_FLUSH_MS = 10_000;

interface KnownKey {
  id: string;
  orgId: string;
  scopes: ReadonlySet<string>;
  expiresAt: Date | null;
  orgStatus: string;
  orgPlan: string;
}

interface CachedKey {
  /** null: the token is known not to be valid (negative cache) */
  key: KnownKey | null;
  until: number;
  /** why a token that is no valid key is not: it names no key, or a revoked one */
  invalid?: InvalidToken;
}

type InvalidToken = 'unknown' | 'revoked';

interface CreatedKey {
  id: string;
  token: string;
  scopes: Scope[];
  org_id: string;
}

export interface ApiKeyInput {
  id?: string;
  orgId: string;
  label: string;
  scopes: string[];
  token?: string;
  expiresAt?: Date | null;
  revoked?: boolean;
}

export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

export function generateToken(): string {
  return `${API_KEY_PREFIX}${randomUrlSafe(SECRET_LENGTH)}`;
}

/**
 * API keys: created, revoked, and checked on every request. Checked keys are
 * served from memory for at most `API_KEY_CACHE_TTL_MS` (≤ 5 s), which bounds
 * how long a revocation takes to bite, on every instance. Tokens that match no
 * key are remembered as unknown for as long, apart from the valid ones, so a
 * repeated guess costs no query and a flood of new guesses evicts no valid key.
 * `last_used_at` is
 * batched into one write every few seconds instead of one per request.
 */
@Injectable()
export class ApiKeysService implements OnModuleDestroy {
  /**
   * token hash → a valid key; bounded, oldest dropped first. An entry past its
   * TTL is looked up again before use, and until then still says the token
   * was valid lately (see {@link wasValidLately}).
   */
  private readonly cache = new Map<string, CachedKey>();
  /**
   * token hash → known not to be a valid key. Kept apart from `cache` so that
   * a flood of guesses (each a new token) cannot push valid keys out.
   */
  private readonly unknown = new Map<string, { until: number; invalid: InvalidToken }>();
  private readonly inflight = new Map<string, Promise<CachedKey>>();
  /** key id → last use (epoch ms), batched; a Date is made only when flushed */
  private readonly lastUsed = new Map<string, number>();
  private readonly flushTimer: NodeJS.Timeout;

  constructor(
    private readonly repository: ApiKeysRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: AppLogger,
  ) {
    this.flushTimer = setInterval(() => void this.flushLastUsed(), LAST_USED_FLUSH_MS);
    this.flushTimer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.flushTimer);
    await this.flushLastUsed();
  }

  /** Authorization header → the caller, or 401 `unauthorized`. */
  async authenticate(authorization: string | string[] | undefined, now = Date.now()): Promise<AuthContext> {
    const known = this.authenticateFromMemory(authorization, now);
    if (known instanceof ApiError) throw known;
    if (known) return known;
    const token = parseBearer(authorization)!;
    const entry = await this.load(token, sha256Hex(token), now);
    const outcome = this.outcome(entry, now);
    if (outcome instanceof ApiError) throw outcome;
    return outcome;
  }

  /**
   * What the memory already knows about this Authorization header, without a
   * query: the caller, the 401, or undefined when the key must be looked up
   * (a well-formed token seen neither as valid nor as unknown lately).
   */
  authenticateFromMemory(authorization: string | string[] | undefined, now = Date.now()): AuthContext | AuthenticationFailure | undefined {
    const token = parseBearer(authorization);
    if (!token) {
      return unauthorized(authorization === undefined || authorization === '' ? 'missing' : 'malformed', 'Authorization header must be "Bearer svc_live_<token>".');
    }
    // a malformed token matches no key: refused without a lookup or a cache entry
    if (!isWellFormedToken(token)) return unauthorized('malformed', 'The API key is not valid.');
    const tokenHash = sha256Hex(token);
    const entry = this.cache.get(tokenHash);
    if (entry && entry.until > now) return this.outcome(entry, now);
    const unknown = this.unknown.get(tokenHash);
    if (unknown !== undefined && unknown.until > now) return unauthorized(unknown.invalid, 'The API key is not valid.');
    return undefined;
  }

  /**
   * Was this token a valid key when last looked up on this instance (however
   * long ago, within the cache's bound)? Such a token is looked up even for a
   * client whose budget for bad keys is spent, so a working client behind the
   * same address as a guesser keeps working.
   */
  wasValidLately(authorization: string | string[] | undefined): boolean {
    const token = parseBearer(authorization);
    return token !== null && this.cache.has(sha256Hex(token));
  }

  private outcome({ key, invalid }: CachedKey, now: number): AuthContext | AuthenticationFailure {
    if (!key) return unauthorized(invalid ?? 'unknown', 'The API key is not valid.');
    if (key.expiresAt && key.expiresAt.getTime() <= now) return unauthorized('expired', 'The API key has expired.');
    this.lastUsed.set(key.id, now);
    return { keyId: key.id, orgId: key.orgId, orgStatus: key.orgStatus, orgPlan: key.orgPlan, scopes: key.scopes };
  }

  async create(input: ApiKeyInput): Promise<CreatedKey> {
    const scopes = validateScopes(input.scopes);
    const token = input.token ?? generateToken();
    if (!isWellFormedToken(token)) {
      throw ApiError.field('token', `must be ${API_KEY_PREFIX} followed by 32 to 128 URL-safe characters`);
    }
    const id = input.id ?? newId('key');
    const written = await this.repository.upsert(
      {
        id,
        orgId: input.orgId,
        label: input.label,
        lookupPrefix: lookupPrefixOf(token),
        tokenHash: sha256Hex(token),
        scopes,
        expiresAt: input.expiresAt ?? null,
        revokedAt: input.revoked ? new Date() : null,
      },
    );
    if (!written) throw new ApiError(ErrorCode.Conflict, `key ${id} belongs to another organization`);
    // a token tried before it existed is valid from now on (on this instance; others within the cache TTL)
    this.unknown.delete(sha256Hex(token));
    return { id, token, scopes, org_id: input.orgId };
  }

  async revoke(keyId: string): Promise<ApiKeyRow | null> {
    const row = await this.repository.revoke(keyId, new Date());
    this.cache.clear();
    return row;
  }

  list(orgId: string): Promise<ApiKeyRow[]> {
    return this.repository.listByOrg(orgId);
  }

  private load(token: string, tokenHash: string, now: number): Promise<CachedKey> {
    // single flight: a burst of requests with one uncached key costs one query
    const pending = this.inflight.get(tokenHash);
    if (pending) return pending;
    const promise = this.lookup(token, tokenHash, now).finally(() => this.inflight.delete(tokenHash));
    this.inflight.set(tokenHash, promise);
    return promise;
  }

  private async lookup(token: string, tokenHash: string, now: number): Promise<CachedKey> {
    const candidates = await this.repository.findCandidatesByPrefix(lookupPrefixOf(token));
    let match: KnownKey | null = null;
    let invalid: InvalidToken = 'unknown';
    for (const candidate of candidates) {
      if (!constantTimeEqual(candidate.tokenHash, tokenHash)) continue;
      if (candidate.revokedAt) {
        invalid = 'revoked';
        continue;
      }
      match = {
        id: candidate.id,
        orgId: candidate.orgId,
        scopes: new Set(candidate.scopes),
        expiresAt: candidate.expiresAt,
        orgStatus: candidate.orgStatus,
        orgPlan: candidate.orgPlan,
      };
    }
    const until = now + this.config.apiKeyCacheTtlMs;
    if (match) {
      this.unknown.delete(tokenHash);
      boundedSet(this.cache, tokenHash, { key: match, until });
    } else {
      this.cache.delete(tokenHash);
      boundedSet(this.unknown, tokenHash, { until, invalid });
    }
    return match ? { key: match, until } : { key: null, until, invalid };
  }

  /** Writes the batched last-used times (every few seconds, and at shutdown). */
  async flushLastUsed(): Promise<void> {
    if (this.lastUsed.size === 0) return;
    const entries: Array<[string, Date]> = [...this.lastUsed].map(([id, at]) => [id, new Date(at)]);
    this.lastUsed.clear();
    try {
      await this.repository.recordLastUsed(entries);
    } catch (error) {
      // loggableError: a query error's message is the query's text and parameters
      this.logger.warn({ err: loggableError(error) }, 'could not record api key last_used_at');
    }
  }
}

/** Map iteration order is insertion order: at the bound, the oldest entry goes. */
function boundedSet<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= MAX_CACHED_KEYS) {
    const oldest = map.keys().next().value;
    if (oldest !== undefined) map.delete(oldest);
  }
  map.set(key, value);
}

function parseBearer(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  return match && match[1].startsWith(API_KEY_PREFIX) ? match[1] : null;
}

function lookupPrefixOf(token: string): string {
  return token.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + LOOKUP_PREFIX_LENGTH);
}

function unauthorized(reason: AuthFailureReason, message: string): AuthenticationFailure {
  return new AuthenticationFailure(reason, message);
}

export function validateScopes(scopes: string[]): Scope[] {
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0) throw ApiError.field('scopes', `unknown scopes: ${unknown.join(', ')}; valid scopes: ${SCOPES.join(', ')}`);
  if (scopes.length === 0) throw ApiError.field('scopes', `at least one scope is required; valid scopes: ${SCOPES.join(', ')}`);
  return [...new Set(scopes)] as Scope[];
}
