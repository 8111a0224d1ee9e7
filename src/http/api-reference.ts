import type { INestApplication } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { API_PREFIX, DOCS_PATH } from '../common/api-paths';

/** The files of swagger-ui-dist the page loads, with their types. */
const SWAGGER_UI_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

const TITLE = 'Agent Platform REST API reference';

/** Swagger UI's settings: the served document, "Try it out" off until clicked, the key not persisted. */
const SWAGGER_UI_SETTINGS = {
  url: `/${API_PREFIX}/openapi.json`,
  dom_id: '#swagger-ui',
  deepLinking: true,
  layout: 'StandaloneLayout',
  persistAuthorization: false,
  displayOperationId: true,
  tryItOutEnabled: false,
  // no badge fetched from validator.swagger.io: the page makes no request beyond the service
  validatorUrl: null,
};

/**
 * The page holds a pasted key: no other site may frame it (clickjacking),
 * and it runs only this service's own scripts. Swagger UI needs inline
 * styles (React sets style attributes) and data: images (its icons).
 */
const PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <title>${TITLE}</title>
  <link rel="stylesheet" type="text/css" href="/${DOCS_PATH}/swagger-ui.css">
  <link rel="icon" type="image/png" href="/${DOCS_PATH}/favicon-32x32.png" sizes="32x32">
  <link rel="icon" type="image/png" href="/${DOCS_PATH}/favicon-16x16.png" sizes="16x16">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/${DOCS_PATH}/swagger-ui-bundle.js" charset="UTF-8"></script>
  <script src="/${DOCS_PATH}/swagger-ui-standalone-preset.js" charset="UTF-8"></script>
  <script src="/${DOCS_PATH}/swagger-ui-init.js" charset="UTF-8"></script>
</body>
</html>
`;

/** The settings as a script, so that the page needs no inline script. */
const INIT_SCRIPT = `window.onload = function () {
  var settings = ${JSON.stringify(SWAGGER_UI_SETTINGS, null, 2)};
  settings.presets = [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset];
  settings.plugins = [SwaggerUIBundle.plugins.DownloadUrl];
  window.ui = SwaggerUIBundle(settings);
};
`;

/**
 * Swagger UI at /docs from swagger-ui-dist (no CDN): one page, its settings
 * script and its five static files. The page downloads the served
 * /api/v1/openapi.json (no embedded copy, so the page and the API cannot
 * disagree); no /docs-json or /docs-yaml routes exist. Served here rather
 * than by `SwaggerModule.setup`, which would need @fastify/static for the
 * files and could only be told not to embed the document through a
 * protected method.
 */
export function serveApiReference(app: INestApplication): void {
  const adapter = app.getHttpAdapter();
  const root = dirname(require.resolve('swagger-ui-dist/package.json'));
  const cache = new Map<string, Buffer>();
  adapter.get(`/${DOCS_PATH}`, (_request: FastifyRequest, reply: FastifyReply) =>
    reply.type('text/html; charset=utf-8').header('content-security-policy', PAGE_POLICY).header('x-frame-options', 'DENY').send(PAGE),
  );
  adapter.get(`/${DOCS_PATH}/swagger-ui-init.js`, (_request: FastifyRequest, reply: FastifyReply) =>
    reply.type('application/javascript; charset=utf-8').send(INIT_SCRIPT),
  );
  for (const [file, type] of Object.entries(SWAGGER_UI_ASSETS)) {
    adapter.get(`/${DOCS_PATH}/${file}`, async (_request: FastifyRequest, reply: FastifyReply) => {
      let bytes = cache.get(file);
      if (!bytes) cache.set(file, (bytes = await readFile(join(root, file))));
      return reply.type(type).send(bytes);
    });
  }
}
