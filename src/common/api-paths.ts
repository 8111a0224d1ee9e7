/** Every API route lives under this prefix (no leading slash, as Nest's setGlobalPrefix takes it). */
export const API_PREFIX = 'api/v1';
/** the interactive API reference (the banner's `docs` field), outside the API prefix */
export const DOCS_PATH = 'docs';
