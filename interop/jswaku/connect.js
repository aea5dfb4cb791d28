// Dials the node at args.addr and reports what js-waku sees of it: the
// connection's muxer, encryption and address, the protocols and agent
// identify found, and the node's answer to a metadata query.
// args: {addr, networkConfig?}
import { main, lightNode, dialIdentified } from "./lib.js";

main(async ({ addr, networkConfig }) => {
  const waku = await lightNode(networkConfig);
  try {
    const { conn, identify } = await dialIdentified(waku, addr);
    const md = await waku.libp2p.services.metadata.query(conn.remotePeer);
    return {
      peerId: waku.libp2p.peerId.toString(),
      remotePeer: conn.remotePeer.toString(),
      remoteAddr: conn.remoteAddr.toString(),
      multiplexer: conn.multiplexer,
      encryption: conn.encryption,
      protocols: identify.protocols,
      agentVersion: identify.agentVersion,
      metadata: md.error ? { error: md.error } : { clusterId: md.shardInfo.clusterId, shards: md.shardInfo.shards },
    };
  } finally {
    await waku.stop();
  }
});
