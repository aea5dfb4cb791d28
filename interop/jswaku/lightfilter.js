// Two js-waku light nodes: the sender pushes one message with lightpush v3
// through the node at args.pushAddr; the receiver, subscribed with filter
// v2 at the node at args.filterAddr, receives it. Then the receiver pings
// its filter node, unsubscribes, and pings again.
// args: {pushAddr, filterAddr, contentTopic, shard, payload}
import { main, lightNode, dialService, until } from "./lib.js";
import { utf8ToBytes, bytesToUtf8 } from "@waku/sdk";

main(async ({ pushAddr, filterAddr, contentTopic, shard, payload }) => {
  const sender = await lightNode({ clusterId: 0 });
  const receiver = await lightNode({ clusterId: 0 });
  try {
    const filterConn = await dialService(receiver, filterAddr, "/vac/waku/filter-subscribe/2.0.0-beta1");
    const decoder = receiver.createDecoder({ contentTopic, shardId: shard });
    const got = [];
    const subscribed = await receiver.filter.subscribe(decoder, (m) => got.push(m));

    await dialService(sender, pushAddr, "/vac/waku/lightpush/3.0.0");
    const encoder = sender.createEncoder({ contentTopic, shardId: shard });
    const sent = await sender.lightPush.send(encoder, { payload: utf8ToBytes(payload) }, { autoRetry: false });

    const m = await until("the filter push", 20000, () => got[0]);
    const core = receiver.filter.protocol; // FilterCore: ping is not in the SDK's API
    const pingSubscribed = await core.ping(filterConn.remotePeer);
    const unsubscribed = await receiver.filter.unsubscribe(decoder);
    const pingAfter = await core.ping(filterConn.remotePeer);
    return {
      subscribed,
      pushed: sent.successes.length,
      pushFailures: sent.failures.map((f) => f.error),
      received: {
        payload: bytesToUtf8(m.payload),
        contentTopic: m.contentTopic,
        pubsubTopic: m.pubsubTopic,
        timestamp: m.proto.timestamp?.toString() ?? "0",
        hash: m.hashStr,
      },
      pingSubscribed: pingSubscribed.success ? "ok" : pingSubscribed.failure.error,
      unsubscribed,
      pingAfter: pingAfter.success ? "ok" : pingAfter.failure.error,
    };
  } finally {
    await sender.stop();
    await receiver.stop();
  }
});
