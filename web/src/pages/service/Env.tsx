import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../../api';
import { ActionForm, ConfirmButton, ErrorText } from '../../components/bits';
import { parseDotenv } from '../../lib/dotenv';
import { useWorkspace } from '../../session';
import { EnvGroupLinks } from './EnvGroupLinks';
import { SecretFiles } from './SecretFiles';

/**
 * The env-vars editor: values masked until revealed, one variable at a time or a pasted `.env` (each key set on its
 * own, so a value the reader cannot see is never written back). Changes apply at the next deploy.
 */
export function Env({ serviceId }: { serviceId: string }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [revealed, setRevealed] = useState<Set<string>>(new Set());
  const [draft, setDraft] = useState({ key: '', value: '' });
  const [paste, setPaste] = useState('');
  const [note, setNote] = useState('');
  const path = { serviceId };
  const vars = useQuery({
    queryKey: ['env', serviceId],
    enabled: workspace.can('developer'),
    queryFn: () => ok(api.GET('/v1/services/{serviceId}/env-vars', { params: { path } })),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['env', serviceId] });
  const put = useMutation({
    mutationFn: async (pairs: Array<[string, string]>) => {
      for (const [key, value] of pairs)
        await ok(
          api.PUT('/v1/services/{serviceId}/env-vars/{envVarKey}', {
            params: { path: { ...path, envVarKey: key } },
            body: { value },
          }),
        );
      return pairs.length;
    },
    onSuccess: (count) => {
      setNote(`${count} variable${count === 1 ? '' : 's'} saved: they apply at the next deploy.`);
      setDraft({ key: '', value: '' });
      setPaste('');
      void done();
    },
  });
  const remove = useMutation({
    mutationFn: (key: string) =>
      ok(
        api.DELETE('/v1/services/{serviceId}/env-vars/{envVarKey}', { params: { path: { ...path, envVarKey: key } } }),
      ),
    onSuccess: () => done(),
  });
  const redeploy = useMutation({
    mutationFn: () => ok(api.POST('/v1/services/{serviceId}/deploys', { params: { path }, body: {} })),
    onSuccess: () => {
      setNote('Deploy started.');
      void queryClient.invalidateQueries({ queryKey: ['deploys', serviceId] });
    },
  });
  if (!workspace.can('developer')) return <p className="empty">Viewers cannot read environment variables.</p>;
  const parsed = parseDotenv(paste);
  return (
    <>
      <h2>Environment variables</h2>
      <ErrorText error={vars.error ?? put.error ?? remove.error ?? redeploy.error} />
      {note && (
        <p role="status" className="row">
          {note}
          <button type="button" className="small" onClick={() => redeploy.mutate()} disabled={redeploy.isPending}>
            Deploy now
          </button>
        </p>
      )}
      <div className="table-wrap">
        <table aria-label="Environment variables">
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Value</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(vars.data ?? []).map(({ envVar }) => (
              <tr key={envVar.key}>
                <td>
                  <code>{envVar.key}</code>
                </td>
                <td>
                  <code className="secret">{revealed.has(envVar.key) ? envVar.value : '••••••••'}</code>
                </td>
                <td className="row end">
                  <button
                    type="button"
                    className="small"
                    aria-label={`${revealed.has(envVar.key) ? 'Hide' : 'Reveal'} ${envVar.key}`}
                    onClick={() => {
                      const next = new Set(revealed);
                      if (!next.delete(envVar.key)) next.add(envVar.key);
                      setRevealed(next);
                    }}
                  >
                    {revealed.has(envVar.key) ? 'Hide' : 'Reveal'}
                  </button>
                  <ConfirmButton
                    label={`Delete`}
                    danger
                    question={`Delete ${envVar.key}? The app keeps it until the next deploy.`}
                    onConfirm={() => remove.mutate(envVar.key)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ActionForm className="row wrap" onSubmit={() => put.mutate([[draft.key, draft.value]])}>
        <label>
          Key
          <input
            required
            pattern="[A-Za-z_][A-Za-z0-9_.\-]*"
            maxLength={256}
            value={draft.key}
            onChange={(e) => setDraft({ ...draft, key: e.target.value })}
          />
        </label>
        <label>
          Value
          <input value={draft.value} onChange={(e) => setDraft({ ...draft, value: e.target.value })} />
        </label>
        <button className="primary" disabled={put.isPending}>
          Save variable
        </button>
      </ActionForm>
      <ActionForm className="stack wide" onSubmit={() => put.mutate(parsed.pairs)}>
        <label>
          Paste a .env file
          <textarea rows={5} value={paste} onChange={(e) => setPaste(e.target.value)} spellCheck={false} />
        </label>
        {parsed.rejected.length > 0 && (
          <p className="error">Not an assignment, skipped: {parsed.rejected.slice(0, 3).join(', ')}</p>
        )}
        <button disabled={put.isPending || parsed.pairs.length === 0}>Save {parsed.pairs.length} variables</button>
      </ActionForm>
      <SecretFiles serviceId={serviceId} />
      <EnvGroupLinks serviceId={serviceId} />
    </>
  );
}
