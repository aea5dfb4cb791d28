// Dials the node at args.addr and reports what js-waku sees of it: the
// connection's muxer, encryption and address, the protocols and agent
// identify found, and the node's answer to a metadata query.
// args: {addr, networkConfig?}
import { main, lightNode, multiaddr, until } from "./lib.js";

main(async ({ addr, networkConfig }) => {
  const waku = await lightNode(networkConfig);
  try {
    const conn = await waku.libp2p.dial(multiaddr(addr));
    const peer = await until("identify", 30000, async () => {
      const p = await waku.libp2p.peerStore.get(conn.remotePeer);
      return p.protocols.length > 0 ? p : null;
    });
    const md = await waku.libp2p.services.metadata.query(conn.remotePeer);
    return {
      peerId: waku.libp2p.peerId.toString(),
      remotePeer: conn.remotePeer.toString(),
      remoteAddr: conn.remoteAddr.toString(),
      multiplexer: conn.multiplexer,
      encryption: conn.encryption,
      protocols: peer.protocols,
      agentVersion: new TextDecoder().decode(peer.metadata.get("AgentVersion")),
      metadata: md.error ? { error: md.error } : { clusterId: md.shardInfo.clusterId, shards: md.shardInfo.shards },
    };
  } finally {
    await waku.stop();
  }
});
