import { lazy, Suspense, type ComponentType } from 'react';
import { Redirect, Route, Switch, useLocation } from 'wouter';
import { Layout } from './components/Layout';
import { Services } from './pages/Services';
import { SignIn } from './pages/SignIn';
import { useMe, WorkspaceProvider } from './session';

// Each page but the services list and sign-in is loaded when first opened: the first page's script stays small.
const named = <K extends string>(load: () => Promise<Record<K, ComponentType<any>>>, name: K) =>
  lazy(async () => ({ default: (await load())[name] }));
const ServicePage = lazy(() => import('./pages/service/ServicePage'));
const ApiKeys = named(() => import('./pages/ApiKeys'), 'ApiKeys');
const AuditLog = named(() => import('./pages/AuditLog'), 'AuditLog');
const Datastore = named(() => import('./pages/Datastore'), 'Datastore');
const Datastores = named(() => import('./pages/Datastores'), 'Datastores');
const Invite = named(() => import('./pages/Invite'), 'Invite');
const NewService = named(() => import('./pages/NewService'), 'NewService');
const Team = named(() => import('./pages/Team'), 'Team');
const Usage = named(() => import('./pages/Usage'), 'Usage');
const EnvGroups = named(() => import('./pages/EnvGroups'), 'EnvGroups');
const Projects = named(() => import('./pages/Projects'), 'Projects');
const Blueprints = named(() => import('./pages/Blueprints'), 'Blueprints');
const Webhooks = named(() => import('./pages/Webhooks'), 'Webhooks');
const Integrations = named(() => import('./pages/Integrations'), 'Integrations');
const Notifications = named(() => import('./pages/Notifications'), 'Notifications');
const RegistryCredentials = named(() => import('./pages/RegistryCredentials'), 'RegistryCredentials');

/** Where to go after signing in: a path of this dashboard only (never `//other.site`). */
function safeNext(search: string): string {
  const next = new URLSearchParams(search).get('next') ?? '';
  return /^\/(?![/\\])/.test(next) && !next.startsWith('/sign-') ? next : '/services';
}

/** Every dashboardUrl the API returns (/services/:id, /postgres/:id, /key-value/:id) is a route here. */
export function App() {
  const me = useMe();
  const [location] = useLocation();
  if (me.isPending) return <p className="loading">Loading…</p>;
  if (location.startsWith('/invites/'))
    return <Route path="/invites/:token">{(p) => <Invite token={p.token} />}</Route>;
  if (!me.data) {
    return (
      <Switch>
        <Route path="/sign-up">
          <SignIn mode="sign-up" />
        </Route>
        <Route path="/sign-in">
          <SignIn mode="sign-in" />
        </Route>
        <Route>
          <Redirect to={`/sign-in?next=${encodeURIComponent(location)}`} />
        </Route>
      </Switch>
    );
  }
  return (
    <WorkspaceProvider userId={me.data.id}>
      <Layout user={me.data}>
        <Suspense fallback={<p className="loading">Loading…</p>}>
          <Switch>
            <Route path="/">
              <Redirect to="/services" />
            </Route>
            <Route path="/sign-in">
              <Redirect to={safeNext(window.location.search)} />
            </Route>
            <Route path="/sign-up">
              <Redirect to="/services" />
            </Route>
            <Route path="/services" component={Services} />
            <Route path="/services/new" component={NewService} />
            <Route path="/services/:id/:tab?">{(p) => <ServicePage id={p.id} tab={p.tab ?? 'deploys'} />}</Route>
            <Route path="/datastores" component={Datastores} />
            <Route path="/postgres/:id">{(p) => <Datastore kind="postgres" id={p.id} />}</Route>
            <Route path="/key-value/:id">{(p) => <Datastore kind="key-value" id={p.id} />}</Route>
            <Route path="/env-groups" component={EnvGroups} />
            <Route path="/projects" component={Projects} />
            <Route path="/blueprints" component={Blueprints} />
            <Route path="/webhooks" component={Webhooks} />
            <Route path="/integrations" component={Integrations} />
            <Route path="/registry-credentials" component={RegistryCredentials} />
            <Route path="/notifications" component={Notifications} />
            <Route path="/team" component={Team} />
            <Route path="/api-keys" component={ApiKeys} />
            <Route path="/audit-log" component={AuditLog} />
            <Route path="/usage" component={Usage} />
            <Route>
              <h1>Not found</h1>
              <p>This page does not exist.</p>
            </Route>
          </Switch>
        </Suspense>
      </Layout>
    </WorkspaceProvider>
  );
}
