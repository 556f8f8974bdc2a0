// Impact of a change: everything downstream of a dataset or column, grouped by distance or by
// namespace, each with the path that explains why it is there, exportable as CSV. And root cause:
// upstream of a dataset, the runs that failed and the jobs and schemas that changed since a time.
import { useEffect, useMemo, useState } from "preact/hooks";
import { pageOf } from "./api.js";
import { fetchGraph } from "./lineage.jsx";
import { Empty, ErrorBox, Json, Link, Loading, LongText, Name, navigate, useAuthVersion, useQuery, useRoute, visible, when } from "./ui.jsx";

/** One shortest path from the root to each node, following edges forward (breadth first). */
function pathsFrom(root, edges) {
  const out = new Map();
  for (const e of edges) {
    if (!out.has(e.origin)) out.set(e.origin, []);
    out.get(e.origin).push(e.destination);
  }
  const previous = new Map([[root, null]]);
  const queue = [root];
  while (queue.length) {
    const id = queue.shift();
    for (const next of out.get(id) || []) {
      if (!previous.has(next)) {
        previous.set(next, id);
        queue.push(next);
      }
    }
  }
  const paths = new Map();
  for (const id of previous.keys()) {
    const path = [];
    for (let at = id; at !== null; at = previous.get(at)) path.unshift(at);
    paths.set(id, path);
  }
  return paths;
}

function csvCell(value) {
  let text = value === null || value === undefined ? "" : String(value);
  // A spreadsheet runs a cell that starts like a formula (=HYPERLINK(…), =cmd|…): names and owners
  // come from whoever sends events, so such a cell is kept as text, after a quote.
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function impactCsv(rows) {
  const header = ["distance", "type", "namespace", "name", "field", "owners", "id", "path"];
  const lines = [header.join(",")];
  for (const r of rows) {
    const owners = (r.owners || []).join("; ");
    lines.push([r.hops, r.type, r.namespace, r.name, r.field || "", owners, r.id, r.path.join(" > ")].map(csvCell).join(","));
  }
  return lines.join("\r\n") + "\r\n";
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function label(node) {
  return node ? (node.field ? `${node.name}.${node.field}` : node.name) : "?";
}

/** A node's name as shown: its dataset's and its field's each isolated. */
function NodeName({ node }) {
  if (!node) return "?";
  return node.field ? (
    <>
      <Name text={node.name} />.<Name text={node.field} />
    </>
  ) : (
    <Name text={node.name} />
  );
}

function useGraph(node, direction, depth, owners = false) {
  const version = useAuthVersion();
  const [state, setState] = useState({ graph: null, error: null });
  useEffect(() => {
    if (!node) return;
    let current = true;
    setState({ graph: null, error: null });
    const level = node.startsWith("datasetField:") ? "column" : "table";
    fetchGraph({ node, level, depth, direction, asOf: null, owners })
      .then((graph) => current && setState({ graph, error: null }))
      .catch((error) => current && setState({ graph: null, error }));
    return () => {
      current = false;
    };
  }, [node, direction, depth, version]);
  return state;
}

export function ImpactPage() {
  const { params } = useRoute();
  const node = params.get("node") || "";
  const depth = Number(params.get("depth") || 10);
  const by = ["namespace", "owner"].includes(params.get("by")) ? params.get("by") : "distance";
  const { graph, error } = useGraph(node, "DOWNSTREAM", depth, true);
  const [open, setOpen] = useState(new Set());

  const rows = useMemo(() => {
    if (!graph) return [];
    const root = graph.nodes.find((n) => n.hops === 0);
    const paths = pathsFrom(root ? root.id : node, graph.edges);
    return graph.nodes
      .filter((n) => n.hops > 0)
      .map((n) => ({ ...n, path: paths.get(n.id) || [n.id] }))
      .sort((a, b) => a.hops - b.hops || a.namespace.localeCompare(b.namespace) || label(a).localeCompare(label(b)));
  }, [graph]);
  const byId = useMemo(() => new Map(graph ? graph.nodes.map((n) => [n.id, n]) : []), [graph]);

  const set = (changes) => navigate(`/impact?${new URLSearchParams({ node, depth: String(depth), by, ...changes }).toString()}`, { replace: true });

  if (!node) {
    return (
      <section class="page">
        <h1>Impact of a change</h1>
        <Empty>Open a dataset or a column and choose “Impact of a change”.</Empty>
        <Link href="/">Search</Link>
      </section>
    );
  }
  // By owner, a node with several owners is listed under each of them.
  const groups = new Map();
  for (const r of rows) {
    const keys =
      by === "distance" ? [`${r.hops} hop(s) away`] : by === "namespace" ? [r.namespace] : r.owners.length ? r.owners : ["no owner named"];
    for (const key of keys) {
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(r);
    }
  }
  const ordered = by === "owner" ? [...groups.entries()].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0])) : [...groups.entries()];
  const counts = rows.reduce((c, r) => ({ ...c, [r.type]: (c[r.type] || 0) + 1 }), {});
  return (
    <section class="page impact-page">
      <header class="page-head">
        <h1>
          Impact of changing{" "}
          <span class="mono">
            <Name text={node} />
          </span>
        </h1>
        <form class="controls" onSubmit={(e) => e.preventDefault()}>
          <label>
            Depth{" "}
            <input type="number" min={1} max={100} value={depth} onChange={(e) => set({ depth: String(Math.max(1, Number(e.currentTarget.value) || 1)) })} />
          </label>
          <label>
            Group by{" "}
            <select value={by} onChange={(e) => set({ by: e.currentTarget.value })}>
              <option value="distance">distance</option>
              <option value="namespace">namespace</option>
              <option value="owner">owner</option>
            </select>
          </label>
          <button type="button" disabled={!rows.length} onClick={() => download("impact.csv", impactCsv(rows))}>
            Download CSV
          </button>
          <Link href={`/lineage?${new URLSearchParams({ node, direction: "DOWNSTREAM", depth: String(depth) }).toString()}`}>See it as a graph</Link>
        </form>
      </header>
      {error ? <ErrorBox error={error} /> : null}
      {!graph && !error ? <Loading what="what is downstream" /> : null}
      {graph ? (
        rows.length ? (
          <>
            <p data-testid="impact-summary">
              {rows.length} downstream:{" "}
              {Object.entries(counts)
                .map(([type, n]) => `${n} ${type === "FIELD" ? "column" : type.toLowerCase()}(s)`)
                .join(", ")}
              {graph.truncated ? " (cut at the node cap: lower the depth)" : ""}
            </p>
            {ordered.map(([group, members]) => (
              <section key={group} class="group">
                <h2>
                  <Name text={group} /> <span class="muted">({members.length})</span>
                </h2>
                <table class="grid">
                  <thead>
                    <tr><th>type</th><th>name</th><th>namespace</th><th>owners</th><th>distance</th><th>why is this here</th></tr>
                  </thead>
                  <tbody>
                    {members.map((r) => (
                      <tr key={r.id}>
                        <td>{r.type === "FIELD" ? "column" : r.type.toLowerCase()}</td>
                        <td>
                          <Link href={pageOf(r)}>
                            <NodeName node={r} />
                          </Link>
                        </td>
                        <td class="muted">
                          <Name text={r.namespace} />
                        </td>
                        <td>
                          {r.owners.map((o, i) => (
                            <span key={o}>
                              {i ? ", " : ""}
                              <Name text={o} />
                            </span>
                          ))}
                        </td>
                        <td>{r.hops}</td>
                        <td>
                          <button
                            type="button"
                            aria-expanded={open.has(r.id)}
                            onClick={() => setOpen((o) => { const n = new Set(o); n.has(r.id) ? n.delete(r.id) : n.add(r.id); return n; })}
                          >
                            why?
                          </button>
                          {open.has(r.id) ? (
                            <ol class="path" aria-label={`Path to ${visible(label(r))}`}>
                              {r.path.map((id) => (
                                <li key={id}>
                                  <NodeName node={byId.get(id)} />
                                </li>
                              ))}
                            </ol>
                          ) : null}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </section>
            ))}
          </>
        ) : (
          <Empty>Nothing downstream: changing it breaks nothing Headwater knows of.</Empty>
        )
      ) : null}
    </section>
  );
}

const SUSPECTS = `query($ids: [ID!]!, $since: DateTime!) {
  suspectChanges(nodeIds: $ids, since: $since, first: 200) { totalCount changes { kind nodeId nodeType namespace at details } }
}`;

const SINCE = [
  ["1 day", 86400e3],
  ["7 days", 7 * 86400e3],
  ["30 days", 30 * 86400e3],
  ["1 year", 365 * 86400e3],
  ["ever", null],
];

const RUN = `query($id: ID!) { run(id: $id) { errorMessage } }`;

function RunError({ runId }) {
  const { data } = useQuery(RUN, { id: runId });
  const message = data && data.run && data.run.errorMessage;
  return message ? (
    <p class="error-text">
      <LongText text={message} />
    </p>
  ) : null;
}

function short(id) {
  return id.split(":").slice(2).join(":");
}

/** What a suspect change was, in words, and what it says about itself. */
function Finding({ change }) {
  const d = change.details || {};
  if (change.kind === "RUN_STATE_CHANGED") {
    return (
      <>
        <strong>run {d.state === "ABORT" ? "aborted" : "failed"}</strong>
        {d.runId ? <RunError runId={d.runId} /> : null}
      </>
    );
  }
  if (change.kind === "JOB_VERSION_CHANGED") {
    const edges = (list, sign) =>
      (list || []).map((e) => (
        <li key={sign + e.origin + e.destination} class={sign === "+" ? "diff-add" : "diff-remove"}>
          {sign} <Name text={short(e.origin)} /> → <Name text={short(e.destination)} />
        </li>
      ));
    return (
      <>
        <strong>new job version</strong>
        <ul class="diff">{edges(d.addedEdges, "+")}{edges(d.removedEdges, "−")}</ul>
      </>
    );
  }
  if (change.kind === "SCHEMA_CHANGED") {
    const fields = (list, sign, cls) =>
      (list || []).map((f) => (
        <li key={sign + f.name} class={cls}>
          {sign} <Name text={f.name} />
          {f.type ? (
            <>
              {" : "}
              <Name text={f.type} />
            </>
          ) : null}
        </li>
      ));
    return (
      <>
        <strong>schema changed</strong>
        <ul class="diff">
          {fields(d.added, "+", "diff-add")}
          {fields(d.removed, "−", "diff-remove")}
          {fields(d.retyped, "~", "diff-change")}
        </ul>
      </>
    );
  }
  return <strong>{change.kind.toLowerCase()}</strong>;
}

export function RootCausePage() {
  const { params } = useRoute();
  const node = params.get("node") || "";
  const depth = Number(params.get("depth") || 10);
  // A week ago by default, fixed when the page opens (the query's variables must not move).
  const [weekAgo] = useState(() => new Date(Date.now() - 7 * 86400e3).toISOString());
  const since = params.get("since") || weekAgo;
  const { graph, error } = useGraph(node, "UPSTREAM", depth);
  const ids = graph ? graph.nodes.map((n) => n.id) : [];
  const suspects = useQuery(SUSPECTS, { ids, since }, { skip: !graph });
  const hops = new Map(graph ? graph.nodes.map((n) => [n.id, n]) : []);
  const set = (changes) => navigate(`/root-cause?${new URLSearchParams({ node, depth: String(depth), since, ...changes }).toString()}`, { replace: true });

  if (!node) {
    return (
      <section class="page">
        <h1>Root cause</h1>
        <Empty>Open a dataset and choose “Root cause”.</Empty>
      </section>
    );
  }
  const changes = suspects.data ? suspects.data.suspectChanges.changes : [];
  return (
    <section class="page rootcause-page">
      <header class="page-head">
        <h1>
          What changed upstream of{" "}
          <span class="mono">
            <Name text={node} />
          </span>
        </h1>
        <form class="controls" onSubmit={(e) => e.preventDefault()}>
          <span>Since</span>
          {SINCE.map(([text, ms]) => (
            <button type="button" key={text} onClick={() => set({ since: new Date(ms === null ? 0 : Date.now() - ms).toISOString() })}>
              {text}
            </button>
          ))}
          <span class="muted">{when(since)}</span>
          <Link href={`/lineage?${new URLSearchParams({ node, direction: "UPSTREAM", depth: String(depth) }).toString()}`}>See the upstream graph</Link>
        </form>
      </header>
      {error ? <ErrorBox error={error} /> : null}
      {suspects.error ? <ErrorBox error={suspects.error} /> : null}
      {!error && !suspects.error && (!graph || suspects.loading) ? <Loading what="upstream changes" /> : null}
      {graph && suspects.data ? (
        changes.length ? (
          <>
            <p>
              {suspects.data.suspectChanges.totalCount} suspect change(s) among {ids.length} upstream node(s), newest first.
            </p>
            <table class="grid" aria-label="Suspect changes">
              <thead>
                <tr><th>when</th><th>what</th><th>where</th><th>distance</th><th>change</th></tr>
              </thead>
              <tbody>
                {changes.map((c, i) => {
                  const n = hops.get(c.nodeId);
                  return (
                    <tr key={i} class={`finding finding-${c.kind.toLowerCase()}`}>
                      <td>{when(c.at)}</td>
                      <td><Finding change={c} /></td>
                      <td>
                        {n ? (
                          <Link href={pageOf(n)}>
                            <Name text={n.name} />
                          </Link>
                        ) : (
                          <Name text={c.nodeId} />
                        )}
                      </td>
                      <td>{n ? n.hops : ""}</td>
                      <td><details><summary>as recorded</summary><Json value={c.details} /></details></td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </>
        ) : (
          <Empty>No failed run, new job version or schema change upstream since {when(since)}.</Empty>
        )
      ) : null}
    </section>
  );
}

