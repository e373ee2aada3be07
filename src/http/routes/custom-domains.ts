import { Type } from '@sinclair/typebox';
import { decodeCursor, envelope } from '../../lib/cursor.js';
import type { CertificateView } from '../../core/domains/domains.js';
import type { CustomDomainRow } from '../../store/repos/custom-domains.js';
import type { ServiceRow } from '../../store/repos/services.js';
import type { HttpDeps } from '../deps.js';
import { defineRoute } from '../route.js';
import { DEFAULT_LIMIT, IdParam, ListQuery } from '../schemas/common.js';
import { loadService, ServiceParams } from '../helpers/load-service.js';

const DomainParams = Type.Object({
  serviceId: IdParam,
  customDomainIdOrName: Type.String({ minLength: 1, maxLength: 253 }),
});
const DnsRecord = Type.Object({ type: Type.String(), name: Type.String(), value: Type.String() });
/**
 * Render's customDomain, plus what the user must create at their DNS host: where the name points (`dnsRecords`), the
 * TXT record that proves the workspace owns it (`verificationRecord`), and why the last check did not verify it.
 */
const CustomDomainBody = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    domainType: Type.Union([Type.Literal('apex'), Type.Literal('subdomain')]),
    publicSuffix: Type.String(),
    redirectForName: Type.String(),
    verificationStatus: Type.Union([Type.Literal('verified'), Type.Literal('unverified')]),
    createdAt: Type.String({ format: 'date-time' }),
    server: Type.Object({ id: Type.String(), name: Type.String() }),
    dnsRecords: Type.Array(DnsRecord),
    verificationRecord: DnsRecord,
    unverifiedReason: Type.String(),
    certificate: Type.Object(
      {
        status: Type.Union([
          Type.Literal('none'),
          Type.Literal('pending'),
          Type.Literal('issued'),
          Type.Literal('failed'),
        ]),
        expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
        error: Type.Optional(
          Type.String({ description: "The last order's error (a failed renewal keeps the issued one)" }),
        ),
      },
      { description: "Slipway's: the HTTPS certificate, none until the domain is verified" },
    ),
  },
  { title: 'customDomain' },
);

/** Custom domains of a service, in Render's routes and bodies (docs/routing.md, "Custom domains"). */
export function customDomainRoutes(deps: HttpDeps) {
  const { domains } = deps;
  const body = (d: CustomDomainRow, service: ServiceRow, certificate: CertificateView = { status: 'none' }) => ({
    id: d.id,
    name: d.name,
    domainType: d.domainType as 'apex' | 'subdomain',
    publicSuffix: d.publicSuffix,
    redirectForName: d.redirectForName ?? '',
    verificationStatus: d.verificationStatus as 'verified' | 'unverified',
    createdAt: d.createdAt.toISOString(),
    server: { id: service.id, name: service.name },
    dnsRecords: domains.dnsRecords(d, service),
    verificationRecord: domains.verificationRecord(d),
    unverifiedReason: d.verificationStatus === 'verified' ? '' : (d.unverifiedReason ?? 'not checked yet'),
    certificate: {
      status: certificate.status,
      ...(certificate.expiresAt ? { expiresAt: certificate.expiresAt.toISOString() } : {}),
      ...(certificate.error ? { error: certificate.error } : {}),
    },
  });
  /** Each row's body with its certificate (one query for all). */
  const bodies = async (rows: CustomDomainRow[], service: ServiceRow) => {
    const certificates = await domains.certificates(rows);
    return rows.map((d) => body(d, service, certificates.get(d.id)));
  };
  return [
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/custom-domains',
      summary: 'Add a custom domain (and its www./apex twin, which redirects to it); routable once its DNS is verified',
      tags: ['Custom domains'],
      access: 'developer',
      audit: 'CreateCustomDomainEvent',
      schema: {
        params: ServiceParams,
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 253 }) }),
        response: { 201: Type.Array(CustomDomainBody) },
      },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const rows = await domains.add(service, req.body.name);
        return reply.code(201).send(await bodies(rows, service));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/custom-domains',
      summary: "List a service's custom domains",
      tags: ['Custom domains'],
      access: 'viewer',
      schema: {
        params: ServiceParams,
        querystring: Type.Object(ListQuery),
        response: { 200: Type.Array(Type.Object({ cursor: Type.String(), customDomain: CustomDomainBody })) },
      },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const rows = await domains.list(service, {
          afterId: decodeCursor(req.query.cursor),
          limit: req.query.limit ?? DEFAULT_LIMIT,
        });
        return envelope('customDomain', await bodies(rows, service));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/v1/services/:serviceId/custom-domains/:customDomainIdOrName',
      summary: 'Retrieve a custom domain by id or name',
      tags: ['Custom domains'],
      access: 'viewer',
      schema: { params: DomainParams, response: { 200: CustomDomainBody } },
      handler: async (req) => {
        const service = await loadService(deps, req, req.params.serviceId);
        const [one] = await bodies([await domains.get(service, req.params.customDomainIdOrName)], service);
        return one!;
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/v1/services/:serviceId/custom-domains/:customDomainIdOrName/verify',
      summary: "Check the domain's DNS now (202, as Render answers); GET shows the result at once",
      tags: ['Custom domains'],
      access: 'developer',
      audit: 'VerifyCustomDomainEvent',
      schema: { params: DomainParams, response: { 202: Type.Null() } },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        await domains.verify(service, req.params.customDomainIdOrName);
        return reply.code(202).send(null);
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/v1/services/:serviceId/custom-domains/:customDomainIdOrName',
      summary: 'Delete a custom domain (and its twin); it stops routing at once',
      tags: ['Custom domains'],
      access: 'developer',
      audit: 'DeleteCustomDomainEvent',
      schema: { params: DomainParams, response: { 204: Type.Null() } },
      handler: async (req, reply) => {
        const service = await loadService(deps, req, req.params.serviceId);
        await domains.remove(service, req.params.customDomainIdOrName);
        return reply.code(204).send(null);
      },
    }),
  ];
}
