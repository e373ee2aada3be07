import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../../api';
import { ActionForm, ConfirmButton, CopyButton, ErrorText, StatusBadge } from '../../components/bits';
import { useWorkspace } from '../../session';

/** Custom domains: the DNS records to create, verification (checked on demand) and why it failed. */
export function Domains({ serviceId }: { serviceId: string }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const path = { serviceId };
  const domains = useQuery({
    queryKey: ['domains', serviceId],
    queryFn: async () =>
      items(await ok(api.GET('/v1/services/{serviceId}/custom-domains', { params: { path } })), 'customDomain'),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['domains', serviceId] });
  const add = useMutation({
    mutationFn: () => ok(api.POST('/v1/services/{serviceId}/custom-domains', { params: { path }, body: { name } })),
    onSuccess: () => {
      setName('');
      void done();
    },
  });
  const verify = useMutation({
    mutationFn: (id: string) =>
      ok(
        api.POST('/v1/services/{serviceId}/custom-domains/{customDomainIdOrName}/verify', {
          params: { path: { ...path, customDomainIdOrName: id } },
        }),
      ),
    onSettled: () => done(),
  });
  const remove = useMutation({
    mutationFn: (id: string) =>
      ok(
        api.DELETE('/v1/services/{serviceId}/custom-domains/{customDomainIdOrName}', {
          params: { path: { ...path, customDomainIdOrName: id } },
        }),
      ),
    onSuccess: () => done(),
  });
  const canAct = workspace.can('developer');
  return (
    <>
      <h2>Custom domains</h2>
      <ErrorText error={domains.error ?? add.error ?? verify.error ?? remove.error} />
      {canAct && (
        <ActionForm className="row wrap" onSubmit={() => add.mutate()}>
          <label>
            Domain
            <input required value={name} onChange={(e) => setName(e.target.value)} placeholder="www.example.com" />
          </label>
          <button className="primary" disabled={add.isPending}>
            Add domain
          </button>
        </ActionForm>
      )}
      {domains.data?.length === 0 && <p className="empty">No custom domain yet.</p>}
      {(domains.data ?? []).map((d) => (
        <article key={d.id} className="card">
          <div className="row wrap">
            <h3>{d.name}</h3>
            <StatusBadge status={d.verificationStatus} />
            {d.redirectForName && <span className="muted">redirects to {d.redirectForName}</span>}
            <span className="spacer" />
            {canAct && (
              <>
                <button type="button" className="small" disabled={verify.isPending} onClick={() => verify.mutate(d.id)}>
                  Verify
                </button>
                <ConfirmButton
                  label="Delete"
                  danger
                  question={`Delete ${d.name}? It stops routing at once.`}
                  onConfirm={() => remove.mutate(d.id)}
                />
              </>
            )}
          </div>
          {d.verificationStatus !== 'verified' && <p className="muted">{d.unverifiedReason}</p>}
          <p className="row wrap">
            Certificate: <StatusBadge status={d.certificate.status === 'none' ? 'not ordered' : d.certificate.status} />
            {d.certificate.expiresAt && (
              <span className="muted">expires {new Date(d.certificate.expiresAt).toLocaleDateString()}</span>
            )}
            {d.certificate.error && <span className="error small-text">{d.certificate.error}</span>}
          </p>
          <table aria-label={`DNS records for ${d.name}`}>
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Name</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {[...d.dnsRecords, d.verificationRecord].map((r, i) => (
                <tr key={i}>
                  <td>{r.type}</td>
                  <td>
                    <code>{r.name}</code>
                  </td>
                  <td>
                    <code>{r.value}</code> <CopyButton text={r.value} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </article>
      ))}
    </>
  );
}
