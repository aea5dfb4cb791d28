'use strict'
// Shared by the scripts the Go tests run: which lib-net to load, the test
// keys, and main(), which prints a script's result as one JSON line.
const path = require('path')

// lib-net's crypto test vectors (the same keys as libnet's Go tests).
const hashKey = '64f152869ca2d473e4ba64ab53f49ccdb2edae22da192c126850970e788af347'
const secretKey =
  'c3774b92cc8850fb4026b073081290b82cab3c0f66cac250b4d710ee9aaf83ed8088b37f6f458104515ae18c2a05bde890199322f62ab5114d20c77bde5e6c9d'
const publicKey = secretKey.slice(64)

// load returns the lib-net implementation named impl: "courier" (this
// repository's package, installed from its npm pack tarball into
// COURIER_PKG) or a published wrapper ("wrapper-1.4.3", ...) over the core.
function load(impl) {
  if (impl === 'courier') return require(path.join(process.env.COURIER_PKG, 'node_modules', '@couriernet', 'lib-net'))
  return require(impl)
}

function sn(impl, port, extra = {}) {
  return load(impl).Sn({
    port,
    address: '127.0.0.1',
    crypto: { hashKey, signingSecretKeyHex: secretKey },
    headerOpts: { sendHeaderVersion: 1 },
    ...extra,
  })
}

function main(fn) {
  const args = JSON.parse(process.argv[2] || '{}')
  Promise.resolve(fn(args)).then(
    (result) => {
      process.stdout.write(JSON.stringify(result) + '\n')
      process.exit(0)
    },
    (err) => {
      console.error(err && err.stack ? err.stack : err)
      process.exit(1)
    }
  )
}

const until = async (what, ms, check) => {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

module.exports = { hashKey, secretKey, publicKey, load, sn, main, until }
