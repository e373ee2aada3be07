import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../../api';
import { ActionForm, ConfirmButton, ErrorText } from '../../components/bits';

/** Secret files: written into /etc/secrets/<name> of each build and instance at the next deploy; contents never shown. */
export function SecretFiles({ serviceId }: { serviceId: string }) {
  const queryClient = useQueryClient();
  const [draft, setDraft] = useState({ name: '', content: '' });
  const files = useQuery({
    queryKey: ['secret-files', serviceId],
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/services/{serviceId}/secret-files', { params: { path: { serviceId } } })),
        'secretFile',
      ),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['secret-files', serviceId] });
  const put = useMutation({
    mutationFn: () =>
      ok(
        api.PUT('/v1/services/{serviceId}/secret-files/{secretFileName}', {
          params: { path: { serviceId, secretFileName: draft.name } },
          body: { content: draft.content },
        }),
      ),
    onSuccess: () => {
      setDraft({ name: '', content: '' });
      void done();
    },
  });
  const remove = useMutation({
    mutationFn: (secretFileName: string) =>
      ok(
        api.DELETE('/v1/services/{serviceId}/secret-files/{secretFileName}', {
          params: { path: { serviceId, secretFileName } },
        }),
      ),
    onSuccess: () => done(),
  });
  return (
    <>
      <h2>Secret files</h2>
      <ErrorText error={files.error ?? put.error ?? remove.error} />
      <ul className="list" aria-label="Secret files">
        {(files.data ?? []).map((f) => (
          <li key={f.name}>
            <code>/etc/secrets/{f.name}</code>
            <ConfirmButton
              label="Delete"
              danger
              question={`Delete the secret file ${f.name}?`}
              onConfirm={() => remove.mutate(f.name)}
            />
          </li>
        ))}
        {files.data?.length === 0 && <li className="muted">No secret files.</li>}
      </ul>
      <ActionForm className="stack wide" onSubmit={() => put.mutate()}>
        <label>
          File name
          <input
            required
            maxLength={255}
            value={draft.name}
            onChange={(e) => setDraft({ ...draft, name: e.target.value })}
          />
        </label>
        <label>
          Content
          <textarea
            rows={4}
            required
            spellCheck={false}
            value={draft.content}
            onChange={(e) => setDraft({ ...draft, content: e.target.value })}
          />
        </label>
        <button disabled={put.isPending}>Save secret file</button>
      </ActionForm>
    </>
  );
}
