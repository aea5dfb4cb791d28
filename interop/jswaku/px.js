// A light node that knows one courier node and has peer exchange on learns
// the other courier nodes (and may connect to them). Args: {addr,
// others: [peer id], networkConfig}. Prints {known, connected}: which of
// others the peer store holds and which are connected.
import { main, until } from "./lib.js";
import { createLightNode } from "@waku/sdk";

main(async ({ addr, others, networkConfig }) => {
  const waku = await createLightNode({
    networkConfig,
    defaultBootstrap: false,
    bootstrapPeers: [addr],
    discovery: { dns: false, peerExchange: true, peerCache: false },
    libp2p: { filterMultiaddrs: false, hideWebSocketInfo: true },
  });
  await waku.start();
  const state = async () => {
    const stored = new Set((await waku.libp2p.peerStore.all()).map((p) => p.id.toString()));
    const conns = new Set(waku.libp2p.getConnections().map((c) => c.remotePeer.toString()));
    return { known: others.filter((id) => stored.has(id)), connected: others.filter((id) => conns.has(id)) };
  };
  try {
    await until("the other nodes from peer exchange", 60000, async () => (await state()).known.length === others.length);
  } catch (err) {
    process.stderr.write(`${JSON.stringify(await state())}\n`);
    throw err;
  }
  // Whether js-waku then dials one of them is its connection manager's
  // choice: give it 20 s and report what it did.
  await until("a connection to one of them", 20000, async () => (await state()).connected.length > 0).catch(() => {});
  const out = await state();
  await waku.stop();
  return out;
});
