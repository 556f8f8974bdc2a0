// Headwater's GraphQL API, the console's only way to the server: queries over HTTP POST /graphql,
// lineage changes over graphql-transport-ws on the same path. The API key, when the server asks for
// one, is kept in this browser (localStorage) and sent as `Authorization: Bearer`, and in the
// websocket's connection_init payload since browsers cannot set headers on websockets.

const KEY_STORAGE = "headwater.apiKey";
const ENDPOINT = "/graphql";

export function apiKey() {
  return window.localStorage.getItem(KEY_STORAGE) || "";
}

export function setApiKey(key) {
  if (key) window.localStorage.setItem(KEY_STORAGE, key);
  else window.localStorage.removeItem(KEY_STORAGE);
}

/** The server refused the key (401: none or unknown; 403: without the read scope). */
export class KeyNeeded extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

// The console's prompt for a key; every refusal of a query opens it, whichever page asked.
let keyNeededListener = () => {};

export function onKeyNeeded(listener) {
  keyNeededListener = listener;
}

export async function gql(query, variables = {}) {
  const headers = { "content-type": "application/json", accept: "application/json" };
  const key = apiKey();
  if (key) headers.authorization = `Bearer ${key}`;
  let response;
  try {
    response = await fetch(ENDPOINT, {
      method: "POST",
      headers,
      body: JSON.stringify({ query, variables }),
    });
  } catch (error) {
    throw new Error(`Headwater did not answer (${error.message}). Is the server running?`);
  }
  if (response.status === 401 || response.status === 403) {
    let detail = response.statusText;
    try {
      detail = (await response.json()).detail || detail;
    } catch {
      // a proxy's non-JSON page: the status text says enough
    }
    const error = new KeyNeeded(detail, response.status);
    keyNeededListener(error);
    throw error;
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new Error(`Headwater answered ${response.status} ${response.statusText}, not JSON.`);
  }
  if (body.errors && body.errors.length) {
    throw new Error(body.errors.map((e) => e.message).join("; "));
  }
  if (!response.ok) throw new Error(`Headwater answered ${response.status} ${response.statusText}.`);
  return body.data;
}

/**
 * Subscribe to lineageChanges over graphql-transport-ws; reconnects after a drop.
 * onChange(change) per change, onStatus("connecting" | "live" | "retrying" | "refused").
 * Returns a function that ends the subscription.
 */
export function subscribeToChanges(filter, onChange, onStatus) {
  const query = `subscription($filter: LineageChangeFilter) {
    lineageChanges(filter: $filter) { kind nodeId nodeType namespace at details }
  }`;
  let socket = null;
  let stopped = false;
  let retry = null;

  const connect = () => {
    onStatus("connecting");
    const url = new URL(ENDPOINT, window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(url, "graphql-transport-ws");
    socket.onopen = () => {
      const key = apiKey();
      socket.send(
        JSON.stringify({
          type: "connection_init",
          payload: key ? { Authorization: `Bearer ${key}` } : {},
        }),
      );
    };
    socket.onmessage = (message) => {
      const msg = JSON.parse(message.data);
      if (msg.type === "connection_ack") {
        socket.send(
          JSON.stringify({ id: "changes", type: "subscribe", payload: { query, variables: { filter } } }),
        );
        onStatus("live");
      } else if (msg.type === "next" && msg.payload.data) {
        onChange(msg.payload.data.lineageChanges);
      } else if (msg.type === "ping") {
        socket.send(JSON.stringify({ type: "pong" }));
      } else if (msg.type === "error") {
        onStatus("refused");
      }
    };
    socket.onclose = (event) => {
      if (stopped) return;
      // 4401/4403: the key was refused; retrying with the same key cannot help.
      if (event.code === 4401 || event.code === 4403) {
        onStatus("refused");
        return;
      }
      onStatus("retrying");
      retry = setTimeout(connect, 2000);
    };
  };
  connect();
  return () => {
    stopped = true;
    clearTimeout(retry);
    if (socket && socket.readyState <= 1) socket.close(1000, "done");
  };
}

// -- links ---------------------------------------------------------------------------------------

/** The console's URL of a dataset, job or column (a column opens its column lineage). */
export function pageOf(node) {
  const q = (params) => "?" + new URLSearchParams(params).toString();
  if (node.field) {
    return "/lineage" + q({ node: node.id, level: "column" });
  }
  const type = (node.type || "").toUpperCase();
  if (type === "JOB") return "/jobs" + q({ ns: node.namespace, name: node.name });
  return "/datasets" + q({ ns: node.namespace, name: node.name });
}
