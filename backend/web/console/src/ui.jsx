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
        <p><Shown text={error.message} /></p>
        <button type="button" onClick={() => auth.needKey(error)}>Enter an API key</button>
      </div>
    );
  }
  return (
    <div class="error" role="alert">
      <Shown text={error.message || String(error)} />
    </div>
  );
}

// Unicode's bidirectional controls (embeddings, overrides, isolates and marks) are invisible and
// reorder text: in a name from an event, U+202E shows "sales\u202Etxt.exe" as "salesexe.txt" and runs
// on over the text after the name. The console shows each as a marker naming its code point, and
// keeps every name in an isolate of its own; what it sends back (URLs, queries, the CSV) keeps the
// name as stored.
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;
const BIDI_NAMES = {
  "\u061C": "ARABIC LETTER MARK",
  "\u200E": "LEFT-TO-RIGHT MARK",
  "\u200F": "RIGHT-TO-LEFT MARK",
  "\u202A": "LEFT-TO-RIGHT EMBEDDING",
  "\u202B": "RIGHT-TO-LEFT EMBEDDING",
  "\u202C": "POP DIRECTIONAL FORMATTING",
  "\u202D": "LEFT-TO-RIGHT OVERRIDE",
  "\u202E": "RIGHT-TO-LEFT OVERRIDE",
  "\u2066": "LEFT-TO-RIGHT ISOLATE",
  "\u2067": "RIGHT-TO-LEFT ISOLATE",
  "\u2068": "FIRST STRONG ISOLATE",
  "\u2069": "POP DIRECTIONAL ISOLATE",
};

// Characters that show as nothing, though a name holding one is another name: "orders\u200B" reads
// as "orders". Format characters (zero-width spaces and joiners, the soft hyphen, the byte order
// mark, tag characters; the bidirectional controls among them), controls, variation selectors and
// the blank fillers of Hangul. In a name, whitespace other than one space between words is as
// misleading: a newline or a tab shows as a space, and spaces before, after or after another space
// as nothing.
const INVISIBLE = "\\p{Cf}\\p{Cc}\\u034F\\u115F\\u1160\\u180B-\\u180F\\u3164\\uFE00-\\uFE0F\\uFFA0\\u{E0100}-\\u{E01EF}";
const HIDDEN_IN_TEXT = new RegExp(`(?![\\t\\n\\r])[${INVISIBLE}]`, "gu");
const HIDDEN_IN_NAME = new RegExp(`[${INVISIBLE}]|(?! )\\s|^ | $|(?<= ) `, "gu");

// A word of a name mixing Latin, Greek and Cyrillic letters is a lookalike of another name:
// "\u043Erders" (a Cyrillic o) reads as "orders". Its letters of the scripts it has fewer of are
// shown as markers too.
const SCRIPTS = [
  ["Latin", /\p{Script=Latin}/u],
  ["Cyrillic", /\p{Script=Cyrillic}/u],
  ["Greek", /\p{Script=Greek}/u],
];
const WORD = /[\p{L}\p{M}\p{N}]+/gu;

function lookalikes(value) {
  const found = [];
  for (const word of value.matchAll(WORD)) {
    if (/^[\x00-\x7F]*$/.test(word[0])) continue;
    const letters = [...word[0]];
    const counts = SCRIPTS.map(([, script]) => letters.filter((c) => script.test(c)).length);
    if (counts.filter(Boolean).length < 2) continue;
    const most = counts.indexOf(Math.max(...counts)); // Latin first on a tie
    let at = word.index;
    for (const c of letters) {
      const script = SCRIPTS.findIndex(([, s]) => s.test(c));
      if (script >= 0 && script !== most) {
        found.push({ at, char: c, why: `, a ${SCRIPTS[script][0]} letter among ${SCRIPTS[most][0]} ones` });
      }
      at += c.length;
    }
  }
  return found;
}

/** The characters of ``value`` a reader could not see or tell from others, in order: {at, char,
 * why} (said after the code point). Free text (a description, code, an error message) keeps its whitespace; a name is read
 * character by character. */
function hiddenIn(value, isName) {
  const found = [];
  for (const m of value.matchAll(isName ? HIDDEN_IN_NAME : HIDDEN_IN_TEXT)) {
    const why = BIDI_CONTROLS.test(m[0]) ? ` ${BIDI_NAMES[m[0]]}` : ", invisible or shown as a space";
    found.push({ at: m.index, char: m[0], why });
  }
  if (!isName) return found;
  return [...found, ...lookalikes(value)].sort((a, b) => a.at - b.at);
}

function codePoint(char) {
  return `U+${char.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
}

function marker(char) {
  return `\u27e8${codePoint(char)}\u27e9`;
}

function asText(text) {
  return text === null || text === undefined ? "" : String(text);
}

/** A name with its hidden characters as markers, where only plain text goes: attributes, SVG
 * labels, options. ``isName`` false: free text, which keeps its whitespace. */
export function visible(text, isName = true) {
  const value = asText(text);
  let shown = "";
  let at = 0;
  for (const h of hiddenIn(value, isName)) {
    shown += value.slice(at, h.at) + marker(h.char);
    at = h.at + h.char.length;
  }
  return shown + value.slice(at);
}

function Marked({ value, isName }) {
  const parts = [];
  let at = 0;
  for (const h of hiddenIn(value, isName)) {
    if (h.at > at) parts.push(value.slice(at, h.at));
    // dir makes the marker an isolate of its own: it reads the same inside a right-to-left name.
    parts.push(
      <span key={h.at} class="bidi-control" dir="ltr" title={codePoint(h.char) + h.why}>
        {marker(h.char)}
      </span>,
    );
    at = h.at + h.char.length;
  }
  if (at < value.length) parts.push(value.slice(at));
  return <>{parts}</>;
}

/** ``text`` with each invisible character (a bidirectional control, a zero-width space) as a
 * marker that says which it is, for text that stands alone (code, JSON, an error message). */
export function Shown({ text }) {
  return <Marked value={asText(text)} isName={false} />;
}

// A producer may send a description or an error message of megabytes, in one word: laid out whole
// it pushes the rest of the page hundreds of thousands of pixels down.
const LONG_TEXT = 2000;

/** Free text from an event, its first LONG_TEXT characters until the reader asks for the rest. */
export function LongText({ text }) {
  const [whole, setWhole] = useState(false);
  const value = asText(text);
  if (whole || value.length <= LONG_TEXT) return <Shown text={value} />;
  // Not between the two halves of a character outside the Basic Multilingual Plane.
  const cut = /[\uD800-\uDBFF]/.test(value[LONG_TEXT - 1]) ? LONG_TEXT - 1 : LONG_TEXT;
  return (
    <>
      <Shown text={value.slice(0, cut)} />
      {"\u2026 "}
      <button type="button" class="link" onClick={() => setWhole(true)}>
        show all {value.length.toLocaleString("en")} characters
      </button>
    </>
  );
}

/** A name from an event (namespace, dataset, job, column, type, tag, owner, node id): isolated, so
 * that nothing in it reorders the text around it, with its hidden characters and lookalike letters
 * shown. */
export function Name({ text }) {
  return (
    <bdi class="name">
      <Marked value={asText(text)} isName />
    </bdi>
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
  return (
    <pre class="json">
      <Shown text={JSON.stringify(value, null, 2)} />
    </pre>
  );
}

export function Tags({ tags }) {
  if (!tags || !tags.length) return null;
  return (
    <span class="tags">
      {tags.map((t) => (
        <span class="tag" key={t.name} title={visible(t.description, false)}>
          <Name text={t.name} />
        </span>
      ))}
    </span>
  );
}
