import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { envelope } from '../../lib/cursor.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import type { EnvironmentRow, ProjectRow } from '../../store/repos/projects.js';
import {
  Envelope,
  IdParam,
  ListQuery,
  Name,
  NoContent,
  splitList,
  TimeFilters,
  listWindow,
} from '../schemas/common.js';
import {
  EnvironmentBody,
  environmentBody,
  IpAllowList,
  ProjectBody,
  projectBody,
  ProtectedStatus,
} from '../schemas/projects.js';

const StringList = Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50 }));
const IdList = (opts: { minItems?: number; maxItems: number }) =>
  Type.Array(Type.String({ minLength: 1, maxLength: 64 }), opts);
const EnvironmentFields = {
  name: Name,
  protectedStatus: Type.Optional(ProtectedStatus),
  networkIsolationEnabled: Type.Optional(
    Type.Boolean({ description: 'Stored for the environment; Slipway does not isolate networks yet' }),
  ),
  ipAllowList: Type.Optional(IpAllowList),
};
const ProjectParams = Type.Object({ projectId: IdParam });
const EnvironmentParams = Type.Object({ environmentId: IdParam });
const TAGS = ['Projects & environments'];

/** Projects and environments (Render's routes): an environment groups services, env groups and datastores. */
export function projectRoutes(deps: HttpDeps) {
  const { guard, projects } = deps;
  const showProject = async (row: ProjectRow) => projectBody((await projects.projectViews([row]))[0]!);
  const showEnvironment = async (row: EnvironmentRow) => environmentBody((await projects.environmentViews([row]))[0]!);
  async function loadProject(req: FastifyRequest, id: string) {
    const project = await projects.getProject(id);
    const { role } = await guard.resource(req, project.workspaceId, 'project');
    req.auditInfo.target = project.id;
    return { project, role };
  }
  async function loadEnvironment(req: FastifyRequest, id: string) {
    const env = await projects.getEnvironment(id);
    const { role } = await guard.resource(req, env.workspaceId, 'environment');
    req.auditInfo.target = env.id;
    return { env, role };
  }

  return [
    defineRoute({
      method: 'POST',
      url: '/v1/projects',
      summary: 'Create a project with its environments',
      tags: TAGS,
      access: 'developer',
      audit: 'CreateProjectEvent',
      schema: {
        body: Type.Object({
          name: Name,
          ownerId: Type.Optional(
            Type.String({ maxLength: 64, description: 'Workspace (tea-…); default: your default workspace' }),
          ),
          environments: Type.Array(Type.Object(EnvironmentFields), { maxItems: 20 }),
        }),
        response: { 201: ProjectBody },
      },
      handler: async (req, reply) => {
        const { workspaceId } = await guard.context(req, req.body.ownerId);
        const project = await projects.createProject(workspaceId, req.body);
        req.auditInfo.target = project.id;
        return reply.code(201).send(await showProject(project));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/projects',
      summary: 'List projects, newest first',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({ name: StringList, ownerId: StringList, ...TimeFilters, ...ListQuery }),
        response: { 200: Envelope('project', ProjectBody) },
      },
      handler: async (req) => {
        const q = req.query;
        const rows = await projects.listProjects({
          workspaceIds: await guard.listScope(req, splitList(q.ownerId)),
          name: q.name,
          ...listWindow(q),
        });
        return envelope('project', (await projects.projectViews(rows)).map(projectBody));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/projects/:projectId',
      summary: 'Retrieve a project',
      tags: TAGS,
      access: 'viewer',
      schema: { params: ProjectParams, response: { 200: ProjectBody } },
      handler: async (req) => showProject((await loadProject(req, req.params.projectId)).project),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/projects/:projectId',
      summary: 'Rename a project (environments change through their own routes)',
      tags: TAGS,
      access: 'developer',
      audit: 'UpdateProjectEvent',
      schema: {
        params: ProjectParams,
        body: Type.Object({ name: Type.Optional(Name) }),
        response: { 200: ProjectBody },
      },
      handler: async (req) => {
        const { project } = await loadProject(req, req.params.projectId);
        return showProject(await projects.renameProject(project, req.body.name));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/projects/:projectId',
      summary: 'Delete a project and its environments; 409 while any environment holds resources',
      tags: TAGS,
      access: 'developer',
      audit: 'DeleteProjectEvent',
      schema: { params: ProjectParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        const { project, role } = await loadProject(req, req.params.projectId);
        await projects.deleteProject(project, role);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/environments',
      summary: 'Create an environment in a project',
      tags: TAGS,
      access: 'developer',
      audit: 'CreateEnvironmentEvent',
      schema: { body: Type.Object({ ...EnvironmentFields, projectId: IdParam }), response: { 201: EnvironmentBody } },
      handler: async (req, reply) => {
        const { project } = await loadProject(req, req.body.projectId);
        const env = await projects.createEnvironment(project, req.body);
        req.auditInfo.target = env.id;
        return reply.code(201).send(await showEnvironment(env));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/environments',
      summary: 'List the environments of one or more projects, newest first',
      tags: TAGS,
      access: 'viewer',
      schema: {
        querystring: Type.Object({
          projectId: IdList({ minItems: 1, maxItems: 50 }),
          name: StringList,
          ownerId: StringList,
          environmentId: Type.Optional(IdList({ maxItems: 100 })),
          ...TimeFilters,
          ...ListQuery,
        }),
        response: { 200: Envelope('environment', EnvironmentBody) },
      },
      handler: async (req) => {
        const q = req.query;
        const workspaceIds = q.ownerId?.length ? await guard.listScope(req, splitList(q.ownerId)) : undefined;
        // Each project is authorized like a path parameter: another workspace's answers 404.
        const projectIds = splitList(q.projectId)!;
        for (const id of projectIds) await loadProject(req, id);
        const rows = await projects.listEnvironments({
          projectIds,
          workspaceIds,
          name: q.name,
          environmentIds: splitList(q.environmentId),
          ...listWindow(q),
        });
        return envelope('environment', (await projects.environmentViews(rows)).map(environmentBody));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/environments/:environmentId',
      summary: 'Retrieve an environment with the resources it holds',
      tags: TAGS,
      access: 'viewer',
      schema: { params: EnvironmentParams, response: { 200: EnvironmentBody } },
      handler: async (req) => showEnvironment((await loadEnvironment(req, req.params.environmentId)).env),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/v1/environments/:environmentId',
      summary: 'Update an environment (changing protectedStatus needs admin)',
      tags: TAGS,
      access: 'developer',
      audit: 'UpdateEnvironmentEvent',
      schema: {
        params: EnvironmentParams,
        body: Type.Partial(Type.Object(EnvironmentFields)),
        response: { 200: EnvironmentBody },
      },
      handler: async (req) => {
        const { env, role } = await loadEnvironment(req, req.params.environmentId);
        return showEnvironment(await projects.updateEnvironment(env, req.body, role));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/environments/:environmentId',
      summary: 'Delete an empty environment; 409 while it holds resources',
      tags: TAGS,
      access: 'developer',
      audit: 'DeleteEnvironmentEvent',
      schema: { params: EnvironmentParams, response: { 204: NoContent } },
      handler: async (req, reply) => {
        const { env, role } = await loadEnvironment(req, req.params.environmentId);
        await projects.deleteEnvironment(env, role);
        return reply.code(204).send(null);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/environments/:environmentId/resources',
      summary:
        'Move services, env groups and datastores into an environment (all or none; each must be in its workspace)',
      tags: TAGS,
      access: 'developer',
      audit: 'MoveEnvironmentResourceEvent',
      schema: {
        params: EnvironmentParams,
        body: Type.Object({ resourceIds: IdList({ minItems: 1, maxItems: 100 }) }),
        response: { 200: EnvironmentBody },
      },
      handler: async (req) => {
        const { env, role } = await loadEnvironment(req, req.params.environmentId);
        await projects.addResources(env, req.body.resourceIds, role);
        return showEnvironment(env);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/environments/:environmentId/resources',
      summary: 'Take resources out of an environment (ids in ?resourceIds=, as Render; all or none)',
      tags: TAGS,
      access: 'developer',
      audit: 'MoveEnvironmentResourceEvent',
      schema: {
        params: EnvironmentParams,
        querystring: Type.Object({ resourceIds: IdList({ minItems: 1, maxItems: 100 }) }),
        response: { 204: NoContent },
      },
      handler: async (req, reply) => {
        const { env, role } = await loadEnvironment(req, req.params.environmentId);
        await projects.removeResources(env, splitList(req.query.resourceIds)!, role);
        return reply.code(204).send(null);
      },
    }),
  ];
}
