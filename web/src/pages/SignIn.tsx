import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'wouter';
import { api, ok } from '../api';
import { ErrorText } from '../components/bits';

/** Sign in or sign up; with an invite's token, the new or signed-in account joins that workspace too. */
export function SignIn({ mode, inviteToken }: { mode: 'sign-in' | 'sign-up'; inviteToken?: string }) {
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ name: '', email: '', password: '' });
  const providers = useQuery({ queryKey: ['providers'], queryFn: () => ok(api.GET('/v1/auth/providers')) });
  const submit = useMutation({
    mutationFn: () =>
      mode === 'sign-up'
        ? ok(api.POST('/v1/auth/register', { body: { ...form, inviteToken } }))
        : ok(api.POST('/v1/auth/login', { body: { email: form.email, password: form.password, inviteToken } })),
    onSuccess: () => queryClient.invalidateQueries(),
  });
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    submit.mutate();
  };
  const field = (key: keyof typeof form) => ({
    value: form[key],
    onChange: (e: { target: { value: string } }) => setForm({ ...form, [key]: e.target.value }),
  });
  const title = mode === 'sign-up' ? 'Create your account' : 'Sign in to Slipway';
  return (
    <main id="main" className="auth">
      <h1>{title}</h1>
      <form onSubmit={onSubmit} className="stack">
        {mode === 'sign-up' && (
          <label>
            Name
            <input required autoComplete="name" maxLength={100} {...field('name')} />
          </label>
        )}
        <label>
          Email
          <input type="email" required autoComplete="email" {...field('email')} />
        </label>
        <label>
          Password
          <input
            type="password"
            required
            minLength={mode === 'sign-up' ? 8 : 1}
            autoComplete={mode === 'sign-up' ? 'new-password' : 'current-password'}
            {...field('password')}
          />
        </label>
        <ErrorText error={submit.error} />
        <button className="primary" disabled={submit.isPending}>
          {submit.isPending ? 'Please wait…' : mode === 'sign-up' ? 'Sign up' : 'Sign in'}
        </button>
      </form>
      {providers.data && providers.data.length > 0 && (
        <div className="stack providers">
          {providers.data.map((p) => (
            <a
              key={p.id}
              className="button"
              href={`/v1/auth/oauth/${p.id}/start${inviteToken ? `?inviteToken=${encodeURIComponent(inviteToken)}` : ''}`}
            >
              Continue with {p.name}
            </a>
          ))}
        </div>
      )}
      {!inviteToken && (
        <p>
          {mode === 'sign-up' ? (
            <>
              Have an account? <Link href="/sign-in">Sign in</Link>
            </>
          ) : (
            <>
              New here? <Link href="/sign-up">Create an account</Link>
            </>
          )}
        </p>
      )}
    </main>
  );
}
