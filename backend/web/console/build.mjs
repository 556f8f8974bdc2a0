// Bundles src/main.jsx (Preact, dagre) into the Python package's static folder, with the licenses of
// every bundled npm package next to it. `node build.mjs --benchmark` also builds the benchmark page's
// script (tests/benchmarks/console_graph.py serves it; it is not shipped).
import { build } from "esbuild";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const outdir = fileURLToPath(new URL("../../headwater/api/console/static/", import.meta.url));

const common = {
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  metafile: true,
  logLevel: "info",
};

const result = await build({ ...common, entryPoints: { console: "src/main.jsx" }, outdir });

if (process.argv.includes("--benchmark")) {
  const benchdir = process.argv[process.argv.indexOf("--benchmark") + 1];
  await build({ ...common, entryPoints: { bench: "src/bench.jsx" }, outdir: benchdir });
}

// The package folder (node_modules/<name> or node_modules/@scope/<name>) of each bundled file.
const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//);
  if (match) packages.add(match[1]);
}

const sections = [...packages].sort().map((folder) => {
  const meta = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
  const licenseFile = readdirSync(folder).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
  const text = licenseFile
    ? readFileSync(join(folder, licenseFile), "utf8").trim()
    : `(no license file; package.json says ${meta.license})`;
  return `${meta.name}@${meta.version} (${meta.license})\n\n${text}\n`;
});
const licenses = join(outdir, "console.licenses.txt");
writeFileSync(
  licenses,
  "Licenses of the npm packages bundled into console.js\n\n" + sections.join(`\n${"-".repeat(78)}\n\n`),
);
console.log(`  ${licenses}: ${sections.length} packages`);
