// The lineage graph: a layered left-to-right layout (layout.js) drawn in SVG, with pan (drag, arrow
// keys), zoom (wheel, + and -), fit (0), nodes reachable by Tab, and a highlight on what changed.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { layeredLayout } from "./layout.js";
import { visible } from "./ui.jsx";

const NODE_W = 220;
const NODE_H = 36;
// The most nodes a rank shows; the others are one "more" node, searched to show one of them. A
// fitted 938 x 504 canvas (a 1280-pixel window) shows 30 in three sub-columns at 0.86 of their size;
// 2,000 in one rank would need a scale of 0.13 however wrapped, boxes 5 pixels tall.
const RANK_LIMIT = 30;
const FINDER_ROWS = 50;

export function edgeKey(e) {
  return `${e.origin}\u2192${e.destination}`;
}

/** Positions of nodes and edge routes; nodes and edges as the API gives them. */
function layoutGraph(nodes, edges, keep, prefer) {
  return layeredLayout(nodes, edges, { nodeW: NODE_W, nodeH: NODE_H, limit: RANK_LIMIT, keep, prefer });
}

const KINDS = { DATASET: ["dataset", "datasets"], JOB: ["job", "jobs"], FIELD: ["column", "columns"] };

/** "1,970 more datasets" (or "jobs", "columns", "nodes" when mixed). */
function moreLabel(hidden) {
  const types = new Set(hidden.map((n) => n.type));
  const kind = types.size === 1 ? KINDS[[...types][0]] || ["node", "nodes"] : ["node", "nodes"];
  return `${hidden.length.toLocaleString("en")} more ${kind[hidden.length === 1 ? 0 : 1]}`;
}

/** An edge's route (cubic Bézier pieces: a start, then two controls and an end each) as a path. */
function routePath(points) {
  if (!points || points.length < 4) return "";
  let d = `M${points[0].x},${points[0].y}`;
  for (let i = 1; i + 2 < points.length; i += 3) {
    const [c1, c2, end] = points.slice(i, i + 3);
    d += `C${c1.x},${c1.y} ${c2.x},${c2.y} ${end.x},${end.y}`;
  }
  return d;
}

// A hidden character's marker (ui.jsx) or one code point: what clipping keeps whole.
const UNIT = /\u27e8U\+[0-9A-F]{4,6}\u27e9|[\s\S]/gu;

/** ``text`` as shown (its hidden characters as markers), cut from the front to ``max``
 * characters; the end of a name is what tells names apart. */
function clip(text, max) {
  const shown = visible(text);
  if (shown.length <= max) return shown;
  const units = shown.match(UNIT);
  let kept = "";
  for (let i = units.length - 1; i >= 0 && kept.length + units[i].length <= max - 1; i--) kept = units[i] + kept;
  return "\u2026" + kept;
}

/**
 * nodes: [{id, type: DATASET | JOB | FIELD, label, fieldType (a column's), sublabel, hidden (count
 * collapsed behind it)}]
 * edges: [{origin, destination}]; fresh: Set of node ids and edge keys to highlight.
 */
export function LineageCanvas({ nodes, edges, root, selected, fresh, onSelect, onExpand }) {
  // Nodes of a crowded rank shown on demand, from its "more" node's finder.
  const [revealed, setRevealed] = useState(() => new Set());
  const [finder, setFinder] = useState(null);
  const laid = useMemo(
    () => layoutGraph(nodes, edges, new Set([root, selected, ...revealed]), fresh),
    [nodes, edges, root, selected, revealed, fresh],
  );
  const byId = useMemo(() => new Map(nodes.map((n) => [n.id, n])), [nodes]);
  const groups = useMemo(
    () =>
      [...laid.groups].map(([id, g]) => {
        const hidden = g.hidden.map((h) => byId.get(h)).filter(Boolean);
        return { id, type: "GROUP", hidden, label: moreLabel(hidden) };
      }),
    [laid, byId],
  );
  // Drawn (and so reached with Tab) in reading order: left to right, then top to bottom.
  const ordered = useMemo(() => {
    const at = (n) => laid.positions.get(n.id) || { x: 0, y: 0 };
    return [...nodes.filter((n) => laid.positions.has(n.id)), ...groups].sort(
      (a, b) => at(a).x - at(b).x || at(a).y - at(b).y,
    );
  }, [laid, groups]);
  const reveal = (ids, focus) => {
    setRevealed((was) => new Set([...was, ...ids]));
    if (focus) {
      setFinder(null);
      onSelect(focus);
      requestAnimationFrame(() => {
        const el = box.current && box.current.querySelector(`[data-node="${CSS.escape(focus)}"]`);
        if (el) el.focus();
      });
    }
  };
  const box = useRef(null);
  const [view, setView] = useState({ x: 0, y: 0, k: 1 });
  const drag = useRef(null);

  // The drawing depends on the graph and the selection only: panning and zooming change one
  // transform, and Preact skips the unchanged drawing (the same element), so a 500-node graph moves
  // without redrawing.
  const handlers = useRef(null);
  handlers.current = { onSelect, onExpand };
  const drawnOnce = new Set();
  const drawing = useMemo(
    () => (
      <>
        {edges.map((e) => {
          const key = edgeKey(e);
          // An edge to a node in a "more" group is drawn to the group, once for all of them.
          const drawn = laid.shownAs.get(key) ?? key;
          if (drawn !== key && drawnOnce.has(drawn)) return null;
          drawnOnce.add(drawn);
          const points = laid.routes.get(drawn);
          if (!points) return null;
          return (
            <path
              key={drawn}
              d={routePath(points)}
              class={`edge${fresh.has(key) ? " fresh" : ""}${e.manual ? " manual" : ""}`}
              data-edge={drawn}
              marker-end="url(#arrow)"
            />
          );
        })}
        {ordered.map((n) => {
          const p = laid.positions.get(n.id);
          if (!p) return null;
          if (n.type === "GROUP") {
            return (
              <g
                key={n.id}
                class={`node group${finder === n.id ? " selected" : ""}`}
                transform={`translate(${p.x - NODE_W / 2},${p.y - NODE_H / 2})`}
                tabindex="0"
                role="button"
                aria-label={`${n.label}: find one to show`}
                aria-haspopup="dialog"
                data-group={n.id}
                onClick={() => setFinder(n.id)}
                onKeyDown={(event) => {
                  if (event.key === "Enter" || event.key === " ") {
                    event.preventDefault();
                    setFinder(n.id);
                  }
                }}
              >
                <rect width={NODE_W} height={NODE_H} rx={4} />
                <text x={10} y={15} class="label">+{n.label}</text>
                <text x={10} y={29} class="sublabel">click to search them</text>
              </g>
            );
          }
          const classes = ["node", n.type.toLowerCase()];
          if (n.id === root) classes.push("root");
          if (n.id === selected) classes.push("selected");
          if (fresh.has(n.id)) classes.push("fresh");
          if (n.state) classes.push(`state-${n.state.toLowerCase()}`);
          const type = n.fieldType ? clip(n.fieldType, 12) : "";
          return (
            <g
              key={n.id}
              class={classes.join(" ")}
              transform={`translate(${p.x - NODE_W / 2},${p.y - NODE_H / 2})`}
              // SVG attributes are case-sensitive: tabIndex would not make it focusable.
              tabindex="0"
              role="button"
              aria-label={`${n.type.toLowerCase()} ${visible(n.label)}${n.sublabel ? " in " + visible(n.sublabel) : ""}`}
              data-node={n.id}
              onClick={() => onSelect(n.id)}
              onDblClick={() => onExpand && onExpand(n.id)}
              onKeyDown={(event) => nodeKey(event, n)}
            >
              <title>{visible(n.id)}</title>
              <rect width={NODE_W} height={NODE_H} rx={n.type === "JOB" ? 18 : 4} />
              {/* Each name in a tspan of its own, isolated (style.css) as names are in HTML. */}
              <text x={10} y={15} class="label">
                <tspan class="name">{clip(n.label, 30 - (type ? type.length + 3 : 0))}</tspan>
                {type ? (
                  <>
                    {" : "}
                    <tspan class="name">{type}</tspan>
                  </>
                ) : null}
              </text>
              <text x={10} y={29} class="sublabel">
                <tspan class="name">{clip(n.sublabel || "", 36)}</tspan>
              </text>
              {n.hidden ? (
                <text x={NODE_W - 8} y={15} class="badge" text-anchor="end">+{n.hidden}</text>
              ) : null}
            </g>
          );
        })}
      </>
    ),
    [laid, ordered, edges, root, selected, fresh, finder],
  );


  const fit = () => {
    const el = box.current;
    if (!el) return;
    const w = el.clientWidth;
    const h = el.clientHeight;
    const k = Math.min(1.2, Math.max(0.05, Math.min(w / (laid.width || 1), h / (laid.height || 1))));
    setView({ k, x: (w - laid.width * k) / 2, y: (h - laid.height * k) / 2 });
  };
  const rootKnown = nodes.some((n) => n.id === root);
  // Fit when the graph is first shown or its root changes, not when live changes add a node: the
  // reader keeps the place they were looking at.
  useLayoutEffect(fit, [root, rootKnown]);

  const zoomAt = (factor, cx, cy) =>
    setView((v) => {
      const k = Math.min(4, Math.max(0.03, v.k * factor));
      const f = k / v.k;
      return { k, x: cx - (cx - v.x) * f, y: cy - (cy - v.y) * f };
    });

  const onWheel = (event) => {
    event.preventDefault();
    const r = box.current.getBoundingClientRect();
    zoomAt(Math.exp(-event.deltaY * 0.0015), event.clientX - r.left, event.clientY - r.top);
  };
  useEffect(() => {
    const el = box.current;
    el.addEventListener("wheel", onWheel, { passive: false });
    return () => el.removeEventListener("wheel", onWheel);
  });

  const onPointerDown = (event) => {
    if (event.button !== 0 || event.target.closest(".node")) return;
    drag.current = { x: event.clientX, y: event.clientY, view };
    event.currentTarget.setPointerCapture(event.pointerId);
  };
  const onPointerMove = (event) => {
    const d = drag.current;
    if (!d) return;
    setView({ ...d.view, x: d.view.x + event.clientX - d.x, y: d.view.y + event.clientY - d.y });
  };
  const onPointerUp = () => {
    drag.current = null;
  };
  const onKeyDown = (event) => {
    if (event.target.closest && event.target.closest(".node")) return;
    const el = box.current;
    const step = 60;
    const moves = {
      ArrowLeft: [step, 0],
      ArrowRight: [-step, 0],
      ArrowUp: [0, step],
      ArrowDown: [0, -step],
    };
    if (moves[event.key]) {
      const [dx, dy] = moves[event.key];
      setView((v) => ({ ...v, x: v.x + dx, y: v.y + dy }));
    } else if (event.key === "+" || event.key === "=") {
      zoomAt(1.25, el.clientWidth / 2, el.clientHeight / 2);
    } else if (event.key === "-") {
      zoomAt(0.8, el.clientWidth / 2, el.clientHeight / 2);
    } else if (event.key === "0") {
      fit();
    } else {
      return;
    }
    event.preventDefault();
  };

  const nodeKey = (event, n) => {
    const { onSelect: select, onExpand: expand } = handlers.current;
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      select(n.id);
    } else if (event.key === "e" && expand) {
      event.preventDefault();
      expand(n.id);
    }
  };

  return (
    <div class="canvas-wrap">
      <div class="canvas-tools" role="toolbar" aria-label="Graph view">
        <button type="button" onClick={() => zoomAt(1.25, box.current.clientWidth / 2, box.current.clientHeight / 2)} aria-label="Zoom in">+</button>
        <button type="button" onClick={() => zoomAt(0.8, box.current.clientWidth / 2, box.current.clientHeight / 2)} aria-label="Zoom out">&minus;</button>
        <button type="button" onClick={fit}>Fit</button>
        <span class="muted">
          {nodes.length} nodes, {edges.length} edges
          {groups.length ? `, ${groups.reduce((s, g) => s + g.hidden.length, 0).toLocaleString("en")} of them behind “more”` : ""}
        </span>
      </div>
      {finder && groups.some((g) => g.id === finder) ? (
        <Finder group={groups.find((g) => g.id === finder)} onPick={reveal} onClose={() => setFinder(null)} />
      ) : null}
      <div
        ref={box}
        class="canvas"
        tabIndex={0}
        aria-label="Lineage graph: drag or arrow keys to pan, wheel or + and - to zoom, 0 to fit, Tab to the nodes"
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={onPointerUp}
        onKeyDown={onKeyDown}
      >
        <svg width="100%" height="100%" data-testid="lineage-svg">
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0L10,5L0,10z" class="arrowhead" />
            </marker>
          </defs>
          <g transform={`translate(${view.x},${view.y}) scale(${view.k})`}>
            {drawing}
          </g>
        </svg>
      </div>
    </div>
  );
}

/** The nodes a "more" group stands for: filter them by name, show one (selected) or the next few. */
function Finder({ group, onPick, onClose }) {
  const [filter, setFilter] = useState("");
  const input = useRef(null);
  useEffect(() => input.current && input.current.focus(), [group.id]);
  const wanted = filter.trim().toLowerCase();
  const matches = [];
  for (const n of group.hidden) {
    if (matches.length >= FINDER_ROWS) break;
    if (!wanted || n.id.toLowerCase().includes(wanted) || visible(n.label).toLowerCase().includes(wanted)) matches.push(n);
  }
  const next = group.hidden.slice(0, RANK_LIMIT - 1).map((n) => n.id);
  return (
    <div
      class="finder"
      role="dialog"
      aria-label={group.label}
      onKeyDown={(event) => {
        if (event.key === "Escape") {
          event.preventDefault();
          onClose();
        }
      }}
    >
      <div class="finder-head">
        <strong>{group.label}</strong>
        <button type="button" onClick={onClose} aria-label="Close">&times;</button>
      </div>
      <input
        ref={input}
        type="search"
        placeholder="Filter by name"
        aria-label="Filter by name"
        value={filter}
        onInput={(event) => setFilter(event.currentTarget.value)}
      />
      <ul>
        {matches.map((n) => (
          <li key={n.id}>
            <button type="button" class="finder-item" title={visible(n.id)} onClick={() => onPick([n.id], n.id)}>
              <span class="name">{visible(n.label)}</span>
              {n.sublabel ? <span class="muted"> {visible(n.sublabel)}</span> : null}
            </button>
          </li>
        ))}
      </ul>
      {matches.length === FINDER_ROWS ? <p class="muted">The first {FINDER_ROWS}: type to narrow.</p> : null}
      {!matches.length ? <p class="muted">None matches.</p> : null}
      <button type="button" onClick={() => onPick(next)}>
        Draw {next.length} more
      </button>
    </div>
  );
}
