// Decodes a courier node's ENR with @waku/enr and makes one for courier to
// decode. Args: {enr, privateKey (hex)}. Prints {decoded, made}.
import { main, multiaddr } from "./lib.js";
import { EnrCreator, EnrDecoder } from "@waku/enr";
// Dependencies of @waku/enr (its EnrEncoder is not exported): the same
// secp256k1 and RLP code it signs and encodes with.
import * as secp from "@noble/secp256k1";
import * as RLP from "@ethersproject/rlp";

const bytes = (hex) => Uint8Array.from(Buffer.from(hex.replace(/^0x/, ""), "hex"));

// encode is @waku/enr's EnrEncoder.toString: keys sorted, seq, signature.
async function encode(enr, priv) {
  const content = Array.from(enr.keys())
    .sort((a, b) => a.localeCompare(b))
    .flatMap((k) => [new TextEncoder().encode(k), enr.get(k)]);
  content.unshift(new Uint8Array([Number(enr.seq)]));
  content.unshift(await enr.sign(bytes(RLP.encode(content)), priv));
  return "enr:" + Buffer.from(bytes(RLP.encode(content))).toString("base64url");
}

main(async ({ enr, privateKey }) => {
  const dec = await EnrDecoder.fromString(enr);
  const decoded = {
    peerId: dec.peerId?.toString(),
    ip: dec.ip,
    tcp: dec.tcp,
    udp: dec.udp,
    multiaddrs: (dec.multiaddrs ?? []).map(String),
    waku2: dec.waku2,
    shardInfo: dec.shardInfo,
  };
  const priv = Uint8Array.from(Buffer.from(privateKey, "hex"));
  const made = EnrCreator.fromPublicKey(secp.getPublicKey(priv, true));
  made.seq = 1n;
  made.ip = "10.1.2.3";
  made.tcp = 60001;
  made.udp = 9001;
  made.multiaddrs = [multiaddr("/dns4/node.example.org/tcp/443/wss")];
  made.waku2 = { relay: true, store: true, filter: false, lightPush: true };
  // rs: cluster 16, 2 shards: 0 and 5.
  made.set("rs", new Uint8Array([0, 16, 2, 0, 0, 0, 5]));
  return { decoded, made: await encode(made, priv) };
});
