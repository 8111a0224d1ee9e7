import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AppLogger } from '../common/logger';
import { clientKey } from '../rate-limit/rate-limiter';

interface ConnectionLimits {
  /** open connections at most (HTTP_MAX_CONNECTIONS) */
  max: number;
  /** open connections at most from one client address (HTTP_MAX_CONNECTIONS_PER_ADDRESS) */
  perAddress: number;
  /** the body-progress budget: bytes per second on average (HTTP_BODY_MIN_BYTES_PER_SECOND) … */
  bodyMinBytesPerSecond: number;
  /** … after this grace from the start of the body (HTTP_BODY_GRACE_MS) */
  bodyGraceMs: number;
}

interface Connection {
  /** the client address as the rate limiter groups it (an IPv6 /64 is one client) */
  client: string;
  /** requests received on it and not answered yet */
  requests: number;
  /** the body being read on it, if any: since when, and how many bytes so far */
  body?: { startedAt: number; received: number };
}

const WARN_EVERY_MS = 10_000;

/**
 * Who may hold the server's connections. A connection is idle while it is
 * not answering a request: kept alive after its answer, or opened and
 * still sending (or never sending) its request headers. Idle connections
 * cost the server nothing but a descriptor, so at a bound they are closed,
 * oldest first, to let a new connection in: a flood of idle or slow
 * connections cannot lock other clients (or the probes) out. A connection
 * still sending its request's body counts as answering it only within the
 * body-progress budget (the grace, then the minimum rate on average); past
 * it, it is closed for a new one like an idle one (after them), so slow
 * bodies cannot hold the server either. A new connection is refused only
 * when every connection it competes with is answering a request:
 *  - at `max` in all, the oldest idle connection of any client is closed;
 *  - at `perAddress` from its own address, the oldest idle connection of
 *    that address is closed, so one address cannot hold more than that many
 *    connections being answered.
 * Idle keep-alive connections otherwise stay open for the whole keep-alive
 * timeout (balancers reuse them); closing one costs its client a reconnect.
 */
export class ConnectionLimiter {
  private readonly connections = new Map<Socket, Connection>();
  /** idle connections, the longest idle first (a Set keeps insertion order) */
  private readonly idle = new Set<Socket>();
  private readonly perClient = new Map<string, number>();
  private lastWarning = 0;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly logger: AppLogger,
  ) {}

  /** Registers on the server's 'connection' and 'request' events (public Node APIs). */
  install(server: Server): void {
    server.on('connection', (socket: Socket) => this.accept(socket));
    server.on('request', (request: IncomingMessage, response: ServerResponse) => this.busy(request.socket, response));
  }

  /** open connections, how many are idle, and how many are sending a body being read (tests, logs) */
  get counts(): { open: number; idle: number; bodies: number } {
    let bodies = 0;
    for (const connection of this.connections.values()) if (connection.body) bodies += 1;
    return { open: this.connections.size, idle: this.idle.size, bodies };
  }

  private accept(socket: Socket): void {
    const client = clientKey(socket.remoteAddress);
    if ((this.perClient.get(client) ?? 0) >= this.limits.perAddress && !this.makeRoom(client)) {
      return this.refuse(socket, client, 'HTTP_MAX_CONNECTIONS_PER_ADDRESS connections from this address are answering requests');
    }
    if (this.connections.size >= this.limits.max && !this.makeRoom()) {
      return this.refuse(socket, client, 'HTTP_MAX_CONNECTIONS connections are answering requests');
    }
    this.connections.set(socket, { client, requests: 0 });
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    this.idle.add(socket);
    socket.once('close', () => this.forget(socket));
  }

  private busy(socket: Socket, response: ServerResponse): void {
    const connection = this.connections.get(socket);
    if (!connection) return;
    connection.requests += 1;
    this.idle.delete(socket);
    // 'close' comes once the answer is written or the connection is gone
    response.once('close', () => {
      connection.requests -= 1;
      connection.body = undefined;
      // re-added at the end: idle since now
      if (connection.requests === 0 && this.connections.has(socket)) this.idle.add(socket);
    });
  }

  /** The body reader starts reading a request's body on this connection (body-parser.ts). */
  bodyStarted(socket: Socket): void {
    const connection = this.connections.get(socket);
    if (connection) connection.body = { startedAt: Date.now(), received: 0 };
  }

  /** `bytes` more of the body arrived (as sent, before decompression). */
  bodyReceived(socket: Socket, bytes: number): void {
    const body = this.connections.get(socket)?.body;
    if (body) body.received += bytes;
  }

  /** The body was read whole, or refused: the connection is waiting on the server again. */
  bodyEnded(socket: Socket): void {
    const connection = this.connections.get(socket);
    if (connection) connection.body = undefined;
  }

  /**
   * Closes the connection idle the longest (of `client` when given), or else
   * the oldest one whose body is behind its progress budget; false when
   * there is neither. The slow body's request ends there (its client is gone).
   */
  private makeRoom(client?: string): boolean {
    const mine = (socket: Socket) => client === undefined || this.connections.get(socket)?.client === client;
    for (const socket of this.idle) {
      if (mine(socket)) return this.close(socket);
    }
    const now = Date.now();
    for (const [socket, connection] of this.connections) {
      if (mine(socket) && this.behindBodyBudget(connection, now)) return this.close(socket);
    }
    return false;
  }

  /** Sending its body slower than the budget: the grace, then the minimum rate on average. */
  private behindBodyBudget({ body }: Connection, now: number): boolean {
    if (!body) return false;
    return now - body.startedAt > this.limits.bodyGraceMs + (body.received * 1000) / this.limits.bodyMinBytesPerSecond;
  }

  private close(socket: Socket): true {
    this.forget(socket);
    socket.destroy();
    return true;
  }

  private forget(socket: Socket): void {
    const connection = this.connections.get(socket);
    if (!connection) return;
    this.connections.delete(socket);
    this.idle.delete(socket);
    const left = (this.perClient.get(connection.client) ?? 1) - 1;
    if (left === 0) this.perClient.delete(connection.client);
    else this.perClient.set(connection.client, left);
  }

  /** Closed at once, with no answer (a balancer retries elsewhere); a warning at most every 10 s. */
  private refuse(socket: Socket, client: string, reason: string): void {
    socket.destroy();
    const now = Date.now();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.logger.warn(
      { client, max_connections: this.limits.max, max_connections_per_address: this.limits.perAddress, open_connections: this.connections.size },
      `connection refused: ${reason}`,
    );
  }
}
