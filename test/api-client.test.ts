import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { format, resolveConfig } from 'prettier';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bootServer, type TestServer } from './helpers/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await bootServer();
});
afterAll(() => server.close());

/**
 * The types of the CLI's and the dashboard's client (openapi/schema.d.ts) are generated from the document this server
 * serves: a route's schema change without regenerating fails here, and a change that breaks the CLI or the dashboard
 * then fails their type checks. Regenerate with `npx vitest run test/api-client.test.ts -u` (docs/cli.md, "The typed
 * client").
 */
it("the clients' generated types match the API's OpenAPI document", async () => {
  const doc = await (await fetch(`${server.url}/v1/openapi.json`)).json();
  delete doc.servers; // the server's own URL, not the contract
  const ast = await openapiTS(doc, { alphabetize: true });
  const header =
    '// Generated from /v1/openapi.json by test/api-client.test.ts (run it with -u to update). Do not edit.\n';
  // In the repo's style, so that the file reads the same whether or not a formatter ran over it.
  const file = fileURLToPath(new URL('../openapi/schema.d.ts', import.meta.url));
  const text = await format(header + astToString(ast), { ...(await resolveConfig(file)), filepath: file });
  await expect(text).toMatchFileSnapshot('../openapi/schema.d.ts');
});
