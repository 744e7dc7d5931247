// The console's entry point: the routes and their pages.

import { route } from './router.js';
import { start, registerPages } from './app.js';
import signIn from './pages/signin.js';
import agents from './pages/agents.js';
import agentNew from './pages/agent-new.js';
import agent from './pages/agent.js';
import namespaces from './pages/namespaces.js';
import secrets from './pages/secrets.js';
import access from './pages/access.js';
import audit from './pages/audit.js';
import people from './pages/people.js';
import account from './pages/account.js';
import recovery from './pages/recovery.js';
import cliLogin from './pages/cli-login.js';
import cliSessions from './pages/cli-sessions.js';
import notFound from './pages/notfound.js';

route('/console/login', signIn);
route('/console/agents', agents);
route('/console/agents/new', agentNew);
route('/console/agents/:agentId', agent);
route('/console/namespaces', namespaces);
route('/console/secrets', secrets);
route('/console/access', access);
route('/console/audit', audit);
route('/console/people', people);
route('/console/people/:userId', account);
route('/console/recovery', recovery);
route('/console/cli-login', cliLogin);
route('/console/cli-sessions', cliSessions);

registerPages({ signIn, notFound });
start();
