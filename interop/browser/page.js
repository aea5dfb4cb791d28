// The page's script, bundled with @waku/sdk by esbuild into bundle.js.
// It defines window.courier.run(cfg), which the Go test calls once the
// page has loaded: js-waku light nodes in this page connect to courier
// nodes over /ws and /wss, send with lightpush, receive with filter, read
// history from store and learn a node by peer exchange. Each step is a row
// of the page's table; run resolves to what every step saw, or to
// {error, step} at the first step that failed.
//
// cfg: {ws, wss, pxPeer, contentTopic, shard, payload, pageSize, sdk}
//   ws      /ws multiaddr (with /p2p/) of the node serving lightpush, store
//           and peer exchange
//   wss     /wss multiaddr of the node serving filter
//   pxPeer  peer id of the node the first one knows by discv5
//   sdk     the @waku/sdk version, for the page's heading
import { createLightNode, utf8ToBytes, bytesToUtf8 } from "@waku/sdk";
import { multiaddr } from "@multiformats/multiaddr";

const FILTER = "/vac/waku/filter-subscribe/2.0.0-beta1";
const LIGHTPUSH = "/vac/waku/lightpush/3.0.0";

const rows = document.getElementById("steps");
const summary = document.getElementById("summary");

// row adds a table row for one step, shown as running until done or fail.
function row(name) {
  const tr = document.createElement("tr");
  const cells = [name, "…", "", ""].map((text) => {
    const td = document.createElement("td");
    td.textContent = text;
    tr.appendChild(td);
    return td;
  });
  cells[1].className = "state run";
  cells[2].className = "ms";
  cells[3].className = "detail";
  rows.appendChild(tr);
  const started = performance.now();
  const end = (state, cls, detail) => {
    cells[1].textContent = state;
    cells[1].className = `state ${cls}`;
    cells[2].textContent = state === "ok" || detail !== "not run" ? `${Math.round(performance.now() - started)} ms` : "";
    cells[3].textContent = detail;
  };
  return { done: (detail) => end("ok", "ok", detail), fail: (detail) => end("failed", "fail", detail) };
}

// lightNode starts a light node on cluster 0 that dials only what it is
// told (or, with peerExchange, what peer exchange finds from bootstrap).
async function lightNode({ peerExchange = false, bootstrap = [] } = {}) {
  return createLightNode({
    networkConfig: { clusterId: 0 },
    defaultBootstrap: false,
    bootstrapPeers: bootstrap,
    discovery: { dns: false, peerExchange, peerCache: false },
    libp2p: { filterMultiaddrs: false, hideWebSocketInfo: true },
  });
}

async function until(what, ms, check) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// dialIdentified dials addr and resolves once identify has run with the
// peer, to the connection and identify's result.
async function dialIdentified(waku, addr, ms = 30000) {
  const ma = multiaddr(addr);
  const want = ma.getPeerId();
  let listener;
  const identified = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no identify from ${want} in ${ms} ms`)), ms);
    listener = (evt) => {
      if (evt.detail.peerId.toString() === want) {
        clearTimeout(timer);
        resolve(evt.detail);
      }
    };
    waku.libp2p.addEventListener("peer:identify", listener);
  });
  try {
    const conn = await waku.libp2p.dial(ma);
    return { conn, identify: await identified };
  } finally {
    waku.libp2p.removeEventListener("peer:identify", listener);
  }
}

function short(id) {
  return id.length > 16 ? `${id.slice(0, 8)}…${id.slice(-6)}` : id;
}

// connect dials addr and reports the connection and identify's result.
async function connect(waku, addr) {
  const { conn, identify } = await dialIdentified(waku, addr);
  const md = await waku.libp2p.services.metadata.query(conn.remotePeer);
  return {
    remotePeer: conn.remotePeer.toString(),
    remoteAddr: conn.remoteAddr.toString(),
    multiplexer: conn.multiplexer,
    encryption: conn.encryption,
    protocols: identify.protocols,
    agentVersion: identify.agentVersion,
    clusterId: md.error ? -1 : md.shardInfo.clusterId,
    shards: md.error ? [] : md.shardInfo.shards,
  };
}

function describeConn(c) {
  return `${short(c.remotePeer)} at ${c.remoteAddr.replace(/\/p2p\/.*/, "")}, ${c.multiplexer} over ${c.encryption}, ` +
    `agent ${c.agentVersion}, cluster ${c.clusterId} shards [${c.shards}], ${c.protocols.length} protocols`;
}

async function run(cfg) {
  document.getElementById("sub").textContent =
    `@waku/sdk ${cfg.sdk} light nodes in ${navigator.userAgent.match(/HeadlessChrome\/[\d.]+|Chrome\/[\d.]+/)?.[0] ?? navigator.userAgent} ` +
    `talk to courier nodes over WebSocket.`;
  const out = {};
  const nodes = [];
  const started = Date.now();
  const steps = [
    ["connect over /ws", async () => {
      out.sender = await lightNode();
      nodes.push(out.sender);
      out.ws = await connect(out.sender, cfg.ws);
      return describeConn(out.ws);
    }],
    ["connect over /wss (test CA)", async () => {
      out.receiver = await lightNode();
      nodes.push(out.receiver);
      out.wss = await connect(out.receiver, cfg.wss);
      return describeConn(out.wss);
    }],
    ["filter subscribe", async () => {
      if (!out.wss.protocols.includes(FILTER)) throw new Error(`the /wss node does not list ${FILTER}`);
      out.decoder = out.receiver.createDecoder({ contentTopic: cfg.contentTopic, shardId: cfg.shard });
      out.got = [];
      const ok = await out.receiver.filter.subscribe(out.decoder, (m) => out.got.push(m));
      if (!ok) throw new Error("subscribe returned false");
      out.subscribed = true;
      return `${cfg.contentTopic} on shard ${cfg.shard} at ${short(out.wss.remotePeer)}`;
    }],
    ["lightpush send", async () => {
      if (!out.ws.protocols.includes(LIGHTPUSH)) throw new Error(`the /ws node does not list ${LIGHTPUSH}`);
      const encoder = out.sender.createEncoder({ contentTopic: cfg.contentTopic, shardId: cfg.shard });
      const sent = await out.sender.lightPush.send(encoder, { payload: utf8ToBytes(cfg.payload) }, { autoRetry: false });
      out.pushed = sent.successes.map((p) => p.toString());
      out.pushFailures = sent.failures.map((f) => f.error);
      if (out.pushed.length !== 1) throw new Error(`sent to ${out.pushed.length} peers, failures ${out.pushFailures}`);
      return `"${cfg.payload}" accepted by ${short(out.pushed[0])}`;
    }],
    ["filter receive", async () => {
      const m = await until("the filter push", 20000, () => out.got[0]);
      out.received = {
        payload: bytesToUtf8(m.payload),
        contentTopic: m.contentTopic,
        pubsubTopic: m.pubsubTopic,
        timestamp: m.proto.timestamp?.toString() ?? "0",
        hash: m.hashStr,
      };
      return `"${out.received.payload}" on ${m.pubsubTopic}, hash ${out.received.hash}`;
    }],
    ["store history", async () => {
      const peerId = out.sender.libp2p.getConnections().find((c) => c.remotePeer.toString() === out.ws.remotePeer).remotePeer;
      const decoder = out.sender.createDecoder({ contentTopic: cfg.contentTopic, shardId: cfg.shard });
      const options = { peerId, paginationForward: true, paginationLimit: cfg.pageSize };
      // The node archives what it relays in batches: ask again until the
      // message pushed above is in its answer.
      const pages = await until("the pushed message in the store", 10000, async () => {
        const pages = [];
        for await (const page of out.sender.store.queryGenerator([decoder], options)) {
          const msgs = (await Promise.all(page)).filter(Boolean);
          pages.push(msgs.map((m) => ({ payload: bytesToUtf8(m.payload), hash: m.hashStr })));
        }
        return pages.flat().some((m) => m.hash === out.received.hash) && pages;
      });
      out.store = pages;
      const n = pages.flat().length;
      return `${n} messages in ${pages.length} pages of at most ${cfg.pageSize}: ${pages.flat().map((m) => `"${m.payload}"`).join(", ")}`;
    }],
    ["peer exchange", async () => {
      const finder = await lightNode({ peerExchange: true, bootstrap: [cfg.ws] });
      nodes.push(finder);
      await finder.start();
      const peer = await until(`${cfg.pxPeer} from peer exchange`, 60000, async () =>
        (await finder.libp2p.peerStore.all()).find((p) => p.id.toString() === cfg.pxPeer));
      const addrs = peer.addresses.map((a) => a.multiaddr.toString());
      const ws = addrs.find((a) => a.includes("/ws"));
      if (!ws) throw new Error(`learned ${cfg.pxPeer} without a /ws address: ${addrs}`);
      // Dial the node at the address peer exchange gave, unless js-waku's
      // connection manager already has.
      const connected = finder.libp2p.getConnections().find((c) => c.remotePeer.toString() === cfg.pxPeer);
      const c = connected ? { remoteAddr: connected.remoteAddr.toString(), remotePeer: cfg.pxPeer } :
        await connect(finder, `${ws}/p2p/${cfg.pxPeer}`);
      out.px = { learned: peer.id.toString(), addrs, remoteAddr: c.remoteAddr, dialedByUs: !connected };
      return `learned ${short(out.px.learned)} from ${short(out.ws.remotePeer)} with ${addrs.join(" ")}; connected at ${c.remoteAddr.replace(/\/p2p\/.*/, "")}`;
    }],
  ];
  let failed;
  out.ms = {};
  for (const [name, fn] of steps) {
    const r = row(name);
    if (failed) {
      r.fail("not run");
      continue;
    }
    const t0 = performance.now();
    try {
      const detail = await fn();
      out.ms[name] = Math.round(performance.now() - t0);
      r.done(detail);
    } catch (err) {
      failed = { step: name, error: `${err?.message ?? err}`, stack: `${err?.stack ?? ""}` };
      r.fail(failed.error);
    }
  }
  for (const n of nodes) await n.stop().catch(() => {});
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  summary.textContent = failed ? `failed at "${failed.step}" after ${secs} s` : `all ${steps.length} steps passed in ${secs} s`;
  summary.style.color = failed ? "#cf222e" : "#1a7f37";
  const { ws, wss, subscribed, pushed, pushFailures, received, store, px, ms } = out;
  return { ...(failed ?? {}), ws, wss, subscribed, pushed, pushFailures, received, store, px, ms, userAgent: navigator.userAgent };
}

window.courier = { run };
summary.textContent = "loaded: waiting for the test to start the run";
