import { useMutation, useQuery } from '@tanstack/react-query';
import { api, ok } from '../api';
import { ErrorText, StatusBadge } from '../components/bits';
import { useWorkspace } from '../session';

/** The GitHub App's installation for this workspace, and billing when this Slipway bills through Stripe. */
export function Integrations() {
  const workspace = useWorkspace();
  const ownerId = workspace.id;
  const github = useQuery({
    queryKey: ['github', ownerId],
    queryFn: () => ok(api.GET('/v1/github/status', { params: { query: { ownerId } } })),
  });
  const billing = useQuery({ queryKey: ['billing-configured'], queryFn: () => ok(api.GET('/v1/billing/configured')) });
  const account = useQuery({
    queryKey: ['billing', ownerId],
    enabled: billing.data?.configured === true && workspace.can('admin'),
    queryFn: () => ok(api.GET('/v1/workspaces/{ownerId}/billing', { params: { path: { ownerId } } })),
  });
  const plans = useQuery({
    queryKey: ['billing-plans'],
    enabled: billing.data?.configured === true && workspace.can('admin'),
    queryFn: () => ok(api.GET('/v1/billing/plans')),
  });
  const checkout = useMutation({
    mutationFn: (plan: string) =>
      ok(
        api.POST('/v1/billing/checkout', {
          body: { ownerId, plan, successUrl: window.location.href, cancelUrl: window.location.href },
        }),
      ),
    onSuccess: ({ url }) => window.location.assign(url),
  });
  const portal = useMutation({
    mutationFn: () => ok(api.POST('/v1/billing/portal', { body: { ownerId, returnUrl: window.location.href } })),
    onSuccess: ({ url }) => window.location.assign(url),
  });
  const g = github.data;
  return (
    <>
      <h1>Integrations</h1>
      <h2>GitHub</h2>
      <ErrorText error={github.error} />
      {g && !g.configured && <p className="muted">The GitHub App is not configured on this Slipway.</p>}
      {g?.configured && (
        <div className="row wrap">
          <StatusBadge status={g.installed ? (g.suspended ? 'suspended' : 'installed') : 'not installed'} />
          {g.account && (
            <span>
              on {g.account.login} ({g.account.type}), {g.repositorySelection} repositories
            </span>
          )}
          {!g.installed && workspace.can('admin') && (
            <a className="button primary" href={`/v1/github/install?ownerId=${encodeURIComponent(ownerId)}`}>
              Install the GitHub App
            </a>
          )}
        </div>
      )}
      {billing.data?.configured && (
        <>
          <h2>Billing</h2>
          <ErrorText error={account.error ?? portal.error ?? checkout.error ?? plans.error} />
          {account.data && !account.data.subscription && (plans.data?.length ?? 0) > 0 && (
            <ul className="list" aria-label="Plans">
              {plans.data!.map((p) => (
                <li key={p.id}>
                  <strong>{p.name}</strong>
                  <span className="muted">{p.kind}</span>
                  <button
                    type="button"
                    className="small"
                    disabled={checkout.isPending}
                    onClick={() => checkout.mutate(p.plan)}
                  >
                    Subscribe
                  </button>
                </li>
              ))}
            </ul>
          )}
          {account.data && (
            <div className="row wrap">
              <StatusBadge status={account.data.subscription?.status ?? 'no subscription'} />
              {account.data.subscription?.currentPeriodEnd && (
                <span className="muted">
                  renews {new Date(account.data.subscription.currentPeriodEnd).toLocaleDateString()}
                </span>
              )}
              <button type="button" onClick={() => portal.mutate()} disabled={portal.isPending}>
                Manage billing
              </button>
            </div>
          )}
        </>
      )}
    </>
  );
}
