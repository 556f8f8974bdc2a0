// A dataset: its schema with types and tags, versions with the runs that wrote them and what changed
// between them, its facets and runs.
import { Empty, ErrorBox, Json, Link, Loading, Tags, duration, useQuery, useRoute, when } from "./ui.jsx";

const DATASET = `query($ns: String!, $name: String!) {
  dataset(namespace: $ns, name: $name) {
    id namespace name description sourceName heat createdAt updatedAt lastModifiedAt facets
    tags { name description }
    fields { name type description tags { name description } }
    versions(limit: 20) {
      id version createdAt
      fields { name type }
      createdByRun { id state job { namespace name } }
    }
    runs(limit: 20) { id state startedAt endedAt durationMs errorMessage job { namespace name } }
  }
}`;

/** Columns added, removed and retyped from ``older`` to ``newer`` (each a list of fields or null). */
function schemaDiff(older, newer) {
  if (!older || !newer) return [];
  const before = new Map(older.map((f) => [f.name, f.type]));
  const after = new Map(newer.map((f) => [f.name, f.type]));
  const changes = [];
  for (const [name, type] of after) {
    if (!before.has(name)) changes.push({ sign: "+", text: `${name}${type ? " : " + type : ""}` });
    else if (before.get(name) !== type) changes.push({ sign: "~", text: `${name} : ${before.get(name) || "?"} \u2192 ${type || "?"}` });
  }
  for (const [name, type] of before) {
    if (!after.has(name)) changes.push({ sign: "\u2212", text: `${name}${type ? " : " + type : ""}` });
  }
  return changes;
}

export function RunState({ state }) {
  return <span class={`state state-${(state || "none").toLowerCase()}`}>{state || "unknown"}</span>;
}

export function DatasetPage() {
  const { params } = useRoute();
  const ns = params.get("ns") || "";
  const name = params.get("name") || "";
  const { data, error, loading } = useQuery(DATASET, { ns, name }, { skip: !ns || !name });
  if (!ns || !name) return <Empty>A dataset page needs ?ns=NAMESPACE&amp;name=NAME.</Empty>;
  if (error) return <ErrorBox error={error} />;
  if (loading || !data) return <Loading what="the dataset" />;
  const ds = data.dataset;
  if (!ds) return <Empty>No dataset {name} in {ns}.</Empty>;
  const node = encodeURIComponent(ds.id);
  return (
    <section class="page dataset-page">
      <header class="page-head">
        <p class="kind kind-dataset">dataset</p>
        <h1>{ds.name}</h1>
        <p class="muted">
          {ds.namespace} <Tags tags={ds.tags} />
        </p>
        {ds.description ? <p>{ds.description}</p> : null}
        <nav class="page-actions" aria-label="About this dataset">
          <Link href={`/lineage?node=${node}`}>Lineage</Link>
          <Link href={`/lineage?node=${node}&level=column`}>Column lineage</Link>
          <Link href={`/impact?node=${node}`}>Impact of a change</Link>
          <Link href={`/root-cause?node=${node}`}>Root cause</Link>
        </nav>
        <p class="muted">
          Created {when(ds.createdAt)}, last written {when(ds.lastModifiedAt)}
          {ds.heat === null ? "" : `, heat ${ds.heat.toFixed(2)}`}
        </p>
      </header>

      <h2>Schema</h2>
      {ds.fields.length ? (
        <table class="grid" aria-label="Schema">
          <thead>
            <tr><th>column</th><th>type</th><th>tags</th><th>description</th><th /></tr>
          </thead>
          <tbody>
            {ds.fields.map((f) => (
              <tr key={f.name}>
                <td class="mono">{f.name}</td>
                <td class="mono">{f.type || "\u2014"}</td>
                <td><Tags tags={f.tags} /></td>
                <td>{f.description || ""}</td>
                <td>
                  <Link href={`/lineage?node=${encodeURIComponent(`datasetField:${ds.namespace}:${ds.name}:${f.name}`)}`}>lineage</Link>{" "}
                  <Link href={`/impact?node=${encodeURIComponent(`datasetField:${ds.namespace}:${ds.name}:${f.name}`)}`}>impact</Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : (
        <Empty>No run reported a schema for it.</Empty>
      )}

      <h2>Versions</h2>
      {ds.versions.length ? (
        <table class="grid" aria-label="Versions">
          <thead>
            <tr><th>created</th><th>version</th><th>written by</th><th>what changed</th></tr>
          </thead>
          <tbody>
            {ds.versions.map((v, i) => {
              const older = ds.versions[i + 1];
              const changes = older ? schemaDiff(older.fields, v.fields) : null;
              const run = v.createdByRun;
              return (
                <tr key={v.id}>
                  <td>{when(v.createdAt)}</td>
                  <td class="mono" title={v.version}>{v.version.slice(0, 12)}</td>
                  <td>
                    {run ? (
                      <>
                        <Link href={`/jobs?ns=${encodeURIComponent(run.job.namespace)}&name=${encodeURIComponent(run.job.name)}`}>{run.job.name}</Link>{" "}
                        <RunState state={run.state} />
                      </>
                    ) : "\u2014"}
                  </td>
                  <td>
                    {changes === null ? (
                      <span class="muted">first version</span>
                    ) : changes.length ? (
                      <ul class="diff">
                        {changes.map((c) => <li key={c.text} class={`diff-${c.sign === "+" ? "add" : c.sign === "~" ? "change" : "remove"}`}>{c.sign} {c.text}</li>)}
                      </ul>
                    ) : (
                      <span class="muted">same schema (new data)</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : (
        <Empty>No run has written it yet.</Empty>
      )}

      <h2>Runs that wrote it</h2>
      <RunsTable runs={ds.runs} showJob />

      <h2>Facets</h2>
      {Object.keys(ds.facets).length ? (
        Object.entries(ds.facets).map(([k, v]) => (
          <details key={k}>
            <summary>{k}</summary>
            <Json value={v} />
          </details>
        ))
      ) : (
        <Empty>No facets.</Empty>
      )}
    </section>
  );
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
                <Link href={`/jobs?ns=${encodeURIComponent(r.job.namespace)}&name=${encodeURIComponent(r.job.name)}`}>{r.job.name}</Link>
              </td>
            ) : null}
            <td><RunState state={r.state} /></td>
            <td>{when(r.startedAt)}</td>
            <td>{when(r.endedAt)}</td>
            <td>{duration(r.durationMs)}</td>
            <td class="error-text">{r.errorMessage || ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
