// Routing (history API: every page has its own URL), auth state and the shared states of a page:
// loading, error, empty.
import { createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import { gql, KeyNeeded } from "./api.js";

const listeners = new Set();

export function navigate(href, { replace = false } = {}) {
  if (replace) window.history.replaceState(null, "", href);
  else window.history.pushState(null, "", href);
  for (const listener of listeners) listener();
}

window.addEventListener("popstate", () => {
  for (const listener of listeners) listener();
});

export function useRoute() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((t) => t + 1);
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return { path: window.location.pathname, params: new URLSearchParams(window.location.search) };
}

export function Link({ href, children, ...rest }) {
  const onClick = (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
    event.preventDefault();
    navigate(href);
    window.scrollTo(0, 0);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}

// Bumped when the API key changes, so that every page asks again.
export const AuthContext = createContext({ version: 0, needKey: () => {} });

export function useAuthVersion() {
  return useContext(AuthContext).version;
}

/** Run a query when its variables (or the key) change: {data, error, loading}. */
export function useQuery(query, variables, { skip = false } = {}) {
  const auth = useContext(AuthContext);
  const [state, setState] = useState({ data: null, error: null, loading: !skip });
  const key = JSON.stringify(variables);
  useEffect(() => {
    if (skip) return;
    let current = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    gql(query, variables)
      .then((data) => current && setState({ data, error: null, loading: false }))
      .catch((error) => current && setState({ data: null, error, loading: false }));
    return () => {
      current = false;
    };
  }, [query, key, auth.version, skip]);
  return state;
}

export function Loading({ what }) {
  return (
    <p class="loading" role="status" aria-live="polite">
      Loading {what}&hellip;
    </p>
  );
}

export function ErrorBox({ error }) {
  const auth = useContext(AuthContext);
  if (error instanceof KeyNeeded) {
    return (
      <div class="error" role="alert">
        <p>{error.message}</p>
        <button type="button" onClick={() => auth.needKey(error)}>Enter an API key</button>
      </div>
    );
  }
  return (
    <div class="error" role="alert">
      {error.message || String(error)}
    </div>
  );
}

export function Empty({ children }) {
  return <p class="empty">{children}</p>;
}

export function when(value) {
  return value ? new Date(value).toLocaleString() : "\u2014";
}

export function duration(ms) {
  if (ms === null || ms === undefined) return "\u2014";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60000);
  if (minutes < 60) return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

export function Json({ value }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export function Tags({ tags }) {
  if (!tags || !tags.length) return null;
  return (
    <span class="tags">
      {tags.map((t) => (
        <span class="tag" key={t.name} title={t.description || ""}>
          {t.name}
        </span>
      ))}
    </span>
  );
}
