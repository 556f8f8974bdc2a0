// A dataset: its schema with types and tags, versions with the runs that wrote them and what changed
// between them, its facets and runs.
import { Facets, NodeHead, NodePage, RunState, RunsTable, VersionChanges, jobLink } from "./node.jsx";
import { Empty, Link, LongText, Name, Tags, when } from "./ui.jsx";

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

function typed(name, type) {
  return (
    <>
      <Name text={name} />
      {type ? (
        <>
          {" : "}
          <Name text={type} />
        </>
      ) : null}
    </>
  );
}

/** Columns added, removed and retyped from ``older`` to ``newer`` (each a list of fields or null). */
function schemaDiff(older, newer) {
  if (!older || !newer) return [];
  const before = new Map(older.map((f) => [f.name, f.type]));
  const after = new Map(newer.map((f) => [f.name, f.type]));
  const changes = [];
  for (const [name, type] of after) {
    if (!before.has(name)) changes.push({ sign: "+", key: `+${name}`, text: typed(name, type) });
    else if (before.get(name) !== type) {
      changes.push({
        sign: "~",
        key: `~${name}`,
        text: (
          <>
            <Name text={name} /> : <Name text={before.get(name) || "?"} /> {"\u2192"} <Name text={type || "?"} />
          </>
        ),
      });
    }
  }
  for (const [name, type] of before) {
    if (!after.has(name)) changes.push({ sign: "\u2212", key: `-${name}`, text: typed(name, type) });
  }
  return changes;
}

export function DatasetPage() {
  return <NodePage kind="dataset" query={DATASET} Page={Dataset} />;
}

function Dataset({ node: ds }) {
  const node = encodeURIComponent(ds.id);
  return (
    <section class="page dataset-page">
      <NodeHead
        kind="dataset"
        node={ds}
        links={
          <>
            <Link href={`/lineage?node=${node}`}>Lineage</Link>
            <Link href={`/lineage?node=${node}&level=column`}>Column lineage</Link>
            <Link href={`/impact?node=${node}`}>Impact of a change</Link>
            <Link href={`/root-cause?node=${node}`}>Root cause</Link>
          </>
        }
        changed="last written"
        changedAt={ds.lastModifiedAt}
      />

      <h2>Schema</h2>
      {ds.fields.length ? (
        <table class="grid" aria-label="Schema">
          <thead>
            <tr><th>column</th><th>type</th><th>tags</th><th>description</th><th /></tr>
          </thead>
          <tbody>
            {ds.fields.map((f) => (
              <tr key={f.name}>
                <td class="mono">
                  <Name text={f.name} />
                </td>
                <td class="mono">{f.type ? <Name text={f.type} /> : "\u2014"}</td>
                <td><Tags tags={f.tags} /></td>
                <td>
                  <LongText text={f.description} />
                </td>
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
                        <Link href={jobLink(run.job)}>
                          <Name text={run.job.name} />
                        </Link>{" "}
                        <RunState state={run.state} />
                      </>
                    ) : "\u2014"}
                  </td>
                  <td>
                    <VersionChanges changes={changes} same="same schema (new data)" />
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

      <Facets facets={ds.facets} />
    </section>
  );
}
