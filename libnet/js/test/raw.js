'use strict'
// courier's raw lane from JavaScript: tellRaw, multiTellRaw (one result per
// peer: two servers, a dead port, a peer not known to take the lane),
// askRaw answered, and askRaw unanswered, whose deadline is the core's: no
// Timeout is pending in this process while it waits.
const { sn, main } = require('./lib')

main(async ({ port, servers, dead, legacyOnly }) => {
  const peers = [...servers, dead].map((p) => `127.0.0.1:${p}`)
  const node = sn('courier', port, { rawOpts: { peers, senderId: 'js-raw' } })
  const payload = Buffer.from([1, 2, 3, 0, 255])
  await node.tellRaw(servers[0], '127.0.0.1', payload, { route: 'gossip' })
  await node.tellRaw(servers[0], '127.0.0.1', payload, { route: 'gossip' }) // a duplicate
  const multi = await node.multiTellRaw([...servers, dead, legacyOnly], [...servers, dead, legacyOnly].map(() => '127.0.0.1'), payload, { route: 'multi' })
  const reply = await node.askRaw(servers[0], '127.0.0.1', Buffer.from('abc'), { route: 'q' })
  const timersBefore = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  let timersDuring = -1
  const started = Date.now()
  const mute = node.askRaw(servers[0], '127.0.0.1', Buffer.from('x'), { route: 'mute', timeout: 300 }).then(
    () => 'answered',
    (e) => e.message
  )
  await new Promise((r) => setImmediate(r))
  timersDuring = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  const muteResult = await mute
  return {
    multi: multi.map((e) => (e ? e.message : null)),
    reply: { payload: reply.payload.toString(), header: reply.header },
    mute: muteResult,
    muteMs: Date.now() - started,
    timersBefore,
    timersDuring,
  }
})
