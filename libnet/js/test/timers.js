'use strict'
// n one-way tells (send, in windows of 500 in flight), then the pending
// Timeout objects left in this process (process.getActiveResourcesInfo).
const { sn, main } = require('./lib')

main(async ({ impl, port, to, n }) => {
  const node = sn(impl, port)
  const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  const data = { kind: 'tell', body: 'x'.repeat(64) }
  for (let i = 0; i < n; i += 500) {
    const batch = []
    for (let j = i; j < Math.min(n, i + 500); j++) batch.push(node.send(to, '127.0.0.1', data))
    await Promise.all(batch)
  }
  const after = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
  return { before, after, sent: n }
})
