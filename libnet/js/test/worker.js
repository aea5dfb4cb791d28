'use strict'
// A worker thread listens with the core and is terminated while messages
// arrive; a second worker then listens and receives. Run as the main
// script; each worker runs this file too (workerData set).
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads')
const { sn, main, until } = require('./lib')

if (!isMainThread) {
  const node = sn(workerData.impl, workerData.port)
  let n = 0
  node.listen(() => {
    n++
    if (n % 50 === 0) parentPort.postMessage({ n })
  })
  parentPort.postMessage({ ready: true })
  // Sends in flight as well when the worker ends: their callbacks are due
  // on a thread that is going away.
  const pump = async () => {
    for (;;) {
      const batch = []
      for (let i = 0; i < 50; i++) batch.push(node.send(workerData.to, '127.0.0.1', { kind: 'from-worker' }).catch(() => {}))
      await Promise.all(batch)
    }
  }
  pump()
} else {
  main(async ({ impl, ports, to }) => {
    const run = (port, stopAfter) =>
      new Promise((resolve, reject) => {
        const w = new Worker(__filename, { workerData: { impl, port, to } })
        let seen = 0
        w.on('message', (m) => {
          if (m.ready) process.stdout.write(JSON.stringify({ event: 'ready', port }) + '\n')
          if (m.n) seen = m.n
          if (stopAfter && seen >= stopAfter) w.terminate()
        })
        w.on('error', reject)
        w.on('exit', (code) => resolve({ seen, code }))
      })
    const first = await run(ports[0], 200)
    await new Promise((r) => setTimeout(r, 300))
    let second = 0
    const w2 = run(ports[1], 100)
    const r2 = await w2
    second = r2.seen
    return { first: first.seen, second, codes: [first.code, r2.code] }
  })
}
