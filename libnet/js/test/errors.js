'use strict'
// lib-net's answers: a send to a dead port, a header version lib-net has
// no header for, and a payload over the sender's limit.
const { sn, main } = require('./lib')

const reason = async (p) => {
  try {
    await p
    return null
  } catch (e) {
    return e.message
  }
}

main(async ({ impl, port, dead, to }) => {
  const node = sn(impl, port, { payloadOpts: { payloadSizeLimitInBytes: 64 * 1024 } })
  const deadPort = await reason(node.send(dead, '127.0.0.1', { kind: 'tell' }))
  node.updateHeaderOpts({ sendHeaderVersion: 7 })
  const badVersion = await reason(node.sendWithHeader(to, '127.0.0.1', { kind: 'tell' }, { sender_id: 'c' }))
  node.updateHeaderOpts({ sendHeaderVersion: 1 })
  const oversized = await reason(node.sendWithHeader(to, '127.0.0.1', { kind: 'big', body: 'x'.repeat(100 * 1024) }, { sender_id: 'c' }))
  const fine = await reason(node.sendWithHeader(to, '127.0.0.1', { kind: 'fine' }, { sender_id: 'c' }))
  return { deadPort, badVersion, oversized, fine }
})
