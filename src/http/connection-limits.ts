import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AppLogger } from '../common/logger';
import { clientKey } from '../rate-limit/rate-limiter';

interface ConnectionLimits {
  /** open connections at most (HTTP_MAX_CONNECTIONS) */
  max: number;
  /** open connections at most from one client address (HTTP_MAX_CONNECTIONS_PER_ADDRESS) */
  perAddress: number;
}

interface Connection {
  /** the client address as the rate limiter groups it (an IPv6 /64 is one client) */
  client: string;
  /** requests received on it and not answered yet */
  requests: number;
}

const WARN_EVERY_MS = 10_000;

/**
 * Who may hold the server's connections. A connection is idle while it is
 * not answering a request: kept alive after its answer, or opened and
 * still sending (or never sending) its request headers. Idle connections
 * cost the server nothing but a descriptor, so at a bound they are closed,
 * oldest first, to let a new connection in: a flood of idle or slow
 * connections cannot lock other clients (or the probes) out. A new
 * connection is refused only when every connection it competes with is
 * answering a request:
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

  /** open connections, and how many are idle (tests, logs) */
  get counts(): { open: number; idle: number } {
    return { open: this.connections.size, idle: this.idle.size };
  }

  private accept(socket: Socket): void {
    const client = clientKey(socket.remoteAddress);
    if ((this.perClient.get(client) ?? 0) >= this.limits.perAddress && !this.closeOldestIdle(client)) {
      return this.refuse(socket, client, 'HTTP_MAX_CONNECTIONS_PER_ADDRESS connections from this address are answering requests');
    }
    if (this.connections.size >= this.limits.max && !this.closeOldestIdle()) {
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
      // re-added at the end: idle since now
      if (connection.requests === 0 && this.connections.has(socket)) this.idle.add(socket);
    });
  }

  /** Closes the connection idle the longest (of `client` when given); false when there is none. */
  private closeOldestIdle(client?: string): boolean {
    for (const socket of this.idle) {
      if (client !== undefined && this.connections.get(socket)?.client !== client) continue;
      this.forget(socket);
      socket.destroy();
      return true;
    }
    return false;
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
