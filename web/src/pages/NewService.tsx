import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type DragEvent, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import { api, items, ok } from '../api';
import type { paths } from '../../../openapi/schema';
import { ErrorText } from '../components/bits';
import { bytes } from '../lib/format';
import { uploadArchive } from '../lib/upload';
import { useWorkspace } from '../session';

type Body = paths['/v1/services']['post']['requestBody']['content']['application/json'];
type Runtime = NonNullable<NonNullable<Body['serviceDetails']>['runtime']>;
const TYPES = ['web_service', 'private_service', 'background_worker', 'static_site'] as const satisfies Body['type'][];
const RUNTIMES = ['node', 'python', 'ruby', 'go', 'rust', 'elixir', 'docker'] as const satisfies Runtime[];

/** "New service": from an archive dropped here (uploaded with a progress bar) or from a git repository. */
export function NewService() {
  const workspace = useWorkspace();
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const [source, setSource] = useState<'archive' | 'repo' | 'image'>('archive');
  const [file, setFile] = useState<File | null>(null);
  const [progress, setProgress] = useState<number | null>(null);
  const [form, setForm] = useState({
    name: '',
    type: 'web_service' as (typeof TYPES)[number],
    runtime: 'node' as Runtime,
    buildCommand: '',
    startCommand: '',
    publishPath: '',
    repo: '',
    branch: '',
    image: '',
    registryCredentialId: '',
  });
  const credentials = useQuery({
    queryKey: ['registry-credentials', workspace.id],
    enabled: source === 'image',
    queryFn: () =>
      ok(api.GET('/v1/registrycredentials', { params: { query: { ownerId: [workspace.id], limit: 100 } } })),
  });
  const github = useQuery({
    queryKey: ['github', workspace.id],
    queryFn: () => ok(api.GET('/v1/github/status', { params: { query: { ownerId: workspace.id } } })),
  });
  const repos = useQuery({
    queryKey: ['github-repos', workspace.id],
    enabled: source === 'repo' && github.data?.installed === true,
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/github/repos', { params: { query: { ownerId: workspace.id, limit: 100 } } })),
        'repository',
      ),
  });
  const create = useMutation({
    mutationFn: async () => {
      const isStatic = form.type === 'static_site';
      const { service } = await ok(
        api.POST('/v1/services', {
          body: {
            type: form.type,
            name: form.name,
            ownerId: workspace.id,
            autoDeploy: 'yes',
            ...(source === 'repo' ? { repo: form.repo, ...(form.branch ? { branch: form.branch } : {}) } : {}),
            ...(source === 'image'
              ? {
                  image: {
                    imagePath: form.image,
                    ...(form.registryCredentialId ? { registryCredentialId: form.registryCredentialId } : {}),
                  },
                }
              : {}),
            serviceDetails:
              source === 'image'
                ? { runtime: 'image' }
                : isStatic
                  ? { buildCommand: form.buildCommand || undefined, publishPath: form.publishPath || undefined }
                  : {
                      runtime: form.runtime,
                      envSpecificDetails: {
                        buildCommand: form.buildCommand || undefined,
                        startCommand: form.startCommand || undefined,
                      },
                    },
          },
        }),
      );
      if (source === 'archive' && file) {
        setProgress(0);
        await uploadArchive(service.id, file, setProgress);
      }
      return service;
    },
    onSuccess: (service) => {
      void queryClient.invalidateQueries({ queryKey: ['services'] });
      navigate(`/services/${service.id}`);
    },
    onSettled: () => setProgress(null),
  });
  const set = (key: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm({ ...form, [key]: e.target.value });
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    const dropped = e.dataTransfer.files[0];
    if (dropped) setFile(dropped);
  };
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <>
      <h1>New service</h1>
      <form className="stack wide" onSubmit={onSubmit}>
        <fieldset className="row">
          <legend>Source</legend>
          <label className="inline">
            <input type="radio" checked={source === 'archive'} onChange={() => setSource('archive')} /> Upload an
            archive
          </label>
          <label className="inline">
            <input type="radio" checked={source === 'repo'} onChange={() => setSource('repo')} /> Git repository
          </label>
          <label className="inline">
            <input type="radio" checked={source === 'image'} onChange={() => setSource('image')} /> Prebuilt image
          </label>
        </fieldset>
        {source === 'image' ? (
          <>
            <label>
              Image
              <input required value={form.image} onChange={set('image')} placeholder="registry.example.com/app:1.2" />
            </label>
            <label>
              Registry credential
              <select value={form.registryCredentialId} onChange={set('registryCredentialId')}>
                <option value="">None (a public image)</option>
                {(credentials.data ?? []).map((c) => (
                  <option key={c.id} value={c.id}>
                    {c.name}
                  </option>
                ))}
              </select>
            </label>
          </>
        ) : source === 'archive' ? (
          <label className="dropzone" onDragOver={(e) => e.preventDefault()} onDrop={onDrop}>
            <span>
              {file ? `${file.name} (${bytes(file.size)})` : 'Drop a .tar.gz, .tgz or .zip here, or choose a file'}
            </span>
            <input
              type="file"
              accept=".tar.gz,.tgz,.zip,application/gzip,application/zip"
              required
              onChange={(e) => setFile(e.target.files?.[0] ?? null)}
            />
          </label>
        ) : (
          <>
            {github.data?.installed && repos.data && (
              <label>
                GitHub repository
                <select value={form.repo} onChange={set('repo')}>
                  <option value="">Choose…</option>
                  {repos.data.map((r) => (
                    <option key={r.id} value={r.cloneUrl}>
                      {r.fullName}
                    </option>
                  ))}
                </select>
              </label>
            )}
            <label>
              Repository URL
              <input type="url" required value={form.repo} onChange={set('repo')} placeholder="https://…" />
            </label>
            <label>
              Branch
              <input value={form.branch} onChange={set('branch')} placeholder="the default branch" />
            </label>
          </>
        )}
        <label>
          Name
          <input
            required
            pattern="[A-Za-z0-9][A-Za-z0-9 _.\-]*"
            maxLength={100}
            value={form.name}
            onChange={set('name')}
          />
        </label>
        <div className="row">
          <label>
            Type
            <select value={form.type} onChange={set('type')}>
              {TYPES.map((t) => (
                <option key={t} value={t}>
                  {t.replace(/_/g, ' ')}
                </option>
              ))}
            </select>
          </label>
          {form.type !== 'static_site' && source !== 'image' && (
            <label>
              Runtime
              <select value={form.runtime} onChange={set('runtime')}>
                {RUNTIMES.map((r) => (
                  <option key={r}>{r}</option>
                ))}
              </select>
            </label>
          )}
        </div>
        <label>
          Build command
          <input value={form.buildCommand} onChange={set('buildCommand')} placeholder="detected when empty" />
        </label>
        {form.type === 'static_site' ? (
          <label>
            Publish directory
            <input value={form.publishPath} onChange={set('publishPath')} placeholder="build" />
          </label>
        ) : (
          <label>
            Start command
            <input value={form.startCommand} onChange={set('startCommand')} placeholder="detected when empty" />
          </label>
        )}
        {progress !== null && (
          <label>
            Uploading
            <progress value={progress} max={1}>
              {Math.round(progress * 100)} %
            </progress>
          </label>
        )}
        <ErrorText error={create.error} />
        <button className="primary" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create and deploy'}
        </button>
      </form>
    </>
  );
}
