'use strict'
// A lib-net node that sends to serve.js nodes: a plain tell, a signed tell,
// a signed ask (waiting for its reply) and a multi-send to every server.
const { sn, main } = require('./lib')

main(async ({ impl, port, servers }) => {
  const node = sn(impl, port)
  await node.listen(() => {})
  const [first] = servers
  await node.send(first, '127.0.0.1', { kind: 'tell', from: impl })
  await node.sendWithHeader(first, '127.0.0.1', { kind: 'tell-h', from: impl }, { sender_id: 'client', tracker_id: 't1' })
  const reply = await new Promise((resolve, reject) => {
    node
      .sendWithHeader(first, '127.0.0.1', { kind: 'ask', q: 7 }, { sender_id: 'client' }, 5000, (data, header, sign) => resolve({ data, header, sign }), () =>
        reject(new Error('ask timed out'))
      )
      .catch(reject)
  })
  await node.multiSendWithHeader(servers, servers.map(() => '127.0.0.1'), { kind: 'multi', from: impl }, { sender_id: 'client' })
  // An ask to every server after the multi-send: frames to one peer keep
  // their order, so each reply means the multi-send reached that server.
  for (const s of servers) {
    await new Promise((resolve, reject) => {
      node.sendWithHeader(s, '127.0.0.1', { kind: 'ask', q: 0 }, { sender_id: 'client' }, 5000, resolve, () => reject(new Error('flush ask timed out'))).catch(reject)
    })
  }
  node.stopListening()
  return { reply }
})
