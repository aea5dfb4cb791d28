// Shared by the scripts the Go tests run. A script gets its arguments as
// one JSON object in argv[2] and prints one JSON object, its result, as
// the last line of stdout; anything else goes to stderr. It exits 1 on an
// error, with the stack on stderr.
import "./polyfill.js";
import { createLightNode } from "@waku/sdk";
import { multiaddr } from "@multiformats/multiaddr";

export { multiaddr };

export async function main(fn) {
  let out;
  try {
    out = await fn(JSON.parse(process.argv[2] ?? "{}"));
  } catch (err) {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}

// lightNode starts a js-waku light node that dials only what it is told:
// no bootstrap, no DNS, peer exchange or peer cache discovery, and /ws as
// well as /wss addresses. networkConfig undefined keeps js-waku's default
// (cluster 1, 8 shards).
export async function lightNode(networkConfig) {
  return createLightNode({
    networkConfig,
    defaultBootstrap: false,
    discovery: { dns: false, peerExchange: false, peerCache: false },
    libp2p: { filterMultiaddrs: false, hideWebSocketInfo: true },
  });
}

// dialIdentified dials addr and waits until identify has run with that
// peer; it returns the connection and identify's result ({protocols,
// agentVersion, ...}). The peer store alone can list a protocol negotiated
// on a stream before identify completes.
export async function dialIdentified(waku, addr, ms = 30000) {
  const ma = multiaddr(addr);
  const want = ma.getPeerId();
  let onIdentify;
  const identified = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no identify from ${want} in ${ms} ms`)), ms);
    onIdentify = (evt) => {
      if (evt.detail.peerId.toString() === want) {
        clearTimeout(timer);
        resolve(evt.detail);
      }
    };
    waku.libp2p.addEventListener("peer:identify", onIdentify);
  });
  try {
    const conn = await waku.libp2p.dial(ma);
    return { conn, identify: await identified };
  } finally {
    waku.libp2p.removeEventListener("peer:identify", onIdentify);
  }
}

// until polls check every 50 ms until it returns a truthy value, which it
// returns, or throws after ms.
export async function until(what, ms, check) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// dialService dials the node at addr and waits until the peer store holds
// that it speaks codec, which js-waku's peer manager reads before it picks
// the node for lightpush or filter.
export async function dialService(waku, addr, codec) {
  const conn = await waku.libp2p.dial(multiaddr(addr));
  await until(`${codec} from identify`, 20000, async () => {
    const p = await waku.libp2p.peerStore.get(conn.remotePeer);
    return p.protocols.includes(codec);
  });
  return conn;
}
