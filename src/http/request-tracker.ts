import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { pathOf, type RequestStore } from '../common/request-context';

/** A request the server has received the headers of and not finished answering. */
export interface InFlightRequest {
  request_id: string;
  method: string;
  path: string;
  /** receiving: the body is still coming; handling: the server is working on it; sending: the answer is being written */
  phase: 'receiving' | 'handling' | 'sending';
}

interface OpenRequest {
  request: FastifyRequest;
  reply: FastifyReply;
  context: RequestStore;
  handling: boolean;
}

/**
 * The requests in flight, fed by the request hooks (request-hooks.ts): which
 * are open and in which phase (shutdown names a request cut at its deadline),
 * and which request a connection is answering (a client error that comes
 * while its body is being read is answered with that request's id).
 */
export class RequestTracker {
  private readonly open = new Map<FastifyRequest, OpenRequest>();
  private readonly onSocket = new WeakMap<Socket, OpenRequest>();
  /**
   * Each request's context, for the hooks Fastify runs outside it (the
   * answer's `onSend` and `onResponse` come from the socket's events).
   */
  private readonly contexts = new WeakMap<FastifyRequest, RequestStore>();
  private closing = false;

  constructor(private readonly server: Server) {}

  /** The first request hook: the request's headers are in. */
  started(request: FastifyRequest, reply: FastifyReply, context: RequestStore): void {
    const entry: OpenRequest = { request, reply, context, handling: false };
    this.open.set(request, entry);
    this.contexts.set(request, context);
    this.onSocket.set(request.raw.socket, entry);
    if (this.closing) reply.raw.setHeader('Connection', 'close');
    // 'close' comes once the answer is out or the connection is gone, whichever first
    reply.raw.once('close', () => this.open.delete(request));
  }

  /** The context {@link started} was given for `request`. */
  contextOf(request: FastifyRequest): RequestStore {
    const context = this.contexts.get(request);
    if (!context) throw new Error('the request was not started by the request hooks');
    return context;
  }

  /** The body is read: guards, interceptors and the handler run from now on. */
  handling(request: FastifyRequest): void {
    const entry = this.open.get(request);
    if (entry) entry.handling = true;
  }

  /** The request this connection is answering, when its answer has not been written yet. */
  unanswered(socket: Socket): { request: FastifyRequest; reply: FastifyReply; context: RequestStore } | undefined {
    const entry = this.onSocket.get(socket);
    return entry && !entry.reply.raw.writableEnded ? entry : undefined;
  }

  inFlight(): InFlightRequest[] {
    return [...this.open.values()].map(({ request, reply, context, handling }) => ({
      request_id: context.requestId,
      method: request.method,
      path: pathOf(request.url),
      phase: reply.sent ? 'sending' : handling ? 'handling' : 'receiving',
    }));
  }

  /**
   * From now on every answer closes its connection (`Connection: close`),
   * those of requests already in flight included: the platform only marks
   * requests that arrive after it began closing.
   */
  closeAfterAnswers(): void {
    this.closing = true;
    for (const { reply } of this.open.values()) if (!reply.raw.headersSent) reply.raw.setHeader('Connection', 'close');
  }

  /** Closes every connection, idle or not (the shutdown deadline). */
  closeAllConnections(): void {
    this.server.closeAllConnections();
  }
}
