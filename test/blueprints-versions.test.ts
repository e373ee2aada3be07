import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createUploaded, syncEnded, validateFile } from './helpers/blueprints.js';
import { signUp, type TestUser } from './helpers/client.js';
import { useServer } from './helpers/server.js';

const t = useServer();

/** The host's python3 line, `3.11`: what PYTHON_VERSION can ask for here. */
const hostPython = execFileSync('/usr/bin/python3', ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'])
  .toString()
  .trim();

const YAML = `services:
  - type: web
    name: old-node
    runtime: node
    buildCommand: npm ci
    startCommand: node server.js
    envVars:
      - key: NODE_VERSION
        value: "17.99"
  - type: web
    name: good-node
    runtime: node
    startCommand: node server.js
    envVars:
      - key: NODE_VERSION
        value: "18"
  - type: web
    name: old-python
    runtime: python
    startCommand: gunicorn app:app
    envVars:
      - key: PYTHON_VERSION
        value: 3.4.10
  - type: worker
    name: near-python
    runtime: python
    startCommand: python worker.py
    envVars:
      - key: PYTHON_VERSION
        value: ${hostPython}.99
  - type: web
    name: phoenix
    runtime: elixir
    startCommand: mix phx.server
    envVars:
      - key: ELIXIR_VERSION
        value: 1.16.0
envVarGroups:
  - name: shared
    envVars:
      - key: NODE_VERSION
        value: banana
`;

const validate = (user: TestUser, text: string) => validateFile(t.server.url, user, text);

describe('blueprints: versions this Slipway cannot honour', () => {
  it('validate warns, at their lines, about a Node.js release the registry lacks, a Python line the host lacks, and a runtime version never picked', async () => {
    const owner = await signUp(t.api);
    const { status, body } = await validate(owner, YAML);
    expect(status).toBe(200);
    expect(body.valid).toBe(true);
    const byResource = Object.fromEntries(body.plan.warnings.map((w: any) => [w.resource, w]));
    expect(Object.keys(byResource).sort()).toEqual(['near-python', 'old-node', 'old-python', 'phoenix', 'shared']);
    expect(byResource['old-node']).toMatchObject({ path: 'services[0].envVars[0].value', line: 9 });
    expect(byResource['old-node'].warning).toMatch(
      /^NODE_VERSION "17\.99" cannot be honoured here: it is not available\. Available: .*\b18\.\d+\.\d+/,
    );
    expect(byResource['old-python'].warning).toMatch(
      new RegExp(
        `^PYTHON_VERSION "3\\.4\\.10" cannot be honoured here: this machine does not have it\\. It has: .*${hostPython.replace('.', '\\.')}`,
      ),
    );
    expect(byResource['near-python'].warning).toMatch(
      new RegExp(
        `^PYTHON_VERSION "${hostPython.replace('.', '\\.')}\\.99": builds will run ${hostPython.replace('.', '\\.')}\\.\\d+`,
      ),
    );
    expect(byResource.phoenix.warning).toMatch(
      /^ELIXIR_VERSION is not honoured here: builds and instances run the host's elixir/,
    );
    expect(byResource.shared).toMatchObject({ path: 'envVarGroups[0].envVars[0].value', line: 42 });
    expect(byResource.shared.warning).toMatch(
      /^NODE_VERSION "banana" cannot be honoured here: it is not available: it is neither/,
    );
  });

  it("a sync's results carry the same warnings, on the resources they are about", async () => {
    const owner = await signUp(t.api);
    const yaml = `services:
  - type: worker
    name: sync-python
    runtime: python
    buildCommand: "true"
    startCommand: sleep 1000
    envVars:
      - key: PYTHON_VERSION
        value: 3.4.10
`;
    const created = await createUploaded(t.api, owner, 'versions', yaml);
    expect(created.status, created.text).toBe(201);
    const sync = await syncEnded(t.api, owner, created.body.blueprint.id, created.body.sync.id);
    const result = sync.resources.find((r: any) => r.name === 'sync-python');
    expect(result.warnings).toEqual([expect.stringMatching(/^PYTHON_VERSION "3\.4\.10" cannot be honoured here/)]);
  });
});
