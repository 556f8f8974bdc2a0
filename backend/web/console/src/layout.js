// A layered (Sugiyama-style) layout for lineage, left to right: ranks by longest path, order in a
// rank by barycenter sweeps, each node pulled towards its neighbours without overlap. It lays out
// 500 nodes in a few milliseconds, where dagre's network-simplex ranking and crossing reduction took
// about two seconds (measured with tests/benchmarks/console_graph.py), too slow for a console that
// must be usable at once. A rank of more than `limit` nodes shows a group node for the rest, and a
// rank much taller than the drawing is wide wraps into sub-columns, so that a fitted view can be read.

const SWEEPS = 6;

const LOOP_REACH = 28; // how far a loop swings out of a node's side
const LOOP_GAP = 18; // from the nodes a loop runs around to its lane
const LANE_GAP = 10; // between the lanes of loops on the same side of the same ranks
const SUB_GAP = 44; // between the sub-columns of a wrapped rank: room for a self-loop and the edges
const MIN_ROWS = 6; // a rank wraps into sub-columns of at least this many rows

/**
 * nodes: [{id}], edges: [{origin, destination}]; sizes in pixels.
 * Returns {positions: Map id -> {x, y} (centres), routes: Map "origin→destination" -> points (cubic
 * Bézier pieces: the start, then two controls and an end for each piece), groups: Map group id ->
 * {rank, hidden: [id]} (a rank of more than `limit` nodes shows `limit` - 1 of them, those in
 * `keep` always, those in `prefer` first, and a group for the others), shownAs: Map
 * "origin→destination" -> the key of the route drawn for it (an edge to a hidden node goes to its
 * group), width, height}: every node and route lies within width and height, loops too.
 */
export function layeredLayout(
  nodes,
  edges,
  { nodeW, nodeH, rankGap = 80, nodeGap = 14, margin = 20, limit = Infinity, keep = new Set(), prefer = new Set(), aspect = 1.8 },
) {
  let ids = nodes.map((n) => n.id);
  const known = new Set(ids);
  let out = new Map(ids.map((id) => [id, []]));
  let inn = new Map(ids.map((id) => [id, []]));
  const seenEdges = new Set();
  let links = [];
  let selfLoops = []; // a column derived from itself, by a job that rewrites its own table
  for (const e of edges) {
    const key = `${e.origin}\u2192${e.destination}`;
    if (!known.has(e.origin) || !known.has(e.destination) || seenEdges.has(key)) continue;
    seenEdges.add(key);
    if (e.origin === e.destination) selfLoops.push(e.origin);
    else links.push([e.origin, e.destination]);
  }

  // Lineage may hold cycles (a job that reads what it writes): edges closing a cycle in a depth
  // first walk are left out of the ranking, and drawn as loops (below).
  const state = new Map();
  const back = new Set();
  const forward = new Map(ids.map((id) => [id, []]));
  for (const [a, b] of links) forward.get(a).push(b);
  for (const start of ids) {
    if (state.has(start)) continue;
    const stack = [[start, 0]];
    state.set(start, 1);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [id, i] = top;
      const next = forward.get(id);
      if (i < next.length) {
        top[1] = i + 1;
        const to = next[i];
        if (state.get(to) === 1) back.add(`${id}\u2192${to}`);
        else if (!state.has(to)) {
          state.set(to, 1);
          stack.push([to, 0]);
        }
      } else {
        state.set(id, 2);
        stack.pop();
      }
    }
  }
  for (const [a, b] of links) {
    if (back.has(`${a}\u2192${b}`)) continue;
    out.get(a).push(b);
    inn.get(b).push(a);
  }

  // Ranks: longest path from the sources (Kahn's order).
  const rank = new Map(ids.map((id) => [id, 0]));
  const waiting = new Map(ids.map((id) => [id, inn.get(id).length]));
  const queue = ids.filter((id) => waiting.get(id) === 0);
  for (let q = 0; q < queue.length; q++) {
    const id = queue[q];
    for (const to of out.get(id)) {
      rank.set(to, Math.max(rank.get(to), rank.get(id) + 1));
      waiting.set(to, waiting.get(to) - 1);
      if (waiting.get(to) === 0) queue.push(to);
    }
  }
  const maxRank = Math.max(0, ...rank.values());
  const layers = Array.from({ length: maxRank + 1 }, () => []);
  for (const id of queue) layers[rank.get(id)].push(id); // discovery order: a first good guess

  // A rank of more than `limit` nodes (a table every report reads) shows the nodes to keep, then
  // the most connected, and one group node standing for the rest: thousands of nodes in one rank
  // cannot be read at any scale. Edges to a hidden node go to its group, once.
  const groups = new Map();
  const shownAs = new Map();
  const hiddenIn = new Map(); // hidden node -> its group
  layers.forEach((layer, r) => {
    if (layer.length <= limit) return;
    const degree = (id) => out.get(id).length + inn.get(id).length;
    const order = new Map(layer.map((id, i) => [id, i]));
    const tier = (id) => (keep.has(id) ? 0 : prefer.has(id) ? 1 : 2);
    const ranked = [...layer].sort((a, b) => tier(a) - tier(b) || degree(b) - degree(a) || order.get(a) - order.get(b));
    const kept = ranked.filter((id, i) => keep.has(id) || i < limit - 1);
    if (kept.length >= layer.length) return;
    const keptSet = new Set(kept);
    const group = `\u2026more:${r}`;
    const hidden = layer.filter((id) => !keptSet.has(id));
    for (const id of hidden) hiddenIn.set(id, group);
    groups.set(group, { rank: r, hidden });
    rank.set(group, r);
    layers[r] = [...layer.filter((id) => keptSet.has(id)), group];
  });
  if (groups.size) {
    const shown = (id) => hiddenIn.get(id) ?? id;
    const reduced = [];
    const reducedSeen = new Set();
    for (const [a, b] of links) {
      const from = shown(a);
      const to = shown(b);
      const key = `${from}\u2192${to}`;
      shownAs.set(`${a}\u2192${b}`, key);
      if (from === to || reducedSeen.has(key)) continue;
      reducedSeen.add(key);
      if (back.has(`${a}\u2192${b}`)) back.add(key);
      reduced.push([from, to]);
    }
    links = reduced;
    selfLoops = selfLoops.filter((id) => !hiddenIn.has(id));
    ids = layers.flat();
    out = new Map(ids.map((id) => [id, []]));
    inn = new Map(ids.map((id) => [id, []]));
    for (const [a, b] of links) {
      if (back.has(`${a}\u2192${b}`)) continue;
      out.get(a).push(b);
      inn.get(b).push(a);
    }
  }

  // Order within ranks: barycenter sweeps, down then up.
  const index = new Map();
  const renumber = (layer) => layer.forEach((id, i) => index.set(id, i));
  layers.forEach(renumber);
  const reorder = (layer, neighbours) => {
    const keyed = layer.map((id, i) => {
      const ns = neighbours.get(id);
      const key = groups.has(id) ? Infinity : ns.length ? ns.reduce((s, n) => s + index.get(n), 0) / ns.length : i;
      return [key, i, id];
    });
    keyed.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    const sorted = keyed.map((k) => k[2]);
    renumber(sorted);
    return sorted;
  };
  for (let s = 0; s < SWEEPS; s++) {
    if (s % 2 === 0) for (let r = 1; r <= maxRank; r++) layers[r] = reorder(layers[r], inn);
    else for (let r = maxRank - 1; r >= 0; r--) layers[r] = reorder(layers[r], out);
  }
  if (SWEEPS % 2 === 0) for (let r = 1; r <= maxRank; r++) layers[r] = reorder(layers[r], inn);

  // A rank much taller than the drawing is wide wraps into sub-columns, top to bottom then left to
  // right: the most rows a column may have is the one that lets a view of `aspect` (width over
  // height) show the drawing at the largest scale.
  const step = nodeH + nodeGap;
  const colW = nodeW + SUB_GAP;
  const tallestRank = Math.max(1, ...layers.map((l) => l.length));
  const sizeWith = (rows) => {
    let width = -rankGap;
    for (const l of layers) width += Math.ceil(Math.max(1, l.length) / rows) * colW - SUB_GAP + rankGap;
    return Math.max(width / aspect, Math.min(rows, tallestRank) * step);
  };
  let rows = tallestRank;
  for (let r = tallestRank - 1; r >= MIN_ROWS; r--) if (sizeWith(r) < sizeWith(rows)) rows = r;
  const columns = layers.map((l) => Math.ceil(Math.max(1, l.length) / rows));
  const rankX = [];
  columns.forEach((c, r) => rankX.push(r ? rankX[r - 1] + columns[r - 1] * colW - SUB_GAP + rankGap : 0));
  const column = new Map();
  layers.forEach((layer) => layer.forEach((id, i) => column.set(id, Math.floor(i / rows))));

  // Vertical places: each node pulled to the mean of its neighbours in the rank before, then pushed
  // apart to keep the gap; the whole rank moved back so that it sits on its neighbours on average.
  // A wrapped rank stays a grid.
  const tallest = Math.min(rows, tallestRank);
  const y = new Map();
  layers.forEach((layer, r) => {
    const height = columns[r] > 1 ? rows : layer.length;
    const offset = ((tallest - height) * step) / 2;
    layer.forEach((id, i) => y.set(id, offset + (i % rows) * step));
  });
  const settle = (layer, neighbours) => {
    if (!layer.length || layer.length > rows) return;
    const wanted = layer.map((id) => {
      const ns = neighbours.get(id);
      return ns.length ? ns.reduce((s, n) => s + y.get(n), 0) / ns.length : y.get(id);
    });
    const placed = [];
    for (let i = 0; i < layer.length; i++) placed.push(i ? Math.max(wanted[i], placed[i - 1] + step) : wanted[i]);
    const drift = placed.reduce((s, p, i) => s + p - wanted[i], 0) / layer.length;
    layer.forEach((id, i) => y.set(id, placed[i] - drift));
  };
  for (let s = 0; s < 2; s++) {
    for (let r = 1; r <= maxRank; r++) settle(layers[r], inn);
    for (let r = maxRank - 1; r >= 0; r--) settle(layers[r], out);
  }

  const positions = new Map();
  for (const id of ids) {
    positions.set(id, { x: rankX[rank.get(id)] + column.get(id) * colW + nodeW / 2, y: y.get(id) + nodeH / 2 });
  }

  // Routes. An edge forward leaves its origin's right side and enters its destination's left side.
  // An edge back (closing a cycle) would do so across the nodes between them and out of the drawing,
  // where nobody sees it: it swings out of its origin's right side, runs around the ranks it spans
  // (below or above them, whichever is nearer) and swings into its destination's left side. An edge
  // from a node to itself is a loop on its right side.
  const rankTop = new Map();
  const rankBottom = new Map();
  for (const [id, p] of positions) {
    const r = rank.get(id);
    rankTop.set(r, Math.min(rankTop.get(r) ?? Infinity, p.y - nodeH / 2));
    rankBottom.set(r, Math.max(rankBottom.get(r) ?? -Infinity, p.y + nodeH / 2));
  }
  const lanes = { below: [], above: [] }; // [from rank, to rank, lane] of the loops already routed
  const lane = (side, from, to) => {
    const taken = new Set(lanes[side].filter(([f, t]) => f <= to && from <= t).map((l) => l[2]));
    let k = 0;
    while (taken.has(k)) k++;
    lanes[side].push([from, to, k]);
    return k;
  };
  const routes = new Map();
  for (const [a, b] of links) {
    const p = positions.get(a);
    const q = positions.get(b);
    const start = { x: p.x + nodeW / 2, y: p.y };
    const end = { x: q.x - nodeW / 2, y: q.y };
    if (rank.get(b) > rank.get(a)) {
      // Out of a wrapped rank, or into one, an edge runs in the gap between two rows past the
      // sub-columns in its way, then turns into its node's side.
      const points = [start];
      const to = (c1, c2, pt) => points.push(c1, c2, pt);
      const line = (pt) => {
        const from = points[points.length - 1];
        to({ x: from.x + (pt.x - from.x) / 3, y: from.y + (pt.y - from.y) / 3 }, { x: from.x + ((pt.x - from.x) * 2) / 3, y: from.y + ((pt.y - from.y) * 2) / 3 }, pt);
      };
      const turn = SUB_GAP / 2;
      const ra = rank.get(a);
      const rb = rank.get(b);
      if (column.get(a) < columns[ra] - 1) {
        const lane = p.y + step / 2;
        to({ x: start.x + turn / 2, y: start.y }, { x: start.x + turn / 2, y: lane }, { x: start.x + turn, y: lane });
        line({ x: rankX[ra] + columns[ra] * colW - SUB_GAP, y: lane });
      }
      const into = column.get(b) > 0 ? { x: rankX[rb], y: q.y - step / 2 } : end;
      const from = points[points.length - 1];
      const bend = Math.max(rankGap / 2, Math.abs(into.x - from.x) / 2);
      to({ x: from.x + bend, y: from.y }, { x: into.x - bend, y: into.y }, into);
      if (into !== end) {
        line({ x: end.x - turn, y: into.y });
        to({ x: end.x - turn / 2, y: into.y }, { x: end.x - turn / 2, y: end.y }, end);
      }
      routes.set(`${a}\u2192${b}`, points);
      continue;
    }
    const from = rank.get(b);
    const to = rank.get(a);
    let top = Infinity;
    let bottom = -Infinity;
    for (let r = from; r <= to; r++) {
      top = Math.min(top, rankTop.get(r) ?? Infinity);
      bottom = Math.max(bottom, rankBottom.get(r) ?? -Infinity);
    }
    const below = bottom - Math.max(p.y, q.y) <= Math.min(p.y, q.y) - top;
    const k = lane(below ? "below" : "above", from, to);
    const runY = below ? bottom + LOOP_GAP + k * LANE_GAP : top - LOOP_GAP - k * LANE_GAP;
    const reach = LOOP_REACH + k * LANE_GAP;
    const turnOut = { x: start.x, y: runY };
    const turnIn = { x: end.x, y: runY };
    routes.set(`${a}\u2192${b}`, [
      start,
      { x: start.x + reach, y: start.y },
      { x: start.x + reach, y: runY },
      turnOut,
      { x: turnOut.x + (turnIn.x - turnOut.x) / 3, y: runY },
      { x: turnOut.x + ((turnIn.x - turnOut.x) * 2) / 3, y: runY },
      turnIn,
      { x: end.x - reach, y: runY },
      { x: end.x - reach, y: end.y },
      end,
    ]);
  }
  for (const id of selfLoops) {
    const p = positions.get(id);
    const side = p.x + nodeW / 2;
    routes.set(`${id}\u2192${id}`, [
      { x: side, y: p.y - nodeH / 4 },
      { x: side + LOOP_REACH * 1.5, y: p.y - nodeH },
      { x: side + LOOP_REACH * 1.5, y: p.y + nodeH },
      { x: side, y: p.y + nodeH / 4 },
    ]);
  }

  // The drawing's bounds: every node and every route's points (a Bézier piece lies within its
  // points), moved to start at the margin, so that a view fitted to width and height shows loops
  // too.
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  const include = (x, y) => {
    minX = Math.min(minX, x);
    minY = Math.min(minY, y);
    maxX = Math.max(maxX, x);
    maxY = Math.max(maxY, y);
  };
  for (const p of positions.values()) {
    include(p.x - nodeW / 2, p.y - nodeH / 2);
    include(p.x + nodeW / 2, p.y + nodeH / 2);
  }
  for (const points of routes.values()) for (const pt of points) include(pt.x, pt.y);
  if (minX === Infinity) return { positions, routes, groups, shownAs, width: margin * 2, height: margin * 2 };
  const dx = margin - minX;
  const dy = margin - minY;
  for (const p of positions.values()) {
    p.x += dx;
    p.y += dy;
  }
  for (const points of routes.values()) {
    for (const pt of points) {
      pt.x += dx;
      pt.y += dy;
    }
  }
  return { positions, routes, groups, shownAs, width: maxX - minX + margin * 2, height: maxY - minY + margin * 2 };
}
