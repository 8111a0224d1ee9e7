import { SetMetadata } from '@nestjs/common';
import type { AuthContext } from '../common/request-context';

export const HOT_ROUTE = 'hot-route:invoke';

/** How the dispatcher calls the controller method: the caller and the path parameters. */
export type HotRouteInvoke<TController = never> = (
  controller: TController,
  auth: AuthContext,
  params: Readonly<Record<string, string>>,
) => Promise<unknown>;

/**
 * Marks a parameterless authenticated GET route (a point read) for the hot
 * path: {@link HotRouteDispatcher} serves its plain requests straight from
 * Node's HTTP server, skipping the framework's router and interceptor chain,
 * by calling the same controller method with what the guards would have
 * established. Path, method and scope stay the ones the route declares.
 */
export function HotRoute<TController>(invoke: HotRouteInvoke<TController>): MethodDecorator {
  return SetMetadata(HOT_ROUTE, invoke);
}
