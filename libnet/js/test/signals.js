'use strict'
// Which threads block SIGINT once the core has loaded (from
// /proc/self/task/*/status), and 200 SIGINT and SIGUSR2 sent to this
// process while tells run, each caught by a process.on handler.
const fs = require('fs')
const { sn, main } = require('./lib')

main(async ({ impl, port, to }) => {
  const node = sn(impl, port)
  const threads = fs.readdirSync('/proc/self/task').map((t) => {
    const st = fs.readFileSync(`/proc/self/task/${t}/status`, 'utf8')
    const blocked = BigInt('0x' + st.match(/SigBlk:\s*(\w+)/)[1])
    return { tid: +t, sigintBlocked: ((blocked >> 1n) & 1n) === 1n }
  })
  let caught = 0
  process.on('SIGINT', () => caught++)
  process.on('SIGUSR2', () => caught++)
  const sends = []
  for (let i = 0; i < 200; i++) {
    sends.push(node.send(to, '127.0.0.1', { kind: 'tell', i }))
    process.kill(process.pid, i % 2 ? 'SIGINT' : 'SIGUSR2')
    if (i % 20 === 0) await new Promise((r) => setImmediate(r))
  }
  await Promise.all(sends)
  const end = Date.now() + 5000
  while (caught < 200 && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
  return { pid: process.pid, threads, caught }
})
