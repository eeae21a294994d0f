import { mount } from 'svelte';
import './app.css';
import App from './App.svelte';
import { app, errorMessage, loadTheme, noteSchedulerEvent } from './lib/app.svelte';
import { engine, pickTransport, takeToken } from './lib/transport';
import { keepFocusThroughBusy } from './lib/keepFocus';

loadTheme();
keepFocusThroughBusy();

mount(App, { target: document.getElementById('app')! });

async function start() {
  // The desktop app talks to its shell over IPC; the browser needs serve's access token.
  const transport = pickTransport(takeToken);
  if (!transport) {
    app.fatal = 'This page needs the access link that `mneme serve` printed when it started (it ends in ?token=…). Open that link, or start `mneme serve` again.';
    return;
  }
  const api = engine(transport);
  app.api = api;
  try {
    const home = await api.home({});
    app.home = home.home;
    app.scheduler = home.scheduler === true;
    app.configHome = home.configHome;
    app.configHomeExists = home.configHomeExists;
    // The project this tab had open, else the folder named at launch (`mneme-app FOLDER`), else
    // the one opened last; never the folder the process merely started in (a launcher starts
    // apps in / or the home folder). No project: the Projects list.
    app.cwd = sessionStorage.getItem('mneme.cwd') || home.launchFolder || home.lastProject || '';
  } catch (e) {
    app.fatal = errorMessage(e);
    return;
  }
  transport.subscribe(
    (paths) => {
      app.lastChanged = paths;
      app.liveTick++;
    },
    (s) => (app.live = s),
    noteSchedulerEvent,
  );
  if (app.cwd) api.watch({ cwd: app.cwd }).catch(() => {});
  app.ready = true;
}

start();
