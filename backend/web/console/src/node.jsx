// What the dataset and job pages do alike: look the node up from the URL, show the head of the
// page, links to either, what changed from one version to the next, runs and their states, facets.
import { Empty, ErrorBox, Json, Link, Loading, LongText, Name, Tags, duration, useQuery, useRoute, when } from "./ui.jsx";

/** The page of the ``kind`` ("dataset" or "job") named by ?ns=&name=: ``query`` asks for it, and
 * ``Page`` shows it once loaded (as its ``node``); until then, what is missing, loading or wrong. */
export function NodePage({ kind, query, Page }) {
  const { params } = useRoute();
  const ns = params.get("ns") || "";
  const name = params.get("name") || "";
  const { data, error, loading } = useQuery(query, { ns, name }, { skip: !ns || !name });
  if (!ns || !name) return <Empty>A {kind} page needs ?ns=NAMESPACE&amp;name=NAME.</Empty>;
  if (error) return <ErrorBox error={error} />;
  if (loading || !data) return <Loading what={`the ${kind}`} />;
  const node = data[kind];
  if (!node) {
    return (
      <Empty>
        No {kind} <Name text={name} /> in <Name text={ns} />.
      </Empty>
    );
  }
  return <Page node={node} />;
}

export function datasetLink(d) {
  return `/datasets?ns=${encodeURIComponent(d.namespace)}&name=${encodeURIComponent(d.name)}`;
}

export function jobLink(j) {
  return `/jobs?ns=${encodeURIComponent(j.namespace)}&name=${encodeURIComponent(j.name)}`;
}

/** A dataset's or a job's name, namespace, tags and description, the pages about it (``links``),
 * when it was created and last ``changed`` (what: "updated", "last written"; when: ``changedAt``),
 * and its heat. */
export function NodeHead({ kind, label = kind, node, links, changed, changedAt }) {
  return (
    <header class="page-head">
      <p class={`kind kind-${kind}`}>{label}</p>
      <h1>
        <Name text={node.name} />
      </h1>
      <p class="muted">
        <Name text={node.namespace} /> <Tags tags={node.tags} />
      </p>
      {node.description ? (
        <p>
          <LongText text={node.description} />
        </p>
      ) : null}
      <nav class="page-actions" aria-label={`About this ${kind}`}>
        {links}
      </nav>
      <p class="muted">
        Created {when(node.createdAt)}, {changed} {when(changedAt)}
        {node.heat === null ? "" : `, heat ${node.heat.toFixed(2)}`}
      </p>
    </header>
  );
}

/** What changed from the version before (``changes``: {sign, key, text} each, the text what is
 * shown, null for the first version); ``same``, if given, says what no change means. */
export function VersionChanges({ changes, same }) {
  if (changes === null) return <span class="muted">first version</span>;
  if (!changes.length && same) return <span class="muted">{same}</span>;
  return (
    <ul class="diff">
      {changes.map((c) => <li key={c.key} class={`diff-${c.sign === "+" ? "add" : c.sign === "~" ? "change" : "remove"}`}>{c.sign} {c.text}</li>)}
    </ul>
  );
}

export function RunState({ state }) {
  return <span class={`state state-${(state || "none").toLowerCase()}`}>{state || "unknown"}</span>;
}

export function RunsTable({ runs, showJob }) {
  if (!runs.length) return <Empty>No runs.</Empty>;
  return (
    <table class="grid" aria-label="Runs">
      <thead>
        <tr>
          {showJob ? <th>job</th> : null}
          <th>state</th><th>started</th><th>ended</th><th>duration</th><th>error</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.id} title={`run ${r.id}`}>
            {showJob ? (
              <td>
                <Link href={jobLink(r.job)}>
                  <Name text={r.job.name} />
                </Link>
              </td>
            ) : null}
            <td><RunState state={r.state} /></td>
            <td>{when(r.startedAt)}</td>
            <td>{when(r.endedAt)}</td>
            <td>{duration(r.durationMs)}</td>
            <td class="error-text">
              <LongText text={r.errorMessage} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The facets section: each facet's JSON, folded under its name. */
export function Facets({ facets }) {
  return (
    <>
      <h2>Facets</h2>
      {Object.keys(facets).length ? (
        Object.entries(facets).map(([k, v]) => (
          <details key={k}>
            <summary>
              <Name text={k} />
            </summary>
            <Json value={v} />
          </details>
        ))
      ) : (
        <Empty>No facets.</Empty>
      )}
    </>
  );
}
