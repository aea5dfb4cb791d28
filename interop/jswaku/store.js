// Queries the store node at args.addr with js-waku's store client, page
// by page as js-waku pages (its own cursor, until an empty page), and
// reports the payloads of each page as text.
// args: {addr, contentTopic, shard, pageSize, forward, hashes?: [hex]}
import { main, lightNode, multiaddr } from "./lib.js";

function hexToBytes(hex) {
  const h = hex.startsWith("0x") ? hex.slice(2) : hex;
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return out;
}

main(async ({ addr, contentTopic, shard, pageSize, forward, hashes }) => {
  const waku = await lightNode({ clusterId: 0 });
  try {
    const conn = await waku.libp2p.dial(multiaddr(addr));
    const decoder = waku.createDecoder({ contentTopic, shardId: shard });
    const options = { peerId: conn.remotePeer, paginationForward: forward, paginationLimit: pageSize };
    if (hashes) options.messageHashes = hashes.map(hexToBytes);
    const pages = [];
    for await (const page of waku.store.queryGenerator([decoder], options)) {
      const msgs = (await Promise.all(page)).filter(Boolean);
      pages.push(msgs.map((m) => new TextDecoder().decode(m.payload)));
    }
    return { pages };
  } finally {
    await waku.stop();
  }
});
