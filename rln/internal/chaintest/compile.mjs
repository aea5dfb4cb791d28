// Compiles contracts/*.sol with solc-js (npm solc, pinned in package.json)
// and prints one JSON object on stdout:
//   {"solc": "<version>", "contracts": {"<file>:<name>": {"abi": [...],
//    "bin": "<hex>", "links": {"<file>:<name>": "<34-hex placeholder id>"}}}}
// Imports resolve from this folder and its node_modules (poseidon-solidity,
// @zk-kit/lazy-imt.sol, @openzeppelin/contracts). Errors go to stderr with
// exit status 1.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const solc = require("solc");

const sources = {};
for (const f of fs.readdirSync(path.join(here, "contracts")).sort()) {
  if (f.endsWith(".sol")) {
    sources[f] = { content: fs.readFileSync(path.join(here, "contracts", f), "utf8") };
  }
}

function findImports(p) {
  for (const base of [path.join(here, "contracts"), path.join(here, "node_modules")]) {
    const full = path.join(base, p);
    if (fs.existsSync(full)) return { contents: fs.readFileSync(full, "utf8") };
  }
  return { error: "not found: " + p };
}

const input = {
  language: "Solidity",
  sources,
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "cancun",
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.bytecode.linkReferences"] } },
  },
};

const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
const errors = (out.errors || []).filter((e) => e.severity === "error");
if (errors.length > 0) {
  for (const e of errors) console.error(e.formattedMessage);
  process.exit(1);
}

// The placeholder solc writes for a library is __$<id>$__, id being the
// first 34 hex digits of keccak256("<file>:<name>"); solc's linkReferences
// name the library, the bytecode holds the placeholder.
function placeholderIds(bin, linkRefs) {
  const ids = {};
  for (const [file, libs] of Object.entries(linkRefs || {})) {
    for (const [name, refs] of Object.entries(libs)) {
      const at = refs[0].start * 2;
      ids[file + ":" + name] = bin.slice(at + 3, at + 37);
    }
  }
  return ids;
}

const contracts = {};
for (const [file, byName] of Object.entries(out.contracts)) {
  for (const [name, c] of Object.entries(byName)) {
    const bin = c.evm.bytecode.object;
    if (bin.length === 0) continue; // interfaces
    contracts[file + ":" + name] = {
      abi: c.abi,
      bin,
      links: placeholderIds(bin, c.evm.bytecode.linkReferences),
    };
  }
}
process.stdout.write(JSON.stringify({ solc: solc.version(), contracts }));
