// One js-waku light node pushes one message with lightpush v3 through the
// node at args.addr, without retries, and reports the outcome.
// args: {addr, contentTopic, shard, payload}
import { main, lightNode, dialService } from "./lib.js";
import { utf8ToBytes } from "@waku/sdk";

main(async ({ addr, contentTopic, shard, payload }) => {
  const waku = await lightNode({ clusterId: 0 });
  try {
    await dialService(waku, addr, "/vac/waku/lightpush/3.0.0");
    const encoder = waku.createEncoder({ contentTopic, shardId: shard });
    const res = await waku.lightPush.send(encoder, { payload: utf8ToBytes(payload) }, { autoRetry: false });
    return { successes: res.successes.length, failures: res.failures.map((f) => f.error) };
  } finally {
    await waku.stop();
  }
});
