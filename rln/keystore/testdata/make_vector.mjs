// Writes nwaku-keystore.json, the keystore vector of keystore_test.go, with
// nwaku v0.38.1's algorithm (waku/waku_keystore) implemented here on
// Node.js's own crypto, independently of the Go package it tests. Only the
// salts and IVs are fixed instead of random, so that the file can be
// made again byte for byte:
//
//   go test ./rln/internal/chaintest/...   # installs js-sha3 (keccak) there
//   node rln/keystore/testdata/make_vector.mjs > rln/keystore/testdata/nwaku-keystore.json
//
// Steps, with the nwaku source of each:
//  - plaintext: `%KeystoreMembership` as compact JSON (conversion_utils.nim
//    encode; protocol_types.nim field order), byte sequences as arrays of
//    numbers, the chain id a decimal string;
//  - key: upper-case hex of sha256(chainId ‖ address ‖ $treeIndex)
//    (protocol_types.nim hash; nimcrypto prints digests in upper case);
//  - entry (keyfile.nim createKeyFileJson): dk = PBKDF2-HMAC-SHA256(password,
//    salt (16 bytes), c = 1,000,000, 32 bytes); ciphertext =
//    AES-128-CTR(dk[0:16], iv (16 bytes), plaintext); mac =
//    keccak256(dk[16:32] ‖ ciphertext); hex in lower case; the entry object
//    {crypto: {cipher, cipherparams: {iv}, ciphertext, kdf, kdfparams:
//    {dklen, c, prf, salt}, mac}, id: "", version: ""} (KeystoreEntry's
//    id and version stay empty);
//  - file (keystore.nim createAppKeystore, utils.nim save): {application,
//    appIdentifier, credentials: {key: entry, ...}, version} as compact JSON
//    and "\n".
// The identities are real: idSecretHash = Poseidon(idTrapdoor, idNullifier)
// and idCommitment = Poseidon(idSecretHash), little-endian
// (keystore_test.go checks them with circomlib's Poseidon).
import crypto from "node:crypto";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { keccak256 } = require("../../internal/chaintest/node_modules/js-sha3");

const password = "courier vector pässword";
const address = "0xB9cd878C90E49F797B4431fBF4fb333108CB90e6"; // The Waku Network's contract
const chainId = "59141"; // Linea Sepolia

const memberships = [
  {
    treeIndex: 7,
    userMessageLimit: 20,
    identity: {
      idTrapdoor: [198,230,7,113,108,164,50,113,50,210,249,213,36,162,41,42,92,196,248,16,90,96,24,236,244,166,62,177,4,99,24,38],
      idNullifier: [154,49,195,184,221,112,201,15,205,132,101,15,82,224,53,71,63,38,217,45,220,210,206,193,3,209,252,164,197,175,201,38],
      idSecretHash: [252,209,170,254,152,203,8,52,7,96,236,135,126,15,176,65,171,191,100,96,214,43,11,203,31,105,99,41,37,142,81,27],
      idCommitment: [91,248,122,154,193,155,10,190,10,23,237,174,35,2,9,231,191,119,216,101,1,176,49,227,246,10,188,61,112,31,125,16],
    },
    salt: "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    iv: "00112233445566778899aabbccddeeff",
  },
  {
    treeIndex: 1234,
    userMessageLimit: 100,
    identity: {
      idTrapdoor: [217,134,79,97,128,248,213,6,44,252,137,165,34,200,190,168,15,46,82,198,140,189,35,60,200,77,126,242,142,4,109,17],
      idNullifier: [45,184,222,61,10,72,14,34,123,155,220,195,49,132,219,195,204,67,138,224,53,2,134,222,61,211,192,48,184,45,198,1],
      idSecretHash: [78,236,40,254,212,71,86,113,202,146,31,21,171,167,113,187,1,254,129,100,253,236,67,156,135,67,111,191,178,247,65,48],
      idCommitment: [143,123,81,48,169,238,92,254,15,143,159,199,176,171,225,167,117,174,58,158,7,227,30,27,197,60,133,218,31,98,13,45],
    },
    salt: "a1b2c3d4e5f60718293a4b5c6d7e8f90",
    iv: "ffeeddccbbaa99887766554433221100",
  },
];

function entry(m) {
  const plaintext = JSON.stringify({
    membershipContract: { chainId, address },
    treeIndex: m.treeIndex,
    identityCredential: m.identity,
    userMessageLimit: m.userMessageLimit,
  });
  const salt = Buffer.from(m.salt, "hex");
  const iv = Buffer.from(m.iv, "hex");
  const dk = crypto.pbkdf2Sync(Buffer.from(password, "utf8"), salt, 1000000, 32, "sha256");
  const c = crypto.createCipheriv("aes-128-ctr", dk.subarray(0, 16), iv);
  const ciphertext = Buffer.concat([c.update(Buffer.from(plaintext, "utf8")), c.final()]);
  const mac = keccak256(Buffer.concat([dk.subarray(16, 32), ciphertext]));
  return {
    crypto: {
      cipher: "aes-128-ctr",
      cipherparams: { iv: iv.toString("hex") },
      ciphertext: ciphertext.toString("hex"),
      kdf: "pbkdf2",
      kdfparams: { dklen: 32, c: 1000000, prf: "hmac-sha256", salt: salt.toString("hex") },
      mac,
    },
    id: "",
    version: "",
  };
}

const credentials = {};
for (const m of memberships) {
  const key = crypto.createHash("sha256").update(chainId + address + String(m.treeIndex)).digest("hex").toUpperCase();
  credentials[key] = entry(m);
}
process.stdout.write(
  JSON.stringify({ application: "waku-rln-relay", appIdentifier: "01234567890abcdef", credentials, version: "0.2" }) + "\n",
);
