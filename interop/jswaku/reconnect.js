// Dials the node at args.addr, waits for identify, and hangs up, args.times
// times, with one light node. Reports how many rounds completed.
// args: {addr, networkConfig?, times}
import { main, lightNode, dialIdentified } from "./lib.js";

main(async ({ addr, networkConfig, times }) => {
  const waku = await lightNode(networkConfig);
  let rounds = 0;
  try {
    for (let i = 0; i < times; i++) {
      const { conn } = await dialIdentified(waku, addr);
      await waku.libp2p.hangUp(conn.remotePeer);
      await waku.libp2p.peerStore.delete(conn.remotePeer);
      rounds++;
    }
    return { peerId: waku.libp2p.peerId.toString(), rounds };
  } finally {
    await waku.stop();
  }
});
