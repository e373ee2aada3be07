import { signedBody } from '../plugins/text-input.js';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { bodyBudget } from '../body-budget.js';
import { badRequest } from '../../lib/errors.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, ListQuery, OwnerIdQuery } from '../schemas/common.js';

const TAGS = ['GitHub'];
const StatusBody = Type.Object(
  {
    configured: Type.Boolean(),
    installed: Type.Boolean(),
    installationId: Type.Optional(Type.String()),
    account: Type.Optional(Type.Object({ login: Type.String(), type: Type.String() })),
    repositorySelection: Type.Optional(Type.String({ description: "GitHub's: all | selected" })),
    suspended: Type.Optional(Type.Boolean()),
  },
  { title: 'githubStatus' },
);
const RepositoryBody = Type.Object(
  {
    id: Type.String(),
    fullName: Type.String(),
    private: Type.Boolean(),
    defaultBranch: Type.String(),
    cloneUrl: Type.String(),
    htmlUrl: Type.String(),
  },
  { title: 'githubRepository' },
);
const pageCursor = (id: number) => Buffer.from(String(id)).toString('base64url');
function afterId(cursor: string | undefined): number | undefined {
  if (!cursor) return undefined;
  const raw = Buffer.from(cursor, 'base64url').toString();
  if (!/^\d{1,16}$/.test(raw)) throw badRequest('invalid cursor');
  return Number(raw);
}

/** GitHub caps a payload at 25 MB. */
const MAX_PAYLOAD = 25 * 1024 * 1024;
/** Unverified webhook bodies held at once: two and a half of the largest; GitHub's pushes are mostly a few KB. */
const UNVERIFIED_BUDGET = 64 * 1024 * 1024;

function deliveryHeaders(req: FastifyRequest) {
  const header = (name: string) => {
    const v = req.headers[name];
    return typeof v === 'string' ? v : undefined;
  };
  return {
    signature: header('x-hub-signature-256'),
    deliveryId: header('x-github-delivery'),
    event: header('x-github-event'),
  };
}

/** The GitHub App (docs/github-and-sign-in.md, "GitHub pushes"): install, its callback, status, repositories, and GitHub's webhook. */
export function githubRoutes({ github, githubWebhook, guard }: HttpDeps) {
  const unverified = bodyBudget(UNVERIFIED_BUDGET);
  return [
    defineRoute({
      method: 'GET',
      url: '/v1/github/install',
      summary: "Redirects (302) to the App's installation page on GitHub, with a signed state naming the workspace",
      tags: TAGS,
      access: 'admin',
      schema: { querystring: Type.Object({ ownerId: OwnerIdQuery }) },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, req.query.ownerId);
        return reply.redirect(github.installUrl(workspaceId), 302);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/github/callback',
      summary: "GitHub's setup URL: checks the state and links the installation to the state's workspace (admins)",
      tags: TAGS,
      access: 'signed-in',
      audit: 'LinkGitHubInstallationEvent',
      schema: {
        querystring: Type.Object({
          installation_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,20}$' })),
          setup_action: Type.Optional(Type.String({ maxLength: 40 })),
          code: Type.Optional(Type.String({ maxLength: 200 })),
          state: Type.String({ minLength: 1, maxLength: 2000 }),
        }),
        response: { 200: StatusBody, 202: Type.Object({ message: Type.String() }) },
      },
      handler: async (req, reply) => {
        // The workspace is the one the signed state names: the caller must be an admin there.
        const stated = github.stateWorkspace(req.query.state);
        const workspaceId = stated && (await guard.resource(req, stated, 'workspace', 'admin')).workspaceId;
        const linked = await github.link(workspaceId, stated, req.query.installation_id, req.query.code);
        if (!linked)
          return reply
            .code(202)
            .send({ message: 'the installation awaits approval by an owner of the GitHub account' });
        req.auditInfo.target = linked.installationId;
        return github.status(linked.workspaceId);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/github/status',
      summary: 'Whether the App is installed for the workspace, on which account, with which repository selection',
      tags: TAGS,
      access: 'viewer',
      schema: { querystring: Type.Object({ ownerId: OwnerIdQuery }), response: { 200: StatusBody } },
      handler: async (req) => github.status((await guard.context(req, req.query.ownerId)).workspaceId),
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/github/repos',
      summary: 'The repositories the installation reaches (all of GitHub’s pages), in a cursor list',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({ ownerId: OwnerIdQuery, ...ListQuery }),
        response: { 200: Type.Array(Type.Object({ cursor: Type.String(), repository: RepositoryBody })) },
      },
      handler: async (req) => {
        const { workspaceId } = await guard.context(req, req.query.ownerId);
        const after = afterId(req.query.cursor);
        const repos = (await github.repositories(workspaceId))
          .sort((a, b) => a.id - b.id)
          .filter((r) => after === undefined || r.id > after)
          .slice(0, req.query.limit ?? DEFAULT_LIMIT);
        return repos.map((r) => ({ cursor: pageCursor(r.id), repository: { ...r, id: String(r.id) } }));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/github/webhook',
      summary: "GitHub's webhook (X-Hub-Signature-256 verified, each X-GitHub-Delivery handled once)",
      tags: TAGS,
      access: 'public',
      audit: 'GitHubWebhookEvent',
      rawBody: true,
      bodyLimit: MAX_PAYLOAD,
      // Refused from the headers before a byte of the body is read, then held to the budget while it is.
      beforeBody: async (req, reply) => {
        const headers = deliveryHeaders(req);
        req.auditInfo.system = 'github';
        req.auditInfo.workspaceId = null;
        req.auditInfo.target = headers.deliveryId;
        githubWebhook.precheck(headers);
        unverified.reserve(req, reply);
      },
      schema: {
        body: Type.Object({}),
        response: {
          200: Type.Object({
            duplicate: Type.Boolean(),
            deploys: Type.Optional(Type.Array(Type.String())),
            ignored: Type.Optional(Type.Array(Type.String())),
            syncs: Type.Optional(Type.Array(Type.String(), { description: 'Blueprint syncs the push started' })),
            previews: Type.Optional(
              Type.Array(Type.String(), { description: 'Preview services a pull_request deployed or deleted' }),
            ),
          }),
        },
      },
      handler: async (req) =>
        githubWebhook.receive({ ...deliveryHeaders(req), rawBody: req.rawBody ?? '', payload: signedBody }),
    }),
  ];
}
