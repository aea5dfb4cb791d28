// A JSON-lines server over stdin/stdout that runs zerokit's RLN (npm
// @waku/zerokit-rln-wasm, zerokit v0.8.0's rln-wasm) and snarkjs for the
// rln package's Go tests. Each request line is {"id", "op", ...}; each
// answer is {"id", "ok": true, "result"} or {"id", "ok": false, "error"}.
// Bytes travel as hex; field elements as 32-byte little-endian hex, as
// zerokit serialises them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { performance } from "node:perf_hooks";
import * as zk from "@waku/zerokit-rln-wasm";
import { WitnessCalculatorBuilder } from "circom_runtime";
import * as snarkjs from "snarkjs";

const hex = (u8) => Buffer.from(u8).toString("hex");
const bytes = (h) => new Uint8Array(Buffer.from(h, "hex"));
const u64le = (n) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
};
const concat = (...parts) => new Uint8Array(Buffer.concat(parts.map((p) => Buffer.from(p))));
const fieldLE = (h) => bytes(h); // already 32-byte little-endian

let ctx, wasm, zkeyBytes, vkey, witnessCalc;

// zerokit's serialize_witness (rln/src/protocol.rs): secret | limit |
// message id | path elements (u64le count + fields) | path index (u64le
// count + bytes) | x | external nullifier.
function serializeWitness(w) {
  return concat(
    fieldLE(w.secret), fieldLE(w.limit), fieldLE(w.messageId),
    u64le(w.pathElements.length), ...w.pathElements.map(fieldLE),
    u64le(w.pathIndex.length), Uint8Array.from(w.pathIndex),
    fieldLE(w.x), fieldLE(w.ext),
  );
}

function splitKey(k) {
  return {
    trapdoor: hex(k.subarray(0, 32)), nullifier: hex(k.subarray(32, 64)),
    secret: hex(k.subarray(64, 96)), commitment: hex(k.subarray(96, 128)),
  };
}

// timed runs f repeat times (at least once) and returns its last result
// with the mean wall time in ms; lastCpuMs is the mean CPU time of the
// process (all threads) in ms.
let lastCpuMs = 0;
const cpuMs = (u) => (u.user + u.system) / 1000;

function timed(repeat, f) {
  const n = Math.max(1, repeat | 0);
  let out;
  const c0 = process.cpuUsage(), t0 = performance.now();
  for (let i = 0; i < n; i++) out = f();
  lastCpuMs = cpuMs(process.cpuUsage(c0)) / n;
  return [out, (performance.now() - t0) / n];
}

async function timedAsync(repeat, f) {
  const n = Math.max(1, repeat | 0);
  let out;
  const c0 = process.cpuUsage(), t0 = performance.now();
  for (let i = 0; i < n; i++) out = await f();
  lastCpuMs = cpuMs(process.cpuUsage(c0)) / n;
  return [out, (performance.now() - t0) / n];
}

const ops = {
  async init({ dir }) {
    const t0 = performance.now();
    zk.initSync({ module: readFileSync(new URL("./node_modules/@waku/zerokit-rln-wasm/rln_wasm_bg.wasm", import.meta.url)) });
    zkeyBytes = new Uint8Array(readFileSync(join(dir, "rln_final.zkey")));
    ctx = zk.newRLN(zkeyBytes);
    const loadMs = performance.now() - t0;
    wasm = readFileSync(join(dir, "rln.wasm"));
    witnessCalc = await WitnessCalculatorBuilder(wasm);
    vkey = await snarkjs.zKey.exportVerificationKey(zkeyBytes);
    return { loadMs, vkey };
  },
  hash({ data }) {
    return hex(zk.hash(bytes(data)));
  },
  poseidon({ inputs }) {
    return hex(zk.poseidonHash(concat(u64le(inputs.length), ...inputs.map(fieldLE))));
  },
  seededKey({ seed }) {
    return splitKey(zk.generateSeededExtendedMembershipKey(ctx, bytes(seed)));
  },
  key() {
    return splitKey(zk.generateExtendedMembershipKey(ctx));
  },
  // nwaku's toRLNSignal (payload | content topic | u64le timestamp) and
  // zerokit's hash of it
  signal({ payload, contentTopic, timestamp }) {
    const signal = concat(bytes(payload), Buffer.from(contentTopic, "utf8"), u64le(BigInt.asUintN(64, BigInt(timestamp))));
    return { signal: hex(signal), x: hex(zk.hash(signal)) };
  },
  // nwaku's calcEpoch on msg.timestamp.float64 / 1e9, in float64
  epoch({ timestamp, epochSec }) {
    const e = BigInt(Math.trunc(Number(BigInt(timestamp)) / 1e9 / epochSec));
    return hex(concat(u64le(e), new Uint8Array(24)));
  },
  // nwaku's generateExternalNullifier with zerokit's hash and poseidon
  ext({ epoch, rlnIdentifier }) {
    const a = zk.hash(bytes(epoch)), b = zk.hash(bytes(rlnIdentifier));
    return hex(zk.poseidonHash(concat(u64le(2), a, b)));
  },
  // nwaku's RateLimitProof encode: fields 1 to 7, bytes, in order
  encodeProof({ fields }) {
    const parts = [];
    fields.forEach((f, i) => {
      const v = bytes(f);
      parts.push(Uint8Array.of(((i + 1) << 3) | 2));
      let n = v.length;
      const len = [];
      do { len.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0)); n >>>= 7; } while (n > 0);
      parts.push(Uint8Array.from(len), v);
    });
    return hex(concat(...parts));
  },
  // the circom witness calculator on rln.wasm (decimal strings)
  async witness({ inputs }) {
    const w = await witnessCalc.calculateWitness(inputs, true);
    return w.map((v) => v.toString());
  },
  async prove({ witness, repeat }) {
    const serialized = serializeWitness(witness);
    const [out, ms] = await timedAsync(repeat, async () => {
      const inputs = zk.rlnWitnessToJson(ctx, serialized);
      const calculated = await witnessCalc.calculateWitness(inputs, true);
      return zk.generateRLNProofWithWitness(ctx, calculated, serialized);
    });
    // [ proof<128> | root | external nullifier | x | y | nullifier ]
    const f = (i) => hex(out.subarray(128 + 32 * i, 160 + 32 * i));
    return { proof: hex(out.subarray(0, 128)), root: f(0), ext: f(1), x: f(2), y: f(3), nullifier: f(4), ms, cpuMs: lastCpuMs };
  },
  verify({ proof, root, ext, x, y, nullifier, signal, roots, repeat }) {
    // prepare_verify_input: proof values then signal_len<8> | signal
    const input = concat(bytes(proof), bytes(root), bytes(ext), bytes(x), bytes(y), bytes(nullifier),
      u64le(signal.length / 2), bytes(signal));
    const rs = bytes(roots.join(""));
    try {
      const [valid, ms] = timed(repeat, () => zk.verifyWithRoots(ctx, input, rs));
      return { valid, ms, cpuMs: lastCpuMs };
    } catch (e) {
      return { valid: false, error: String(e) };
    }
  },
  async snarkProve({ inputs, repeat }) {
    const [out, ms] = await timedAsync(repeat, () =>
      snarkjs.groth16.fullProve(inputs, new Uint8Array(wasm), zkeyBytes));
    return { proof: out.proof, publicSignals: out.publicSignals, ms, cpuMs: lastCpuMs };
  },
  async snarkVerify({ proof, publicSignals, repeat }) {
    try {
      const [valid, ms] = await timedAsync(repeat, () => snarkjs.groth16.verify(vkey, publicSignals, proof));
      return { valid, ms, cpuMs: lastCpuMs };
    } catch (e) {
      return { valid: false, error: String(e) };
    }
  },
};

const rl = createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on("line", (line) => {
  queue = queue.then(async () => {
    let req;
    try {
      req = JSON.parse(line);
      const result = await ops[req.op](req);
      process.stdout.write(JSON.stringify({ id: req.id, ok: true, result }) + "\n");
    } catch (e) {
      process.stdout.write(JSON.stringify({ id: req?.id, ok: false, error: String(e?.stack ?? e) }) + "\n");
    }
  });
});
rl.on("close", () => queue.then(() => process.exit(0)));
