// Search as you type across datasets, jobs and columns, hottest first, with namespace, kind and tag
// filters; arrow keys move through the hits and Enter opens one.
import { useEffect, useRef, useState } from "preact/hooks";
import { pageOf } from "./api.js";
import { Empty, ErrorBox, Link, Loading, Name, navigate, Tags, useQuery, useRoute, visible } from "./ui.jsx";

const FIND = `query($q: String!, $kinds: [FindKind!], $namespace: String, $tag: String) {
  find(query: $q, kinds: $kinds, namespace: $namespace, tag: $tag, first: 50) {
    totalCount
    hits {
      nodeId kind namespace name field fieldType heat updatedAt
      dataset { tags { name } fields { name tags { name } } }
      job { tags { name } }
    }
  }
}`;

const FILTERS = `{ namespaces { name } tags { name } }`;

function useDebounced(value, ms) {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

function hitTags(hit) {
  if (hit.kind === "JOB") return hit.job ? hit.job.tags : [];
  if (!hit.dataset) return [];
  if (hit.kind === "COLUMN") {
    const field = hit.dataset.fields.find((f) => f.name === hit.field);
    return field ? field.tags : [];
  }
  return hit.dataset.tags;
}

export function SearchPage() {
  const { params } = useRoute();
  const [text, setText] = useState(params.get("q") || "");
  const kind = params.get("kind") || "";
  const namespace = params.get("ns") || "";
  const tag = params.get("tag") || "";
  const [active, setActive] = useState(0);
  const input = useRef(null);
  const q = useDebounced(text.trim(), 150);

  const setParam = (changes) => {
    const next = new URLSearchParams(window.location.search);
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    const query = next.toString();
    navigate(query ? `/?${query}` : "/", { replace: true });
  };
  useEffect(() => {
    if (q !== (params.get("q") || "")) setParam({ q });
  }, [q]);
  useEffect(() => setActive(0), [q, kind, namespace, tag]);

  const filters = useQuery(FILTERS, {});
  const found = useQuery(
    FIND,
    { q, kinds: kind ? [kind] : null, namespace: namespace || null, tag: tag || null },
    { skip: !q },
  );
  const hits = (q && found.data && found.data.find.hits) || [];

  const onKeyDown = (event) => {
    if (event.key === "ArrowDown") {
      setActive((a) => Math.min(a + 1, hits.length - 1));
    } else if (event.key === "ArrowUp") {
      setActive((a) => Math.max(a - 1, 0));
    } else if (event.key === "Enter" && hits[active]) {
      navigate(pageOf(hitNode(hits[active])));
    } else {
      return;
    }
    event.preventDefault();
  };

  return (
    <section class="page search-page">
      <h1>Find a dataset, job or column</h1>
      <div class="search-bar">
        <input
          ref={input}
          type="search"
          role="combobox"
          aria-expanded={hits.length > 0}
          aria-controls="hits"
          aria-activedescendant={hits[active] ? `hit-${active}` : undefined}
          aria-label="Search by name"
          placeholder="orders, customer_email, daily_revenue…"
          value={text}
          autoFocus
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={onKeyDown}
        />
        <select aria-label="Kind" value={kind} onChange={(e) => setParam({ kind: e.currentTarget.value })}>
          <option value="">datasets, jobs and columns</option>
          <option value="DATASET">datasets</option>
          <option value="JOB">jobs</option>
          <option value="COLUMN">columns</option>
        </select>
        <select aria-label="Namespace" value={namespace} onChange={(e) => setParam({ ns: e.currentTarget.value })}>
          <option value="">every namespace</option>
          {filters.data &&
            filters.data.namespaces.map((n) => (
              <option key={n.name} value={n.name}>
                {visible(n.name)}
              </option>
            ))}
        </select>
        <select aria-label="Tag" value={tag} onChange={(e) => setParam({ tag: e.currentTarget.value })}>
          <option value="">any tag</option>
          {filters.data &&
            filters.data.tags.map((t) => (
              <option key={t.name} value={t.name}>
                {visible(t.name)}
              </option>
            ))}
        </select>
      </div>
      {filters.error ? <ErrorBox error={filters.error} /> : null}
      {!q ? (
        <Empty>Type a part of a name. The most depended-on (hottest) matches come first.</Empty>
      ) : found.error ? (
        <ErrorBox error={found.error} />
      ) : found.loading && !found.data ? (
        <Loading what="matches" />
      ) : !hits.length ? (
        <Empty>
          Nothing named like “<Name text={q} />”{kind || namespace || tag ? " with these filters" : ""}.
        </Empty>
      ) : (
        <>
          <p class="muted" aria-live="polite">
            {found.data.find.totalCount} match(es){found.data.find.totalCount > hits.length ? `, the ${hits.length} hottest shown` : ""}
          </p>
          <ul id="hits" class="hits" role="listbox" aria-label="Matches">
            {hits.map((hit, i) => (
              <li key={hit.nodeId} id={`hit-${i}`} role="option" aria-selected={i === active} class={i === active ? "active" : ""}>
                <span class={`kind kind-${hit.kind.toLowerCase()}`}>{hit.kind.toLowerCase()}</span>
                <Link href={pageOf(hitNode(hit))} class="hit-name">
                  {hit.field ? (
                    <>
                      <Name text={hit.name} />.
                      <strong>
                        <Name text={hit.field} />
                      </strong>
                      {hit.fieldType ? (
                        <span class="muted">
                          {" "}
                          : <Name text={hit.fieldType} />
                        </span>
                      ) : null}
                    </>
                  ) : (
                    <strong>
                      <Name text={hit.name} />
                    </strong>
                  )}
                </Link>
                <span class="muted ns">
                  <Name text={hit.namespace} />
                </span>
                <Tags tags={hitTags(hit)} />
                <span class="heat" title="Heat: how much of the graph depends on it (1.0 is ordinary)">
                  {hit.heat === null ? "" : `heat ${hit.heat.toFixed(1)}`}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function hitNode(hit) {
  return { id: hit.nodeId, type: hit.kind === "COLUMN" ? "DATASET" : hit.kind, namespace: hit.namespace, name: hit.name, field: hit.field };
}
