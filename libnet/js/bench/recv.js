'use strict'
// The benchmark's receiver, in its own process: this package on both
// lanes, answering asks with the payload; "stats" over IPC returns stats().
const path = require('path')
const { Sn } = require(path.join(__dirname, '..'))

const { port } = JSON.parse(process.argv[2])
const parser = (s) =>
  JSON.parse(s, (k, v) => (v && v.dataType === 'bb' && typeof v.value === 'string' ? Buffer.from(v.value, 'base64') : v))
const stringifier = (v) =>
  JSON.stringify(v, function (k, val) {
    const orig = this[k]
    return Buffer.isBuffer(orig) ? { value: orig.toString('base64'), dataType: 'bb' } : val
  })
const node = Sn({
  port,
  address: '127.0.0.1',
  crypto: {
    hashKey: '64f152869ca2d473e4ba64ab53f49ccdb2edae22da192c126850970e788af347',
    signingSecretKeyHex:
      'c3774b92cc8850fb4026b073081290b82cab3c0f66cac250b4d710ee9aaf83ed8088b37f6f458104515ae18c2a05bde890199322f62ab5114d20c77bde5e6c9d',
  },
  headerOpts: { sendHeaderVersion: 1 },
  customStringifier: stringifier,
  customJsonParser: parser,
  rawOpts: { senderId: 'recv' },
})
node.listen((data, remote, respond) => respond(data.payload, { sender_id: 'recv' }))
node.listenRaw((header, payload, respond) => {
  if (header.dir === 'ask') respond(payload)
})
process.on('message', (m) => {
  if (m === 'quit') process.exit(0)
  if (m === 'stats') process.send(node.stats())
})
process.send('ready')
