// Headwater's web console: one page application served at / by `headwater serve`.
import { render } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { apiKey, onKeyNeeded, setApiKey } from "./api.js";
import { DatasetPage } from "./dataset.jsx";
import { ImpactPage, RootCausePage } from "./impact.jsx";
import { JobPage } from "./job.jsx";
import { LineagePage } from "./lineage.jsx";
import { SearchPage } from "./search.jsx";
import { AuthContext, Empty, Link, useRoute } from "./ui.jsx";
import "./style.css";

const PAGES = {
  "/": [SearchPage, "Search"],
  "/datasets": [DatasetPage, "Dataset"],
  "/jobs": [JobPage, "Job"],
  "/lineage": [LineagePage, "Lineage"],
  "/impact": [ImpactPage, "Impact"],
  "/root-cause": [RootCausePage, "Root cause"],
};

function KeyDialog({ reason, onSave, onCancel }) {
  const input = useRef(null);
  useEffect(() => input.current && input.current.focus(), []);
  return (
    <div class="modal" role="dialog" aria-modal="true" aria-labelledby="key-title">
      <form
        class="modal-box"
        onSubmit={(e) => {
          e.preventDefault();
          onSave(input.current.value.trim());
        }}
        onKeyDown={(e) => e.key === "Escape" && onCancel()}
      >
        <h2 id="key-title">This Headwater needs an API key</h2>
        <p>{reason}</p>
        <p class="muted">
          A key with the <code>read</code> scope is enough. It is kept in this browser only and sent to this server with
          every request.
        </p>
        <label>
          API key <input ref={input} type="password" autoComplete="off" name="apiKey" required />
        </label>
        <div class="modal-actions">
          <button type="submit">Use this key</button>
          <button type="button" onClick={onCancel}>Cancel</button>
        </div>
      </form>
    </div>
  );
}

function App() {
  const { path } = useRoute();
  const [version, setVersion] = useState(0);
  const [asking, setAsking] = useState(null);
  const [hasKey, setHasKey] = useState(Boolean(apiKey()));
  const auth = useMemo(() => ({ version, needKey: (error) => setAsking(error.message) }), [version]);
  useEffect(() => onKeyNeeded((error) => setAsking(error.message)), []);
  const [Page, title] = PAGES[path] || [null, "Not found"];
  useEffect(() => {
    document.title = `${title} \u00b7 Headwater`;
  }, [title]);
  const save = (key) => {
    setApiKey(key);
    setHasKey(Boolean(key));
    setAsking(null);
    setVersion((v) => v + 1);
  };
  return (
    <AuthContext.Provider value={auth}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <Link href="/" class="brand">Headwater</Link>
        <nav aria-label="Console">
          <Link href="/" aria-current={path === "/" ? "page" : undefined}>Search</Link>
        </nav>
        <span class="spacer" />
        {hasKey ? (
          <button type="button" class="link" onClick={() => save("")}>Forget the API key</button>
        ) : null}
        <a href="/graphql">GraphiQL</a>
      </header>
      <main id="main">
        {Page ? <Page key={path} /> : <Empty>No page at {path}. <Link href="/">Search</Link></Empty>}
      </main>
      {asking !== null ? <KeyDialog reason={asking} onSave={save} onCancel={() => setAsking(null)} /> : null}
    </AuthContext.Provider>
  );
}

render(<App />, document.getElementById("app"));
