'use strict'
// A lib-net node that listens and reports: every message as one JSON line
// {"event":"msg",...} on stdout; asks ({"kind":"ask"}) are answered with
// {"echo": data}. With impl "courier" the raw lane is on as well. Commands
// on stdin, one a line: "stats" prints {"event":"stats",...}; EOF ends it.
const readline = require('readline')
const { sn } = require('./lib')

const { impl, port, rawAll } = JSON.parse(process.argv[2])
const node = sn(impl, port, impl === 'courier' ? { rawOpts: { all: !!rawAll, senderId: 'server', dedup: true } } : {})
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')
node.listen((data, remote, respond, header, sign) => {
  out({ event: 'msg', data, remote, header, sign })
  if (data && (data.kind === 'ask' || data.route === 'binary/ask')) respond({ echo: data }, { sender_id: 'server' })
})
if (impl === 'courier') {
  node.listenRaw((header, payload, respond) => {
    out({ event: 'raw', header, payload: payload.toString('base64'), isBuffer: Buffer.isBuffer(payload) })
    if (header.dir === 'ask' && header.route !== 'mute') respond(Buffer.concat([Buffer.from('re:'), payload]))
  })
}
out({ event: 'ready' })
const rl = readline.createInterface({ input: process.stdin })
rl.on('line', (line) => {
  if (line.trim() === 'stats') out({ event: 'stats', stats: node.stats() })
})
rl.on('close', () => {
  node.stopListening()
  process.exit(0)
})
