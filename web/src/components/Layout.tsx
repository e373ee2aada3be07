import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { api, ok } from '../api';
import { useWorkspace } from '../session';
import { ThemeToggle } from './ThemeToggle';

const NAV = [
  ['/services', 'Services'],
  ['/datastores', 'Datastores'],
  ['/env-groups', 'Env groups'],
  ['/projects', 'Projects'],
  ['/blueprints', 'Blueprints'],
  ['/webhooks', 'Webhooks'],
  ['/registry-credentials', 'Registries'],
  ['/team', 'Team'],
  ['/api-keys', 'API keys'],
  ['/audit-log', 'Audit log'],
  ['/usage', 'Usage'],
  ['/notifications', 'Notifications'],
  ['/integrations', 'Integrations'],
] as const;

export function Layout({ user, children }: { user: { name: string; email: string }; children: ReactNode }) {
  const workspace = useWorkspace();
  const [location] = useLocation();
  const queryClient = useQueryClient();
  // Signing out ends the session on the server (the cookie alone would outlive a closed tab).
  const signOut = useMutation({
    mutationFn: () => ok(api.POST('/v1/auth/logout')),
    onSuccess: () => queryClient.clear(),
    onSettled: () => window.location.assign('/sign-in'),
  });
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link href="/services" className="brand">
          Slipway
        </Link>
        <label className="switcher">
          <span className="sr-only">Workspace</span>
          <select value={workspace.id} onChange={(e) => workspace.choose(e.target.value)}>
            {workspace.all.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name}
              </option>
            ))}
          </select>
        </label>
        <span className="role" title="Your role in this workspace">
          {workspace.role}
        </span>
        <span className="spacer" />
        <ThemeToggle />
        <span className="hide-narrow user" title={user.email}>
          {user.name}
        </span>
        <button type="button" className="ghost" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
          Sign out
        </button>
      </header>
      <nav className="side" aria-label="Main">
        <ul>
          {NAV.map(([href, label]) => (
            <li key={href}>
              <Link href={href} aria-current={location.startsWith(href) ? 'page' : undefined}>
                {label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
