'use strict'
// Runs before `npm pack`: copies the Go sources the native core is built
// from (the module's go.mod and go.sum, libnet/ without its tests and this
// package) into native/ and vendors their modules, so that installing the
// packed package builds offline.
const { spawnSync } = require('child_process')
const fs = require('fs')
const path = require('path')

const pkg = path.join(__dirname, '..')
const repo = path.join(pkg, '..', '..')
const native = path.join(pkg, 'native')

function copyTree(from, to) {
  for (const e of fs.readdirSync(from, { withFileTypes: true })) {
    const f = path.join(from, e.name)
    if (e.isDirectory()) {
      if (e.name === 'testdata' || f === pkg) continue
      copyTree(f, path.join(to, e.name))
    } else if (/\.(go|c|h)$/.test(e.name) && !e.name.endsWith('_test.go')) {
      fs.mkdirSync(to, { recursive: true })
      fs.copyFileSync(f, path.join(to, e.name))
    }
  }
}

if (!fs.existsSync(path.join(repo, 'go.mod'))) {
  if (fs.existsSync(path.join(native, 'go.mod'))) process.exit(0) // repacking a packed package
  console.error('pack-native: no courier checkout around this package')
  process.exit(1)
}
fs.rmSync(native, { recursive: true, force: true })
fs.mkdirSync(native)
for (const f of ['go.mod', 'go.sum']) fs.copyFileSync(path.join(repo, f), path.join(native, f))
copyTree(path.join(repo, 'libnet'), path.join(native, 'libnet'))
const r = spawnSync('go', ['mod', 'vendor'], { cwd: native, stdio: 'inherit', env: { ...process.env, GOWORK: 'off', GOFLAGS: '-mod=mod' } })
if (r.status !== 0) {
  console.error('pack-native: go mod vendor failed')
  process.exit(1)
}
