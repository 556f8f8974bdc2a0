// A job: its versions with their code and what changed (inputs, outputs, code lines), its current code,
// its runs with state, duration and errors, and its parent and children.
import { Facets, NodeHead, NodePage, RunState, RunsTable, VersionChanges, datasetLink, jobLink } from "./node.jsx";
import { Empty, Link, Name, Shown, visible, when } from "./ui.jsx";

const JOB = `query($ns: String!, $name: String!) {
  job(namespace: $ns, name: $name) {
    id namespace name type description heat manual createdAt updatedAt facets
    tags { name description }
    parent { namespace name }
    children { namespace name latestRun { state } }
    versions(limit: 20) {
      id version codeHash createdAt
      code { text language }
      inputs { namespace name }
      outputs { namespace name }
      createdByRun { id state }
    }
    runs(first: 20) { nodes { id state startedAt endedAt durationMs errorMessage job { namespace name } } }
  }
}`;

/** Datasets that ``newer`` reads or writes and ``older`` did not, and the reverse. */
function versionDiff(older, newer) {
  const names = (list) => new Set(list.map((d) => `${d.namespace}\u0000${d.name}`));
  const changes = [];
  for (const side of ["inputs", "outputs"]) {
    const before = names(older[side]);
    const after = names(newer[side]);
    const label = side === "inputs" ? "reads" : "writes";
    for (const d of newer[side]) {
      const key = `${d.namespace}\u0000${d.name}`;
      if (!before.has(key)) changes.push({ sign: "+", key: `+${label}${key}`, text: <>{label} <Name text={d.name} /></> });
    }
    for (const d of older[side]) {
      const key = `${d.namespace}\u0000${d.name}`;
      if (!after.has(key)) changes.push({ sign: "\u2212", key: `-${label}${key}`, text: <>no longer {label} <Name text={d.name} /></> });
    }
  }
  if (older.codeHash !== newer.codeHash) changes.push({ sign: "~", key: "code", text: "code changed" });
  return changes;
}

const MAX_DIFF_LINES = 400;

/** The lines removed (−) and added (+) from ``before`` to ``after``, by longest common subsequence. */
function lineDiff(before, after) {
  const a = before.split("\n");
  const b = after.split("\n");
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) return null;
  const common = Array.from({ length: a.length + 1 }, () => new Int32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i][j] = a[i] === b[j] ? common[i + 1][j + 1] + 1 : Math.max(common[i + 1][j], common[i][j + 1]);
    }
  }
  const lines = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ sign: " ", text: a[i] });
      i++;
      j++;
    } else if (i < a.length && (j === b.length || common[i + 1][j] >= common[i][j + 1])) {
      lines.push({ sign: "\u2212", text: a[i++] });
    } else {
      lines.push({ sign: "+", text: b[j++] });
    }
  }
  return lines;
}

function CodeOfVersion({ version, older }) {
  if (!version.code) return <span class="muted">{version.codeHash ? "not kept" : "none reported"}</span>;
  const diff = older && older.code && older.code.text !== version.code.text ? lineDiff(older.code.text, version.code.text) : null;
  return (
    <details>
      <summary>
        <Name text={version.code.language} />
        {diff ? ", what changed" : ""}
      </summary>
      {diff ? (
        <pre class="code diff-code" aria-label="Code changes">
          {diff.map((l, k) => (
            <div key={k} class={l.sign === "+" ? "line-add" : l.sign === " " ? "" : "line-remove"}>
              {l.sign} <Shown text={l.text} />
            </div>
          ))}
        </pre>
      ) : (
        <pre class="code">
          <Shown text={version.code.text} />
        </pre>
      )}
    </details>
  );
}

/** The job's code as its facets carry it: SQL, or source code with its language. */
function codeOf(facets) {
  if (facets.sql && facets.sql.query) return { language: facets.sql.dialect || "SQL", text: facets.sql.query };
  if (facets.sourceCode && facets.sourceCode.sourceCode) {
    return { language: facets.sourceCode.language || "source", text: facets.sourceCode.sourceCode };
  }
  return null;
}

export function JobPage() {
  return <NodePage kind="job" query={JOB} Page={Job} />;
}

function Job({ node: job }) {
  const code = codeOf(job.facets);
  const location = job.facets.sourceCodeLocation;
  return (
    <section class="page job-page">
      <NodeHead
        kind="job"
        label={`job${job.type ? ` \u00b7 ${visible(job.type.toLowerCase())}` : ""}${job.manual ? " \u00b7 declared by hand" : ""}`}
        node={job}
        links={<Link href={`/lineage?node=${encodeURIComponent(job.id)}`}>Lineage</Link>}
        changed="updated"
        changedAt={job.updatedAt}
      />

      {job.parent || job.children.length ? (
        <>
          <h2>Parent and children</h2>
          {job.parent ? (
            <p>
              Runs inside{" "}
              <Link href={jobLink(job.parent)}>
                <Name text={job.parent.name} />
              </Link>
            </p>
          ) : null}
          {job.children.length ? (
            <ul class="children">
              {job.children.map((c) => (
                <li key={c.name}>
                  <Link href={jobLink(c)}>
                    <Name text={c.name} />
                  </Link>{" "}
                  {c.latestRun ? <RunState state={c.latestRun.state} /> : null}
                </li>
              ))}
            </ul>
          ) : null}
        </>
      ) : null}

      <h2>Code</h2>
      {code ? (
        <figure>
          <figcaption class="muted">
            <Name text={code.language} />, as the latest run reported it
          </figcaption>
          <pre class="code">
            <Shown text={code.text} />
          </pre>
        </figure>
      ) : (
        <Empty>No SQL or source code reported.</Empty>
      )}
      {location && location.url ? (
        <p>
          Source:{" "}
          <span class="mono">
            <Name text={location.url} />
          </span>
        </p>
      ) : null}

      <h2>Versions</h2>
      {job.versions.length ? (
        <table class="grid" aria-label="Versions">
          <thead>
            <tr><th>created</th><th>version</th><th>reads</th><th>writes</th><th>code</th><th>what changed</th></tr>
          </thead>
          <tbody>
            {job.versions.map((v, i) => {
              const older = job.versions[i + 1];
              const changes = older ? versionDiff(older, v) : null;
              return (
                <tr key={v.id}>
                  <td>{when(v.createdAt)}</td>
                  <td class="mono" title={`version ${v.version}${v.codeHash ? `, code ${v.codeHash}` : ""}`}>{v.version.slice(0, 12)}</td>
                  <td>{v.inputs.map((d) => <div key={d.name}><Link href={datasetLink(d)}><Name text={d.name} /></Link></div>)}</td>
                  <td>{v.outputs.map((d) => <div key={d.name}><Link href={datasetLink(d)}><Name text={d.name} /></Link></div>)}</td>
                  <td><CodeOfVersion version={v} older={older} /></td>
                  <td>
                    <VersionChanges changes={changes} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : (
        <Empty>No completed run has defined a version yet.</Empty>
      )}

      <h2>Runs</h2>
      <RunsTable runs={job.runs.nodes} />

      <Facets facets={job.facets} />
    </section>
  );
}
