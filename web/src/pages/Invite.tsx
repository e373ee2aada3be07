import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { api, ok } from '../api';
import { ErrorText } from '../components/bits';
import { useMe } from '../session';
import { SignIn } from './SignIn';

/** The link an invite's acceptUrl points at: sign in or up first, then join the workspace. */
export function Invite({ token }: { token: string }) {
  const me = useMe();
  const [mode, setMode] = useState<'sign-in' | 'sign-up'>('sign-up');
  const [, navigate] = useLocation();
  const queryClient = useQueryClient();
  const accept = useMutation({
    mutationFn: () => ok(api.POST('/v1/team-invites/{token}/accept', { params: { path: { token } } })),
    onSuccess: async (member) => {
      localStorage.setItem('slipway.workspace', member.ownerId);
      await queryClient.invalidateQueries();
      navigate('/services');
      window.location.reload(); // the workspace context starts again on the joined workspace
    },
  });
  if (!me.data) {
    return (
      <>
        <SignIn mode={mode} />
        <p className="center">
          You were invited to a workspace: {mode === 'sign-up' ? 'create an account' : 'sign in'}, then join it.{' '}
          <button type="button" className="link" onClick={() => setMode(mode === 'sign-up' ? 'sign-in' : 'sign-up')}>
            {mode === 'sign-up' ? 'I have an account' : 'I am new here'}
          </button>
        </p>
      </>
    );
  }
  return (
    <main id="main" className="auth">
      <h1>Join the workspace</h1>
      <p>You are signed in as {me.data.email}. The invite must be addressed to this email.</p>
      <ErrorText error={accept.error} />
      <button type="button" className="primary" disabled={accept.isPending} onClick={() => accept.mutate()}>
        Join workspace
      </button>
    </main>
  );
}
