// Bundles src/index.js (GraphiQL, React, graphql-ws) into the Python package's static folder,
// with the licenses of every bundled npm package next to it.
import { build } from "esbuild";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const outdir = fileURLToPath(
  new URL("../../headwater/api/graphql/static/", import.meta.url),
);

const result = await build({
  entryPoints: { graphiql: "src/index.js" },
  outdir,
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  define: { "process.env.NODE_ENV": '"production"' },
  legalComments: "none",
  metafile: true,
  logLevel: "info",
});

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
const licenses = join(outdir, "graphiql.licenses.txt");
writeFileSync(
  licenses,
  "Licenses of the npm packages bundled into graphiql.js and graphiql.css\n\n" +
    sections.join(`\n${"-".repeat(78)}\n\n`),
);
console.log(`  ${licenses}: ${sections.length} packages`);
