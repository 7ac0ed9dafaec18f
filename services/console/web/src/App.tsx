// The console: sign-in when the services want a key, then the pages.
import { Redirect, Route, Switch } from 'wouter';
import { Checking, LoginBox, useAuth } from './auth.tsx';
import { Shell } from './Shell.tsx';
import { DatasetsPage } from './pages/datasets/DatasetsPage.tsx';
import { DatasetPage } from './pages/datasets/DatasetPage.tsx';
import { TrainingPage } from './pages/training/TrainingPage.tsx';
import { LaunchPage } from './pages/training/LaunchPage.tsx';
import { JobPage } from './pages/training/JobPage.tsx';
import { SweepsPage } from './pages/sweeps/SweepsPage.tsx';
import { SweepPage } from './pages/sweeps/SweepPage.tsx';
import { ComparePage } from './pages/compare/ComparePage.tsx';
import { PlaygroundPage } from './pages/playground/PlaygroundPage.tsx';
import { EvaluationPage } from './pages/evaluation/EvaluationPage.tsx';
import { ExportsPage } from './pages/exports/ExportsPage.tsx';
import { WorkersPage } from './pages/workers/WorkersPage.tsx';
import { WebhooksPage } from './pages/webhooks/WebhooksPage.tsx';

export function App() {
  const { auth, signIn, signOut } = useAuth();
  if (auth.state === 'checking') return <Checking />;
  if (auth.state === 'signed-out') return <LoginBox message={auth.message} onSignIn={signIn} />;
  return (
    <Shell onSignOut={auth.usesKey ? signOut : undefined}>
      <Switch>
        <Route path="/">
          <Redirect to="/datasets" />
        </Route>
        <Route path="/datasets" component={DatasetsPage} />
        <Route path="/datasets/:id">{(params) => <DatasetPage id={params.id} />}</Route>
        <Route path="/training" component={TrainingPage} />
        <Route path="/training/new" component={LaunchPage} />
        <Route path="/training/:id">{(params) => <JobPage id={params.id} />}</Route>
        <Route path="/sweeps" component={SweepsPage} />
        <Route path="/sweeps/:id">{(params) => <SweepPage id={params.id} />}</Route>
        <Route path="/compare" component={ComparePage} />
        <Route path="/playground" component={PlaygroundPage} />
        <Route path="/evaluation" component={EvaluationPage} />
        <Route path="/exports" component={ExportsPage} />
        <Route path="/workers" component={WorkersPage} />
        <Route path="/webhooks" component={WebhooksPage} />
        <Route>
          <Redirect to="/datasets" />
        </Route>
      </Switch>
    </Shell>
  );
}
