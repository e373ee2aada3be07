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
 * The CLI's typed client (cli/src/generated/openapi.ts) is generated from the document this server serves: a route's
 * schema change without regenerating fails here, and a change that breaks the CLI then fails its type check.
 * Regenerate with `npx vitest run test/cli-client.test.ts -u` (docs/cli.md, "The typed client").
 */
it("the CLI's generated client matches the API's OpenAPI document", async () => {
  const doc = await (await fetch(`${server.url}/v1/openapi.json`)).json();
  delete doc.servers; // the server's own URL, not the contract
  const ast = await openapiTS(doc, { alphabetize: true });
  const header =
    '// Generated from /v1/openapi.json by test/cli-client.test.ts (run it with -u to update). Do not edit.\n';
  // In the repo's style, so that the file reads the same whether or not a formatter ran over it.
  const file = fileURLToPath(new URL('../cli/src/generated/openapi.ts', import.meta.url));
  const text = await format(header + astToString(ast), { ...(await resolveConfig(file)), filepath: file });
  await expect(text).toMatchFileSnapshot('../cli/src/generated/openapi.ts');
});
