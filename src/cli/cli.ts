#!/usr/bin/env node
import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import pino from 'pino';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseId } from '../../libs/ids/ids';
import { AgentsTrashService } from '../agents/agents-trash.service';
import { AppModule } from '../app.module';
import { metricsFor } from '../metrics/metrics.module';
import { mapApiKey } from '../auth/api-keys.mapper';
import { ApiKeysService, validateScopes } from '../auth/api-keys.service';
import { SCOPES } from '../auth/scopes';
import { ApiError } from '../common/api-error';
import { uniqueViolationConstraint } from '../database/database-errors';
import { createLogger, PinoNestLogger, type AppLogger } from '../common/logger';
import { ConfigError, loadConfig, type AppConfig } from '../config/config';
import { DatabaseConnection } from '../database/connection';
import { FixtureLoader } from '../seed/fixture-loader.service';
import { FixtureError } from '../fixtures/fixture-registry';
import { OrgsService, slugify } from '../orgs/orgs.service';

/**
 * Operator command line. Same settings as the
 * server. `--json` prints exactly one JSON document on stdout; logs go to
 * stderr. Exit 0 on success; on failure one line on stderr (and, with
 * `--json`, `{"error":{…}}` on stdout) and exit 1 (2 for usage errors).
 */

/** A failure the operator can act on: printed as one line. */
class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
    readonly code = 'failed',
  ) {
    super(message);
  }
}

const usageError = (message: string) => new CliError(message, 2, 'usage');

type OptionSpec = NonNullable<ParseArgsConfig['options']>;
type OptionValues = Record<string, string | boolean | undefined>;

interface CommandInput {
  /** positional arguments after the command words */
  args: string[];
  values: OptionValues;
  config: AppConfig;
  logger: AppLogger;
  /** the application context (database migrated), opened on first use and closed after the command */
  app(): Promise<INestApplicationContext>;
}

interface CommandOutput {
  /** printed with --json */
  json: unknown;
  /** printed otherwise */
  text: string;
}

interface CommandSpec {
  /** command words, e.g. `keys create` */
  name: string;
  usage: string;
  summary: string;
  /** appended to this command's usage errors (e.g. the valid values of an option) */
  hint?: string;
  /** names of the required positional arguments */
  positionals: string[];
  options: OptionSpec;
  /** options that must be given */
  required?: string[];
  run(input: CommandInput): Promise<CommandOutput>;
}

function isoOption(name: string, value: string): Date {
  // a date-time with a zone, as the API writes them; a bare date means midnight UTC
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/.test(value) || Number.isNaN(Date.parse(value))) {
    throw usageError(`--${name} must be an ISO 8601 date-time such as 2030-01-31T00:00:00Z, got "${value}"`);
  }
  return new Date(value);
}

function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

async function requireOrg(app: INestApplicationContext, value: string): Promise<string> {
  const orgId = parseId('org', value);
  const row = orgId ? await app.get(OrgsService).findRow(orgId) : null;
  if (!row) throw new CliError(`organization ${value} not found`, 1, 'not_found');
  return row.id;
}

/**
 * Every command. Adding one is adding an entry here: its words, usage,
 * options and a `run` that returns what to print.
 */
const COMMANDS: CommandSpec[] = [
  {
    name: 'db migrate',
    usage: 'db migrate',
    summary: 'apply pending migrations',
    positionals: [],
    options: {},
    async run({ config, logger }) {
      // not the app context: that would migrate on open, and this command reports what it did
      const connection = await DatabaseConnection.open(config, logger);
      try {
        const before = await connection.appliedMigrations();
        await connection.migrate();
        const after = await connection.appliedMigrations();
        return {
          json: { applied: after - before, total: after },
          text: after > before ? `applied ${after - before} migration(s); ${after} in total` : `database is up to date (${after} migrations)`,
        };
      } finally {
        await connection.close();
      }
    },
  },
  {
    name: 'seed',
    usage: 'seed <file>',
    summary: 'load a fixture file; rows are upserted by id, so running it twice is safe',
    positionals: ['file'],
    options: {},
    async run({ args, app }) {
      const summary = await (await app()).get(FixtureLoader).loadFile(args[0]);
      const lines = [`loaded ${summary.orgs.length} organization(s): ${summary.orgs.map((org) => `${org.id} (${org.name})`).join(', ')}`];
      for (const key of summary.generated_keys) {
        lines.push(`generated key ${key.id} "${key.label}" for ${key.org_id} (shown once): ${key.token}`);
      }
      return { json: summary, text: lines.join('\n') };
    },
  },
  {
    name: 'orgs create',
    usage: 'orgs create --name N [--slug S] [--plan P]',
    summary: 'create an organization; prints its id',
    positionals: [],
    options: { name: { type: 'string' }, slug: { type: 'string' }, plan: { type: 'string' } },
    required: ['name'],
    async run({ values, app }) {
      const name = stringOption(values, 'name')!.trim();
      const slug = stringOption(values, 'slug');
      const plan = stringOption(values, 'plan');
      if (name.length === 0 || name.length > 200) throw usageError('--name must be 1 to 200 characters');
      if (slug !== undefined && !/^[a-z0-9][a-z0-9-]{0,62}$/.test(slug)) {
        throw usageError('--slug must be 1 to 63 lowercase letters, digits and dashes, starting with a letter or digit');
      }
      if (plan !== undefined && (plan.trim().length === 0 || plan.length > 64)) throw usageError('--plan must be 1 to 64 characters');
      const orgs = (await app()).get(OrgsService);
      let id: string;
      try {
        id = await orgs.upsertOrg({ name, slug, plan });
      } catch (error) {
        if (uniqueViolationConstraint(error) === 'orgs_slug_unique') {
          throw new CliError(`an organization with slug "${slug ?? slugify(name)}" already exists; pass another --slug`, 1, 'conflict');
        }
        throw error;
      }
      const row = (await orgs.findRow(id))!;
      return { json: { id: row.id, name: row.name, slug: row.slug, plan: row.plan, status: row.status }, text: row.id };
    },
  },
  {
    name: 'keys create',
    usage: 'keys create --org ORG_ID --scopes a:read,b:write [--label L] [--expires-at ISO]',
    summary: 'create an API key; prints the token once',
    hint: `valid scopes: ${SCOPES.join(', ')}`,
    positionals: [],
    options: { org: { type: 'string' }, scopes: { type: 'string' }, label: { type: 'string' }, 'expires-at': { type: 'string' } },
    required: ['org', 'scopes'],
    async run({ values, app }) {
      const scopes = stringOption(values, 'scopes')!
        .split(',')
        .map((scope) => scope.trim())
        .filter((scope) => scope !== '');
      const expiresRaw = stringOption(values, 'expires-at');
      const expiresAt = expiresRaw === undefined ? null : isoOption('expires-at', expiresRaw);
      const label = stringOption(values, 'label') ?? 'cli';
      if (label.trim().length === 0 || label.length > 200) throw usageError('--label must be 1 to 200 characters');
      validateScopes(scopes); // before opening the database: a typo costs nothing
      const context = await app();
      const orgId = await requireOrg(context, stringOption(values, 'org')!);
      const created = await context.get(ApiKeysService).create({ orgId, label, scopes, expiresAt });
      return {
        json: { id: created.id, token: created.token, scopes: created.scopes, org_id: created.org_id },
        text: [`created key ${created.id} for ${created.org_id} with scopes ${created.scopes.join(',')}`, `token (shown once, store it now): ${created.token}`].join('\n'),
      };
    },
  },
  {
    name: 'keys revoke',
    usage: 'keys revoke KEY_ID',
    summary: 'revoke a key (takes effect within 5 seconds on running servers)',
    positionals: ['KEY_ID'],
    options: {},
    async run({ args, app }) {
      const keyId = parseId('key', args[0]);
      const row = keyId ? await (await app()).get(ApiKeysService).revoke(keyId) : null;
      if (!row) throw new CliError(`key ${args[0]} not found`, 1, 'not_found');
      const view = mapApiKey(row);
      return { json: view, text: `revoked key ${view.id} of ${view.org_id} at ${view.revoked_at}` };
    },
  },
  {
    name: 'keys list',
    usage: 'keys list --org ORG_ID',
    summary: 'list the keys of an organization (never the token)',
    positionals: [],
    options: { org: { type: 'string' } },
    required: ['org'],
    async run({ values, app }) {
      const context = await app();
      const orgId = await requireOrg(context, stringOption(values, 'org')!);
      const keys = (await context.get(ApiKeysService).list(orgId)).map(mapApiKey);
      const text =
        keys.length === 0
          ? `no keys for ${orgId}`
          : keys
              .map((key) => {
                const state = key.revoked_at ? `revoked ${key.revoked_at}` : key.expires_at ? `expires ${key.expires_at}` : 'active';
                return `${key.id}\t${key.label}\t${state}\tlast used ${key.last_used_at ?? 'never'}\t${key.scopes.join(',')}`;
              })
              .join('\n');
      return { json: keys, text };
    },
  },
  {
    name: 'trash purge',
    usage: 'trash purge [--now ISO]',
    summary: 'run the agent-trash purge once (what the scheduler runs), optionally as if at another time',
    positionals: [],
    options: { now: { type: 'string' } },
    async run({ values, app }) {
      const now = values.now === undefined ? new Date() : isoOption('now', stringOption(values, 'now')!);
      const result = await (await app()).get(AgentsTrashService).purgeExpiredTrash(now);
      const text = result.skipped
        ? `another instance is purging; purged ${result.agents} agent(s) before stopping`
        : `purged ${result.agents} agent(s) soft-deleted before ${result.deleted_before}`;
      return { json: result, text };
    },
  },
];

function helpText(): string {
  return [
    'usage: npx agent-platform <command> [--json]   (or: npm run -s cli -- <command> [--json])',
    '',
    ...COMMANDS.map((command) => `  ${command.usage.padEnd(84)} ${command.summary}`),
    '',
    `scopes (for keys create --scopes, comma-separated): ${SCOPES.join(', ')}`,
    '',
    '--json prints one JSON document on stdout and nothing else there, on success and on failure (through npm, use `npm run -s`: without -s npm prints its "> script" banner on stdout).',
    'Settings come from the environment, as for the server.',
  ].join('\n');
}

/** Finds the command whose words start the argument list (longest match). */
function findCommand(argv: string[]): { command: CommandSpec; rest: string[] } | null {
  const matches = COMMANDS.filter((command) => {
    const parts = command.name.split(' ');
    return parts.every((part, index) => argv[index] === part);
  }).sort((a, b) => b.name.length - a.name.length);
  if (matches.length === 0) return null;
  const command = matches[0];
  return { command, rest: argv.slice(command.name.split(' ').length) };
}

/** Exceptions → one line an operator can read; unexpected ones keep only their message. */
function describeFailure(error: unknown): CliError {
  if (error instanceof CliError) return error;
  if (error instanceof ConfigError) return new CliError(`invalid configuration: ${error.message}`, 1, 'config');
  if (error instanceof FixtureError) return new CliError(`invalid fixture: ${error.message}`, 1, 'invalid_fixture');
  if (error instanceof ApiError) {
    const fields = error.details?.fields;
    const detail = fields && Object.keys(fields).length > 0 ? Object.entries(fields).map(([field, problems]) => `${field}: ${problems.join('; ')}`).join(', ') : error.message;
    return new CliError(detail, 1, error.code);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CliError(message.split('\n')[0], 1);
}

interface CliStreams {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Runs one command; returns the exit code. */
async function runCli(argv: string[], env: Record<string, string | undefined>, streams: CliStreams): Promise<number> {
  const json = argv.includes('--json');
  const rest = argv.filter((arg) => arg !== '--json');
  let app: INestApplicationContext | null = null;
  try {
    if (rest.length === 0 || rest[0] === 'help' || rest.includes('--help') || rest.includes('-h')) {
      streams.stdout.write(json ? JSON.stringify({ commands: COMMANDS.map((c) => ({ usage: c.usage, summary: c.summary })) }) + '\n' : helpText() + '\n');
      return rest.length === 0 ? 2 : 0;
    }
    const found = findCommand(rest);
    if (!found) throw usageError(`unknown command "${rest.filter((arg) => !arg.startsWith('-')).join(' ')}"; run with --help to list the commands`);
    const { command } = found;
    const usage = command.hint ? `${command.usage}; ${command.hint}` : command.usage;

    let parsed: { values: OptionValues; positionals: string[] };
    try {
      parsed = parseArgs({ args: found.rest, options: command.options, allowPositionals: true, strict: true }) as typeof parsed;
    } catch (error) {
      throw usageError(`${(error as Error).message.split('\n')[0].replace(/\.$/, '')}; usage: ${usage}`);
    }
    if (parsed.positionals.length !== command.positionals.length) {
      throw usageError(`expected ${command.positionals.length === 0 ? 'no arguments' : command.positionals.join(' ')}; usage: ${usage}`);
    }
    const missing = (command.required ?? []).filter((name) => typeof parsed.values[name] !== 'string' || parsed.values[name] === '');
    if (missing.length > 0) throw usageError(`missing ${missing.map((name) => `--${name}`).join(', ')}; usage: ${usage}`);

    // the CLI is quiet unless asked: only warnings by default, always on stderr
    const config = loadConfig({ LOG_LEVEL: 'warn', ...env }, { jobsEnabled: false, metricsPort: null });
    const logger = createLogger(config, pino.destination({ fd: 2, sync: true }));
    const output = await command.run({
      args: parsed.positionals,
      values: parsed.values,
      config,
      logger,
      app: async () => {
        app ??= await NestFactory.createApplicationContext(AppModule.forRoot(config, logger, { metrics: metricsFor(config) }), {
          // Nest logs a failed start before rethrowing it: the one-line message below says it already
          logger: logger.isLevelEnabled('debug') ? new PinoNestLogger(logger) : false,
          abortOnError: false,
        });
        return app;
      },
    });
    if (app) await (app as INestApplicationContext).close();
    app = null;
    streams.stdout.write((json ? JSON.stringify(output.json) : output.text) + '\n');
    return 0;
  } catch (error) {
    const failure = describeFailure(error);
    if (app) await (app as INestApplicationContext).close().catch(() => undefined);
    if (json) streams.stdout.write(JSON.stringify({ error: { code: failure.code, message: failure.message } }) + '\n');
    streams.stderr.write(`error: ${failure.message.replace(/\s*\n\s*/g, ' ')}\n`);
    return failure.exitCode;
  }
}

/** Entry point of the `bin` and of `npm run cli`. */
export function main(): void {
  runCli(process.argv.slice(2), process.env, { stdout: process.stdout, stderr: process.stderr }).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`error: ${(error as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}

if (require.main === module) main();
