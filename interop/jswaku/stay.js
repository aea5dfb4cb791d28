// Dials the node at args.addr and reports whether the connection is still
// open args.waitMs later, or when it closed.
// args: {addr, networkConfig?, waitMs}
import { main, lightNode, multiaddr, sleep } from "./lib.js";

main(async ({ addr, networkConfig, waitMs }) => {
  const waku = await lightNode(networkConfig);
  try {
    const conn = await waku.libp2p.dial(multiaddr(addr));
    const start = Date.now();
    let closedAfterMs = -1;
    while (Date.now() - start < waitMs) {
      if (waku.libp2p.getConnections(conn.remotePeer).length === 0) {
        closedAfterMs = Date.now() - start;
        break;
      }
      await sleep(50);
    }
    return {
      peerId: waku.libp2p.peerId.toString(),
      clusterId: waku.networkConfig.clusterId,
      connected: waku.libp2p.getConnections(conn.remotePeer).length > 0,
      closedAfterMs,
    };
  } finally {
    await waku.stop();
  }
});
