// The lineage page: table or column lineage around a node, with direction, depth, an "as of" time
// that replays the graph at a past moment, expand and collapse, and live changes in place.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { gql, pageOf, subscribeToChanges } from "./api.js";
import { RunState } from "./node.jsx";
import { edgeKey, LineageCanvas } from "./graph.jsx";
import { ErrorBox, Link, Loading, Name, navigate, useAuthVersion, useRoute } from "./ui.jsx";

const MAX_NODES = 2000;
const LIVE_HIGHLIGHT_MS = 15000;

const TABLE_QUERY = `query($node: ID!, $depth: Int!, $direction: LineageDirection!, $asOf: DateTime, $max: Int, $owners: Boolean!) {
  lineage(nodeId: $node, depth: $depth, direction: $direction, asOf: $asOf, maxNodes: $max) {
    __typename
    ... on LineageGraph {
      truncated
      nodes {
        id type namespace name hops
        dataset @include(if: $owners) { owners }
        job { latestRun { state } owners @include(if: $owners) }
      }
      edges { origin destination manual }
    }
    ... on Problem { code message }
  }
}`;

const COLUMN_QUERY = `query($node: ID!, $depth: Int!, $direction: LineageDirection!, $asOf: DateTime, $max: Int) {
  columnLineage(nodeId: $node, depth: $depth, direction: $direction, asOf: $asOf, maxNodes: $max) {
    __typename
    ... on ColumnLineageGraph { truncated nodes { id namespace dataset field level type } edges { origin destination } }
    ... on Problem { code message }
  }
}`;

/** The owners of datasets, by "namespace\u0000name", asked 25 at a time (the alias limit is 30). */
async function datasetOwners(datasets) {
  const owners = new Map();
  for (let i = 0; i < datasets.length; i += 25) {
    const chunk = datasets.slice(i, i + 25);
    const params = chunk.map((_, k) => `$n${k}: String!, $m${k}: String!`).join(", ");
    const fields = chunk.map((_, k) => `d${k}: dataset(namespace: $n${k}, name: $m${k}) { owners }`).join(" ");
    const variables = {};
    chunk.forEach(([ns, name], k) => {
      variables[`n${k}`] = ns;
      variables[`m${k}`] = name;
    });
    const data = await gql(`query(${params}) { ${fields} }`, variables);
    chunk.forEach(([ns, name], k) => owners.set(`${ns}\u0000${name}`, data[`d${k}`] ? data[`d${k}`].owners : []));
  }
  return owners;
}

/**
 * The graph of one walk, in the shape the canvas draws; with ``owners``, each node also has the
 * owners of its dataset or job (a column: of its dataset).
 */
export async function fetchGraph({ node, level, depth, direction, asOf, owners = false }) {
  const variables = { node, depth, direction, asOf: asOf || null, max: MAX_NODES, owners };
  if (level === "column") {
    const { columnLineage: r } = await gql(COLUMN_QUERY, variables);
    if (r.__typename !== "ColumnLineageGraph") throw new Error(r.message);
    const byDataset = owners
      ? await datasetOwners([...new Map(r.nodes.map((n) => [`${n.namespace}\u0000${n.dataset}`, [n.namespace, n.dataset]])).values()])
      : null;
    return {
      truncated: r.truncated,
      nodes: r.nodes.map((n) => ({
        owners: byDataset ? byDataset.get(`${n.namespace}\u0000${n.dataset}`) || [] : undefined,
        id: n.id,
        type: "FIELD",
        namespace: n.namespace,
        name: n.dataset,
        field: n.field,
        hops: n.level,
        label: n.field,
        fieldType: n.type,
        sublabel: n.dataset,
      })),
      edges: r.edges.map((e) => ({ origin: e.origin, destination: e.destination })),
    };
  }
  const { lineage: r } = await gql(TABLE_QUERY, variables);
  if (r.__typename !== "LineageGraph") throw new Error(r.message);
  return {
    truncated: r.truncated,
    nodes: r.nodes.map((n) => ({
      owners: owners ? (n.dataset || n.job || { owners: [] }).owners : undefined,
      // A job's latest run state colours it: a failed one stands out in the graph.
      state: n.job && n.job.latestRun ? n.job.latestRun.state : null,
      id: n.id,
      type: n.type,
      namespace: n.namespace,
      name: n.name,
      hops: n.hops,
      label: n.name,
      sublabel: n.namespace,
    })),
    edges: r.edges,
  };
}

/** Merge another walk's nodes and edges into ``graph``. */
function merge(graph, extra) {
  const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
  for (const n of extra.nodes) if (!nodes.has(n.id)) nodes.set(n.id, n);
  const edges = new Map(graph.edges.map((e) => [edgeKey(e), e]));
  for (const e of extra.edges) edges.set(edgeKey(e), e);
  return { ...graph, nodes: [...nodes.values()], edges: [...edges.values()] };
}

/**
 * The walk from the page's root, with the neighbours of each node expanded since (a node found
 * there counts its hops from the root through the expanded node).
 */
async function walkWithExpansions({ node, level, depth, direction, asOf }, expansions) {
  let graph = await fetchGraph({ node, level, depth, direction, asOf });
  for (const id of expansions) {
    const around = graph.nodes.find((n) => n.id === id);
    if (!around) continue; // no longer reached (replaying a moment before it existed)
    const extra = await fetchGraph({ node: id, level, depth: 1, direction: "BOTH", asOf });
    graph = merge(graph, { ...extra, nodes: extra.nodes.map((n) => ({ ...n, hops: n.hops + around.hops })) });
  }
  return graph;
}

/** What is shown: every node reached from the root without going past a collapsed node. */
function visiblePart(graph, root, collapsed) {
  const around = new Map();
  for (const e of graph.edges) {
    if (!around.has(e.origin)) around.set(e.origin, []);
    if (!around.has(e.destination)) around.set(e.destination, []);
    around.get(e.origin).push(e.destination);
    around.get(e.destination).push(e.origin);
  }
  const seen = new Set([root]);
  const queue = [root];
  const hiddenBehind = new Map();
  while (queue.length) {
    const id = queue.shift();
    if (id !== root && collapsed.has(id)) continue;
    for (const next of around.get(id) || []) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  // Count, for each collapsed node, the neighbours it hides.
  for (const id of collapsed) {
    if (!seen.has(id)) continue;
    hiddenBehind.set(id, (around.get(id) || []).filter((n) => !seen.has(n)).length);
  }
  // Nodes no edge reaches (a root without lineage) are still shown.
  const nodes = graph.nodes
    .filter((n) => seen.has(n.id))
    .map((n) => (hiddenBehind.get(n.id) ? { ...n, hidden: hiddenBehind.get(n.id) } : n));
  const edges = graph.edges.filter((e) => seen.has(e.origin) && seen.has(e.destination));
  return { nodes, edges };
}

/** Node ids and edge keys in ``after`` that ``before`` lacked. */
function added(before, after) {
  const had = new Set([...before.nodes.map((n) => n.id), ...before.edges.map(edgeKey)]);
  const fresh = new Set();
  for (const n of after.nodes) if (!had.has(n.id)) fresh.add(n.id);
  for (const e of after.edges) if (!had.has(edgeKey(e))) fresh.add(edgeKey(e));
  return fresh;
}

/** What a live change did: nodes and edges added or whose job's run state changed (to highlight),
 * and whether anything was removed (a job version dropping an input). */
function liveDiff(before, after) {
  const fresh = added(before, after);
  const state = new Map(before.nodes.map((n) => [n.id, n.state]));
  for (const n of after.nodes) if (state.has(n.id) && state.get(n.id) !== n.state) fresh.add(n.id);
  const now = new Set([...after.nodes.map((n) => n.id), ...after.edges.map(edgeKey)]);
  const removed = before.nodes.some((n) => !now.has(n.id)) || before.edges.some((e) => !now.has(edgeKey(e)));
  return { fresh, changed: fresh.size > 0 || removed };
}

function toLocalInput(date) {
  const pad = (v) => String(v).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

function AsOf({ node, asOf, onChange }) {
  // The slider runs from the root's creation (before it, it had no lineage) to now.
  const [start, setStart] = useState(null);
  const version = useAuthVersion();
  useEffect(() => {
    // The root as the walk resolves it (a namespace may hold colons): the node at 0 hops.
    const query = `query($id: ID!) {
      lineage(nodeId: $id, depth: 1, direction: UPSTREAM, maxNodes: 50) {
        ... on LineageGraph { nodes { hops job { createdAt } dataset { createdAt } } }
      }
    }`;
    const rest = node.split(":");
    const id = rest[0] === "datasetField" ? "dataset:" + rest.slice(1, -1).join(":") : node;
    gql(query, { id })
      .then((d) => {
        const root = (d.lineage.nodes || []).find((n) => n.hops === 0);
        const created = root && (root.job || root.dataset);
        setStart(created ? new Date(created.createdAt).getTime() : null);
      })
      .catch(() => setStart(null));
  }, [node, version]);
  const now = Date.now();
  const min = Math.floor((start ?? now - 30 * 86400000) / 1000) - 60;
  const max = Math.ceil(now / 1000);
  const current = asOf ? Math.floor(new Date(asOf).getTime() / 1000) : max;
  const pick = (seconds) => onChange(seconds >= max ? null : new Date(seconds * 1000).toISOString());
  return (
    <fieldset class="asof">
      <legend>As of</legend>
      <input
        type="range"
        aria-label="As of time"
        min={min}
        max={max}
        step={1}
        value={current}
        onChange={(e) => pick(Number(e.currentTarget.value))}
      />
      <input
        type="datetime-local"
        step={1}
        aria-label="As of date and time (local)"
        value={toLocalInput(new Date(current * 1000))}
        onChange={(e) => {
          const t = new Date(e.currentTarget.value).getTime();
          if (!Number.isNaN(t)) pick(Math.floor(t / 1000));
        }}
      />
      <button type="button" onClick={() => onChange(null)} disabled={!asOf}>
        Now
      </button>
      <span class="asof-state" data-testid="asof-state">
        {asOf ? `replaying ${new Date(asOf).toLocaleString()}` : "current graph"}
      </span>
    </fieldset>
  );
}

function LiveStatus({ status }) {
  const text = {
    off: "live updates off while replaying the past",
    connecting: "connecting\u2026",
    live: "live",
    retrying: "connection lost, retrying\u2026",
    refused: "live updates refused (API key?)",
  }[status];
  return (
    <span class={`live live-${status}`} role="status" data-testid="live-status">
      {text}
    </span>
  );
}

function SidePanel({ node, graph, collapsed, onExpand, onToggle, params }) {
  if (!node) {
    return (
      <aside class="side">
        <p class="muted">
          Select a node (click, or Tab then Enter) to see it here. Double-click or press <kbd>e</kbd> on a node
          to expand its neighbours.
        </p>
      </aside>
    );
  }
  const ins = graph.edges.filter((e) => e.destination === node.id).length;
  const outs = graph.edges.filter((e) => e.origin === node.id).length;
  const datasetNode = node.type === "FIELD" ? null : node.type === "DATASET" ? node.id : null;
  return (
    <aside class="side" aria-label="Selected node">
      <h3>
        <Name text={node.label} />
        {node.fieldType ? (
          <>
            {" : "}
            <Name text={node.fieldType} />
          </>
        ) : null}
      </h3>
      <p class="muted">
        <Name text={node.sublabel} />
      </p>
      <p>
        {node.type.toLowerCase()}, {node.hops} hop(s) from the root; {ins} in, {outs} out
      </p>
      {node.state ? (
        <p>
          Latest run: <RunState state={node.state} />
        </p>
      ) : null}
      <ul class="actions">
        {node.type !== "FIELD" || node.name ? (
          <li>
            <Link href={pageOf({ ...node, field: null, type: node.type === "FIELD" ? "DATASET" : node.type })}>
              Open its page
            </Link>
          </li>
        ) : null}
        <li>
          <Link href={`/lineage?${new URLSearchParams({ node: node.id, ...params }).toString()}`}>Center the graph on it</Link>
        </li>
        <li>
          <button type="button" onClick={() => onExpand(node.id)}>Expand neighbours</button>
        </li>
        <li>
          <button type="button" onClick={() => onToggle(node.id)}>
            {collapsed.has(node.id) ? "Show what it hides" : "Collapse beyond it"}
          </button>
        </li>
        {datasetNode || node.type === "FIELD" ? (
          <li>
            <Link href={`/impact?${new URLSearchParams({ node: node.id }).toString()}`}>Impact of a change</Link>
          </li>
        ) : null}
        {datasetNode ? (
          <li>
            <Link href={`/root-cause?${new URLSearchParams({ node: node.id }).toString()}`}>Root cause</Link>
          </li>
        ) : null}
      </ul>
    </aside>
  );
}

export function LineagePage() {
  const { params } = useRoute();
  const node = params.get("node") || "";
  const level = params.get("level") === "column" || node.startsWith("datasetField:") ? "column" : "table";
  const direction = params.get("direction") || "BOTH";
  const depth = Number(params.get("depth") || 3);
  const asOf = params.get("asOf") || null;
  const version = useAuthVersion();
  const [graph, setGraph] = useState(null);
  const [error, setError] = useState(null);
  const [selected, setSelected] = useState(null);
  const [collapsed, setCollapsed] = useState(new Set());
  const [fresh, setFresh] = useState(new Set());
  const [status, setStatus] = useState("off");
  const graphRef = useRef(null);
  graphRef.current = graph;
  const freshTimer = useRef(null);
  useEffect(() => () => clearTimeout(freshTimer.current), []);
  // Nodes expanded on this walk, expanded again when the graph is fetched anew (as of another
  // moment, or after a live change).
  const expansions = useRef({ key: null, ids: [] });
  const walkKey = `${node}|${level}|${depth}|${direction}`;
  if (expansions.current.key !== walkKey) expansions.current = { key: walkKey, ids: [] };

  const state = { node, level, direction, depth: String(depth), ...(asOf ? { asOf } : {}) };
  const go = (change) => {
    const next = { ...state, ...change };
    for (const k of Object.keys(next)) if (next[k] === null || next[k] === undefined) delete next[k];
    if (next.level === "table") delete next.level;
    navigate(`/lineage?${new URLSearchParams(next).toString()}`, { replace: "asOf" in change });
  };

  useEffect(() => {
    if (!node) return;
    let current = true;
    setError(null);
    walkWithExpansions({ node, level, depth, direction, asOf }, expansions.current.ids)
      .then((g) => {
        if (!current) return;
        const before = graphRef.current;
        // Replaying another moment highlights what that moment has and the shown one had not.
        setFresh(before && before.node === node ? added(before, g) : new Set());
        setGraph({ ...g, node });
      })
      .catch((e) => current && setError(e));
    return () => {
      current = false;
    };
  }, [node, level, depth, direction, asOf, version]);

  // Live: while showing the current graph, refetch when a change touches a node on screen, and
  // highlight what it added.
  const ids = useMemo(() => (graph ? graph.nodes.map((n) => n.id) : []), [graph]);
  const idKey = ids.length <= 1000 ? ids.slice().sort().join("|") : "many";
  useEffect(() => {
    if (asOf || !graph) {
      setStatus("off");
      return;
    }
    let timer = null;
    const refresh = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        walkWithExpansions({ node, level, depth, direction, asOf: null }, expansions.current.ids)
          .then((g) => {
            const { fresh: news, changed } = liveDiff(graphRef.current, g);
            if (!changed) return;
            setFresh(news);
            setGraph({ ...g, node });
            // The highlight of each change lasts its full time, whatever came before it.
            clearTimeout(freshTimer.current);
            freshTimer.current = setTimeout(() => setFresh(new Set()), LIVE_HIGHLIGHT_MS);
          })
          .catch((e) => setError(e));
      }, 200);
    };
    // Column lineage changes come with their dataset's changes: follow the datasets on screen.
    const watched = level === "column" ? [...new Set(graph.nodes.map((n) => `dataset:${n.namespace}:${n.name}`))] : ids;
    const filter = watched.length <= 1000 ? { nodeIds: watched } : null;
    const stop = subscribeToChanges(filter, refresh, setStatus);
    return () => {
      clearTimeout(timer);
      stop();
    };
  }, [idKey, asOf, node, level, depth, direction, version, !graph]);

  const expand = (id) => {
    const around = graphRef.current.nodes.find((n) => n.id === id);
    fetchGraph({ node: id, level, depth: 1, direction: "BOTH", asOf })
      .then((g) => {
        const hops = around ? around.hops : 0;
        const extra = { ...g, nodes: g.nodes.map((n) => ({ ...n, hops: n.hops + hops })) };
        const before = graphRef.current;
        const merged = { ...merge(before, extra), node };
        setFresh(added(before, merged));
        setGraph(merged);
        if (!expansions.current.ids.includes(id)) expansions.current.ids.push(id);
        setCollapsed((c) => {
          const next = new Set(c);
          next.delete(id);
          return next;
        });
      })
      .catch((e) => setError(e));
  };
  const toggle = (id) =>
    setCollapsed((c) => {
      const next = new Set(c);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  const shown = useMemo(() => {
    if (!graph) return null;
    const root = graph.nodes.find((n) => n.hops === 0);
    return visiblePart(graph, root ? root.id : node, collapsed);
  }, [graph, collapsed]);

  if (!node) {
    return (
      <section class="page">
        <h1>Lineage</h1>
        <p class="empty">Pick a dataset, job or column from the search to see its lineage.</p>
        <Link href="/">Search</Link>
      </section>
    );
  }
  const rootNode = graph && graph.nodes.find((n) => n.hops === 0);
  const rootId = rootNode ? rootNode.id : node;
  const selectedNode = graph && graph.nodes.find((n) => n.id === selected);
  return (
    <section class="page lineage-page">
      <header class="page-head">
        <h1>
          Lineage of{" "}
          <span class="mono">
            <Name text={node} />
          </span>
        </h1>
        <form class="controls" onSubmit={(e) => e.preventDefault()}>
          <label>
            Direction{" "}
            <select value={direction} onChange={(e) => go({ direction: e.currentTarget.value })}>
              <option value="BOTH">both</option>
              <option value="UPSTREAM">upstream</option>
              <option value="DOWNSTREAM">downstream</option>
            </select>
          </label>
          <label>
            Depth{" "}
            <input
              type="number"
              min={1}
              max={100}
              value={depth}
              onChange={(e) => go({ depth: String(Math.max(1, Number(e.currentTarget.value) || 1)) })}
            />
          </label>
          <label>
            Level{" "}
            <select
              value={level}
              disabled={node.startsWith("datasetField:") || node.startsWith("job:")}
              onChange={(e) => go({ level: e.currentTarget.value })}
            >
              <option value="table">tables</option>
              <option value="column">columns</option>
            </select>
          </label>
          <LiveStatus status={status} />
        </form>
        <AsOf node={node} asOf={asOf} onChange={(when) => go({ asOf: when })} />
      </header>
      {error ? <ErrorBox error={error} /> : null}
      {!graph && !error ? <Loading what="lineage" /> : null}
      {graph && graph.truncated ? (
        <p class="warning">The walk stopped at {MAX_NODES} nodes: lower the depth or pick one direction.</p>
      ) : null}
      {graph ? (
        <div class="lineage-body">
          {shown.nodes.length <= 1 && !shown.edges.length ? (
            <p class="empty" data-testid="no-lineage">
              {asOf ? "Nothing was connected to it at that moment." : "No lineage: nothing reads or writes it yet."}
            </p>
          ) : null}
          <LineageCanvas
            nodes={shown.nodes}
            edges={shown.edges}
            root={rootId}
            selected={selected}
            fresh={fresh}
            onSelect={setSelected}
            onExpand={expand}
          />
          <SidePanel
            node={selectedNode}
            graph={graph}
            collapsed={collapsed}
            onExpand={expand}
            onToggle={toggle}
            params={{ ...(level === "column" ? { level } : {}), direction, depth: String(depth) }}
          />
        </div>
      ) : null}
    </section>
  );
}
