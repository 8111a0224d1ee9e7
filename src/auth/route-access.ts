import { Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from './auth.decorators';

interface RouteAccessRule {
  /** `@Public()`: no key, not rate limited */
  isPublic: boolean;
  /** `@RequireScope()`: the one scope the route needs; neither means the route is closed */
  scope: string | undefined;
}

/** What a route declares about access, read once per handler (metadata never changes once the app runs). */
@Injectable()
export class RouteAccess {
  private readonly rules = new WeakMap<object, RouteAccessRule>();

  constructor(private readonly reflector: Reflector) {}

  of(context: ExecutionContext): RouteAccessRule {
    let rule = this.rules.get(context.getHandler());
    if (!rule) {
      const targets = [context.getHandler(), context.getClass()];
      rule = {
        isPublic: this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets) === true,
        scope: this.reflector.getAllAndOverride<string | undefined>(REQUIRED_SCOPE, targets),
      };
      this.rules.set(context.getHandler(), rule);
    }
    return rule;
  }

  /** True for the routes the access guards leave alone: public ones, and anything not HTTP. */
  isOpen(context: ExecutionContext): boolean {
    return context.getType() !== 'http' || this.of(context).isPublic;
  }
}
